package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// killedAfter is the client of a process killed just after Redis answered
// the first command or pipeline that at matches: nothing it sends later
// reaches Redis.
type killedAfter struct {
	at   func(cmds []redis.Cmder) bool
	dead atomic.Bool
}

var errKilled = errors.New("the process was killed")

func (k *killedAfter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (k *killedAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if k.dead.Load() {
			cmd.SetErr(errKilled)
			return errKilled
		}
		err := next(ctx, cmd)
		if k.at([]redis.Cmder{cmd}) {
			k.dead.Store(true)
		}
		return err
	}
}
func (k *killedAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if k.dead.Load() {
			for _, c := range cmds {
				c.SetErr(errKilled)
			}
			return errKilled
		}
		err := next(ctx, cmds)
		if k.at(cmds) {
			k.dead.Store(true)
		}
		return err
	}
}

// sends reports whether cmds hold a command name on a key starting with
// prefix.
func sends(cmds []redis.Cmder, name, prefix string) bool {
	return slices.ContainsFunc(cmds, func(c redis.Cmder) bool {
		var key string
		if a := c.Args(); len(a) > 1 {
			key, _ = a[1].(string)
		}
		return c.Name() == name && strings.HasPrefix(key, prefix)
	})
}

// orderTransaction matches the transaction of an order's write (which
// replaces the order's hash, or deletes it).
func orderTransaction(prefix string) func([]redis.Cmder) bool {
	return func(c []redis.Cmder) bool { return sends(c, "exec", "") && sends(c, "del", prefix+"o:{") }
}

// customerOrdersSettled matches the settle of a customer's orders index
// entry on the Cluster code path.
func customerOrdersSettled(prefix string) func([]redis.Cmder) bool {
	return func(c []redis.Cmder) bool {
		return !sends(c, "exec", "") && (sends(c, "zadd", prefix+"ix:{w}:customer:") || sends(c, "zrem", prefix+"ix:{w}:customer:"))
	}
}

// adaAndBob is a store (on the Cluster code path or not) with customers
// Ada and Bob, an order each, Bob's a minute newer.
type adaAndBob struct {
	s         *redisstore.Store
	opt       redisstore.Options
	prefix    string
	ada, bob  int64
	bobsOrder int64
}

func newAdaAndBob(t *testing.T, tg testutil.Target, name string, cluster bool) adaAndBob {
	t.Helper()
	ctx := context.Background()
	var unix atomic.Int64
	unix.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix())
	ab := adaAndBob{prefix: fmt.Sprintf("%s%s%d:", tg.Prefix, name, fixtures.Add(1))}
	ab.opt = redisstore.Options{Prefix: ab.prefix, Cluster: cluster, Now: func() time.Time { return time.Unix(unix.Load(), 0) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ab.s = redisstore.New(tg.Client, ab.opt)
	var ids []int64
	for _, name := range []string{"Ada", "Bob"} {
		c, err := ab.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr(name)})
		must(t, err)
		ids = append(ids, c.ID)
	}
	ab.ada, ab.bob = ids[0], ids[1]
	for _, c := range ids {
		o, err := ab.s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Someone"), CustomerID: ptr(fmt.Sprint(c))})
		must(t, err)
		unix.Add(60)
		ab.bobsOrder = o.ID
	}
	return ab
}

// TestLastOrderPlacedAfterAKill: an instance killed just after an order
// write that links or unlinks a customer (its transaction, or on the
// Cluster code path its settle, or the deletion of its intent), before the
// customer's placement by last order, leaves the customer where it was.
// Without Repair, another instance's reconciler places it within seconds,
// and a read of the -last_order List answers it placed at once where the
// write's own step left a mark (the transaction on one Redis, the intent
// deleted on a Cluster); Repair then finds nothing to do.
func TestLastOrderPlacedAfterAKill(t *testing.T) {
	type point struct {
		name    string
		cluster bool
		at      func(prefix string) func([]redis.Cmder) bool
		marked  bool // the write's mark is written when the kill comes
	}
	points := []point{
		{"transaction", false, orderTransaction, true},
		{"cluster-path/transaction", true, orderTransaction, false},
		{"cluster-path/settle", true, customerOrdersSettled, false},
		{"cluster-path/intent-deleted", true, func(p string) func([]redis.Cmder) bool {
			settled := customerOrdersSettled(p)
			var after atomic.Bool
			return func(c []redis.Cmder) bool {
				if settled(c) {
					after.Store(true)
				}
				return after.Load() && sends(c, "hdel", p+"ix:intents")
			}
		}, true},
	}
	// Each ends with Ada's newest order newer than Bob's (or Bob with
	// none), where Bob's was the newest before.
	ops := []struct {
		name string
		do   func(ctx context.Context, s *redisstore.Store, ada, bob, o2 int64) error
	}{
		{"create for Ada", func(ctx context.Context, s *redisstore.Store, ada, _, _ int64) error {
			_, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Someone"), CustomerID: ptr(fmt.Sprint(ada))})
			return err
		}},
		{"move Bob's to Ada", func(ctx context.Context, s *redisstore.Store, ada, _, o2 int64) error {
			_, err := s.UpdateOrder(ctx, o2, store.OrderInput{CustomerID: ptr(fmt.Sprint(ada))}, 0)
			return err
		}},
		{"unlink Bob's", func(ctx context.Context, s *redisstore.Store, _, _, o2 int64) error {
			_, err := s.UpdateOrder(ctx, o2, store.OrderInput{CustomerID: ptr("")}, 0)
			return err
		}},
		{"delete Bob's", func(ctx context.Context, s *redisstore.Store, _, _, o2 int64) error {
			return s.DeleteOrder(ctx, o2, 0, 0)
		}},
	}
	for _, tg := range singleTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			for _, pt := range points {
				for _, op := range ops {
					for _, redo := range []string{"reader", "reconciler"} {
						if redo == "reader" && !pt.marked {
							// The orders index itself waits for the
							// reconciler's settle: the List read then shows
							// the order write undone, consistently.
							continue
						}
						t.Run(pt.name+"/"+op.name+"/"+redo, func(t *testing.T) {
							t.Parallel()
							ctx := context.Background()
							ab := newAdaAndBob(t, tg, "kill", pt.cluster)
							s, opt, prefix, ada, bob, o2 := ab.s, ab.opt, ab.prefix, ab.ada, ab.bob, ab.bobsOrder
							index := prefix + "cx:{c}:last_order"
							placed := func() []string {
								got, err := tg.Client.ZRevRange(ctx, index, 0, -1).Result()
								must(t, err)
								return got
							}
							before := []string{fmt.Sprint(bob), fmt.Sprint(ada)}
							want := []string{fmt.Sprint(ada), fmt.Sprint(bob)}
							if got := placed(); !slices.Equal(got, before) {
								t.Fatalf("before the kill: %v, want %v", got, before)
							}

							k := &killedAfter{at: pt.at(prefix)}
							dying := redisstore.New(cutShortClient(t, tg, k), opt)
							_ = op.do(ctx, dying, ada, bob, o2)
							if !k.dead.Load() {
								t.Fatal("the write never reached the point of the kill")
							}
							if got := placed(); !slices.Equal(got, before) {
								t.Fatalf("the kill left nothing undone: %v already", got)
							}

							if redo == "reader" {
								p, err := s.ListCustomers(ctx, store.CustomerQuery{Sort: "-last_order"})
								must(t, err)
								var got []string
								for _, c := range p.Customers {
									got = append(got, fmt.Sprint(c.ID))
								}
								if !slices.Equal(got, want) {
									t.Errorf("the List by last order after the kill: %v, want %v", got, want)
								}
							} else {
								rctx, cancel := context.WithCancel(ctx)
								defer cancel()
								go s.Reconcile(rctx, 50*time.Millisecond)
								deadline := time.Now().Add(5 * time.Second)
								for !slices.Equal(placed(), want) && time.Now().Before(deadline) {
									time.Sleep(20 * time.Millisecond)
								}
								cancel()
								if got := placed(); !slices.Equal(got, want) {
									t.Errorf("5 s after the kill, with a reconciler: %v, want %v", got, want)
								}
							}
							if got := placed(); !slices.Equal(got, want) {
								t.Errorf("the index after the redo: %v, want %v", got, want)
							}
							if n, _ := tg.Client.HLen(ctx, prefix+"cx:{c}:to_place").Result(); n != 0 {
								t.Errorf("%d customers still marked to place", n)
							}
							if r, err := s.Repair(ctx, false); err != nil || r.Problems() != 0 || r.Unplaced != 0 {
								t.Errorf("Repair after the redo: %s, %v; want nothing to do", r, err)
							}
						})
					}
				}
			}
		})
	}
}

// staleWriter is a writer's client that, once its order's transaction
// is done, runs interfere (given the order's id) just before its first
// placement script, and is killed just after that script.
type staleWriter struct {
	prefix, marks string
	interfere     func(id int64)
	stage         atomic.Int32 // 0 writing, 1 written, 2 placed (killed)
	id            atomic.Int64
}

func (w *staleWriter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (w *staleWriter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if w.stage.Load() == 2 {
			cmd.SetErr(errKilled)
			return errKilled
		}
		a := cmd.Args()
		placing := (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(a) > 5 && a[5] == w.marks
		if placing && w.stage.Load() == 1 {
			w.interfere(w.id.Load())
		}
		err := next(ctx, cmd)
		if placing && w.stage.Load() == 1 {
			w.stage.Store(2)
		}
		return err
	}
}
func (w *staleWriter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if w.stage.Load() == 2 {
			for _, c := range cmds {
				c.SetErr(errKilled)
			}
			return errKilled
		}
		err := next(ctx, cmds)
		if w.stage.Load() == 0 && sends(cmds, "exec", "") && sends(cmds, "del", w.prefix+"o:{") {
			for _, c := range cmds {
				if a := c.Args(); c.Name() == "del" {
					key, _ := a[1].(string)
					if id, ok := store.ParseID(strings.TrimSuffix(strings.TrimPrefix(key, w.prefix+"o:{"), "}")); ok {
						w.id.Store(id)
						w.stage.Store(1)
					}
				}
			}
		}
		return err
	}
}

// TestStalePlacementNeverLands: a writer reads a customer's orders index
// for its placement, and before it places, another instance deletes the
// order it saw newest and places the customer. The first placement, from
// the older read, must write nothing, even when its instance dies just
// after: the index would name the deleted order's time with nothing left
// to set it right.
func TestStalePlacementNeverLands(t *testing.T) {
	for _, tg := range singleTargets(t) {
		for _, cluster := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cluster-path=%v", tg.Name, cluster), func(t *testing.T) {
				ctx := context.Background()
				ab := newAdaAndBob(t, tg, "stale", cluster)
				s, opt, prefix, ada, bob := ab.s, ab.opt, ab.prefix, ab.ada, ab.bob
				var delErr error
				h := &staleWriter{prefix: prefix, marks: prefix + "cx:{c}:to_place", interfere: func(id int64) {
					delErr = s.DeleteOrder(ctx, id, 0, 0)
				}}
				w := redisstore.New(cutShortClient(t, tg, h), opt)
				_, _ = w.CreateOrder(ctx, store.OrderInput{Customer: ptr("Someone"), CustomerID: ptr(fmt.Sprint(ada))})
				if h.stage.Load() != 2 || delErr != nil {
					t.Fatalf("the delete before the stale placement: stage %d, %v", h.stage.Load(), delErr)
				}
				got, err := tg.Client.ZRevRange(ctx, prefix+"cx:{c}:last_order", 0, -1).Result()
				must(t, err)
				if want := []string{fmt.Sprint(bob), fmt.Sprint(ada)}; !slices.Equal(got, want) {
					t.Errorf("customers by last order: %v, want %v (Ada's newest order deleted)", got, want)
				}
				if n, _ := tg.Client.HLen(ctx, prefix+"cx:{c}:to_place").Result(); n != 0 {
					t.Errorf("%d customers still marked to place", n)
				}
			})
		}
	}
}
