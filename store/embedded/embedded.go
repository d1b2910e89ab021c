package embedded

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// Server is the in-process Redis (miniredis) that `go run .` uses, made
// durable by two files: a log, to which every write is appended and
// fsynced before it is answered, and a snapshot of every key, written
// atomically (temp file, fsync, rename) every few seconds when something
// changed and on Close, after which the log it covers is deleted. At start
// the snapshot is loaded and the log replayed on top of it. A lock file
// keeps a second process off the same files. miniredis itself keeps
// nothing on disk.
type Server struct {
	m      *miniredis.Miniredis
	srv    *server.Server
	client *redis.Client
	path   string
	log    *slog.Logger

	// pause is held by every command that can change data, inside the
	// server, around its execution and the appending of its log record
	// (so the log's order is the order the writes ran in), and by a
	// snapshot's copy: the copy is one state, whatever the clients do (a
	// client that gave up on a command does not stop the server from
	// running it).
	pause sync.Mutex
	// rec gathers the record of the write that holds pause.
	rec recorder
	// wal is the log (nil without a data file); lock holds the lock file.
	wal  *embeddedLog
	lock *os.File

	// mu guards peers and the keys changed since the last copy.
	mu      sync.Mutex
	peers   map[*server.Peer]*peerState
	changed map[string]struct{}
	// changedAll: a command whose keys gate cannot name ran; the next
	// snapshot copies every key.
	changedAll bool
	// watched counts the connections that WATCH each key (see watch.go).
	watched map[string]int

	// raiser is the connection through which gate raises the version of
	// keys for WATCH; misses gathers what a script's commands may change
	// unseen. Both are used while pause is held.
	raiser *server.Peer
	misses missNotes

	// snapMu makes snapshots one at a time and guards cache: the last
	// copy of every key, which a snapshot updates with the changed keys.
	snapMu sync.Mutex
	cache  map[string]cachedKey

	dirty    atomic.Bool
	stop     chan struct{}
	done     chan struct{}
	interval time.Duration // between snapshots
	// failures counts snapshots that failed in a row; stderr gets every one.
	failures atomic.Int64
	lastErr  atomic.Pointer[error]
	stderr   io.Writer

	// tickMu guards lastTick, when TTLs were last advanced.
	tickMu   sync.Mutex
	lastTick time.Time
	// lastPause is how long the last snapshot held writes, in nanoseconds;
	// snapAt (Unix nanoseconds) and snapBytes are the last snapshot
	// written (or loaded).
	lastPause atomic.Int64
	snapAt    atomic.Int64
	snapBytes atomic.Int64
}

// peerState is what gate knows of one connection.
type peerState struct {
	// inGate: gate is running this connection's command; the server's
	// second call of the hook, from gate's own dispatch, lets it through.
	inGate bool
	// inMulti: commands are being queued for an EXEC; queued is what they
	// can change (queuedAll: some command's keys were unknown).
	inMulti   bool
	queued    []touch
	queuedAll bool
	// missed, missedAll: what the queued commands may change without
	// miniredis raising the keys' version (see missesOf).
	missed    []string
	missedAll bool
	// watching: the keys this connection WATCHes.
	watching []string
}

// cachedKey is a key as the last copy saw it; value maps are never
// changed once made, so an encoder can read them after the pause.
type cachedKey struct {
	item     snapshotItem
	expireAt time.Time // zero: no TTL
}

// snapshotFile is the snapshot's format: every key with its type and value.
type snapshotFile struct {
	Format  string    `json:"format"`
	Written time.Time `json:"written"`
	// Log is the first log file the snapshot does not cover: the files
	// before it are replayed by no one (and deleted), it and those after
	// are replayed in order. 0 (a snapshot from before the log): every log.
	Log  uint64                  `json:"log,omitempty"`
	Keys map[string]snapshotItem `json:"keys"`
}

type snapshotItem struct {
	String *string            `json:"string,omitempty"`
	Hash   map[string]string  `json:"hash,omitempty"`
	ZSet   map[string]float64 `json:"zset,omitempty"`
	// Stream: a stream's entries, oldest first (see streamEntries).
	Stream streamEntries `json:"stream,omitempty"`
	// TTLms is the time the key had left to live when the snapshot was
	// written, in milliseconds; 0: none.
	TTLms int64 `json:"ttl_ms,omitempty"`
}

// snapshotFormat did not change when streams were added: a snapshot
// written before has no "stream" field and loads as it did. (A binary from
// before streams would load a newer snapshot without its streams: it
// ignores the field.)
const snapshotFormat = "orders-snapshot-1"

// streamEntries is a stream's entries, oldest first, in the snapshot as
// [["1732385000000-0",["field","value",...]],...]. Consumer groups are not
// kept, nor a stream's last generated ID beyond its newest entry: after a
// restart, a new "*" ID is above the newest entry kept (miniredis's
// XADD), even if the clock went back, but may reuse the ID of a newest
// entry that XDEL removed. A stream emptied by XDEL or XTRIM comes back as
// no key (XLEN, XRANGE and XREAD answer the same). The app only adds, with
// MAXLEN, which always keeps the newest entry.
type streamEntries []miniredis.StreamEntry

func (s streamEntries) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64*len(s)+2)
	b = append(b, '[')
	for i, en := range s {
		if i > 0 {
			b = append(b, ',')
		}
		id, err := json.Marshal(en.ID)
		if err != nil {
			return nil, err
		}
		vals, err := json.Marshal(en.Values)
		if err != nil {
			return nil, err
		}
		b = append(b, '[')
		b = append(b, id...)
		b = append(b, ',')
		b = append(b, vals...)
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

func (s *streamEntries) UnmarshalJSON(b []byte) error {
	var raw [][]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(streamEntries, len(raw))
	for i, r := range raw {
		if len(r) != 2 {
			return fmt.Errorf("stream entry %d: %d elements, want [id, [field, value, ...]]", i, len(r))
		}
		if err := json.Unmarshal(r[0], &out[i].ID); err != nil {
			return fmt.Errorf("stream entry %d: %w", i, err)
		}
		if err := json.Unmarshal(r[1], &out[i].Values); err != nil {
			return fmt.Errorf("stream entry %d: %w", i, err)
		}
		if len(out[i].Values)%2 != 0 {
			return fmt.Errorf("stream entry %s: an odd number of fields and values", out[i].ID)
		}
	}
	*s = out
	return nil
}

// Options configures OpenEmbedded.
type Options struct {
	// Path is the snapshot file; "" keeps nothing. The log files
	// (Path.log.<n>) and the lock file (Path.lock) go beside it.
	Path string
	// Interval between snapshots when something changed (default 2 s).
	Interval time.Duration
	// Log receives routine messages; Stderr (default os.Stderr) receives a
	// line for every snapshot that could not be written, whatever the log.
	Log    *slog.Logger
	Stderr io.Writer
	// Fatal is called when the log cannot be written (a failed write or
	// fsync: the disk is full or failing). No write is answered after
	// that: the writes waiting for the log wait until the store is
	// closed. The default says so on Stderr and ends the process (exit
	// status 1); a restart replays what reached the disk.
	Fatal func(error)
}

// OpenEmbedded starts miniredis on a loopback port, with a random password
// that only this process knows, and loads the snapshot at opt.Path and
// the log after it. A snapshot or log that cannot be read, or a log
// damaged before its last record, is an error: it is never silently
// replaced. So are data files that another process holds. Keys with a TTL
// expire by the wall clock, to within about a second.
func Open(opt Options, client *redis.Options) (*Server, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Stderr == nil {
		opt.Stderr = os.Stderr
	}
	if opt.Interval <= 0 {
		opt.Interval = 2 * time.Second
	}
	if opt.Fatal == nil {
		stderr := opt.Stderr
		opt.Fatal = func(err error) {
			fmt.Fprintf(stderr, "orders: FATAL: %v; stopping, since no write can be made durable (a restart replays what is on disk)\n", err)
			os.Exit(1)
		}
	}
	e := &Server{path: opt.Path, log: opt.Log, interval: opt.Interval,
		stderr: opt.Stderr, peers: map[*server.Peer]*peerState{}, changed: map[string]struct{}{},
		watched: map[string]int{}, lastTick: time.Now()}
	if e.path != "" {
		if err := os.MkdirAll(filepath.Dir(e.path), 0o755); err != nil {
			return nil, fmt.Errorf("the folder of the data file %s: %w", e.path, err)
		}
		lock, err := lockData(e.path)
		if err != nil {
			return nil, err
		}
		e.lock = lock
	}
	m := miniredis.NewMiniRedis()
	var pw [24]byte
	if _, err := rand.Read(pw[:]); err != nil {
		e.unlock()
		return nil, err
	}
	password := hex.EncodeToString(pw[:])
	// Any local user can reach a loopback port: without the password they
	// get NOAUTH, whatever sign-in guards over HTTP.
	m.RequireAuth(password)
	// Not m.ClockTTL(true): it advances every TTL on every command, sorting
	// all keys each time (a snapshot of 2,000 orders took 20 s). The loop
	// advances them instead, about once a second.
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		e.unlock()
		return nil, fmt.Errorf("starting the embedded store: %w", err)
	}
	e.m, e.srv = m, m.Server()
	if err := e.load(opt.Fatal); err != nil {
		m.Close()
		e.unlock()
		return nil, err
	}
	e.raiser = newRaiser(e.srv, password)
	e.srv.SetPreHook(e.gate)
	o := *client
	o.Addr = m.Addr()
	o.Password = password
	e.client = redis.NewClient(&o)
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go e.loop()
	return e, nil
}

func (e *Server) unlock() {
	if e.lock != nil {
		e.lock.Close() // the lock goes with the file
		e.lock = nil
	}
}

// Client returns the client the application uses.
func (e *Server) Client() *redis.Client { return e.client }

// Close writes a last snapshot and stops the embedded store. Its error is
// the last snapshot's.
func (e *Server) Close() error {
	close(e.stop)
	<-e.done
	err := e.Snapshot()
	e.client.Close()
	if e.wal != nil && e.wal.failed() {
		// Writes wait for a log that cannot be written: they are let go
		// (the process should have ended: see Options.Fatal).
		e.wal.close()
		e.m.Close()
	} else {
		e.m.Close()
		if e.wal != nil {
			e.wal.close()
		}
	}
	e.unlock()
	return err
}

// load reads the snapshot, replays the log after it, puts the keys in the
// store, and opens the log for appending.
func (e *Server) load(fatal func(error)) error {
	if e.path == "" {
		return nil
	}
	var snap snapshotFile
	b, err := os.ReadFile(e.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		snap.Format = snapshotFormat
	case err != nil:
		return fmt.Errorf("reading the snapshot %s: %w", e.path, err)
	default:
		if err := json.Unmarshal(b, &snap); err != nil || snap.Format != snapshotFormat {
			return fmt.Errorf("the snapshot %s is damaged or not an orders snapshot (%v); move it aside to start empty, or restore a good copy", e.path, err)
		}
		e.snapAt.Store(snap.Written.UnixNano())
		e.snapBytes.Store(int64(len(b)))
	}
	// A TTL runs by the wall clock, also while the process was stopped: an
	// Idempotency-Key is remembered 24 hours from its request, not from
	// the last restart.
	e.cache = make(map[string]cachedKey, len(snap.Keys))
	for k, v := range snap.Keys {
		ck := cachedKey{item: v}
		if v.TTLms != 0 {
			ck.expireAt = snap.Written.Add(time.Duration(v.TTLms) * time.Millisecond)
		}
		ck.item.TTLms = 0
		e.cache[k] = ck
	}
	seqs, ends, replayed, err := e.replayLogs(snap.Log)
	if err != nil {
		return err
	}
	now := time.Now()
	e.lastTick = now // the TTLs set below are what is left now
	db := e.m.DB(0)
	expired := 0
	for k, ck := range e.cache {
		left := ck.expireAt.Sub(now)
		if !ck.expireAt.IsZero() && left <= 0 {
			expired++
			delete(e.cache, k)
			continue
		}
		v := ck.item
		switch {
		case v.String != nil:
			_ = db.Set(k, *v.String)
		case v.Hash != nil:
			fv := make([]string, 0, 2*len(v.Hash))
			for f, val := range v.Hash {
				fv = append(fv, f, val)
			}
			db.HSet(k, fv...)
		case v.ZSet != nil:
			for m, s := range v.ZSet {
				_, _ = db.ZAdd(k, s, m)
			}
		case len(v.Stream) > 0:
			// In order, with their IDs: a later XADD "*" gets a greater one.
			for _, en := range v.Stream {
				if _, err := db.XAdd(k, en.ID, en.Values); err != nil {
					return fmt.Errorf("the snapshot %s or its log is damaged: stream %q, entry %s: %v; move them aside to start empty, or restore a good copy", e.path, k, en.ID, err)
				}
			}
		}
		if !ck.expireAt.IsZero() {
			db.SetTTL(k, left)
		}
	}
	if snap.Written.IsZero() && replayed == 0 {
		e.log.Info("starting empty: no snapshot or log yet", "file", e.path)
	} else {
		e.log.Info("loaded the snapshot and its log", "file", e.path, "keys", len(e.cache), "expired", expired,
			"written", snap.Written, "log_records", replayed)
	}
	if replayed > 0 {
		e.dirty.Store(true) // the next snapshot takes them in, and the log goes
	}
	e.wal, err = openLog(e.path, seqs, ends, fatal)
	if err != nil {
		return fmt.Errorf("opening the log %s: %w", logBase(e.path)+strconv.FormatUint(seqs[len(seqs)-1], 10), err)
	}
	return nil
}

// replayLogs applies the log files from first on (older ones are left by
// a crash after the snapshot that covers them: deleted) to the cache, in
// order, and returns the files left (the last one to go on appending to,
// made when there is none), where each one's records end, and how many
// records were applied. A log whose end is cut short (a write never acknowledged)
// is cut there, with a warning; damage before intact records, or a
// missing file between two, is an error.
func (e *Server) replayLogs(first uint64) (live []uint64, ends []int64, replayed int, err error) {
	seqs, err := listLogs(e.path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("listing the logs of %s: %w", e.path, err)
	}
	for _, n := range seqs {
		if n < first {
			_ = os.Remove(logBase(e.path) + strconv.FormatUint(n, 10))
			continue
		}
		live = append(live, n)
	}
	if len(live) == 0 {
		return []uint64{max(first, 1)}, []int64{0}, 0, nil
	}
	for i, n := range live {
		if i > 0 && n != live[i-1]+1 {
			return nil, nil, 0, fmt.Errorf("the log %s%d is missing between %d and %d: its writes would be lost; restore it, or move every log of %s aside to start from the snapshot alone",
				logBase(e.path), live[i-1]+1, live[i-1], n, e.path)
		}
	}
	if live[0] > first && first > 0 {
		return nil, nil, 0, fmt.Errorf("the log %s%d, the first after the snapshot %s, is missing: its writes would be lost; restore it, or move every log of %s aside to start from the snapshot alone",
			logBase(e.path), first, e.path, e.path)
	}
	for i, n := range live {
		p := logBase(e.path) + strconv.FormatUint(n, 10)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("reading the log %s: %w", p, err)
		}
		records, good, torn, err := parseLog(b)
		if torn {
			// Cut short: only the newest log with anything in it may be.
			for _, later := range live[i+1:] {
				if lb, rerr := os.ReadFile(logBase(e.path) + strconv.FormatUint(later, 10)); rerr != nil || !allZero(lb) {
					err = errLogDamaged
					break
				}
			}
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("the log %s is damaged at byte %d, before writes that follow it, so this is not a write cut short by a crash; refusing to start rather than drop them: restore a good copy, or move the log aside to start without its writes", p, good)
		}
		for j, r := range records {
			var rec logRecord
			if err := json.Unmarshal(r, &rec); err != nil {
				return nil, nil, 0, fmt.Errorf("the log %s: record %d (its checksum is right) cannot be read: %v; restore a good copy, or move the log aside to start without its writes", p, j+1, err)
			}
			if err := replay(e.cache, rec); err != nil {
				return nil, nil, 0, fmt.Errorf("the log %s: record %d: %v", p, j+1, err)
			}
		}
		replayed += len(records)
		ends = append(ends, int64(good))
		if torn {
			fmt.Fprintf(e.stderr, "orders: WARNING: the log %s ends with a record cut short at byte %d (%d bytes; a write that was never acknowledged): it is skipped; the %d records before it are kept\n",
				p, good, len(b)-good, len(records))
			e.log.Warn("the log ends with a record cut short; skipped", "file", p, "at", good, "bytes", len(b)-good, "records_kept", len(records))
			if err := truncateSync(p, int64(good)); err != nil {
				return nil, nil, 0, fmt.Errorf("cutting the log %s at its last whole record: %w", p, err)
			}
		}
	}
	return live, ends, replayed, nil
}

// truncateSync cuts a file at size, durably.
func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// loop advances TTLs about once a second (less often when that is costly:
// miniredis walks every key to do it) and writes a snapshot every interval
// when something changed or the last one failed.
func (e *Server) loop() {
	defer close(e.done)
	snap := time.NewTicker(e.interval)
	defer snap.Stop()
	expire := time.NewTimer(time.Second)
	defer expire.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-expire.C:
			e.pause.Lock() // it deletes keys: not in the middle of a write or a copy
			cost := e.tick()
			e.pause.Unlock()
			expire.Reset(min(max(time.Second, 100*cost), time.Minute))
		case <-snap.C:
			if e.path != "" && (e.dirty.Load() || e.failures.Load() > 0) {
				_ = e.Snapshot()
			}
		}
	}
}

// tick advances every TTL by the time since the last tick, deleting the
// keys whose time is up, and returns how long that took. The caller holds
// pause. A key it deletes needs no log record: every record and snapshot
// holds a key's expiry as a time, so a replay drops it too.
func (e *Server) tick() time.Duration {
	e.tickMu.Lock()
	defer e.tickMu.Unlock()
	now := time.Now()
	if d := now.Sub(e.lastTick); d > 0 {
		e.m.FastForward(d)
	}
	e.lastTick = now
	return time.Since(now)
}

// gate is the server's pre-command hook. It makes WATCH see every change
// (see watch.go), and with a data file it makes writes durable: a command
// that can change data runs while it holds pause, then the values it left
// in the keys it changed are appended to the log, and it is answered only
// once that record is on disk (the server writes a command's answer to
// the socket after the hook returns; a long answer may go out in part
// before, which no client takes for an answer). It dispatches such a
// command itself and answers true ("done"); the server's second call of
// the hook, from that dispatch, lets the command through. The server runs
// one connection's commands one after another, on one goroutine.
//
// A command a script runs (redis.call) comes through here too, on a peer
// of its own that miniredis has already set up (Ctx set) and gate never
// saw: its touches join the script's record.
func (e *Server) gate(c *server.Peer, cmd string, args ...string) bool {
	if c == e.raiser {
		return false
	}
	logging := e.path != ""
	e.mu.Lock()
	p := e.peers[c]
	if p == nil {
		if c.Ctx != nil {
			e.mu.Unlock()
			if !readOnlyCmd(e.srv, cmd) {
				if logging {
					ts, known := touchesOf(cmd, args)
					e.rec.add(nil, ts, known)
				}
				if keys, all := missesOf(cmd, args); len(keys) > 0 || all {
					e.misses.add(keys, all)
				}
			}
			return false
		}
		p = &peerState{}
		e.peers[c] = p
		c.OnDisconnect(func() {
			e.mu.Lock()
			e.unwatch(p)
			delete(e.peers, c)
			e.mu.Unlock()
		})
	}
	if p.inGate {
		p.inGate = false
		e.mu.Unlock()
		return false
	}
	switch cmd {
	case "MULTI":
		if !p.inMulti && len(args) == 0 { // a nested MULTI is refused and changes nothing
			p.inMulti, p.queued, p.queuedAll = true, nil, false
			p.missed, p.missedAll = nil, false
		}
	case "DISCARD":
		if len(args) == 0 {
			if p.inMulti {
				e.unwatch(p)
			}
			p.inMulti, p.queued, p.queuedAll = false, nil, false
		}
	case "WATCH":
		// Noted before miniredis reads the versions: a change after
		// that is raised.
		if !p.inMulti {
			e.watch(p, args)
		}
	case "UNWATCH":
		if len(args) == 0 {
			e.unwatch(p)
		}
	}
	if readOnlyCmd(e.srv, cmd) {
		e.mu.Unlock()
		return false
	}
	if p.inMulti && cmd != "EXEC" {
		// Queued: it changes nothing until its EXEC, which may come after
		// a snapshot.
		if logging {
			ts, known := touchesOf(cmd, args)
			p.queued = append(p.queued, ts...)
			p.queuedAll = p.queuedAll || !known
		}
		keys, all := missesOf(cmd, args)
		p.missed = append(p.missed, keys...)
		p.missedAll = p.missedAll || all
		e.mu.Unlock()
		return false
	}
	var ts []touch
	known := true
	var missed []string
	var missedAll, ends bool
	if cmd == "EXEC" {
		if len(args) == 0 { // else refused, and the MULTI goes on
			ts, known = p.queued, !p.queuedAll
			missed, missedAll, ends = p.missed, p.missedAll, p.inMulti
			p.inMulti, p.queued, p.queuedAll = false, nil, false
			p.missed, p.missedAll = nil, false
		}
	} else {
		if logging {
			ts, known = touchesOf(cmd, args)
		}
		missed, missedAll = missesOf(cmd, args)
	}
	p.inGate = true
	e.mu.Unlock()

	e.pause.Lock()
	db := e.m.DB(0)
	if logging {
		e.rec.reset(false)
		e.rec.add(db, ts, known)
	}
	before := e.watchBefore(db, missed, missedAll)
	e.misses.take()
	e.srv.Dispatch(c, append([]string{cmd}, args...))
	if ends {
		// The EXEC ended the connection's watches: its own changes need
		// no raise.
		e.mu.Lock()
		e.unwatch(p)
		e.mu.Unlock()
	}
	sk, sall := e.misses.take()
	e.watchAfter(db, before, append(slices.Clone(missed), sk...), missedAll || sall)
	if !logging {
		e.pause.Unlock()
		return true
	}
	e.tickMu.Lock()
	tick := e.lastTick
	e.tickMu.Unlock()
	rec, keys, all := e.rec.build(db, tick)
	var at int64
	if len(rec.Keys) > 0 || rec.All {
		payload, err := json.Marshal(rec)
		if err != nil {
			e.pause.Unlock()
			e.wal.fail(fmt.Errorf("encoding the log record of %s: %w", cmd, err))
			e.wal.wait(math.MaxInt64)
			return true
		}
		e.noteChanged(keys, all)
		at = e.wal.append(payload)
	}
	e.pause.Unlock()
	e.wal.wait(at)
	return true
}

// noteChanged notes keys for the next snapshot's copy (all: every key).
func (e *Server) noteChanged(keys []string, all bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dirty.Store(true)
	if all {
		e.changedAll = true
	}
	for _, k := range keys {
		e.changed[k] = struct{}{}
	}
}

// readOnlyCmd: commands that change no data need not wait for a snapshot.
// miniredis marks its reading commands; these others only touch the
// connection (MULTI only queues; its EXEC is gated). XREAD is one of
// miniredis's: a blocked XREAD BLOCK holds no pause (and miniredis releases
// its own lock while it waits), so it stalls neither writers nor snapshots.
// A blocking command that is not read-only (BLPOP, XREADGROUP BLOCK, ...)
// would hold pause while it waits: a snapshot, and every write
// after it, would wait for its timeout. The app uses none.
func readOnlyCmd(srv *server.Server, cmd string) bool {
	switch cmd {
	case "PING", "ECHO", "AUTH", "HELLO", "CLIENT", "INFO", "TIME",
		"WATCH", "UNWATCH", "MULTI", "DISCARD", "QUIT", "COMMAND",
		"SCRIPT", "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE":
		return true
	}
	return srv.IsReadOnlyCommand(cmd)
}

// Health reports an error after two snapshots in a row failed: /readyz
// then answers 503 until one is written again, so an operator sees that
// the data is no longer being saved. Every failure is logged; one alone
// does not make the store unready.
func (e *Server) Health() error {
	if n := e.failures.Load(); n >= 2 {
		if p := e.lastErr.Load(); p != nil {
			return fmt.Errorf("the snapshot %s could not be written %d times in a row: %w", e.path, n, *p)
		}
	}
	return nil
}

// Snapshot writes every key to the snapshot file now, and deletes the log
// it covers. The keys are copied while no command that changes data runs
// (see gate), each value copied into maps of the snapshot's own, so the
// copy is one consistent state, and the log moves on to a new file at
// that moment; the copy is encoded and written after commands resume, and
// the older log files are deleted once the snapshot is on disk. A crash
// in between leaves them, and the snapshot says which file it does not
// cover, so a restart replays exactly the writes after the copy. A
// failure is reported on stderr every time and counted for Health.
func (e *Server) Snapshot() error {
	if e.path == "" {
		return nil
	}
	err := e.snapshot()
	if err != nil {
		e.lastErr.Store(&err)
		n := e.failures.Add(1)
		e.dirty.Store(true)
		fmt.Fprintf(e.stderr, "orders: ERROR: writing the snapshot %s failed (%d in a row): %v\n", e.path, n, err)
		e.log.Error("writing the snapshot failed", "file", e.path, "in_a_row", n, "err", err)
		return err
	}
	if e.failures.Swap(0) > 0 {
		e.log.Info("the snapshot is written again", "file", e.path)
	}
	return nil
}

func (e *Server) snapshot() error {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	// The next log file is made (and its name made durable) before the
	// pause, which then only switches to it.
	next, err := e.wal.create()
	if err != nil {
		return fmt.Errorf("starting a new log beside it: %w", err)
	}
	written, at := e.copyChanged(next)
	snap := snapshotFile{Format: snapshotFormat, Written: written.UTC(), Log: next.seq, Keys: make(map[string]snapshotItem, len(e.cache))}
	for k, ck := range e.cache {
		it := ck.item
		if !ck.expireAt.IsZero() {
			left := ck.expireAt.Sub(written)
			if left <= 0 {
				delete(e.cache, k) // expired (the store has dropped it or will in a moment)
				continue
			}
			it.TTLms = max(left.Milliseconds(), 1)
		}
		snap.Keys[k] = it
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(e.path, b); err != nil {
		return err // the older log files stay until a snapshot is written
	}
	e.snapAt.Store(written.UnixNano())
	e.snapBytes.Store(int64(len(b)))
	e.wal.retire(next.seq, at)
	return nil
}

// copyChanged brings the cache up to date with writes paused: it copies
// every key changed since the last copy (every key, the first time or
// after a command whose keys are unknown), and sends later log records to
// next (when not nil). It returns the time of the copy and the log
// position up to which the older files hold the writes it covers. The
// caller holds snapMu.
func (e *Server) copyChanged(next *logFile) (time.Time, int64) {
	e.pause.Lock()
	defer e.pause.Unlock()
	var at int64
	if next != nil {
		at = e.wal.rotate(next)
	}
	start := time.Now()
	defer func() { e.lastPause.Store(int64(time.Since(start))) }()
	e.dirty.Store(false)
	// miniredis's TTLs are what was left at the last tick.
	e.tickMu.Lock()
	tick := e.lastTick
	e.tickMu.Unlock()
	now := time.Now()
	e.mu.Lock()
	changed, all := e.changed, e.changedAll || e.cache == nil
	e.changed, e.changedAll = map[string]struct{}{}, false
	e.mu.Unlock()
	db := e.m.DB(0)
	if all {
		e.cache = map[string]cachedKey{}
		for _, k := range db.Keys() {
			if ck, ok := copyKey(db, k, tick); ok {
				e.cache[k] = ck
			}
		}
		return now, at
	}
	for k := range changed {
		if ck, ok := copyKey(db, k, tick); ok {
			e.cache[k] = ck
		} else {
			delete(e.cache, k)
		}
	}
	return now, at
}

// copyKey copies one key's value into maps of its own; ok is false when
// the key does not exist (or has a type the app never writes). tick is
// when miniredis last advanced its TTLs.
func copyKey(db *miniredis.RedisDB, k string, tick time.Time) (cachedKey, bool) {
	var ck cachedKey
	switch db.Type(k) {
	case "string":
		v, _ := db.Get(k)
		ck.item.String = &v
	case "hash":
		fields, _ := db.HKeys(k)
		h := make(map[string]string, len(fields))
		for _, f := range fields {
			h[f] = db.HGet(k, f)
		}
		ck.item.Hash = h
	case "zset":
		// SortedSet returns miniredis's own map: clone it now (encoding
		// it after the pause raced with writers: a fatal error).
		z, _ := db.SortedSet(k)
		ck.item.ZSet = maps.Clone(z)
	case "stream":
		// Stream returns miniredis's own slice, whose array XDEL (and
		// XADD MINID) shifts in place: clone it now. An entry's Values
		// are made by its XADD and never changed, so they are shared.
		s, _ := db.Stream(k)
		if len(s) == 0 {
			return ck, false // see streamEntries
		}
		ck.item.Stream = slices.Clone(s)
	default:
		return ck, false
	}
	if ttl := db.TTL(k); ttl > 0 {
		ck.expireAt = tick.Add(ttl)
	}
	return ck, true
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old file or the new one: temp file, fsync, rename, fsync of the folder.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".orders-snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Stats is what an operator watches of the embedded store's files
// (see Stats).
type Stats struct {
	// Path is the snapshot file; "" when nothing is kept on disk, and then
	// every other field is zero.
	Path string
	// LogBytes is the size of the log files that no snapshot covers yet.
	LogBytes int64
	// LogRecords counts the writes appended to the log since the start,
	// LogFsyncs the fsyncs that made them durable (writes that arrive
	// together share one).
	LogRecords, LogFsyncs int64
	// SnapshotAt is when the last snapshot was taken (one written, or the
	// one loaded at start; zero: none yet), SnapshotBytes its size.
	SnapshotAt    time.Time
	SnapshotBytes int64
	// SnapshotPause is how long the last snapshot held writes.
	SnapshotPause time.Duration
	// SnapshotFailures counts the snapshots that failed in a row.
	SnapshotFailures int64
}

// Stats reports the log's and the last snapshot's figures; all zero
// without a data file. It only reads counters, and is cheap.
func (e *Server) Stats() Stats {
	if e.path == "" {
		return Stats{}
	}
	st := Stats{
		Path:             e.path,
		SnapshotBytes:    e.snapBytes.Load(),
		SnapshotPause:    time.Duration(e.lastPause.Load()),
		SnapshotFailures: e.failures.Load(),
	}
	if at := e.snapAt.Load(); at != 0 {
		st.SnapshotAt = time.Unix(0, at)
	}
	if e.wal != nil {
		st.LogBytes, st.LogRecords, st.LogFsyncs = e.wal.bytes.Load(), e.wal.records.Load(), e.wal.fsyncs.Load()
	}
	return st
}
