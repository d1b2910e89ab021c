package embedded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/embedded"
	"orders/store/redisstore"
	"orders/testutil"
)

func openEmbedded(t *testing.T, opt embedded.Options) *embedded.Server {
	t.Helper()
	e, err := embedded.Open(opt, &redis.Options{})
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	return e
}

// TestEmbeddedSnapshotsUnderConcurrentWrites: 8 writers create, update and
// delete while snapshots are taken every 50 ms (encoding miniredis's live
// sorted-set maps after writes resume fails with "concurrent map iteration
// and map write" within seconds). Nothing crashes, and after
// Close and a reopen every acknowledged order is there at its last
// acknowledged version, with every index whole.
func TestEmbeddedSnapshotsUnderConcurrentWrites(t *testing.T) {
	testutil.Long(t)
	d := 3 * time.Second
	if s := os.Getenv("ORDERS_EMBEDDED_SECONDS"); s != "" {
		if n, err := time.ParseDuration(s + "s"); err == nil {
			d = n
		}
	}
	path := filepath.Join(t.TempDir(), "orders.json")
	var stderr bytes.Buffer
	e := openEmbedded(t, embedded.Options{Path: path, Interval: 50 * time.Millisecond, Stderr: &stderr})
	s := redisstore.New(e.Client(), redisstore.Options{})
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
	live, deleted, _, acks := testutil.Churn(t, s, 8, d)
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

	e2 := openEmbedded(t, embedded.Options{Path: path})
	defer e2.Close()
	s2 := redisstore.New(e2.Client(), redisstore.Options{})
	r := testutil.CheckWhole(t, s2, 0, live, deleted)
	t.Logf("%v of writes: %d acknowledged, %d snapshots, then %v", d, acks, snaps.Load(), r)
}

// TestEmbeddedRefusesConnectionsWithoutItsPassword: another local user
// who finds the loopback port gets NOAUTH, not the orders.
func TestEmbeddedRefusesConnectionsWithoutItsPassword(t *testing.T) {
	e := openEmbedded(t, embedded.Options{})
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
	e := openEmbedded(t, embedded.Options{Path: filepath.Join(dir, "orders.json"), Interval: time.Hour, Stderr: &stderr})
	// The data folder becomes a file: no snapshot can be written (tests
	// run as root, so permissions would not stop them).
	must(t, os.RemoveAll(dir))
	must(t, os.WriteFile(dir, []byte("x"), 0o644))
	s := redisstore.New(e.Client(), redisstore.Options{})
	if _, err := s.CreateOrder(context.Background(), store.OrderInput{Customer: ptr("Ada")}); err != nil {
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
	e := openEmbedded(t, embedded.Options{Path: path})
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

	e2 := openEmbedded(t, embedded.Options{Path: path})
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
	e3 := openEmbedded(t, embedded.Options{Path: path})
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
	e := openEmbedded(t, embedded.Options{Path: path})
	first, err := redisstore.New(e.Client(), redisstore.Options{}).CreateOrderOnce(ctx, "retry-1", "fp", store.OrderInput{Customer: ptr("Ada")})
	must(t, err)
	must(t, e.Close())
	e2 := openEmbedded(t, embedded.Options{Path: path})
	defer e2.Close()
	s2 := redisstore.New(e2.Client(), redisstore.Options{})
	again, err := s2.CreateOrderOnce(ctx, "retry-1", "fp", store.OrderInput{Customer: ptr("Ada")})
	must(t, err)
	if again.ID != first.ID {
		t.Errorf("the retry after a restart created order %d; want the first one, %d", again.ID, first.ID)
	}
	if n, _ := s2.CountOrders(ctx); n != 1 {
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
	e := openEmbedded(t, embedded.Options{Path: path, Interval: 20 * time.Millisecond})
	defer e.Close()
	s := redisstore.New(e.Client(), redisstore.Options{})
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
			_, _ = s.CreateOrderOnce(ctx, fmt.Sprintf("key-%d", i%50), "fp", store.OrderInput{Customer: ptr("Idem")})
		}
	}()
	testutil.Churn(t, s, 8, 2*time.Second)
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
	streams := snapshotStreams(t, path)
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
		case "stream": // the orders' and products' events
			same = reflect.DeepEqual(streams[k], xrange(t, c, k))
		default:
			t.Errorf("key %q has type %q, which this test does not compare", k, typ)
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
	e := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
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

	e2 := openEmbedded(t, embedded.Options{Path: path})
	defer e2.Close()
	if v := e2.Client().Get(ctx, "queued").Val(); v != "new" {
		t.Errorf("a SET queued before a snapshot, executed after: %q after a restart, want \"new\"", v)
	}
	if v := e2.Client().Get(ctx, "bits").Val(); v != "\x01" {
		t.Errorf("a key written by SETBIT: %q after a restart, want \"\\x01\"", v)
	}
}

// streamEntry is one entry as XRANGE answers it: its fields in order (go-
// redis's XMessage keeps them in a map, losing order and repeated fields).
type streamEntry struct {
	ID     string
	Values []string
}

// xrange returns the whole stream k, oldest first, as the store answers.
func xrange(t *testing.T, c *redis.Client, k string) []streamEntry {
	t.Helper()
	raw, err := c.Do(context.Background(), "XRANGE", k, "-", "+").Slice()
	must(t, err)
	out := make([]streamEntry, 0, len(raw))
	for _, r := range raw {
		pair := r.([]any)
		en := streamEntry{ID: pair[0].(string)}
		for _, v := range pair[1].([]any) {
			en.Values = append(en.Values, v.(string))
		}
		out = append(out, en)
	}
	return out
}

// streamID parses "ms-seq".
func streamID(t *testing.T, id string) [2]uint64 {
	t.Helper()
	ms, seq, ok := strings.Cut(id, "-")
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		t.Errorf("stream ID %q is not ms-seq", id) // not Fatal: readers' goroutines call it
	}
	return [2]uint64{a, b}
}

func idLess(t *testing.T, a, b string) bool {
	x, y := streamID(t, a), streamID(t, b)
	return x[0] < y[0] || x[0] == y[0] && x[1] < y[1]
}

// snapshotStreams reads the streams of the snapshot file, as written.
func snapshotStreams(t *testing.T, path string) map[string][]streamEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var snap struct {
		Keys map[string]struct {
			Stream [][]json.RawMessage `json:"stream"`
		} `json:"keys"`
	}
	must(t, json.Unmarshal(b, &snap))
	out := map[string][]streamEntry{}
	for k, it := range snap.Keys {
		for _, r := range it.Stream {
			var en streamEntry
			if len(r) != 2 || json.Unmarshal(r[0], &en.ID) != nil || json.Unmarshal(r[1], &en.Values) != nil {
				t.Fatalf("key %q: a stream entry in the snapshot is not [id, [field, value, ...]]: %s", k, r)
			}
			out[k] = append(out[k], en)
		}
	}
	return out
}

// TestEmbeddedStreamSurvivesRestart: streams written as the app writes
// them (XADD MAXLEN ~ alone and in MULTI/EXEC), one trimmed by MAXLEN, one
// with an XDEL, one with a TTL, are after Close and a reopen the same
// entries with the same IDs, fields in the same order (repeated fields
// too), oldest first; a new XADD "*" gets an ID above every restored one,
// also when the restored IDs are ahead of the clock (as after the clock
// went back). The snapshot keeps them compact: [["id",["f","v",...]],...].
func TestEmbeddedStreamSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	c := e.Client()
	for i := range 12 {
		args := []any{"XADD", "o:events", "MAXLEN", "~", "10000", "*", "type", "order.updated", "id", strconv.Itoa(i),
			"z", "last field first", "note", "Grüße, \"quoted\"\n", "empty", "", "id", "repeated"}
		if i%3 == 0 {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, args...)
				p.HIncrBy(ctx, "o:count", "events", 1)
				return nil
			})
			must(t, err)
		} else {
			must(t, c.Do(ctx, args...).Err())
		}
	}
	for i := range 10 {
		must(t, c.Do(ctx, "XADD", "p:{7}:events", "MAXLEN", "~", "3", "*", "n", strconv.Itoa(i)).Err())
	}
	for i := range 5 {
		must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "del:events", Values: []string{"n", strconv.Itoa(i)}}).Err())
	}
	must(t, c.XDel(ctx, "del:events", xrange(t, c, "del:events")[2].ID).Err())
	must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "ttl:events", Values: []string{"k", "v"}}).Err())
	must(t, c.Expire(ctx, "ttl:events", time.Hour).Err())
	// An ID an hour ahead of the clock: after the restart the clock is
	// "behind" the stream, as if it had been set back.
	ahead := time.Now().Add(time.Hour).UnixMilli()
	must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "ahead:events", ID: fmt.Sprintf("%d-5", ahead), Values: []string{"k", "v"}}).Err())

	keys := []string{"o:events", "p:{7}:events", "del:events", "ttl:events", "ahead:events"}
	before := map[string][]streamEntry{}
	for _, k := range keys {
		before[k] = xrange(t, c, k)
	}
	if n := len(before["p:{7}:events"]); n != 3 {
		t.Errorf("a stream of 10 XADDs with MAXLEN ~ 3 has %d entries; miniredis trims exactly: want 3", n)
	}
	if n := len(before["del:events"]); n != 4 {
		t.Fatalf("5 XADDs and an XDEL: %d entries, want 4", n)
	}
	must(t, e.Close())

	b, err := os.ReadFile(path)
	must(t, err)
	if want := fmt.Sprintf(`"ahead:events":{"stream":[["%d-5",["k","v"]]]}`, ahead); !bytes.Contains(b, []byte(want)) {
		t.Errorf("the snapshot does not hold the stream compactly as %s:\n%s", want, b)
	}

	e2 := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	defer e2.Close()
	c2 := e2.Client()
	for _, k := range keys {
		if typ := c2.Type(ctx, k).Val(); typ != "stream" {
			t.Errorf("%q after a restart: type %q, want stream", k, typ)
		}
		after := xrange(t, c2, k)
		if !reflect.DeepEqual(after, before[k]) {
			t.Errorf("%q after a restart:\n%v\nwant\n%v", k, after, before[k])
		}
		last := before[k][len(before[k])-1].ID
		id, err := c2.XAdd(ctx, &redis.XAddArgs{Stream: k, MaxLen: 10000, Approx: true, Values: []string{"k", "after"}}).Result()
		must(t, err)
		if !idLess(t, last, id) {
			t.Errorf("%q: XADD * after a restart got %s, not above the newest restored entry %s", k, id, last)
		}
	}
	if got := xrange(t, c2, "ahead:events"); got[len(got)-1].ID != fmt.Sprintf("%d-6", ahead) {
		t.Errorf("XADD * to a stream whose newest ID is ahead of the clock: %s, want %d-6", got[len(got)-1].ID, ahead)
	}
	if ttl := c2.TTL(ctx, "ttl:events").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("a stream's TTL after a restart: %v, want about an hour", ttl)
	}
	if ttl := c2.TTL(ctx, "o:events").Val(); ttl != -1 {
		t.Errorf("a stream without a TTL after a restart: TTL %v, want none (-1)", ttl)
	}
}

// TestEmbeddedStreamIncrementalSnapshot: after a first snapshot, the next
// ones copy only the keys changed since, and they hold every XADD made
// after the first (alone, in MULTI/EXEC, queued before a snapshot and
// executed after), XTRIM and XDEL: the snapshot file is what the store
// holds, and so is the store after a restart.
func TestEmbeddedStreamIncrementalSnapshot(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	c := e.Client()
	add := func(k string, n int) {
		for i := range n {
			must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: k, MaxLen: 10000, Approx: true, Values: []string{"n", strconv.Itoa(i)}}).Err())
		}
	}
	add("o:events", 3)
	add("trim:events", 5)
	add("del:events", 5)
	must(t, c.Set(ctx, "other", "v", 0).Err())
	must(t, e.Snapshot())

	add("o:events", 2)
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", MaxLen: 10000, Approx: true, Values: []string{"in", "multi"}})
		p.XAdd(ctx, &redis.XAddArgs{Stream: "p:{1}:events", MaxLen: 10000, Approx: true, Values: []string{"new", "stream"}})
		return nil
	})
	must(t, err)
	must(t, c.XTrimMaxLen(ctx, "trim:events", 2).Err())
	must(t, c.XDel(ctx, "del:events", xrange(t, c, "del:events")[1].ID).Err())
	must(t, e.Snapshot())
	conn := c.Conn()
	must(t, conn.Do(ctx, "MULTI").Err())
	must(t, conn.Do(ctx, "XADD", "p:{2}:events", "MAXLEN", "~", "10000", "*", "queued", "before").Err())
	must(t, e.Snapshot()) // between the queueing and the EXEC
	must(t, conn.Do(ctx, "EXEC").Err())
	must(t, conn.Close())
	add("o:events", 1)
	must(t, e.Snapshot())

	keys := []string{"o:events", "trim:events", "del:events", "p:{1}:events", "p:{2}:events"}
	want := map[string][]streamEntry{}
	for _, k := range keys {
		want[k] = xrange(t, c, k)
	}
	if len(want["o:events"]) != 7 || len(want["trim:events"]) != 2 || len(want["del:events"]) != 4 {
		t.Fatalf("the store: %v", want)
	}
	got := snapshotStreams(t, path)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the snapshot's streams:\n%v\nthe store's:\n%v", got, want)
	}
	must(t, e.Close())
	e2 := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	defer e2.Close()
	for _, k := range keys {
		if after := xrange(t, e2.Client(), k); !reflect.DeepEqual(after, want[k]) {
			t.Errorf("%q after a restart:\n%v\nwant\n%v", k, after, want[k])
		}
	}
}

// TestEmbeddedXReadBlockStallsNothing: clients blocked in XREAD BLOCK 5000
// (as the app's live updates wait) hold up neither writes from other
// clients (XADD alone and in MULTI/EXEC, SET) nor snapshots: each one
// finishes well within the block time, while the readers are still
// blocked. A blocked reader then wakes up promptly with an XADD made by
// another client.
func TestEmbeddedXReadBlockStallsNothing(t *testing.T) {
	ctx := context.Background()
	const block = 5 * time.Second
	e := openEmbedded(t, embedded.Options{Path: filepath.Join(t.TempDir(), "orders.json"), Interval: time.Hour})
	defer e.Close()
	c := e.Client()
	must(t, c.Set(ctx, "warm", "v", 0).Err())
	must(t, e.Snapshot())

	type result struct {
		streams []redis.XStream
		err     error
		at      time.Time
	}
	read := func(k string) chan result {
		ch := make(chan result, 1)
		go func() {
			s, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{k, "$"}, Count: 500, Block: block}).Result()
			ch <- result{s, err, time.Now()}
		}()
		return ch
	}
	quiet := read("quiet:events") // an empty stream nobody writes until the end
	woken := read("p:{1}:events")
	time.Sleep(200 * time.Millisecond) // both are blocked in the server now

	start := time.Now()
	var worst time.Duration
	timed := func(what string, f func() error) {
		t.Helper()
		t0 := time.Now()
		must(t, f())
		d := time.Since(t0)
		worst = max(worst, d)
		if d > block/5 {
			t.Errorf("%s took %v while readers were blocked for %v; want well under that", what, d, block)
		}
	}
	for i := range 5 {
		timed("XADD", func() error {
			return c.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", MaxLen: 10000, Approx: true, Values: []string{"n", strconv.Itoa(i)}}).Err()
		})
		timed("XADD in MULTI/EXEC", func() error {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", MaxLen: 10000, Approx: true, Values: []string{"tx", strconv.Itoa(i)}})
				p.HSet(ctx, "o:1", "n", i)
				return nil
			})
			return err
		})
		timed("SET", func() error { return c.Set(ctx, "k", i, 0).Err() })
		timed("Snapshot", e.Snapshot)
	}
	phase := time.Since(start)
	for name, ch := range map[string]chan result{"quiet:events": quiet, "p:{1}:events": woken} {
		select {
		case r := <-ch:
			t.Fatalf("the reader of %s returned during the writes (%v, %v); want it still blocked", name, r.streams, r.err)
		default:
		}
	}

	wake := func(k string, ch chan result) {
		t.Helper()
		id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: k, MaxLen: 10000, Approx: true, Values: []string{"wake", "up"}}).Result()
		must(t, err)
		sent := time.Now()
		select {
		case r := <-ch:
			if r.err != nil || len(r.streams) != 1 || len(r.streams[0].Messages) != 1 || r.streams[0].Messages[0].ID != id {
				t.Errorf("the reader of %s got %v (%v); want the entry %s", k, r.streams, r.err, id)
			}
			if d := r.at.Sub(sent); d > block/5 {
				t.Errorf("the reader of %s woke %v after the XADD; want promptly", k, d)
			}
		case <-time.After(2 * block):
			t.Fatalf("the reader of %s never woke up", k)
		}
	}
	wake("p:{1}:events", woken)
	wake("quiet:events", quiet)
	t.Logf("20 writes and 5 snapshots in %v with two readers blocked (slowest %v)", phase, worst)
}

// TestEmbeddedXReadBlockDuringSnapshotsUnderLoad (run it with -race):
// writers XADD to three streams (alone and in MULTI/EXEC), another XADDs,
// XDELs and XTRIMs a fourth, while snapshots run back to back and a
// reader per stream follows it with XREAD BLOCK 1000 COUNT 500 as the app
// does. Each reader gets every acknowledged entry of its stream once, in
// order; after Close and a reopen the streams are what the store held.
func TestEmbeddedXReadBlockDuringSnapshotsUnderLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, embedded.Options{Path: path, Interval: 10 * time.Millisecond})
	c := e.Client()
	streams := []string{"o:events", "p:{1}:events", "p:{2}:events"}
	var (
		mu    sync.Mutex
		acked = map[string][]string{}
	)
	stop := make(chan struct{})
	var writers, others sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < 1500; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := streams[(w+i)%len(streams)]
				a := &redis.XAddArgs{Stream: k, MaxLen: 10000, Approx: true, Values: []string{"w", strconv.Itoa(w), "i", strconv.Itoa(i)}}
				var id string
				if i%2 == 0 {
					var cmd *redis.StringCmd
					_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						cmd = p.XAdd(ctx, a)
						p.HIncrBy(ctx, "counts", k, 1)
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					id = cmd.Val()
				} else {
					var err error
					if id, err = c.XAdd(ctx, a).Result(); err != nil {
						t.Error(err)
						return
					}
				}
				mu.Lock()
				acked[k] = append(acked[k], id)
				mu.Unlock()
			}
		}()
	}
	others.Add(2)
	go func() { // XDEL and XTRIM shift and cut a stream that snapshots copy
		defer others.Done()
		var ids []string
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "del:events", Values: []string{"i", strconv.Itoa(i)}}).Result()
			if err != nil {
				t.Error(err)
				return
			}
			ids = append(ids, id)
			if i%3 == 2 {
				err = c.XDel(ctx, "del:events", ids[len(ids)/2]).Err()
			}
			if i%50 == 49 && err == nil {
				err = c.XTrimMaxLen(ctx, "del:events", 20).Err()
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var snaps atomic.Int64
	go func() {
		defer others.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := e.Snapshot(); err != nil {
				t.Error(err)
				return
			}
			snaps.Add(1)
		}
	}()

	writersDone := make(chan struct{})
	seen := make([][]string, len(streams))
	var readers sync.WaitGroup
	for r, k := range streams {
		readers.Add(1)
		go func() {
			defer readers.Done()
			cursor := "0-0"
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				select {
				case <-writersDone:
					// Done once past the newest acknowledged entry: the
					// greatest id, not the last appended (writers append
					// theirs in the order their answers came, which is not
					// always the order of the ids).
					mu.Lock()
					newest := ""
					for _, id := range acked[k] {
						if newest == "" || idLess(t, newest, id) {
							newest = id
						}
					}
					mu.Unlock()
					if newest == "" || !idLess(t, cursor, newest) {
						return
					}
				default:
				}
				res, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{k, cursor}, Count: 500, Block: time.Second}).Result()
				if errors.Is(err, redis.Nil) {
					continue
				}
				if err != nil {
					t.Errorf("XREAD BLOCK on %s: %v", k, err)
					return
				}
				for _, m := range res[0].Messages {
					if !idLess(t, cursor, m.ID) {
						t.Errorf("%s: XREAD after %s answered %s", k, cursor, m.ID)
					}
					cursor = m.ID
					seen[r] = append(seen[r], m.ID)
				}
			}
			t.Errorf("the reader of %s did not catch up", k)
		}()
	}

	time.Sleep(1500 * time.Millisecond)
	close(stop)
	writers.Wait()
	close(writersDone)
	others.Wait()
	readers.Wait()

	total := 0
	for r, k := range streams {
		a := slices.Clone(acked[k])
		slices.SortFunc(a, func(x, y string) int {
			if idLess(t, x, y) {
				return -1
			}
			return 1
		})
		total += len(a)
		if !slices.Equal(seen[r], a) {
			t.Errorf("%s: the reader got %d entries, %d were acknowledged (or not the same, or not in order)", k, len(seen[r]), len(a))
		}
	}
	want := map[string][]streamEntry{}
	for _, k := range append(streams, "del:events") {
		want[k] = xrange(t, c, k)
	}
	must(t, e.Close())
	e2 := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	defer e2.Close()
	for k, w := range want {
		if got := xrange(t, e2.Client(), k); !reflect.DeepEqual(got, w) {
			t.Errorf("%q after a restart: %d entries, want the %d the store held (or not the same)", k, len(got), len(w))
		}
	}
	t.Logf("%d entries acknowledged and read back, %d snapshots", total, snaps.Load())
}

// TestEmbeddedResetsACursorLostWithAnOlderSnapshot: the embedded store
// started from an older snapshot (a backup put back, or the last
// snapshot before a crash) has lost the newest events. A cursor of a lost
// event is gone once new events are added past it; a cursor of an event
// the snapshot held replays exactly what followed.
func TestEmbeddedResetsACursorLostWithAnOlderSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.json")
	e := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	s := redisstore.New(e.Client(), redisstore.Options{})
	for i := range 2 {
		_, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprint("Kept ", i))})
		must(t, err)
	}
	must(t, e.Snapshot())
	backup, err := os.ReadFile(path)
	must(t, err)
	for i := range 3 {
		_, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprint("Lost ", i))})
		must(t, err)
	}
	before := testutil.Events(t, s.Feed(store.OrderEvents), "0-0")
	must(t, e.Close())
	// A restore from the backup: the snapshot, without the newer logs
	// (which the start would otherwise refuse to skip).
	must(t, os.WriteFile(path, backup, 0o600))
	logs, err := filepath.Glob(path + ".log.*")
	must(t, err)
	for _, l := range logs {
		must(t, os.Remove(l))
	}

	e2 := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	defer e2.Close()
	s2 := redisstore.New(e2.Client(), redisstore.Options{})
	feed := s2.Feed(store.OrderEvents)
	for i := range 2 {
		_, err := s2.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprint("After ", i))})
		must(t, err)
	}
	after := testutil.Events(t, feed, "0-0")
	if len(before) != 5 || len(after) != 4 || after[1].Cursor != before[1].Cursor {
		t.Fatalf("%d events before, %d after the older snapshot, want 5 and 4 (the first two the same)", len(before), len(after))
	}
	for _, e := range before[2:] {
		if evs, err := feed.Replay(ctx, e.Cursor, true); !errors.Is(err, store.ErrCursorGone) {
			t.Errorf("Replay(%s) of an event the older snapshot lost: %d events, %v; want ErrCursorGone", e.Cursor, len(evs), err)
		}
	}
	evs, err := feed.Replay(ctx, before[1].Cursor, true)
	must(t, err)
	if d := testutil.SameCursors(evs, after[2:]); d != "" {
		t.Errorf("Replay(%s) of an event the older snapshot held: %s", before[1].Cursor, d)
	}
}

// TestEmbeddedScriptsThatWriteNeverStopTheStore: a Lua script's writes
// (a live stream taking its slot) run while snapshots are taken. The
// store keeps answering, and every snapshot is written.
func TestEmbeddedScriptsThatWriteNeverStopTheStore(t *testing.T) {
	testutil.Long(t)
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, embedded.Options{Path: path, Interval: time.Hour})
	lim := redisstore.NewLimits(redisstore.New(e.Client(), redisstore.Options{}), store.LimitOptions{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened, failed atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				slot, err := lim.OpenStream(ctx, fmt.Sprintf("192.0.2.%d", (w*1000+i)%250))
				if err == nil {
					opened.Add(1)
					err = slot.Close(ctx)
				}
				cancel()
				if err != nil {
					var th *store.Throttled
					if !errors.As(err, &th) {
						failed.Add(1)
					}
				}
			}
		}()
	}
	snapped := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 200 && err == nil; i++ {
			err = e.Snapshot()
		}
		snapped <- err
	}()
	var err error
	select {
	case err = <-snapped:
	case <-time.After(15 * time.Second):
		close(stop)
		t.Fatalf("200 snapshots beside scripts that write did not end in 15 s: the store stopped (%d streams opened, %d commands failed)", opened.Load(), failed.Load())
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Errorf("a snapshot failed: %v", err)
	}
	if failed.Load() > 0 {
		t.Errorf("%d stream opens or closes failed beside the snapshots", failed.Load())
	}
	t.Logf("%d streams opened and closed beside 200 snapshots", opened.Load())
	// What a script writes is in the next snapshot.
	must(t, e.Client().Eval(context.Background(), "redis.call('SET', KEYS[1], ARGV[1]) return 1", []string{"scripted"}, "by a script").Err())
	must(t, e.Snapshot())
	b, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Contains(b, []byte(`"scripted":{"string":"by a script"}`)) {
		t.Errorf("a SET inside a script: not in the next snapshot")
	}
	must(t, e.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
func ptr[T any](v T) *T { return &v }

// TestEmbeddedUndoSurvivesRestart: an order deleted before a restart of
// the embedded store can be restored after it, within the undo window
// (its kept values come back from the log with what is left of their
// TTL), and then holds its items again.
func TestEmbeddedUndoSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openEmbedded(t, embedded.Options{Path: path})
	o, err := redisstore.New(e.Client(), redisstore.Options{}).CreateOrder(ctx, store.OrderInput{Customer: ptr("Ada"), HasItems: true,
		Items: []store.ItemInput{{Name: "Mug", Quantity: "2", UnitPrice: "3.50"}}})
	must(t, err)
	must(t, redisstore.New(e.Client(), redisstore.Options{}).DeleteOrder(ctx, o.ID, 0, 0))
	must(t, e.Close())
	e2 := openEmbedded(t, embedded.Options{Path: path})
	defer e2.Close()
	ttl, _ := e2.Client().PTTL(ctx, findKey(t, e2.Client(), ":undo")).Result()
	if ttl <= 0 || ttl > store.UndoWindow {
		t.Errorf("the undo copy's TTL after a restart: %v, want at most %v", ttl, store.UndoWindow)
	}
	r, err := redisstore.New(e2.Client(), redisstore.Options{}).RestoreOrder(ctx, o.ID)
	if err != nil || len(r.Items) != 1 || r.Total != o.Total || r.Version != o.Version+1 {
		t.Fatalf("the restore after a restart: %+v, %v", r, err)
	}
}
