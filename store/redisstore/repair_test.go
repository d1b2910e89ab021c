package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestStaleIndexEntriesAreSkippedAndRepaired: an order whose hash is gone
// while its index entries remain (what a crash between a Cluster's order
// transaction and its index writes leaves) is never listed, and reading a
// page that meets such entries removes them.
func TestStaleIndexEntriesAreSkippedAndRepaired(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			f.create(t, "Grace Hopper")
			gone := f.create(t, "Grace Murray")
			f.create(t, "Alan Turing")
			// The order's hash disappears; its four index entries stay.
			if err := tg.Client.Del(ctx, f.prefix+"o:{"+strconv.FormatInt(gone.ID, 10)+"}").Err(); err != nil {
				t.Fatal(err)
			}
			// Each query meets the entries of one or more indexes: by created
			// time, name, updated time, total, and the search terms.
			var queries []store.OrderQuery
			for _, sort := range store.Sorts {
				queries = append(queries, store.OrderQuery{Sort: sort}, store.OrderQuery{Sort: sort, Status: store.Pending})
			}
			queries = append(queries, store.OrderQuery{Q: "grace"}, store.OrderQuery{Q: "murray"}, store.OrderQuery{Q: "grace", Status: store.Pending})
			for _, q := range queries {
				p := f.list(t, q)
				for _, o := range p.Orders {
					if o.ID == gone.ID {
						t.Errorf("List(%+v) lists order %d, whose hash is gone", q, gone.ID)
					}
				}
			}
			// The repair runs in the background; give it a moment.
			var left []string
			for i := 0; i < 50; i++ {
				left = left[:0]
				for _, key := range []string{"ix:{id}:pending", "ix:name", "ix:name:pending",
					"ix:{up}:pending", "ix:{tot}:pending", "ix:{w}:pending:g", "ix:{w}:pending:m"} {
					ms, err := tg.Client.ZRange(ctx, f.prefix+key, 0, -1).Result()
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range ms {
						if m == strconv.FormatInt(gone.ID, 10) || strings.HasPrefix(m, "grace murray\x00") ||
							m == "grace\x00yx" || m == "murray\x00yx" {
							left = append(left, key+" "+m)
						}
					}
				}
				if len(left) == 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("index entries of the missing order were not repaired: %q", left)
			}
			if n, _ := f.s.CountOrders(ctx); n != 2 {
				t.Errorf("Count after repair = %d, want 2", n)
			}
			if p := f.list(t, store.OrderQuery{Q: "grace"}); p.Total != 1 || len(p.Orders) != 1 {
				t.Errorf("search 'grace' after repair: total %d, %d orders; want 1 and 1", p.Total, len(p.Orders))
			}
		})
	}
}

// TestRepairWalksEveryIndexAWriteUses: every index key a write puts an
// order's or a product's entries in (any status, any active state, terms
// in any script) is one Repair walks, so a layout change cannot leave an
// index Repair never checks.
func TestRepairWalksEveryIndexAWriteUses(t *testing.T) {
	s := redisstore.New(nil, redisstore.Options{Prefix: "t[1]*:"})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, st := range store.Statuses {
		o := &store.Order{ID: 7, Customer: "Ada Łovelace 张伟 O'Brien", Email: "ada@example.com", Status: st,
			Items: []store.Item{{SKU: "KBD-60", Name: "k"}, {SKU: "KBD-61", Name: "k"}}, CreatedAt: at, UpdatedAt: at}
		for _, active := range []bool{true, false} {
			p := &store.Product{ID: 3, SKU: "KBD-60", Name: "Клавиатура 60%", Active: active, CreatedAt: at, UpdatedAt: at}
			if keys := s.UncoveredIndexKeys(o, p); len(keys) > 0 {
				t.Errorf("status %s, active %v: Repair walks none of %q", st, active, keys)
			}
		}
	}
}

// TestRepairBesideWritersCountsOnlyDamageThatStays: orders -repair run
// while 8 writers create, rename, move through statuses and delete orders
// reports no damage on a store that has none (a write in flight when the
// repair looked is not damage), and damage planted during the load is still
// found, fixed and reported exactly. Also on a store that writes its index
// entries after the record's transaction, with intents (as on a Cluster).
func TestRepairBesideWritersCountsOnlyDamageThatStays(t *testing.T) {
	testutil.Long(t)
	targets := testutil.Targets(t)
	for _, tg := range targets {
		if tg.Name == "redis" {
			// The Cluster's write path (intents, the reconciler), on one
			// Redis: it does not need the keys in other slots to race.
			targets = append(targets, testutil.Target{Name: "redis-intents", Client: tg.Client, Prefix: tg.Prefix + "i:", Cluster: true})
		}
	}
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := fresh(t, tg)
			go f.s.Reconcile(ctx, 0)
			// Orders the writers never touch, to plant damage on.
			var quiet []*store.Order
			for i := range 40 {
				quiet = append(quiet, f.create(t, "Quiet "+strconv.Itoa(i)))
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				testutil.Churn(t, f.s, 8, 4*time.Second)
			}()
			wantNone := func(what string, r redisstore.RepairReport) {
				t.Helper()
				if r.Missing != 0 || r.Dangling != 0 || r.Stale != 0 || r.Fixed != 0 || r.Damaged != 0 {
					t.Errorf("%s on a store with no damage: got %v; want 0 missing, 0 dangling, 0 stale, 0 fixed", what, r)
				}
			}
			runs, planted := 0, false
			for i := 0; ; i++ {
				select {
				case <-done:
				default:
					r, err := f.s.Repair(ctx, true)
					if err != nil {
						t.Fatalf("Repair during the load: %v", err)
					}
					runs++
					t.Logf("run %d: %v", runs, r)
					wantNone(fmt.Sprintf("repair %d during the load", runs), r)
					// The second repair plants damage: on a slow machine
					// the load may see only two.
					if i != 1 {
						continue
					}
					// Damage, planted while the writers run: an entry gone,
					// one for an order that never was, one under a status
					// its order is not in.
					planted = true
					c := tg.Client
					a, b := quiet[3], quiet[17]
					must(t, c.ZRem(ctx, f.prefix+"ix:{id}:pending", strconv.FormatInt(a.ID, 10)).Err())
					must(t, c.ZAdd(ctx, f.prefix+"ix:{id}:pending", redis.Z{Score: 1, Member: "900001"}).Err())
					must(t, c.ZAdd(ctx, f.prefix+"ix:{id}:confirmed", redis.Z{Score: float64(b.ID), Member: strconv.FormatInt(b.ID, 10)}).Err())
					r, err = f.s.Repair(ctx, true)
					if err != nil {
						t.Fatalf("Repair during the load: %v", err)
					}
					t.Logf("run with planted damage: %v", r)
					if r.Missing != 1 || r.Dangling != 1 || r.Stale != 1 || r.Fixed != 3 {
						t.Errorf("repair of planted damage during the load: got %v; want 1 missing, 1 dangling, 1 stale, 3 records fixed", r)
					}
					continue
				}
				break
			}
			if !planted {
				t.Fatalf("only %d repairs ran during the load, none with planted damage: the test proves little", runs)
			}
			r, err := f.s.Repair(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			wantNone("the check after the load", r)
		})
	}
}
