package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The embedded store's log: every write, as the values it left in the keys
// it changed, appended to a file beside the snapshot and fsynced before
// the write is answered. The files are <data>.log.<n>; a snapshot names
// the first n it does not cover, and the files before it are deleted once
// the snapshot is on disk.
//
// A record on disk is a frame: 4 bytes of magic, the payload's length and
// its CRC-32C (4 bytes each, little-endian), then the payload.

// logMagic starts every frame, so that a reader can tell a record cut
// short at the end of a file from damage before intact records.
var logMagic = [4]byte{'O', 'L', 'G', 1}

const (
	logHeader    = 12
	logMaxRecord = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends payload, framed, to b.
func appendFrame(b, payload []byte) []byte {
	b = append(b, logMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, crcTable))
	return append(b, payload...)
}

// frameAt returns the payload of the frame at b[off:] and the frame's
// length, or ok false when no whole, intact frame starts there.
func frameAt(b []byte, off int) (payload []byte, n int, ok bool) {
	if len(b)-off < logHeader || !bytes.Equal(b[off:off+4], logMagic[:]) {
		return nil, 0, false
	}
	size := binary.LittleEndian.Uint32(b[off+4:])
	if size > logMaxRecord || int64(size) > int64(len(b)-off-logHeader) {
		return nil, 0, false
	}
	p := b[off+logHeader : off+logHeader+int(size)]
	if crc32.Checksum(p, crcTable) != binary.LittleEndian.Uint32(b[off+8:]) {
		return nil, 0, false
	}
	return p, logHeader + int(size), true
}

// errLogDamaged: a log has a damaged record followed by intact ones.
var errLogDamaged = errors.New("damaged")

// parseLog splits a log file's bytes into its records. A damaged or
// incomplete frame with no intact frame after it is a write cut short by
// a crash (never acknowledged): good is where it starts. One followed by
// an intact frame is damage, errLogDamaged, at good.
func parseLog(b []byte) (records [][]byte, good int, err error) {
	off := 0
	for off < len(b) {
		p, n, ok := frameAt(b, off)
		if !ok {
			for q := off + 1; q+logHeader <= len(b); q++ {
				if b[q] == logMagic[0] {
					if _, _, ok := frameAt(b, q); ok {
						return records, off, errLogDamaged
					}
				}
			}
			return records, off, nil
		}
		records = append(records, p)
		off += n
	}
	return records, off, nil
}

// logFile is one log file.
type logFile struct {
	seq  uint64
	path string
	f    *os.File // nil once closed (it takes no more records)
	size int64    // bytes written (or found at start)
	// sealed is the log position after its last record, once appends
	// have moved on to a newer file (0 before).
	sealed int64
}

// logChunk is bytes appended to one file and not yet written.
type logChunk struct {
	file *logFile
	b    []byte
}

// embeddedLog appends records and makes them durable in groups: writers
// append under the caller's lock (so the log's order is the order the
// writes ran in), one goroutine writes and fsyncs what has gathered, and
// each writer waits until its own record is on disk. Writers that arrive
// during an fsync share the next one.
type embeddedLog struct {
	base string // <data>.log.

	mu       sync.Mutex
	synced   *sync.Cond
	queue    []logChunk
	appended int64 // bytes appended since start (a position in every file together)
	durable  int64 // of which written and fsynced
	err      error // the first write or fsync that failed: nothing after is acknowledged
	closing  bool
	files    []*logFile // not yet deleted, oldest first; the last one takes appends

	kick chan struct{}
	done chan struct{}
	// fatal is called once, from the syncing goroutine, when the log
	// cannot be written.
	fatal func(error)

	fsyncs  atomic.Int64
	records atomic.Int64
	bytes   atomic.Int64 // in the files not yet deleted
}

func logBase(data string) string { return data + ".log." }

// listLogs returns the sequence numbers of the log files of data, in order.
func listLogs(data string) ([]uint64, error) {
	dir, pre := filepath.Split(logBase(data))
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var seqs []uint64
	for _, en := range ents {
		rest, ok := strings.CutPrefix(en.Name(), pre)
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(rest, 10, 64); err == nil && rest == strconv.FormatUint(n, 10) {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

func (l *embeddedLog) path(seq uint64) string { return l.base + strconv.FormatUint(seq, 10) }

// openLog starts the log of data appending to the last of the files seqs
// (created when missing); the others, older, wait for a snapshot to
// cover them.
func openLog(data string, seqs []uint64, fatal func(error)) (*embeddedLog, error) {
	l := &embeddedLog{base: logBase(data), kick: make(chan struct{}, 1), done: make(chan struct{}), fatal: fatal}
	l.synced = sync.NewCond(&l.mu)
	for _, n := range seqs[:len(seqs)-1] {
		lf := &logFile{seq: n, path: l.path(n)}
		if fi, err := os.Stat(lf.path); err == nil {
			lf.size = fi.Size()
		}
		l.files = append(l.files, lf)
		l.bytes.Add(lf.size)
	}
	lf, err := l.openFile(seqs[len(seqs)-1], false)
	if err != nil {
		return nil, err
	}
	l.files = append(l.files, lf)
	l.bytes.Add(lf.size)
	go l.syncer()
	return l, nil
}

// openFile opens log file seq for appending, creating it (exclusive: it
// must not exist, when create is true) and making its name durable.
func (l *embeddedLog) openFile(seq uint64, create bool) (*logFile, error) {
	p := l.path(seq)
	flag := os.O_WRONLY | os.O_APPEND | os.O_CREATE
	if create {
		flag |= os.O_EXCL
	}
	f, err := os.OpenFile(p, flag, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		f.Close()
		return nil, err
	}
	return &logFile{seq: seq, path: p, f: f, size: fi.Size()}, nil
}

// syncDir fsyncs a folder, so that a file created or renamed in it stays.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// append adds one record after every record appended before, and returns
// the position to wait for. The caller's lock orders the appends.
func (l *embeddedLog) append(payload []byte) int64 {
	l.mu.Lock()
	cur := l.files[len(l.files)-1]
	if n := len(l.queue); n > 0 && l.queue[n-1].file == cur {
		l.queue[n-1].b = appendFrame(l.queue[n-1].b, payload)
	} else {
		l.queue = append(l.queue, logChunk{file: cur, b: appendFrame(make([]byte, 0, 4096), payload)})
	}
	l.appended += int64(logHeader + len(payload))
	at := l.appended
	l.mu.Unlock()
	l.records.Add(1)
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return at
}

// wait returns once every record up to position at is on disk. When the
// log cannot be written it never returns (the write is never answered)
// until the log is closed.
func (l *embeddedLog) wait(at int64) {
	l.mu.Lock()
	for l.durable < at && !(l.err != nil && l.closing) {
		l.synced.Wait()
	}
	l.mu.Unlock()
}

// settled returns once every record up to position at is on disk or the
// log has failed (then false).
func (l *embeddedLog) settled(at int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.durable < at && l.err == nil {
		l.synced.Wait()
	}
	return l.err == nil
}

// syncer writes and fsyncs what was appended, a group at a time.
func (l *embeddedLog) syncer() {
	defer close(l.done)
	for {
		<-l.kick
		l.mu.Lock()
		queue, at, closing := l.queue, l.appended, l.closing
		l.queue = nil
		l.mu.Unlock()
		for _, c := range queue {
			if _, err := c.file.f.Write(c.b); err != nil {
				l.fail(fmt.Errorf("writing the log %s: %w", c.file.path, err))
				return
			}
			c.file.size += int64(len(c.b))
			l.bytes.Add(int64(len(c.b)))
			if err := c.file.f.Sync(); err != nil {
				l.fail(fmt.Errorf("fsync of the log %s: %w", c.file.path, err))
				return
			}
			l.fsyncs.Add(1)
		}
		l.mu.Lock()
		l.durable = at
		l.synced.Broadcast()
		l.mu.Unlock()
		if closing {
			return
		}
	}
}

func (l *embeddedLog) fail(err error) {
	l.mu.Lock()
	l.err = err
	l.synced.Broadcast()
	l.mu.Unlock()
	l.fatal(err)
}

// create makes the next log file, for a snapshot to rotate to. It first
// closes the older files that are written to the end (snapshots that
// keep failing leave one per attempt, and each would hold a descriptor).
func (l *embeddedLog) create() (*logFile, error) {
	l.mu.Lock()
	seq := l.files[len(l.files)-1].seq + 1
	var done []*logFile
	for _, lf := range l.files[:len(l.files)-1] {
		if lf.f != nil && lf.sealed <= l.durable && l.err == nil {
			done = append(done, lf)
		}
	}
	l.mu.Unlock()
	for _, lf := range done {
		lf.f.Close()
		lf.f = nil // only the syncing goroutine, done with it, wrote to it
	}
	return l.openFile(seq, true)
}

// rotate sends later appends to next (the caller holds the lock that
// orders appends) and returns the position up to which the older files
// are complete.
func (l *embeddedLog) rotate(next *logFile) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files[len(l.files)-1].sealed = l.appended
	l.files = append(l.files, next)
	return l.appended
}

// retire deletes the files before seq, which a snapshot on disk now
// covers, once everything up to position at is written to them.
func (l *embeddedLog) retire(seq uint64, at int64) {
	if !l.settled(at) {
		return
	}
	l.mu.Lock()
	var gone []*logFile
	for len(l.files) > 1 && l.files[0].seq < seq {
		gone = append(gone, l.files[0])
		l.files = l.files[1:]
	}
	l.mu.Unlock()
	for _, lf := range gone {
		if lf.f != nil {
			lf.f.Close()
		}
		if err := os.Remove(lf.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			l.bytes.Add(-lf.size)
		}
	}
}

// drop abandons a file made by create that no snapshot rotated to.
func (l *embeddedLog) drop(lf *logFile) {
	lf.f.Close()
	os.Remove(lf.path)
}

// close writes what is appended, stops the syncing goroutine and closes
// the files.
func (l *embeddedLog) close() {
	l.mu.Lock()
	l.closing = true
	l.synced.Broadcast()
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lf := range l.files {
		if lf.f != nil {
			lf.f.Close()
		}
	}
}

// failed reports whether the log could not be written.
func (l *embeddedLog) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err != nil
}
