package store

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
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// Embedded is the in-process Redis (miniredis) that `go run .` uses, made
// durable by a snapshot file: loaded at start, written atomically (temp
// file, fsync, rename) every few seconds when something changed, and on
// Close. miniredis itself keeps nothing on disk.
type Embedded struct {
	m      *miniredis.Miniredis
	srv    *server.Server
	client *redis.Client
	path   string
	log    *slog.Logger

	// pause is held shared by every command that can change data, inside
	// the server, around its execution, and exclusively by a snapshot's
	// copy: the copy is one state, whatever the clients do (a client that
	// gave up on a command does not stop the server from running it).
	pause sync.RWMutex

	// mu guards peers and the keys changed since the last copy.
	mu      sync.Mutex
	peers   map[*server.Peer]*peerState
	changed map[string]struct{}
	// changedAll: a command whose keys gate cannot name ran; the next
	// snapshot copies every key.
	changedAll bool

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
	// lastPause is how long the last snapshot held writes, in nanoseconds.
	lastPause atomic.Int64
}

// peerState is what gate knows of one connection.
type peerState struct {
	// inGate: gate is running this connection's command; the server's
	// second call of the hook, from gate's own dispatch, lets it through.
	inGate bool
	// inMulti: commands are being queued for an EXEC; queued are their
	// keys (queuedAll: some command's keys were unknown).
	inMulti   bool
	queued    []string
	queuedAll bool
}

// cachedKey is a key as the last copy saw it; value maps are never
// changed once made, so an encoder can read them after the pause.
type cachedKey struct {
	item     snapshotItem
	expireAt time.Time // zero: no TTL
}

// snapshotFile is the snapshot's format: every key with its type and value.
type snapshotFile struct {
	Format  string                  `json:"format"`
	Written time.Time               `json:"written"`
	Keys    map[string]snapshotItem `json:"keys"`
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

// EmbeddedOptions configures OpenEmbedded.
type EmbeddedOptions struct {
	// Path is the snapshot file; "" keeps nothing.
	Path string
	// Interval between snapshots when something changed (default 2 s).
	Interval time.Duration
	// Log receives routine messages; Stderr (default os.Stderr) receives a
	// line for every snapshot that could not be written, whatever the log.
	Log    *slog.Logger
	Stderr io.Writer
}

// OpenEmbedded starts miniredis on a loopback port, with a random password
// that only this process knows, and loads the snapshot at opt.Path. A
// snapshot that cannot be read is an error: it is never silently replaced.
// Keys with a TTL expire by the wall clock, to within about a second.
func OpenEmbedded(opt EmbeddedOptions, client *redis.Options) (*Embedded, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Stderr == nil {
		opt.Stderr = os.Stderr
	}
	if opt.Interval <= 0 {
		opt.Interval = 2 * time.Second
	}
	m := miniredis.NewMiniRedis()
	var pw [24]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return nil, err
	}
	password := hex.EncodeToString(pw[:])
	// Any local user can reach a loopback port: without the password they
	// get NOAUTH, whatever AUTH_USER and AUTH_PASSWORD guard over HTTP.
	m.RequireAuth(password)
	// Not m.ClockTTL(true): it advances every TTL on every command, sorting
	// all keys each time (a snapshot of 2,000 orders took 20 s). The loop
	// advances them instead, about once a second.
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("starting the embedded store: %w", err)
	}
	e := &Embedded{m: m, srv: m.Server(), path: opt.Path, log: opt.Log, interval: opt.Interval,
		stderr: opt.Stderr, peers: map[*server.Peer]*peerState{}, changed: map[string]struct{}{},
		lastTick: time.Now()}
	if err := e.load(); err != nil {
		m.Close()
		return nil, err
	}
	if e.path != "" {
		e.srv.SetPreHook(e.gate)
	}
	o := *client
	o.Addr = m.Addr()
	o.Password = password
	e.client = redis.NewClient(&o)
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go e.loop()
	return e, nil
}

// Client returns the client the application uses.
func (e *Embedded) Client() *redis.Client { return e.client }

// Close writes a last snapshot and stops the embedded store. Its error is
// the last snapshot's.
func (e *Embedded) Close() error {
	close(e.stop)
	<-e.done
	err := e.Snapshot()
	e.client.Close()
	e.m.Close()
	return err
}

func (e *Embedded) load() error {
	if e.path == "" {
		return nil
	}
	b, err := os.ReadFile(e.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the snapshot %s: %w", e.path, err)
	}
	var snap snapshotFile
	if err := json.Unmarshal(b, &snap); err != nil || snap.Format != snapshotFormat {
		return fmt.Errorf("the snapshot %s is damaged or not an orders snapshot (%v); move it aside to start empty, or restore a good copy", e.path, err)
	}
	// A TTL runs by the wall clock, also while the process was stopped: an
	// Idempotency-Key is remembered 24 hours from its request, not from
	// the last restart.
	now := time.Now()
	e.lastTick = now // the TTLs set below are what is left now
	down := max(now.Sub(snap.Written), 0)
	db := e.m.DB(0)
	expired := 0
	e.cache = make(map[string]cachedKey, len(snap.Keys))
	for k, v := range snap.Keys {
		ttl := time.Duration(v.TTLms) * time.Millisecond
		if v.TTLms != 0 && ttl <= down {
			expired++
			continue
		}
		ck := cachedKey{item: v}
		if v.TTLms != 0 {
			ck.expireAt = now.Add(ttl - down)
		}
		e.cache[k] = ck
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
					return fmt.Errorf("the snapshot %s is damaged: stream %q, entry %s: %v; move it aside to start empty, or restore a good copy", e.path, k, en.ID, err)
				}
			}
		}
		if v.TTLms != 0 {
			db.SetTTL(k, ttl-down)
		}
	}
	e.log.Info("loaded the snapshot", "file", e.path, "keys", len(snap.Keys)-expired, "expired", expired, "written", snap.Written)
	return nil
}

// loop advances TTLs about once a second (less often when that is costly:
// miniredis walks every key to do it) and writes a snapshot every interval
// when something changed or the last one failed.
func (e *Embedded) loop() {
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
			e.pause.RLock() // it deletes keys: not in the middle of a copy
			cost := e.tick()
			e.pause.RUnlock()
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
// pause (shared or exclusive).
func (e *Embedded) tick() time.Duration {
	e.tickMu.Lock()
	defer e.tickMu.Unlock()
	now := time.Now()
	if d := now.Sub(e.lastTick); d > 0 {
		e.m.FastForward(d)
	}
	e.lastTick = now
	return time.Since(now)
}

// gate is the server's pre-command hook (installed when there is a
// snapshot to write): a command that can change data runs while it holds
// pause shared, and its keys are noted for the next copy. It dispatches
// the command itself and answers true ("done"); the server's second call
// of the hook, from that dispatch, lets the command through. The server
// runs one connection's commands one after another, on one goroutine.
func (e *Embedded) gate(c *server.Peer, cmd string, args ...string) bool {
	e.mu.Lock()
	p := e.peers[c]
	if p == nil && c.Ctx != nil {
		// A peer never seen that already has miniredis's context is a Lua
		// script's redis.call (miniredis gives each call a peer of its own,
		// with the script's context; a connection's first command comes
		// before miniredis gives it one). It runs inside the script's
		// command, under the pause that command holds: taking pause shared
		// again would wait behind a snapshot that waits for the script's
		// own hold, while the script holds miniredis's lock, and every
		// command would stop for good. Its keys are noted; the peer is not
		// kept (a new one comes with every call).
		e.mu.Unlock()
		if !readOnlyCmd(e.srv, cmd) {
			e.noteWrite(&peerState{}, cmd, args)
		}
		return false
	}
	if p == nil {
		p = &peerState{}
		e.peers[c] = p
		c.OnDisconnect(func() {
			e.mu.Lock()
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
		if !p.inMulti { // a nested MULTI is refused and changes nothing
			p.inMulti, p.queued, p.queuedAll = true, nil, false
		}
	case "DISCARD":
		p.inMulti, p.queued, p.queuedAll = false, nil, false
	}
	if readOnlyCmd(e.srv, cmd) {
		e.mu.Unlock()
		return false
	}
	p.inGate = true
	e.mu.Unlock()

	e.pause.RLock()
	e.noteWrite(p, cmd, args)
	e.srv.Dispatch(c, append([]string{cmd}, args...))
	e.pause.RUnlock()
	return true
}

// noteWrite records the keys cmd may change, for the next copy. A command
// queued in a MULTI changes nothing until its EXEC, which may come after a
// snapshot: its keys are noted again then. The caller holds pause shared.
func (e *Embedded) noteWrite(p *peerState, cmd string, args []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dirty.Store(true)
	var keys []string
	all := false
	if cmd == "EXEC" {
		keys, all = p.queued, p.queuedAll
		p.inMulti, p.queued, p.queuedAll = false, nil, false
	} else {
		var ok bool
		keys, ok = writtenKeys(cmd, args)
		all = !ok
		if p.inMulti {
			p.queued = append(p.queued, keys...)
			p.queuedAll = p.queuedAll || all
		}
	}
	if all {
		e.changedAll = true
	}
	for _, k := range keys {
		e.changed[k] = struct{}{}
	}
}

// writtenKeys names the keys a command that changes data may change, for
// the commands whose keys are known; ok is false for any other, and the
// next snapshot then copies every key.
func writtenKeys(cmd string, args []string) (keys []string, ok bool) {
	switch cmd {
	case "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL", "GETEX", "APPEND", "SETRANGE",
		"INCR", "INCRBY", "INCRBYFLOAT", "DECR", "DECRBY",
		"HSET", "HSETNX", "HMSET", "HDEL", "HINCRBY", "HINCRBYFLOAT",
		"ZADD", "ZREM", "ZINCRBY", "ZREMRANGEBYLEX", "ZREMRANGEBYRANK", "ZREMRANGEBYSCORE",
		"ZPOPMIN", "ZPOPMAX", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZRANGESTORE",
		"XADD", "XTRIM", "XDEL",
		"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST":
		// Only the first key changes (the *STORE commands read the others).
		if len(args) == 0 {
			return nil, true // refused by the server: changes nothing
		}
		return args[:1], true
	case "DEL", "UNLINK":
		return args, true
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO":
		// A script's own commands pass the gate one by one, and are noted.
		return nil, true
	case "RENAME", "RENAMENX", "COPY":
		if len(args) < 2 {
			return nil, true
		}
		return args[:2], true
	case "MSET", "MSETNX":
		for i := 0; i < len(args); i += 2 {
			keys = append(keys, args[i])
		}
		return keys, true
	}
	return nil, false
}

// readOnlyCmd: commands that change no data need not wait for a snapshot.
// miniredis marks its reading commands; these others only touch the
// connection (MULTI only queues; its EXEC is gated). XREAD is one of
// miniredis's: a blocked XREAD BLOCK holds no pause (and miniredis releases
// its own lock while it waits), so it stalls neither writers nor snapshots.
// A blocking command that is not read-only (BLPOP, XREADGROUP BLOCK, ...)
// would hold pause shared while it waits: a snapshot, and every write
// after it, would wait for its timeout. The app uses none.
func readOnlyCmd(srv *server.Server, cmd string) bool {
	switch cmd {
	case "PING", "ECHO", "AUTH", "HELLO", "CLIENT", "INFO", "TIME",
		"WATCH", "UNWATCH", "MULTI", "DISCARD", "QUIT", "COMMAND":
		return true
	}
	return srv.IsReadOnlyCommand(cmd)
}

// Health reports an error after two snapshots in a row failed (CONTRACT
// §8): /readyz then answers 503 until one is written again.
func (e *Embedded) Health() error {
	if n := e.failures.Load(); n >= 2 {
		if p := e.lastErr.Load(); p != nil {
			return fmt.Errorf("the snapshot %s could not be written %d times in a row: %w", e.path, n, *p)
		}
	}
	return nil
}

// Snapshot writes every key to the snapshot file now. The keys are copied
// while no command that changes data runs (see gate), each value copied
// into maps of the snapshot's own, so the copy is one consistent state;
// it is encoded and written after commands resume. A failure is reported
// on stderr every time and counted for Health.
func (e *Embedded) Snapshot() error {
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

func (e *Embedded) snapshot() error {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	written := e.copyChanged()
	snap := snapshotFile{Format: snapshotFormat, Written: written.UTC(), Keys: make(map[string]snapshotItem, len(e.cache))}
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
	return writeFileAtomic(e.path, b)
}

// copyChanged brings the cache up to date with writes paused: it copies
// every key changed since the last copy (every key, the first time or
// after a command whose keys are unknown), and returns the time of the
// copy. The caller holds snapMu.
func (e *Embedded) copyChanged() time.Time {
	e.pause.Lock()
	defer e.pause.Unlock()
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
		return now
	}
	for k := range changed {
		if ck, ok := copyKey(db, k, tick); ok {
			e.cache[k] = ck
		} else {
			delete(e.cache, k)
		}
	}
	return now
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
