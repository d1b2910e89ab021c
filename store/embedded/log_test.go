package embedded

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

// crash stops e as a killed process would stop: no last snapshot, the
// lock let go. Every write it answered is already in the log.
func crash(e *Server) {
	close(e.stop)
	<-e.done
	e.client.Close()
	e.m.Close()
	e.wal.close()
	e.unlock()
}

// storeState is every key of e as a snapshot would copy it.
func storeState(e *Server) map[string]cachedKey {
	e.pause.Lock()
	defer e.pause.Unlock()
	db := e.m.DB(0)
	out := map[string]cachedKey{}
	for _, k := range db.Keys() {
		if ck, ok := copyKey(db, k, e.lastTick); ok {
			out[k] = ck
		}
	}
	return out
}

func sameState(t *testing.T, got, want map[string]cachedKey) {
	t.Helper()
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("key %q is gone after the restart", k)
		case !reflect.DeepEqual(g.item, w.item):
			t.Errorf("key %q after the restart: %+v, want %+v", k, g.item, w.item)
		case g.expireAt.IsZero() != w.expireAt.IsZero() || g.expireAt.Sub(w.expireAt).Abs() > 2*time.Second:
			t.Errorf("key %q expires at %v after the restart, want %v", k, g.expireAt, w.expireAt)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatal("too many differences")
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("key %q is there after the restart, but was not before", k)
		}
	}
}

func openTest(t *testing.T, path string, stderr *bytes.Buffer) *Server {
	t.Helper()
	if stderr == nil {
		stderr = &bytes.Buffer{}
	}
	e, err := Open(Options{Path: path, Interval: time.Hour, Stderr: stderr,
		Fatal: func(err error) { t.Errorf("the log failed: %v", err) }}, &redis.Options{})
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	return e
}

// TestEmbeddedCrashKeepsEveryAnsweredWrite: after every kind of write the
// app and a script make (orders created, updated and deleted with their
// indexes, history and events; hash fields, sorted-set members added,
// scored, popped and removed by range, stream entries added, trimmed and
// deleted, TTLs set and removed, keys renamed and deleted, MULTI/EXEC, a
// script writing a key it does not declare, a command whose keys are not
// known), with a snapshot in the middle, a process that stops without a
// last snapshot comes back with exactly the state it answered.
func TestEmbeddedCrashKeepsEveryAnsweredWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	var stderr bytes.Buffer
	e := openTest(t, path, &stderr)
	s := redisstore.New(e.client, redisstore.Options{})
	c := e.client
	var ids []int64
	write := func(round int) {
		for i := range 30 {
			name := fmt.Sprintf("Ada %d-%d", round, i)
			o, err := s.CreateOrder(ctx, store.OrderInput{Customer: &name, HasItems: true, Items: []store.ItemInput{{SKU: "K-1", Name: "Key", Quantity: "2", UnitPrice: "1.50"}}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, o.ID)
		}
		for i, id := range ids {
			switch i % 3 {
			case 0:
				name := fmt.Sprintf("Grace %d-%d", round, i)
				if _, err := s.UpdateOrder(ctx, id, store.OrderInput{Customer: &name}, 0); err != nil && !strings.Contains(err.Error(), "not found") {
					t.Fatal(err)
				}
			case 1:
				st := "confirmed"
				_, _ = s.UpdateOrder(ctx, id, store.OrderInput{Status: &st}, 0)
			}
		}
		for _, id := range ids[len(ids)-5:] {
			_ = s.DeleteOrder(ctx, id, 0, 0)
		}
		_, _ = s.CreateOrderOnce(ctx, "idem-"+strconv.Itoa(round), "fp", store.OrderInput{Customer: ptr("Idem")})
		r := strconv.Itoa(round)
		for _, err := range []error{
			c.HSet(ctx, "h", "a", r, "b", "2", "c", "3").Err(),
			c.HDel(ctx, "h", "b").Err(),
			c.HIncrBy(ctx, "h", "n", 5).Err(),
			c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}, redis.Z{Score: 4, Member: "d" + r}).Err(),
			c.Do(ctx, "ZADD", "z", "XX", "CH", "10", "a").Err(),
			c.ZIncrBy(ctx, "z", 0.5, "b").Err(),
			c.ZRemRangeByScore(ctx, "z", "3", "3").Err(),
			c.ZPopMin(ctx, "z").Err(),
			c.ZRem(ctx, "z", "nothing").Err(),
			c.XAdd(ctx, &redis.XAddArgs{Stream: "x", MaxLen: 4, Values: []string{"r", r}}).Err(),
			c.XAdd(ctx, &redis.XAddArgs{Stream: "x", MaxLen: 4, Values: []string{"r", r + "b"}}).Err(),
			c.XAdd(ctx, &redis.XAddArgs{Stream: "x", MaxLen: 4, Values: []string{"r", r + "c"}}).Err(),
			c.Set(ctx, "ttl", r, time.Hour).Err(),
			c.Set(ctx, "persist", r, time.Hour).Err(),
			c.Persist(ctx, "persist").Err(),
			c.Set(ctx, "old", r, 0).Err(),
			c.Rename(ctx, "old", "new"+r).Err(),
			c.Set(ctx, "gone", r, 0).Err(),
			c.Del(ctx, "gone").Err(),
			c.SetBit(ctx, "bits", int64(round), 1).Err(), // keys not known: the record is every key
			c.Eval(ctx, `redis.call('HSET', 'undeclared', 'f', ARGV[1]); return redis.call('INCR', KEYS[1])`, []string{"counter"}, r).Err(),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if ms, err := c.XRange(ctx, "x", "-", "+").Result(); err == nil && len(ms) > 1 {
			must(t, c.XDel(ctx, "x", ms[1].ID).Err())
		}
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, "h")
			p.HSet(ctx, "h", "fresh", r)
			p.ZAdd(ctx, "z", redis.Z{Score: 7, Member: "tx" + r})
			p.XTrimMaxLen(ctx, "x", 2)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	must(t, e.Snapshot())
	write(2)
	want := storeState(e)
	crash(e)

	e2 := openTest(t, path, &stderr)
	defer e2.Close()
	sameState(t, storeState(e2), want)
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	// The id counter came back with the rest: a new order gets a new id.
	o, err := redisstore.New(e2.client, redisstore.Options{}).CreateOrder(ctx, store.OrderInput{Customer: ptr("After")})
	must(t, err)
	if last := ids[len(ids)-1]; o.ID <= last {
		t.Errorf("the first order after the restart got id %d; %d was handed out before", o.ID, last)
	}
	t.Logf("%d keys compared; %d log records, %d fsyncs before the crash", len(want), e.Stats().LogRecords, e.Stats().LogFsyncs)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// logFiles returns the paths of the log files of path, oldest first.
func logFiles(t *testing.T, path string) []string {
	t.Helper()
	seqs, err := listLogs(path)
	must(t, err)
	var out []string
	for _, n := range seqs {
		out = append(out, logBase(path)+strconv.FormatUint(n, 10))
	}
	return out
}

// TestEmbeddedLogEndCutShortIsSkipped: a log whose last record was cut
// short (a crash in the middle of writing it) or is followed by junk
// starts with a warning that names the file, keeps every record before,
// and is cut back so that later records follow whole ones. Damage before
// intact records refuses to start, naming the file, and changes nothing.
func TestEmbeddedLogEndCutShortIsSkipped(t *testing.T) {
	ctx := context.Background()
	// The file is its records, then zeros (made ahead of them).
	for _, tc := range []struct {
		name    string
		damage  func(b []byte, good, last int) []byte
		kept    int // of 20 keys
		warned  bool
		refused bool
	}{
		{"the last record cut short", func(b []byte, good, last int) []byte { return b[:good-5] }, 19, true, false},
		{"the last record cut short in the zeros", func(b []byte, good, last int) []byte {
			return append(b[:good-5], make([]byte, 100)...)
		}, 19, true, false},
		{"only the last record's header", func(b []byte, good, last int) []byte { return b[:good-last+7] }, 19, true, false},
		{"junk after the last record", func(b []byte, good, last int) []byte {
			copy(b[good:], "\x00\x00junk that is no record at all")
			return b
		}, 20, true, false},
		{"junk at the end of the file", func(b []byte, good, last int) []byte { return append(b, "junk"...) }, 20, true, false},
		{"nothing but the zeros after the records", func(b []byte, good, last int) []byte { return b }, 20, false, false},
		{"a damaged record in the middle", func(b []byte, good, last int) []byte {
			b[good/2] ^= 0xff
			return b
		}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "orders.json")
			var stderr bytes.Buffer
			e := openTest(t, path, &stderr)
			for i := range 20 {
				must(t, e.client.Set(ctx, fmt.Sprintf("k%02d", i), "v", 0).Err())
			}
			crash(e)
			logs := logFiles(t, path)
			if len(logs) != 1 {
				t.Fatalf("log files %v, want one", logs)
			}
			b, err := os.ReadFile(logs[0])
			must(t, err)
			recs, good, torn, err := parseLog(b)
			if err != nil || torn || len(recs) != 20 {
				t.Fatalf("the log before any damage: %d records, torn %v, %v; want 20 whole ones", len(recs), torn, err)
			}
			damaged := tc.damage(bytes.Clone(b), good, logHeader+len(recs[19]))
			must(t, os.WriteFile(logs[0], damaged, 0o644))

			e2, err := Open(Options{Path: path, Stderr: &stderr}, &redis.Options{})
			if tc.refused {
				if err == nil {
					e2.Close()
					t.Fatal("a log damaged before intact records: started; want a refusal")
				}
				if !strings.Contains(err.Error(), logs[0]) || !strings.Contains(err.Error(), "damaged") {
					t.Errorf("the refusal %q does not name the log %s and say it is damaged", err, logs[0])
				}
				if after, _ := os.ReadFile(logs[0]); !bytes.Equal(after, damaged) {
					t.Error("the refused log was changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("a log cut short at its end: %v; want a start with a warning", err)
			}
			n := 0
			for i := range 20 {
				if e2.m.Exists(fmt.Sprintf("k%02d", i)) {
					n++
				} else if i < tc.kept {
					t.Errorf("k%02d, written before the damaged end, is gone", i)
				}
			}
			if n != tc.kept {
				t.Errorf("%d keys kept, want %d", n, tc.kept)
			}
			if w := stderr.String(); tc.warned && (!strings.Contains(w, "WARNING") || !strings.Contains(w, logs[0])) {
				t.Errorf("stderr %q has no warning naming the log %s", w, logs[0])
			} else if !tc.warned && w != "" {
				t.Errorf("stderr %q, want nothing", w)
			}
			// Written after the cut, a write survives another crash.
			must(t, e2.client.Set(ctx, "after", "v", 0).Err())
			crash(e2)
			stderr.Reset()
			e3 := openTest(t, path, &stderr)
			defer e3.Close()
			if !e3.m.Exists("after") || stderr.Len() > 0 {
				t.Errorf("after the cut log was written to and the process crashed again: key there %v, stderr %q; want it there, no warning",
					e3.m.Exists("after"), stderr.String())
			}
		})
	}
}

// TestEmbeddedSnapshotAndLogAgreeAfterACrashBetweenThem: a crash after a
// snapshot is on disk but before the log it covers is deleted replays
// nothing of that log (it is deleted at start); one before the snapshot
// is written replays both logs on the older snapshot.
func TestEmbeddedSnapshotAndLogAgreeAfterACrashBetweenThem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.json")
	var stderr bytes.Buffer
	e := openTest(t, path, &stderr)
	c := e.client
	must(t, c.Set(ctx, "x", "1", 0).Err())
	must(t, c.RPush(ctx, "unlogged-type", "a").Err()) // a list: neither kept nor logged
	must(t, e.Snapshot())
	oldSnap, err := os.ReadFile(path)
	must(t, err)
	firstLog := logFiles(t, path)
	must(t, c.Set(ctx, "x", "2", 0).Err())
	must(t, c.Set(ctx, "y", "1", 0).Err())
	oldLog, err := os.ReadFile(firstLog[0])
	must(t, err)
	must(t, e.Snapshot())
	must(t, c.Set(ctx, "x", "3", 0).Err())
	crash(e)
	if logs := logFiles(t, path); len(logs) != 1 || logs[0] == firstLog[0] {
		t.Fatalf("log files after two snapshots: %v; want one, newer than %v", logs, firstLog)
	}

	// The snapshot is on disk, the log it covers still there.
	must(t, os.WriteFile(firstLog[0], oldLog, 0o644))
	e2 := openTest(t, path, &stderr)
	if v := e2.m.DB(0); !v.Exists("y") {
		t.Error("y is gone")
	}
	if got, _ := e2.m.Get("x"); got != "3" {
		t.Errorf("x = %q after a restart with a covered log left behind, want 3", got)
	}
	if _, err := os.Stat(firstLog[0]); err == nil {
		t.Errorf("the covered log %s is still there", firstLog[0])
	}
	must(t, e2.client.Set(ctx, "x", "4", 0).Err())
	crash(e2)

	// The older snapshot, and every log since it.
	must(t, os.WriteFile(path, oldSnap, 0o644))
	logs := logFiles(t, path)
	must(t, os.WriteFile(firstLog[0], oldLog, 0o644))
	e3 := openTest(t, path, &stderr)
	defer e3.Close()
	if got, _ := e3.m.Get("x"); got != "4" || !e3.m.Exists("y") {
		t.Errorf("x = %q, y there %v after replaying %v and %v on the older snapshot; want 4 and y there", got, e3.m.Exists("y"), firstLog, logs)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	// The next snapshot covers both: they go.
	must(t, e3.Snapshot())
	if after := logFiles(t, path); len(after) != 1 || slices.Contains(logs, after[0]) || after[0] == firstLog[0] {
		t.Errorf("log files after the next snapshot: %v; want one, newer than %v and %v", after, firstLog, logs)
	}
}

// TestEmbeddedSecondProcessOnTheSameDataIsRefused: the data files take
// one process: a second open names the data file and says another process
// holds it; the first goes on.
func TestEmbeddedSecondProcessOnTheSameDataIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orders.json")
	e := openTest(t, path, nil)
	defer e.Close()
	e2, err := Open(Options{Path: path}, &redis.Options{})
	if err == nil {
		e2.Close()
		t.Fatal("a second store on the same data file opened; want a refusal")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another process") {
		t.Errorf("the refusal %q does not name %s and say another process holds it", err, path)
	}
	must(t, e.client.Set(context.Background(), "still", "here", 0).Err())
}

// TestEmbeddedWriteThatCannotBeLoggedIsNeverAnswered: when the log cannot
// be written, the write waiting for it gets no answer (its client times
// out), nor does any write after it, and Fatal is told, naming the file.
func TestEmbeddedWriteThatCannotBeLoggedIsNeverAnswered(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.json")
	fatal := make(chan error, 4)
	e, err := Open(Options{Path: path, Interval: time.Hour, Stderr: &bytes.Buffer{},
		Fatal: func(err error) { fatal <- err }}, &redis.Options{ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	must(t, err)
	must(t, e.client.Set(ctx, "before", "v", 0).Err())
	// The disk fails: here, the file is closed under the log.
	e.wal.mu.Lock()
	lf := e.wal.files[len(e.wal.files)-1]
	e.wal.mu.Unlock()
	lf.f.Close()
	for _, k := range []string{"lost", "after"} {
		if err := e.client.Set(ctx, k, "v", 0).Err(); err == nil {
			t.Errorf("SET %s was answered OK with the log failing; want no answer", k)
		}
	}
	select {
	case err := <-fatal:
		if !strings.Contains(err.Error(), lf.path) {
			t.Errorf("Fatal got %q, which does not name the log %s", err, lf.path)
		}
	default:
		t.Error("Fatal was not called")
	}
	lf.f = nil // closed already
	_ = e.Close()
}
