package redisstore_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// ownRedis is a redis-server of the test's own, without persistence of its
// own accord: it loads dir/dump.rdb when it starts, if there is one.
type ownRedis struct {
	port int
	dir  string
	cmd  *exec.Cmd
}

func (r *ownRedis) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := r.cmd
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.port)})
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("redis-server does not answer")
		}
	}
}

// TestForgottenWritesNeverReuseAnId: when Redis forgets acknowledged
// writes under load — wiped (restarted empty) or restored from an older
// snapshot — no id a client was given is handed out again, the forgetting
// is logged as one ERROR, the store answers ready again once it is safe,
// the layout mark is back, and the indexes are whole afterwards, with no
// restart and no manual step.
func TestForgottenWritesNeverReuseAnId(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testutil.Skip(t, testutil.NoRedisServer)
	}
	for _, how := range []string{"wiped", "restored"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &ownRedis{port: testutil.ClusterPort(t, map[int]bool{}), dir: t.TempDir()}
			r.start(t)
			o := &redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.port)}
			redisstore.Deadlines(o)
			c := redis.NewClient(o)
			t.Cleanup(func() { _ = c.Close() })
			var logs testutil.SyncBuffer
			s := redisstore.New(c, redisstore.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if _, _, err := s.Upgrade(ctx); err != nil {
				t.Fatal(err)
			}
			go s.WatchForgetting(ctx, 200*time.Millisecond)

			var mu sync.Mutex
			given := map[int64]bool{} // every id a create acknowledged
			var keys atomic.Int64
			create := func(who string) {
				var got *store.Order
				var err error
				if strings.HasSuffix(who, "1") || strings.HasSuffix(who, "3") {
					// Creates with an Idempotency-Key draw their ids too.
					k := strconv.FormatInt(keys.Add(1), 10)
					got, err = s.CreateOrderOnce(ctx, "key-"+k, "fp-"+k, store.OrderInput{Customer: ptr(who)})
				} else {
					got, err = s.CreateOrder(ctx, store.OrderInput{Customer: ptr(who)})
				}
				if err != nil {
					return // Redis restarting: a 503, nothing acknowledged
				}
				mu.Lock()
				defer mu.Unlock()
				if given[got.ID] {
					t.Errorf("id %d was handed out twice", got.ID)
				}
				given[got.ID] = true
			}
			for range 40 {
				create("Ada Lovelace")
			}
			if how == "restored" {
				must(t, c.Save(ctx).Err())
				old, err := os.ReadFile(filepath.Join(r.dir, "dump.rdb"))
				must(t, err)
				for range 40 {
					create("Grace Hopper") // acknowledged, then lost by the restore
				}
				must(t, os.WriteFile(filepath.Join(r.dir, "old.rdb"), old, 0o600))
			}
			p, err := s.CreateProduct(ctx, store.ProductInput{SKU: ptr("BOLT-1"), Name: ptr("Bolt"), UnitPrice: ptr("1.00")})
			must(t, err)

			stop := make(chan struct{})
			var writers sync.WaitGroup
			for w := range 4 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						create("Writer " + strconv.Itoa(w))
					}
				}()
			}
			time.Sleep(200 * time.Millisecond)
			if how == "wiped" {
				must(t, c.FlushAll(ctx).Err())
			} else {
				_ = r.cmd.Process.Kill()
				_ = r.cmd.Wait()
				must(t, os.Rename(filepath.Join(r.dir, "old.rdb"), filepath.Join(r.dir, "dump.rdb")))
				r.start(t)
			}
			time.Sleep(500 * time.Millisecond)
			close(stop)
			writers.Wait()

			deadline := time.Now().Add(20 * time.Second)
			for st := s.Forgetting(); st.Detected == 0 || st.Recovering; st = s.Forgetting() {
				if time.Now().After(deadline) {
					t.Fatalf("the forgetting was not recovered from within 20 s: %+v", st)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := s.Ready(ctx); err != nil {
				t.Errorf("not ready after the recovery: %v", err)
			}
			if got, err := c.Get(ctx, "layout").Result(); err != nil || got != redisstore.Layout {
				t.Errorf("the layout mark after the recovery: %q, %v; want %q", got, err, redisstore.Layout)
			}
			r2, err := s.Repair(ctx, false)
			must(t, err)
			if r2.Problems() != 0 {
				t.Errorf("the indexes after the recovery: %s", r2)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
				t.Errorf("%d ERROR lines, want 1:\n%s", n, logs.String())
			}
			// Created after the recovery: fresh ids, for products too.
			create("Katherine Johnson")
			q, err := s.CreateProduct(ctx, store.ProductInput{SKU: ptr("BOLT-2"), Name: ptr("Bolt"), UnitPrice: ptr("1.00")})
			must(t, err)
			if q.ID <= p.ID {
				t.Errorf("a product created after the recovery got id %d; %d was handed out before", q.ID, p.ID)
			}
			page, err := s.ListOrders(ctx, store.OrderQuery{Page: 1, PerPage: 10})
			must(t, err)
			t.Logf("%s: %d ids acknowledged, %d orders listed after the recovery, %+v", how, len(given), page.Total, s.Forgetting())
		})
	}
}

// TestNotReadyUntilTheCountersArePastTheIdsInUse: after a wipe, while Redis
// cannot take the write that moves the id counters past the ids already
// handed out (here it is full), the store answers not ready and hands out
// no id; once Redis takes writes, it is ready and the next id is fresh.
func TestNotReadyUntilTheCountersArePastTheIdsInUse(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testutil.Skip(t, testutil.NoRedisServer)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &ownRedis{port: testutil.ClusterPort(t, map[int]bool{}), dir: t.TempDir()}
	r.start(t)
	o := &redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.port)}
	redisstore.Deadlines(o)
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	s := redisstore.New(c, redisstore.Options{Logger: testutil.Logger(t)})
	if _, _, err := s.Upgrade(ctx); err != nil {
		t.Fatal(err)
	}
	var last int64
	for range 5 {
		got, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Ada Lovelace")})
		must(t, err)
		last = got.ID
	}
	go s.WatchForgetting(ctx, 100*time.Millisecond)
	// Full first, then wiped: a watcher that looked between the two would
	// move the counters before Redis refused writes.
	must(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	must(t, c.FlushAll(ctx).Err())
	deadline := time.Now().Add(10 * time.Second)
	for s.Forgetting().Detected == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the wipe was not noticed within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCode(t, "Ready while the counters cannot be moved", s.Ready(ctx), store.EUNAVAILABLE)
	if got, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Grace Hopper")}); err == nil {
		t.Errorf("a create while the counters cannot be moved got id %d", got.ID)
	}
	must(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	for s.Ready(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready 10 s after Redis takes writes again: %v", s.Ready(ctx))
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Katherine Johnson")})
	must(t, err)
	if got.ID <= last {
		t.Errorf("the first create once ready got id %d; %d was handed out before the wipe", got.ID, last)
	}
}
