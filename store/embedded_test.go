package store_test

import (
	"bytes"
	"context"
	"errors"
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
// Idempotency-Key) expires by the wall clock, and a snapshot keeps what it
// had left to live.
func TestEmbeddedKeysExpireAndKeepTheirTTL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, store.EmbeddedOptions{Path: path})
	c := e.Client()
	must(t, c.Set(ctx, "short", "v", 100*time.Millisecond).Err())
	must(t, c.Set(ctx, "long", "v", time.Hour).Err())
	must(t, c.Set(ctx, "forever", "v", 0).Err())
	time.Sleep(250 * time.Millisecond)
	if n, _ := c.Exists(ctx, "short").Result(); n != 0 {
		t.Error("a key with a 100 ms TTL still exists after 250 ms")
	}
	must(t, e.Close())
	e2 := openEmbedded(t, store.EmbeddedOptions{Path: path})
	defer e2.Close()
	ttl, err := e2.Client().TTL(ctx, "long").Result()
	if err != nil || ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("TTL of 'long' after a restart: %v (%v), want about an hour", ttl, err)
	}
	if ttl, _ := e2.Client().TTL(ctx, "forever").Result(); ttl != -1 {
		t.Errorf("TTL of a key without one after a restart: %v, want none (-1)", ttl)
	}
}
