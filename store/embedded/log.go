package embedded

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
// its CRC-32C (4 bytes each, little-endian), then the payload. A file is
// made longer ahead of its records, with zeros, a megabyte at a time, and
// its records overwrite them: making such a write durable needs no change
// to the file system's own records (fdatasync), so it neither pays for nor
// waits behind the journal, which other files' writes (the snapshot's
// megabytes) fill. The zeros after the last record are the file's end.

// logMagic starts every frame, so that a reader can tell a record cut
// short at the end of a file from damage before intact records.
var logMagic = [4]byte{'O', 'L', 'G', 1}

const (
	logHeader    = 12
	logMaxRecord = 1 << 30
	logPrealloc  = 1 << 20
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

// parseLog splits a log file's bytes into its records; good is where they
// end. Only zeros after them are the file's end (torn false). A damaged or
// incomplete frame with no intact frame after it is a write cut short by
// a crash (never acknowledged): torn. One followed by an intact frame is
// damage, errLogDamaged, at good.
func parseLog(b []byte) (records [][]byte, good int, torn bool, err error) {
	records, good, err = parseFrames(b)
	return records, good, err == nil && !allZero(b[good:]), err
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func parseFrames(b []byte) (records [][]byte, good int, err error) {
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
	size int64    // bytes of records written (or found at start)
	// zeroed is the file's length: zeros after size.
	zeroed int64
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
// writes ran in), then each waits until its own record is on disk. A
// writer that finds no one writing the log writes and fsyncs everything
// appended so far, its own record and those of the writers that came
// meanwhile; writers that arrive during that fsync share the next one.
// (No goroutine of its own: handing each group to one cost a wake-up per
// write, which on a busy machine cost more than the fsync.)
type embeddedLog struct {
	base string // <data>.log.

	mu       sync.Mutex
	synced   *sync.Cond
	queue    []logChunk
	appended int64 // bytes appended since start (a position in every file together)
	durable  int64 // of which written and fsynced
	syncing  bool  // a writer is writing and fsyncing the queue it took
	err      error // the first write or fsync that failed: nothing after is acknowledged
	closing  bool
	files    []*logFile // not yet deleted, oldest first; the last one takes appends

	// fatal is called once, by the writer whose write or fsync failed.
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
// (created when missing); the others, older, wait for a snapshot to cover
// them. ends are where each file's records end.
func openLog(data string, seqs []uint64, ends []int64, fatal func(error)) (*embeddedLog, error) {
	l := &embeddedLog{base: logBase(data), fatal: fatal}
	l.synced = sync.NewCond(&l.mu)
	for i, n := range seqs[:len(seqs)-1] {
		lf := &logFile{seq: n, path: l.path(n), size: ends[i]}
		l.files = append(l.files, lf)
		l.bytes.Add(lf.size)
	}
	lf, err := l.openFile(seqs[len(seqs)-1], ends[len(ends)-1], false)
	if err != nil {
		return nil, err
	}
	l.files = append(l.files, lf)
	l.bytes.Add(lf.size)
	return l, nil
}

// openFile opens log file seq for writing records after its first end
// bytes, creating it (exclusive: it must not exist, when create is true),
// with zeros ahead, and making its name and length durable.
func (l *embeddedLog) openFile(seq uint64, end int64, create bool) (*logFile, error) {
	p := l.path(seq)
	flag := os.O_WRONLY | os.O_CREATE
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
	lf := &logFile{seq: seq, path: p, f: f, size: end, zeroed: fi.Size()}
	if err := lf.zeroAhead(0); err != nil {
		f.Close()
		return nil, err
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		f.Close()
		return nil, err
	}
	return lf, nil
}

// zeroAhead makes the file longer, with zeros, when fewer than n bytes
// follow its records, and makes that durable.
func (lf *logFile) zeroAhead(n int64) error {
	if lf.size+n <= lf.zeroed && lf.zeroed > lf.size {
		return nil
	}
	to := lf.size + n + logPrealloc
	if _, err := lf.f.WriteAt(make([]byte, to-lf.zeroed), lf.zeroed); err != nil {
		return err
	}
	if err := lf.f.Sync(); err != nil {
		return err
	}
	lf.zeroed = to
	return nil
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
	return at
}

// wait returns once every record up to position at is on disk. When the
// log cannot be written it never returns (the write is never answered)
// until the log is closed.
func (l *embeddedLog) wait(at int64) {
	if l.settled(at) {
		return
	}
	l.mu.Lock()
	for !l.closing {
		l.synced.Wait()
	}
	l.mu.Unlock()
}

// settled returns once every record up to position at is on disk (true)
// or the log has failed (false). A caller that finds no one writing the
// log writes it.
func (l *embeddedLog) settled(at int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.durable < at && l.err == nil {
		if l.syncing {
			l.synced.Wait()
			continue
		}
		l.syncing = true
		queue, target := l.queue, l.appended
		l.queue = nil
		l.mu.Unlock()
		err := l.writeOut(queue)
		l.mu.Lock()
		l.syncing = false
		if err != nil {
			l.err = err
			l.synced.Broadcast()
			l.mu.Unlock()
			l.fatal(err)
			l.mu.Lock()
			break
		}
		l.durable = target
		l.synced.Broadcast()
	}
	return l.err == nil
}

// writeOut writes and fsyncs a queue, file after file.
func (l *embeddedLog) writeOut(queue []logChunk) error {
	for _, c := range queue {
		lf := c.file
		if err := lf.zeroAhead(int64(len(c.b))); err != nil {
			return fmt.Errorf("making the log %s longer: %w", lf.path, err)
		}
		if _, err := lf.f.WriteAt(c.b, lf.size); err != nil {
			return fmt.Errorf("writing the log %s: %w", lf.path, err)
		}
		lf.size += int64(len(c.b))
		l.bytes.Add(int64(len(c.b)))
		if err := datasync(lf.f); err != nil {
			return fmt.Errorf("fsync of the log %s: %w", lf.path, err)
		}
		l.fsyncs.Add(1)
	}
	return nil
}

// fail makes the log failed, from outside a write (a record that cannot
// be encoded).
func (l *embeddedLog) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
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
		lf.f = nil // written to the end: no writer uses it again
	}
	return l.openFile(seq, 0, true)
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

// close writes what is appended, lets go of writers waiting for a log
// that failed, and closes the files.
func (l *embeddedLog) close() {
	l.mu.Lock()
	at := l.appended
	l.mu.Unlock()
	l.settled(at)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing = true
	l.synced.Broadcast()
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
