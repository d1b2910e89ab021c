package redisstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestConcurrentWritesKeepIndexesWhole: writers racing on the same orders
// (renames, status changes, stale versions, deletes) leave every order in
// every index it belongs in and no entry anywhere else, on every target.
func TestConcurrentWritesKeepIndexesWhole(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go f.s.Reconcile(ctx, 0)
			live, deleted, _, acks := testutil.Churn(t, f.s, 8, 2*time.Second)
			r := testutil.CheckWhole(t, f.s, 5*time.Second, live, deleted)
			t.Logf("%s: %d acknowledged writes, %d live, %d deleted; %v", tg.Name, acks, len(live), len(deleted), r)
		})
	}
}

// faults fails index writes on their way out and, on the node clients,
// answers an error for a transaction that did happen: what a crash or a
// timeout between a record's transaction and its index writes leaves.
type faults struct {
	rate     float64
	injected atomic.Int64
}

var errInjected = errors.New("injected fault")

func (f *faults) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *faults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hdel" && rand.Float64() < f.rate {
			f.injected.Add(1)
			return errInjected // the intent is never deleted
		}
		return next(ctx, cmd)
	}
}
func (f *faults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		index, exec := false, false
		for _, c := range cmds {
			switch c.Name() {
			case "zadd", "zrem":
				index = true
			case "exec":
				exec = true
			}
		}
		if rand.Float64() >= f.rate {
			return next(ctx, cmds)
		}
		switch {
		case exec:
			// The transaction happens; its writer hears a failure.
			err := next(ctx, cmds)
			f.injected.Add(1)
			if err != nil {
				return err
			}
			return errInjected
		case index:
			f.injected.Add(1)
			return errInjected // the index writes never happen
		}
		return next(ctx, cmds)
	}
}

// TestClusterIndexFaultsAreRepairedWithin5s: on a Redis Cluster, where an
// order's index entries cannot share its transaction, writers whose index
// writes fail after the record's transaction (or who hear an error for a
// transaction that happened) leave intents; another instance's reconciler
// settles every one, and within 5 seconds of the last write the indexes
// are whole and every acknowledged write is there.
func TestClusterIndexFaultsAreRepairedWithin5s(t *testing.T) {
	addrs := os.Getenv("ORDERS_TEST_CLUSTER")
	var tg testutil.Target
	for _, x := range testutil.Targets(t) {
		if x.Cluster {
			tg = x
		}
	}
	if addrs == "" || tg.Client == nil {
		if os.Getenv("ORDERS_REQUIRE_REDIS") == "1" {
			t.Fatal("*** ORDERS_TEST_CLUSTER is not set, and ORDERS_REQUIRE_REDIS=1 ***")
		}
		testutil.Skip(t, testutil.NoCluster)
	}
	f := fresh(t, tg)
	fl := &faults{rate: 0.25}
	faulty := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: strings.Split(addrs, ","),
		NewClient: func(o *redis.Options) *redis.Client {
			c := redis.NewClient(o)
			c.AddHook(fl)
			return c
		},
	})
	defer faulty.Close()
	faulty.AddHook(fl)
	writer := redisstore.New(faulty, redisstore.Options{Prefix: f.prefix, Cluster: true})

	live, deleted, _, acks := testutil.Churn(t, writer, 8, 3*time.Second)
	last := time.Now()
	// Another instance, with a healthy connection, reconciles.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.s.Reconcile(ctx, 0)
	r := testutil.CheckWhole(t, f.s, 5*time.Second-time.Since(last), live, deleted)
	if n, err := tg.Client.HLen(context.Background(), f.prefix+"ix:intents").Result(); err != nil || n != 0 {
		t.Errorf("intents left after the repair window: %d (%v)", n, err)
	}
	if fl.injected.Load() == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
	t.Logf("%d acknowledged writes, %d faults injected, whole %v after the last write; %v",
		acks, fl.injected.Load(), time.Since(last).Round(time.Millisecond), r)
}

// TestRepairFindsAndFixesEveryDrift: a missing entry, an entry for a
// missing order, an entry under a status the order left, and a damaged
// hash are each found by the check; the repair fixes the first three and
// leaves the damaged record alone (it is reported, never a crash).
func TestRepairFindsAndFixesEveryDrift(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			a := f.create(t, "Grace Hopper")
			b := f.create(t, "Alan Turing")
			c := tg.Client
			// a lost its entry in the id index; 9999 has entries but no order;
			// b has a stale entry in the confirmed index; 77 is a damaged hash.
			must(t, c.ZRem(ctx, f.prefix+"ix:{id}:pending", strconv.FormatInt(a.ID, 10)).Err())
			must(t, c.ZAdd(ctx, f.prefix+"ix:{id}:pending", redis.Z{Score: 9999, Member: "9999"}).Err())
			must(t, c.ZAdd(ctx, f.prefix+"ix:{id}:confirmed", redis.Z{Score: float64(b.ID), Member: strconv.FormatInt(b.ID, 10)}).Err())
			must(t, c.HSet(ctx, f.prefix+"o:{77}", "v", "3", "c", "Damaged").Err())

			r, err := f.s.Repair(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if r.Records != 2 || r.Missing != 1 || r.Dangling != 1 || r.Stale != 1 {
				t.Errorf("check: got %v, want 2 records, 1 missing, 1 dangling, 1 stale", r)
			}
			if r, err = f.s.Repair(ctx, true); err != nil || r.Fixed != 3 {
				t.Errorf("repair: got %v, %v; want 3 records fixed", r, err)
			}
			if r, err = f.s.Repair(ctx, false); err != nil || r.Missing+r.Dangling+r.Stale != 0 {
				t.Errorf("check after repair: got %v, %v; want nothing wrong", r, err)
			}
			if p := f.list(t, store.OrderQuery{}); p.Total != 2 || len(p.Orders) != 2 {
				t.Errorf("list after repair: total %d, %d orders; want 2", p.Total, len(p.Orders))
			}
			if p := f.list(t, store.OrderQuery{Status: store.Confirmed}); p.Total != 0 {
				t.Errorf("confirmed list after repair: total %d; want 0", p.Total)
			}
			// The damaged record reads as missing: skipped, not a panic.
			if _, err := f.s.GetOrder(ctx, 77); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("Get of a damaged record: %v, want not found", err)
			}
			if _, err := f.s.UpdateOrder(ctx, 77, store.OrderInput{Customer: ptr("x")}, 0); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("Update of a damaged record: %v, want not found", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCreateNeverOverwritesAnOrder: a counter that went back (a Cluster
// failover lost an unreplicated INCR, or a backup restored over newer
// orders) hands out ids that orders have; a create skips them and never
// overwrites an order.
func TestCreateNeverOverwritesAnOrder(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			a := f.create(t, "Ada Lovelace")
			b := f.create(t, "Alan Turing")
			must(t, tg.Client.Set(ctx, f.prefix+"seq", "0", 0).Err())
			c := f.create(t, "Grace Hopper")
			if c.ID != 3 {
				t.Errorf("create after the counter went back: id %d, want 3 (1 and 2 are taken)", c.ID)
			}
			for _, o := range []*store.Order{a, b} {
				if got, err := f.s.GetOrder(ctx, o.ID); err != nil || got.Customer != o.Customer {
					t.Errorf("order %d after the create: %+v, %v; want %q untouched", o.ID, got, err, o.Customer)
				}
			}
		})
	}
}
