package store

import (
	"context"
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Embedded is the in-process Redis (miniredis) that `go run .` uses, made
// durable by a snapshot file: loaded at start, written atomically (temp
// file, fsync, rename) every few seconds when something changed, and on
// Close. miniredis itself keeps nothing on disk.
type Embedded struct {
	m      *miniredis.Miniredis
	client *redis.Client
	path   string
	log    *slog.Logger

	// pause is held shared by every write command and exclusively by a
	// snapshot, so a snapshot never sees half of a transaction.
	pause sync.RWMutex
	dirty atomic.Bool
	stop  chan struct{}
	done  chan struct{}
	// interval between snapshots.
	interval time.Duration
	// failures counts snapshots that failed in a row; stderr gets every one.
	failures atomic.Int64
	lastErr  atomic.Pointer[error]
	stderr   io.Writer
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
	// TTLms is the time the key had left to live, in milliseconds; 0: none.
	TTLms int64 `json:"ttl_ms,omitempty"`
}

const snapshotFormat = "orders-snapshot-1"

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
// Keys with a TTL expire by the wall clock.
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
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("starting the embedded store: %w", err)
	}
	e := &Embedded{m: m, path: opt.Path, log: opt.Log, interval: opt.Interval, stderr: opt.Stderr}
	if err := e.load(); err != nil {
		m.Close()
		return nil, err
	}
	o := *client
	o.Addr = m.Addr()
	o.Password = password
	e.client = redis.NewClient(&o)
	e.client.AddHook(pauseHook{e})
	if e.path != "" {
		e.stop, e.done = make(chan struct{}), make(chan struct{})
		go e.loop()
	}
	return e, nil
}

// Client returns the client the application uses.
func (e *Embedded) Client() *redis.Client { return e.client }

// Close writes a last snapshot and stops the embedded store.
func (e *Embedded) Close() error {
	var err error
	if e.stop != nil {
		close(e.stop)
		<-e.done
		err = e.Snapshot()
	}
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
	for k, v := range snap.Keys {
		if v.TTLms < 0 {
			continue // it had expired when the snapshot was taken
		}
		switch {
		case v.String != nil:
			_ = e.m.Set(k, *v.String)
		case v.Hash != nil:
			fv := make([]string, 0, 2*len(v.Hash))
			for f, val := range v.Hash {
				fv = append(fv, f, val)
			}
			e.m.HSet(k, fv...)
		case v.ZSet != nil:
			for m, s := range v.ZSet {
				_, _ = e.m.ZAdd(k, s, m)
			}
		}
		if v.TTLms > 0 {
			e.m.SetTTL(k, time.Duration(v.TTLms)*time.Millisecond)
		}
	}
	e.log.Info("loaded the snapshot", "file", e.path, "keys", len(snap.Keys), "written", snap.Written)
	return nil
}

func (e *Embedded) loop() {
	defer close(e.done)
	t := time.NewTicker(e.interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			if e.dirty.Load() || e.failures.Load() > 0 {
				_ = e.Snapshot()
			}
		}
	}
}

// Health reports an error after two snapshots in a row failed (CONTRACT
// §8): /readyz then answers 503 until one is written again.
func (e *Embedded) Health() error {
	if e.failures.Load() >= 2 {
		if p := e.lastErr.Load(); p != nil {
			return fmt.Errorf("the snapshot %s could not be written %d times in a row: %w", e.path, e.failures.Load(), *p)
		}
	}
	return nil
}

// Snapshot writes every key to the snapshot file now. The keys are copied
// while writes are paused (every write command holds a shared lock that the
// copy takes exclusively), each value copied whole, so the copy is one
// consistent state; it is encoded and written after writes resume. A
// failure is reported on stderr every time and counted for Health.
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
	e.pause.Lock()
	e.dirty.Store(false)
	snap := snapshotFile{Format: snapshotFormat, Written: time.Now().UTC(), Keys: map[string]snapshotItem{}}
	for _, k := range e.m.Keys() {
		var it snapshotItem
		switch e.m.Type(k) {
		case "string":
			v, _ := e.m.Get(k)
			it.String = &v
		case "hash":
			fields, _ := e.m.HKeys(k)
			h := make(map[string]string, len(fields))
			for _, f := range fields {
				h[f] = e.m.HGet(k, f)
			}
			it.Hash = h
		case "zset":
			// SortedSet returns miniredis's own map: copy it now, while
			// writes are paused (encoding it later raced with writers).
			z, _ := e.m.SortedSet(k)
			it.ZSet = maps.Clone(z)
		default:
			continue
		}
		if ttl := e.m.TTL(k); ttl > 0 {
			it.TTLms = max(ttl.Milliseconds(), 1)
		}
		snap.Keys[k] = it
	}
	e.pause.Unlock()
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	return writeFileAtomic(e.path, b)
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

// readOnly lists the commands the application sends that change nothing.
var readOnly = map[string]bool{
	"ping": true, "hgetall": true, "hget": true, "hmget": true, "exists": true, "get": true,
	"zcard": true, "zrange": true, "zrevrange": true, "zrangebylex": true, "zlexcount": true,
	"zscore": true, "watch": true, "unwatch": true, "hello": true, "client": true, "info": true,
	"type": true, "scan": true,
}

type pauseHook struct{ e *Embedded }

func (pauseHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h pauseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if readOnly[strings.ToLower(cmd.Name())] {
			return next(ctx, cmd)
		}
		h.e.pause.RLock()
		defer h.e.pause.RUnlock()
		h.e.dirty.Store(true)
		return next(ctx, cmd)
	}
}

func (h pauseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if !readOnly[strings.ToLower(c.Name())] {
				h.e.pause.RLock()
				defer h.e.pause.RUnlock()
				h.e.dirty.Store(true)
				break
			}
		}
		return next(ctx, cmds)
	}
}
