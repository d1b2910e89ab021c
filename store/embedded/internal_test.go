package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

// TestEmbeddedPauseHoldsCommandsInsideTheServer: the snapshot's pause is
// enforced inside the embedded server, so a write whose client gave up
// (its 500 ms read timeout, a cancelled request) can neither run during a
// snapshot's copy nor let the copy start while it is still to run. (A
// pause in a go-redis hook would end as soon as the client stopped
// waiting, while the command still ran in miniredis later.)
func TestEmbeddedPauseHoldsCommandsInsideTheServer(t *testing.T) {
	e, err := Open(Options{Path: filepath.Join(t.TempDir(), "orders.json"), Interval: time.Hour},
		&redis.Options{ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if err := e.client.Ping(ctx).Err(); err != nil { // a connection, authenticated
		t.Fatal(err)
	}

	// 1. A write sent before the snapshot, stuck in a busy server, whose
	// client gives up: the snapshot waits for it.
	e.m.Lock() // miniredis's own command lock: the server is busy
	err = e.client.Set(ctx, "before", "v", 0).Err()
	if err == nil {
		e.m.Unlock()
		t.Fatal("a SET to a server that cannot run it answered; want a timeout")
	}
	acquired, seen := make(chan struct{}), make(chan bool, 2)
	go func() {
		e.pause.Lock()
		close(acquired)
		seen <- e.m.Exists("before")
		time.Sleep(100 * time.Millisecond)
		seen <- e.m.Exists("before")
		e.pause.Unlock()
	}()
	select {
	case <-acquired:
		e.m.Unlock()
		t.Fatal("the snapshot's pause began while a write the client had given up on was still to run")
	case <-time.After(300 * time.Millisecond):
	}
	e.m.Unlock()
	if before, after := <-seen, <-seen; !before || !after {
		t.Errorf("inside the pause the key was there at its start: %v, at its end: %v; want there at both (written before the pause)", before, after)
	}

	// 2. A write sent during a snapshot, whose client gives up: it does
	// not run until the pause ends (then it does: a write answered 503
	// may still happen,).
	e.pause.Lock()
	if err := e.client.Set(ctx, "during", "v", 0).Err(); err == nil {
		e.pause.Unlock()
		t.Fatal("a SET during the pause answered; want a timeout")
	}
	time.Sleep(100 * time.Millisecond)
	ran := e.m.Exists("during")
	e.pause.Unlock()
	if ran {
		t.Error("a write ran inside the snapshot's pause")
	}
	deadline := time.Now().Add(2 * time.Second)
	for !e.m.Exists("during") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !e.m.Exists("during") {
		t.Error("the write held by the pause never ran after it")
	}
}

// BenchmarkEmbeddedSnapshotPause reports how long a snapshot holds writes
// at 20,000 orders: the first (full) copy, and later ones under 8 writers,
// which copy only the keys changed since (go test -bench SnapshotPause
// -benchtime 10x ./store/embedded).
func BenchmarkEmbeddedSnapshotPause(b *testing.B) {
	ctx := context.Background()
	e, err := Open(Options{Path: filepath.Join(b.TempDir(), "orders.json"), Interval: time.Hour}, &redis.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	s := redisstore.New(e.Client(), redisstore.Options{})
	if _, err := s.Seed(ctx, 20000, nil); err != nil {
		b.Fatal(err)
	}
	if err := e.Snapshot(); err != nil {
		b.Fatal(err)
	}
	full := time.Duration(e.lastPause.Load())
	stop := make(chan struct{})
	for w := range 8 {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := fmt.Sprintf("W%d N%d", w, i)
				if o, err := s.CreateOrder(ctx, store.OrderInput{Customer: &c}); err == nil {
					_, _ = s.UpdateOrder(ctx, o.ID, store.OrderInput{Notes: &c}, 0)
				}
			}
		}()
	}
	defer close(stop)
	var worst, total time.Duration
	b.ResetTimer()
	for range b.N {
		time.Sleep(500 * time.Millisecond)
		if err := e.Snapshot(); err != nil {
			b.Fatal(err)
		}
		p := time.Duration(e.lastPause.Load())
		worst, total = max(worst, p), total+p
	}
	b.ReportMetric(float64(total)/float64(b.N)/1e6, "pause-ms")
	b.ReportMetric(float64(worst)/1e6, "worst-pause-ms")
	b.ReportMetric(float64(full)/1e6, "full-pause-ms") // after ResetTimer, which drops metrics
}

// TestEmbeddedStreamWritesAreNoted: XADD (alone, and queued in a MULTI
// whose EXEC comes after a snapshot), XTRIM and XDEL note their stream for
// the next copy, which then copies only the changed keys (a command whose
// keys were unknown would make it copy every key).
func TestEmbeddedStreamWritesAreNoted(t *testing.T) {
	e, err := Open(Options{Path: filepath.Join(t.TempDir(), "orders.json"), Interval: time.Hour}, &redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	c := e.client
	for _, k := range []string{"trim:events", "del:events"} {
		for range 3 {
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"k", "v"}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	noted := func(when string, want ...string) {
		t.Helper()
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.changedAll {
			t.Errorf("%s: the next copy would copy every key; want only %v", when, want)
		}
		for _, k := range want {
			if _, ok := e.changed[k]; !ok {
				t.Errorf("%s: %q is not noted for the next copy (noted: %v)", when, k, e.changed)
			}
		}
	}
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", MaxLen: 10000, Approx: true, Values: []string{"k", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	noted("XADD", "o:events")
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}

	conn := c.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "MULTI").Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "XADD", "p:{7}:events", "MAXLEN", "~", "10000", "*", "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(); err != nil { // between the queueing and the EXEC
		t.Fatal(err)
	}
	if err := conn.Do(ctx, "EXEC").Err(); err != nil {
		t.Fatal(err)
	}
	noted("XADD queued in a MULTI, executed after a snapshot", "p:{7}:events")
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}

	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", MaxLen: 10000, Approx: true, Values: []string{"k", "v"}})
		p.XAdd(ctx, &redis.XAddArgs{Stream: "p:{8}:events", MaxLen: 10000, Approx: true, Values: []string{"k", "v"}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	noted("XADDs in go-redis's TxPipelined", "o:events", "p:{8}:events")
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}

	if err := c.XTrimMaxLen(ctx, "trim:events", 1).Err(); err != nil {
		t.Fatal(err)
	}
	first := c.XRange(ctx, "del:events", "-", "+").Val()[0].ID
	if err := c.XDel(ctx, "del:events", first).Err(); err != nil {
		t.Fatal(err)
	}
	noted("XTRIM and XDEL", "trim:events", "del:events")
}

// TestEmbeddedStreamCopyIsItsOwn: a snapshot's copy of a stream is its
// own, not miniredis's slice, whose array XDEL shifts in place: an XDEL
// after the copy (while the copy is being encoded, writes resumed) leaves
// the copy as it was.
func TestEmbeddedStreamCopyIsItsOwn(t *testing.T) {
	e, err := Open(Options{Path: filepath.Join(t.TempDir(), "orders.json"), Interval: time.Hour}, &redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		id, err := e.client.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", Values: []string{"n", fmt.Sprint(i)}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.snapMu.Lock()
	e.copyChanged(nil)
	copied := e.cache["o:events"].item.Stream
	e.snapMu.Unlock()
	if err := e.client.XDel(ctx, "o:events", ids[1]).Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range copied {
		got = append(got, en.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("the copy taken before an XDEL of %s: %v after it; want %v", ids[1], got, ids)
	}
}
