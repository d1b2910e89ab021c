package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

func openEmbedded(t *testing.T, opt store.EmbeddedOptions) *store.Embedded {
	t.Helper()
	e, err := store.OpenEmbedded(opt, &redis.Options{})
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	return e
}

// TestEmbeddedSnapshotsUnderConcurrentWrites: 8 writers create, update and
// delete while snapshots are taken every 50 ms (the live sorted-set maps
// of miniredis used to be encoded after writes resumed: "concurrent map
// iteration and map write" within seconds). Nothing crashes, and after
// Close and a reopen every acknowledged order is there at its last
// acknowledged version, with every index whole.
func TestEmbeddedSnapshotsUnderConcurrentWrites(t *testing.T) {
	d := 3 * time.Second
	if s := os.Getenv("ORDERS_EMBEDDED_SECONDS"); s != "" {
		if n, err := time.ParseDuration(s + "s"); err == nil {
			d = n
		}
	}
	path := filepath.Join(t.TempDir(), "orders.json")
	var stderr bytes.Buffer
	e := openEmbedded(t, store.EmbeddedOptions{Path: path, Interval: 50 * time.Millisecond, Stderr: &stderr})
	s := store.New(e.Client(), store.Options{})
	var snaps atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Count snapshots by the file being replaced.
		defer wg.Done()
		var last time.Time
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if fi, err := os.Stat(path); err == nil && fi.ModTime() != last {
				last = fi.ModTime()
				snaps.Add(1)
			}
		}
	}()
	live, deleted, _, acks := churn(t, s, 8, d)
	close(stop)
	wg.Wait()
	if err := e.Close(); err != nil {
		t.Fatalf("Close (the last snapshot): %v", err)
	}
	if snaps.Load() < 10 {
		t.Errorf("only %d snapshots were written during %v of writes; want at least 10", snaps.Load(), d)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}

	e2 := openEmbedded(t, store.EmbeddedOptions{Path: path})
	defer e2.Close()
	s2 := store.New(e2.Client(), store.Options{})
	r := checkWhole(t, s2, 0, live, deleted)
	t.Logf("%v of writes: %d acknowledged, %d snapshots, then %v", d, acks, snaps.Load(), r)
}

// TestEmbeddedRefusesConnectionsWithoutItsPassword: another local user
// who finds the loopback port gets NOAUTH, not the orders (CONTRACT §8).
func TestEmbeddedRefusesConnectionsWithoutItsPassword(t *testing.T) {
	e := openEmbedded(t, store.EmbeddedOptions{})
	defer e.Close()
	ctx := context.Background()
	if err := e.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("the app's own client: %v", err)
	}
	stranger := redis.NewClient(&redis.Options{Addr: e.Client().Options().Addr})
	defer stranger.Close()
	err := stranger.Get(ctx, "k").Err()
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("a client without the password: got %v, want NOAUTH", err)
	}
	wrong := redis.NewClient(&redis.Options{Addr: e.Client().Options().Addr, Password: "guess"})
	defer wrong.Close()
	if err := wrong.Get(ctx, "k").Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Errorf("a client with a wrong password: got %v, want an auth error", err)
	}
}

// TestEmbeddedSnapshotFailureIsLoud: a snapshot that cannot be written is
// an error on stderr every time, Health reports it after two in a row, and
// the last snapshot's failure is Close's error (main exits non-zero).
func TestEmbeddedSnapshotFailureIsLoud(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var stderr bytes.Buffer
	e := openEmbedded(t, store.EmbeddedOptions{Path: filepath.Join(dir, "orders.json"), Interval: time.Hour, Stderr: &stderr})
	// The data folder becomes a file: no snapshot can be written (tests
	// run as root, so permissions would not stop them).
	must(t, os.RemoveAll(dir))
	must(t, os.WriteFile(dir, []byte("x"), 0o644))
	s := store.New(e.Client(), store.Options{})
	if _, err := s.Create(context.Background(), store.Input{Customer: ptr("Ada")}); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(); err == nil {
		t.Fatal("Snapshot into a path under a file: no error")
	}
	if e.Health() != nil {
		t.Errorf("Health after one failure: %v, want nil (it turns after two)", e.Health())
	}
	_ = e.Snapshot()
	if e.Health() == nil {
		t.Error("Health after two failures in a row: nil, want an error")
	}
	if n := strings.Count(stderr.String(), "ERROR"); n != 2 {
		t.Errorf("stderr has %d error lines, want 2:\n%s", n, stderr.String())
	}
	if err := e.Close(); err == nil {
		t.Error("Close with a failing last snapshot: nil, want its error")
	}
}

// TestEmbeddedKeysExpireAndKeepTheirTTL: a key with a TTL (an
// Idempotency-Key, a deleted order's tombstone) expires by the wall clock
// within a couple of seconds, and a snapshot keeps what it had left to
// live; the time the process was stopped counts too.
func TestEmbeddedKeysExpireAndKeepTheirTTL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, store.EmbeddedOptions{Path: path})
	c := e.Client()
	must(t, c.Set(ctx, "short", "v", 300*time.Millisecond).Err())
	must(t, c.Set(ctx, "hour", "v", time.Hour).Err())
	must(t, c.Set(ctx, "three-hours", "v", 3*time.Hour).Err())
	must(t, c.Set(ctx, "forever", "v", 0).Err())
	start := time.Now()
	for {
		n, err := c.Exists(ctx, "short").Result()
		must(t, err)
		if n == 0 {
			break
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("a key with a 300 ms TTL still exists after %v; want it gone within 3 s", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, e.Close())

	e2 := openEmbedded(t, store.EmbeddedOptions{Path: path})
	ttl, err := e2.Client().TTL(ctx, "hour").Result()
	if err != nil || ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("TTL of 'hour' after a restart: %v (%v), want about an hour", ttl, err)
	}
	if ttl, _ := e2.Client().TTL(ctx, "forever").Result(); ttl != -1 {
		t.Errorf("TTL of a key without one after a restart: %v, want none (-1)", ttl)
	}
	must(t, e2.Close())

	// As if the process had been stopped for two hours since.
	b, err := os.ReadFile(path)
	must(t, err)
	var snap map[string]any
	must(t, json.Unmarshal(b, &snap))
	written, err := time.Parse(time.RFC3339Nano, snap["written"].(string))
	must(t, err)
	snap["written"] = written.Add(-2 * time.Hour)
	b, err = json.Marshal(snap)
	must(t, err)
	must(t, os.WriteFile(path, b, 0o644))
	e3 := openEmbedded(t, store.EmbeddedOptions{Path: path})
	defer e3.Close()
	c3 := e3.Client()
	if n, _ := c3.Exists(ctx, "hour").Result(); n != 0 {
		t.Error("a key with an hour to live, two hours after the snapshot: still there, want it expired")
	}
	if ttl, _ := c3.TTL(ctx, "three-hours").Result(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("a key with three hours to live, two hours after the snapshot: TTL %v, want about an hour", ttl)
	}
	if n, _ := c3.Exists(ctx, "forever").Result(); n != 1 {
		t.Error("a key without a TTL is gone after a restart")
	}
}

// TestEmbeddedIdempotencyKeySurvivesRestart: a client that retries a
// create with its Idempotency-Key after the app restarted gets the same
// order, not a second one (the key lives in the snapshot with its TTL).
func TestEmbeddedIdempotencyKeySurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, store.EmbeddedOptions{Path: path})
	first, err := store.New(e.Client(), store.Options{}).CreateOnce(ctx, "retry-1", "fp", store.Input{Customer: ptr("Ada")})
	must(t, err)
	must(t, e.Close())
	e2 := openEmbedded(t, store.EmbeddedOptions{Path: path})
	defer e2.Close()
	s2 := store.New(e2.Client(), store.Options{})
	again, err := s2.CreateOnce(ctx, "retry-1", "fp", store.Input{Customer: ptr("Ada")})
	must(t, err)
	if again.ID != first.ID {
		t.Errorf("the retry after a restart created order %d; want the first one, %d", again.ID, first.ID)
	}
	if n, _ := s2.Count(ctx); n != 1 {
		t.Errorf("%d orders after the retry, want 1", n)
	}
	ttl, _ := e2.Client().TTL(ctx, findKey(t, e2.Client(), "idem:")).Result()
	if ttl < store.IdempotencyTTL-time.Minute || ttl > store.IdempotencyTTL {
		t.Errorf("the Idempotency-Key's TTL after a restart: %v, want about %v", ttl, store.IdempotencyTTL)
	}
}

// findKey returns the one key that contains part.
func findKey(t *testing.T, c *redis.Client, part string) string {
	t.Helper()
	keys, err := c.Keys(context.Background(), "*"+part+"*").Result()
	must(t, err)
	if len(keys) != 1 {
		t.Fatalf("keys with %q: %v, want one", part, keys)
	}
	return keys[0]
}

// TestEmbeddedSnapshotIsTheStoreState: after 8 writers (creates, updates,
// deletes with tombstones, idempotent creates) and snapshots every 20 ms,
// each one copying only the keys changed since the one before, a
// snapshot taken once the writers stopped holds exactly what the store
// holds: every key, value and TTL, nothing more.
func TestEmbeddedSnapshotIsTheStoreState(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, store.EmbeddedOptions{Path: path, Interval: 20 * time.Millisecond})
	defer e.Close()
	s := store.New(e.Client(), store.Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = s.CreateOnce(ctx, fmt.Sprintf("key-%d", i%50), "fp", store.Input{Customer: ptr("Idem")})
		}
	}()
	churn(t, s, 8, 2*time.Second)
	close(stop)
	wg.Wait()
	must(t, e.Snapshot())
	b, err := os.ReadFile(path)
	must(t, err)
	var snap struct {
		Keys map[string]struct {
			String *string            `json:"string"`
			Hash   map[string]string  `json:"hash"`
			ZSet   map[string]float64 `json:"zset"`
			TTLms  int64              `json:"ttl_ms"`
		} `json:"keys"`
	}
	must(t, json.Unmarshal(b, &snap))
	c := e.Client()
	keys, err := c.Keys(ctx, "*").Result()
	must(t, err)
	if len(keys) != len(snap.Keys) {
		t.Errorf("the store has %d keys, the snapshot %d", len(keys), len(snap.Keys))
	}
	bad := 0
	for _, k := range keys {
		it, ok := snap.Keys[k]
		if !ok {
			t.Errorf("key %q is in the store, not in the snapshot", k)
			bad++
			continue
		}
		var same bool
		switch typ := c.Type(ctx, k).Val(); typ {
		case "string":
			same = it.String != nil && *it.String == c.Get(ctx, k).Val()
		case "hash":
			same = maps.Equal(it.Hash, c.HGetAll(ctx, k).Val())
		case "zset":
			z := map[string]float64{}
			for _, m := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
				z[m.Member.(string)] = m.Score
			}
			same = maps.Equal(it.ZSet, z)
		}
		if !same {
			t.Errorf("key %q differs between the store and the snapshot", k)
			bad++
		}
		ttl := c.PTTL(ctx, k).Val()
		if snapTTL := time.Duration(it.TTLms) * time.Millisecond; (ttl > 0) != (snapTTL > 0) || (ttl-snapTTL).Abs() > 5*time.Second {
			t.Errorf("key %q: TTL %v in the store, %v in the snapshot", k, ttl, snapTTL)
			bad++
		}
		if bad > 10 {
			t.Fatal("too many differences")
		}
	}
	t.Logf("%d keys compared", len(keys))
}

// TestEmbeddedSnapshotCatchesQueuedAndUnlistedWrites: a command queued in
// a MULTI before a snapshot and executed after it, and a write command the
// snapshot does not know the keys of, are both in the next snapshot.
func TestEmbeddedSnapshotCatchesQueuedAndUnlistedWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, store.EmbeddedOptions{Path: path, Interval: time.Hour})
	c := e.Client()
	must(t, c.Set(ctx, "queued", "old", 0).Err())
	must(t, e.Snapshot())
	conn := c.Conn()
	must(t, conn.Do(ctx, "MULTI").Err())
	must(t, conn.Do(ctx, "SET", "queued", "new").Err())
	must(t, e.Snapshot()) // between the queueing and the EXEC
	must(t, conn.Do(ctx, "EXEC").Err())
	must(t, conn.Close())
	must(t, e.Snapshot())
	b, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Contains(b, []byte(`"queued":{"string":"new"}`)) {
		t.Errorf("a SET queued before a snapshot, executed after: not in the next snapshot:\n%s", b)
	}
	must(t, c.SetBit(ctx, "bits", 7, 1).Err()) // a command not in the snapshot's list
	must(t, e.Close())

	e2 := openEmbedded(t, store.EmbeddedOptions{Path: path})
	defer e2.Close()
	if v := e2.Client().Get(ctx, "queued").Val(); v != "new" {
		t.Errorf("a SET queued before a snapshot, executed after: %q after a restart, want \"new\"", v)
	}
	if v := e2.Client().Get(ctx, "bits").Val(); v != "\x01" {
		t.Errorf("a key written by SETBIT: %q after a restart, want \"\\x01\"", v)
	}
}
