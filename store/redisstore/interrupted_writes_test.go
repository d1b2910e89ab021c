package redisstore_test

// Multi-step write sequences of the store cut short, or interleaved with a
// concurrent writer: none may leave an inconsistency that nothing heals.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// cutShortClient is a client of its own to tg's Redis (miniredis or a
// single Redis) carrying h.
func cutShortClient(t *testing.T, tg testutil.Target, h redis.Hook) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: tg.Client.(*redis.Client).Options().Addr})
	c.AddHook(h)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// singleTargets are the targets with one server (the Cluster code path is
// run on them with Options.Cluster: the store then keeps intents, settles
// after the record's transaction and runs the reconciler exactly as on a
// Cluster; only the keys all live on one node).
func singleTargets(t *testing.T) []testutil.Target {
	var out []testutil.Target
	for _, tg := range testutil.Targets(t) {
		if !tg.Cluster {
			out = append(out, tg)
		}
	}
	return out
}

// TestClusterRepairDyingAfterItsSettlePipeline: on the Cluster code
// path, Repair's settleAll (repair.go fixID -> write.go settleEntries with
// all) writes the entries of the record as it read it. The order is
// deleted (or confirmed) between Repair's read and its pipeline (the
// delete's own settle removes the entries first), and the repair's process
// then loses Redis for good. No index entry points at a
// missing order, and none is stale, for longer than 5 s. It held only once
// settleEntries recorded an intent naming the entries before writing them
// (the writer's protocol): before, it named them only when a later
// command failed (intentAgain, which needs Redis within its second), and 7
// dangling or 6 stale entries stayed for good; a stale one no reader
// removes.
func TestClusterRepairDyingAfterItsSettlePipeline(t *testing.T) {
	testutil.Long(t)
	for _, change := range []string{"delete", "confirm"} {
		for _, tg := range singleTargets(t) { // fresh targets for each change
			t.Run(change+"/"+tg.Name+"-cluster-path", func(t *testing.T) {
				ctx := context.Background()
				s := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: true})
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				go s.Reconcile(rctx, 0)
				o, err := s.CreateOrder(ctx, store.OrderInput{Items: anItem, HasItems: true, Customer: ptr("Ada Lovelace")})
				must(t, err)
				_, err = s.CreateOrder(ctx, store.OrderInput{Items: anItem, HasItems: true, Customer: ptr("Grace Hopper")})
				must(t, err)
				// One missing entry, so that Repair settles the order.
				must(t, tg.Client.ZRem(ctx, tg.Prefix+"ix:{id}:pending", strconv.FormatInt(o.ID, 10)).Err())

				h := &deleteDuringSettle{die: true, del: func() error { return s.DeleteOrder(ctx, o.ID, 0, 0) }}
				live, deleted := map[int64]int64{}, map[int64]bool{o.ID: true}
				if change == "confirm" {
					// A status change instead: the entries Repair writes are
					// then stale (the order is in "pending" sets while it is
					// confirmed), which no reader ever removes.
					h.del = func() error {
						_, err := s.UpdateOrder(ctx, o.ID, store.OrderInput{Status: ptr("confirmed")}, 0)
						return err
					}
					live, deleted = map[int64]int64{o.ID: 2}, nil
				}
				h.armed.Store(true)
				rs := redisstore.New(cutShortClient(t, tg, h), redisstore.Options{Prefix: tg.Prefix, Cluster: true})
				r, err := rs.Repair(ctx, true)
				if h.armed.Load() || h.delErr != nil {
					t.Fatalf("the %s during the repair's settle: armed %v, %v", change, h.armed.Load(), h.delErr)
				}
				t.Logf("the repair cut short: %v (%v)", r, err)
				testutil.CheckWhole(t, s, 5*time.Second, live, deleted)
				if change == "confirm" {
					// A page of pending orders meets the stale entry and skips
					// its order; nothing removes the entry.
					for range 2 {
						p, err := s.ListOrders(ctx, store.OrderQuery{Status: store.Pending})
						must(t, err)
						time.Sleep(100 * time.Millisecond)
						if p.Total != 1 {
							t.Errorf("pending orders listed: total %d, want 1 (Grace's)", p.Total)
						}
					}
				}
			})
		}
	}
}

// idemKeyOf is the claim key of an order's Idempotency-Key (idempotency.go).
func idemKeyOf(prefix, key string) string {
	h := sha256.Sum256([]byte(key))
	return prefix + "idem:o:" + hex.EncodeToString(h[:16])
}

// beforeCmd runs fn once, just before the hooked store's first command
// name sent alone (not in a pipeline) whose key is key ("": any key).
type beforeCmd struct {
	name, key string
	armed     atomic.Bool
	fn        func()
}

func (b *beforeCmd) DialHook(next redis.DialHook) redis.DialHook { return next }
func (b *beforeCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		if cmd.Name() == b.name && (b.key == "" || len(a) > 1 && a[1] == b.key) && b.armed.CompareAndSwap(true, false) {
			b.fn()
		}
		return next(ctx, cmd)
	}
}
func (b *beforeCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestIdempotentClaimMovedTwice: a key's claim names an id that
// another request's order holds (the counter went back after a failover:
// the case createClaimed defends against, TestAttackIdempotentRetryAfter-
// CounterWentBack). Two requests with that key run side by side (a client
// that retries after a 503 while its first request is still running).
// Each finds the claimed id taken and moves the claim to a fresh id. The
// move must be a compare-and-swap (moveClaim): with an unconditional SET
// XX the second move overwrote the first, already done and answered, and
// one key made two orders, every later retry answering the second
// ("the same key within 24 hours answers the first request's
// result").
func TestIdempotentClaimMovedTwice(t *testing.T) {
	for _, tg := range singleTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			s := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix})
			alan, err := s.CreateOrder(ctx, store.OrderInput{Items: anItem, HasItems: true, Customer: ptr("Alan Turing")})
			must(t, err)
			// The claim a first request made for the id the counter handed
			// out again (it failed before writing its order).
			claim := idemKeyOf(tg.Prefix, "k-1")
			must(t, tg.Client.Set(ctx, claim, "fp "+strconv.FormatInt(alan.ID, 10)+" p", store.IdempotencyTTL).Err())

			ada := store.OrderInput{Customer: ptr("Ada Lovelace")}
			var first *store.Order
			var firstErr error
			// Just before B's HGETALL of the claimed order (CreateOnce's read).
			h := &beforeCmd{name: "hgetall", key: tg.Prefix + "o:{" + strconv.FormatInt(alan.ID, 10) + "}"}
			h.fn = func() { first, firstErr = s.CreateOrderOnce(ctx, "k-1", "fp", ada) }
			h.armed.Store(true)
			b := redisstore.New(cutShortClient(t, tg, h), redisstore.Options{Prefix: tg.Prefix})
			second, err := b.CreateOrderOnce(ctx, "k-1", "fp", ada)
			if h.armed.Load() {
				t.Fatal("the side-by-side request never ran")
			}
			if firstErr != nil || err != nil {
				t.Fatalf("requests: %v; %v", firstErr, err)
			}
			third, err := s.CreateOrderOnce(ctx, "k-1", "fp", ada)
			must(t, err)
			if first.ID != second.ID || third.ID != first.ID {
				t.Errorf("one Idempotency-Key answered orders %d, %d and then %d (Alan's is %d); want one order", first.ID, second.ID, third.ID, alan.ID)
			}
			if n, _ := s.CountOrders(ctx); n != 2 {
				t.Errorf("%d orders stored, want 2 (Alan's and one Ada's)", n)
			}
		})
	}
}

// TestClusterEventAfterItsDelete: on the Cluster code path an
// order's event is added after its transaction and its settle
// (write.go publishAfter). A create whose event is held up between the two
// (a slow connection, a GC pause) while another instance deletes the new
// order put "created" in the stream after "deleted": the stream's last
// word on the order said it exists, and a page rendered after the delete
// announced a new order that does not exist. publishAfter reads the
// version again after its event and adds the current state when it moved
// on. (Where the event shares the transaction, a single Redis and
// products, this cannot happen.)
func TestClusterEventAfterItsDelete(t *testing.T) {
	for _, tg := range singleTargets(t) {
		t.Run(tg.Name+"-cluster-path", func(t *testing.T) {
			ctx := context.Background()
			s := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: true})
			var delErr error
			var id int64
			h := &beforeCmd{name: "xadd"} // publishAfter's, sent alone
			h.fn = func() {
				// The order exists (its transaction and settle are done): the
				// other instance lists it and deletes it.
				p, err := s.ListOrders(ctx, store.OrderQuery{})
				if err != nil || len(p.Orders) != 1 {
					delErr = err
					return
				}
				id = p.Orders[0].ID
				delErr = s.DeleteOrder(ctx, id, 0, 0)
			}
			h.armed.Store(true)
			w := redisstore.New(cutShortClient(t, tg, h), redisstore.Options{Prefix: tg.Prefix, Cluster: true})
			o, err := w.CreateOrder(ctx, store.OrderInput{Items: anItem, HasItems: true, Customer: ptr("Ada Lovelace")})
			must(t, err)
			if h.armed.Load() || delErr != nil || id != o.ID {
				t.Fatalf("the delete before the create's event: armed %v, id %d, %v", h.armed.Load(), id, delErr)
			}
			var last string
			for _, e := range testutil.Events(t, s.Feed(store.OrderEvents), "0-0") {
				if string(e.Data) != "" && jsonID(e.Data) == o.ID {
					last = e.Action
					t.Logf("event %s %s %s", e.Cursor, e.Action, e.Data)
				}
			}
			if last != store.ActionDeleted {
				t.Errorf("order %d is deleted, but its last event in the stream is %q", o.ID, last)
			}
		})
	}
}

func jsonID(d []byte) int64 {
	var v struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(d, &v)
	return v.ID
}

// TestTwoIdempotencyKeysOneBody: two Idempotency-Keys carrying the same body
// (a client that means two identical orders) after the counter went back
// (a failover lost an INCR): the second key's claim names the first key's
// order. Its answer must be an order of its own, not the first key's,
// which matched it by the body's fingerprint alone.
func TestTwoIdempotencyKeysOneBody(t *testing.T) {
	for _, tg := range singleTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			s := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix})
			ada := store.OrderInput{Customer: ptr("Ada Lovelace")}
			first, err := s.CreateOrderOnce(ctx, "k-1", "fp", ada)
			must(t, err)
			must(t, tg.Client.Set(ctx, tg.Prefix+"seq", strconv.FormatInt(first.ID-1, 10), 0).Err())
			second, err := s.CreateOrderOnce(ctx, "k-2", "fp", ada)
			must(t, err)
			if second.ID == first.ID {
				t.Errorf("the second key answered the first key's order %d; want an order of its own", first.ID)
			}
			again, err := s.CreateOrderOnce(ctx, "k-1", "fp", ada)
			if err != nil || again.ID != first.ID {
				t.Errorf("the first key again: %+v, %v; want its order %d", again, err, first.ID)
			}
			if n, _ := s.CountOrders(ctx); n != 2 {
				t.Errorf("%d orders stored, want 2", n)
			}
		})
	}
}
