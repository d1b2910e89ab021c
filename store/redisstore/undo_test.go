package redisstore_test

// Undo: a delete keeps the record's values for the undo window, and a
// restore brings the record back through the one write path.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestEveryKindRestoresADeleteWithItsValuesAndHistory: on every target,
// each registered kind deletes a changed record and restores it: the hash
// is byte-equal but for the version (one more), the history is the one
// before plus the delete and one "restored" entry at the new version; a
// second restore is refused and changes nothing; a Repair run between the
// delete and the restore neither brings the record back nor loses it after,
// and counts it as restorable. A kind whose deletes are final refuses.
func TestEveryKindRestoresADeleteWithItsValuesAndHistory(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			for _, k := range redisstore.RegisteredKinds(t) {
				t.Run(k.Name(), func(t *testing.T) {
					id, _, err := k.Create(ctx, f.s, 41)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := k.Change(ctx, f.s, id, 42, 0, 1); err != nil {
						t.Fatal(err)
					}
					before, vfield, err := k.Raw(ctx, f.s, id)
					if err != nil || len(before) == 0 {
						t.Fatalf("the record's hash: %v, %v", before, err)
					}
					histBefore, err := k.History(ctx, f.s, id)
					if err != nil {
						t.Fatal(err)
					}
					if err := k.Delete(ctx, f.s, id, 0, 2); err != nil {
						t.Fatal(err)
					}
					if k.Final() {
						if _, err := k.Restore(ctx, f.s, id); store.ErrorCode(err) != store.EGONE {
							t.Fatalf("a restore of a kind whose deletes are final: %v, want %s", err, store.EGONE)
						}
						if h, _, _ := k.Raw(ctx, f.s, id); len(h) != 0 {
							t.Fatalf("the refused restore wrote %v", h)
						}
						return
					}
					rep, err := f.s.Repair(ctx, true)
					if err != nil {
						t.Fatal(err)
					}
					if rep.Restorable < 1 || rep.Problems() != 0 {
						t.Errorf("a repair between the delete and the restore: %s; want the deleted record restorable and no problems", rep)
					}
					if h, _, _ := k.Raw(ctx, f.s, id); len(h) != 0 {
						t.Fatalf("the repair brought the deleted record back: %v", h)
					}

					v, err := k.Restore(ctx, f.s, id)
					if err != nil || v != 3 {
						t.Fatalf("restore: version %d, %v; want 3", v, err)
					}
					after, _, err := k.Raw(ctx, f.s, id)
					if err != nil {
						t.Fatal(err)
					}
					if after[vfield] != "3" {
						t.Errorf("the restored version field %q = %q, want 3", vfield, after[vfield])
					}
					wantHash := maps.Clone(before)
					wantHash[vfield] = "3"
					if !maps.Equal(after, wantHash) {
						t.Errorf("the restored hash differs beyond its version:\n got %v\nwant %v", after, wantHash)
					}
					if _, ok, err := k.Holds(ctx, f.s, id, 42); !ok || err != nil {
						t.Errorf("the restored record does not hold its values: %v", err)
					}
					hist, err := k.History(ctx, f.s, id)
					if err != nil {
						t.Fatal(err)
					}
					if len(hist) != len(histBefore)+2 {
						t.Fatalf("history after the restore has %d entries, want %d (before, the delete, the restore): %+v", len(hist), len(histBefore)+2, hist)
					}
					if hist[0].Action != store.ActionRestored || hist[0].Version != 3 || hist[0].Changes != nil || hist[0].Items != nil {
						t.Errorf("the newest entry is %+v, want a bare %q at version 3", hist[0], store.ActionRestored)
					}
					if hist[1].Action != store.ActionDeleted || hist[1].Version != 2 {
						t.Errorf("the entry before it is %+v, want the delete at version 2", hist[1])
					}
					for i, e := range histBefore {
						a, _ := json.Marshal(e)
						b, _ := json.Marshal(hist[i+2])
						if string(a) != string(b) {
							t.Errorf("history entry %d changed with the restore:\n got %s\nwant %s", i, b, a)
						}
					}

					_, err = k.Restore(ctx, f.s, id)
					if store.ErrorCode(err) != store.ECONFLICT {
						t.Errorf("a second restore: %v, want %s", err, store.ECONFLICT)
					}
					if h, _ := k.History(ctx, f.s, id); len(h) != len(hist) {
						t.Errorf("the refused restore added to the history: %d entries, want %d", len(h), len(hist))
					}
					// Deleted and restored again: the values kept are the
					// latest delete's, and the restore is one more version.
					if err := k.Delete(ctx, f.s, id, 0, 3); err != nil {
						t.Fatal(err)
					}
					if v, err := k.Restore(ctx, f.s, id); err != nil || v != 4 {
						t.Errorf("a second delete's restore: version %d, %v; want 4", v, err)
					}
					if rep, err := f.s.Repair(ctx, false); err != nil || rep.Problems() != 0 {
						t.Errorf("repair after the restores: %s, %v; want no problems", rep, err)
					}
					if _, err := k.Restore(ctx, f.s, 999999); store.ErrorCode(err) != store.ENOTFOUND {
						t.Errorf("a restore of an id never used: %v, want %s", err, store.ENOTFOUND)
					}
				})
			}
		})
	}
}

// TestRestoreIsRefusedOnceTheUndoWindowHasPassed: past the window the
// kept values are gone (Redis expired them) and a restore says so (EGONE),
// writing nothing; within it, it works. miniredis's clock is moved on;
// Redis and a Cluster wait out a short window.
func TestRestoreIsRefusedOnceTheUndoWindowHasPassed(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			window := 300 * time.Millisecond
			wait := func() { time.Sleep(window + 200*time.Millisecond) }
			if tg.Name == "miniredis" {
				mr := miniredis.RunT(t)
				c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
				t.Cleanup(func() { _ = c.Close() })
				tg = testutil.Target{Name: tg.Name, Client: c}
				window = store.UndoWindow
				wait = func() { mr.FastForward(store.UndoWindow + time.Second) }
			}
			ctx := context.Background()
			s := redisstore.New(tg.Client, redisstore.Options{Prefix: fmt.Sprintf("%sundo%d:", tg.Prefix, time.Now().UnixNano()), Cluster: tg.Cluster, UndoWindow: window})
			p, err := s.CreateProduct(ctx, store.ProductInput{SKU: ptr("LATE-1"), Name: ptr("Late"), UnitPrice: ptr("1.00")})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteProduct(ctx, p.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			wait()
			_, err = s.RestoreProduct(ctx, p.ID)
			if store.ErrorCode(err) != store.EGONE || !strings.Contains(err.Error(), "can no longer be restored") {
				t.Fatalf("a restore after the window: %v, want %s saying it can no longer be restored", err, store.EGONE)
			}
			if _, err := s.GetProduct(ctx, p.ID); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("after the refused restore: %v, want not found", err)
			}
			// The SKU is free: the expired record holds nothing.
			if _, err := s.CreateProduct(ctx, store.ProductInput{SKU: ptr("LATE-1"), Name: ptr("Later"), UnitPrice: ptr("1.00")}); err != nil {
				t.Errorf("a create of the expired record's SKU: %v", err)
			}
		})
	}
}

// TestRestoreRacingACreateOfTheSameSKU: a deleted product's restore and a
// create that takes its SKU race; exactly one wins, the other is a field
// error on the SKU, and nothing is half-written: the SKU's one owner is
// stored, and Repair finds nothing wrong. The loser's restore is refused
// while the SKU is taken, and works once it is free again.
func TestRestoreRacingACreateOfTheSameSKU(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			for i := range testutil.Pick(5, 40) {
				sku := fmt.Sprintf("RACE-%d", i)
				in := store.ProductInput{SKU: ptr(sku), Name: ptr("Racer"), UnitPrice: ptr("2.00")}
				p, err := f.s.CreateProduct(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.s.DeleteProduct(ctx, p.ID, 0, 0); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				var created *store.Product
				var restoreErr, createErr error
				wg.Add(2)
				go func() { defer wg.Done(); _, restoreErr = f.s.RestoreProduct(ctx, p.ID) }()
				go func() { defer wg.Done(); created, createErr = f.s.CreateProduct(ctx, in) }()
				wg.Wait()
				if (restoreErr == nil) == (createErr == nil) {
					t.Fatalf("round %d: restore %v, create %v; want exactly one to win", i, restoreErr, createErr)
				}
				loser := restoreErr
				if loser == nil {
					loser = createErr
				}
				if se, ok := loser.(*store.Error); !ok || se.Code != store.EINVALID || se.Fields["sku"] == "" {
					t.Fatalf("round %d: the loser got %v, want a field error on the SKU", i, loser)
				}
				if restoreErr == nil {
					continue
				}
				if _, err := f.s.GetProduct(ctx, p.ID); store.ErrorCode(err) != store.ENOTFOUND {
					t.Fatalf("round %d: the refused restore left the product: %v", i, err)
				}
				if err := f.s.DeleteProduct(ctx, created.ID, 0, 0); err != nil {
					t.Fatal(err)
				}
				if r, err := f.s.RestoreProduct(ctx, p.ID); err != nil || r.SKU != sku || r.Version != 2 {
					t.Fatalf("round %d: the restore once the SKU is free: %+v, %v", i, r, err)
				}
			}
			if rep, err := f.s.Repair(ctx, false); err != nil || rep.Problems() != 0 {
				t.Errorf("repair after the races: %s, %v; want no problems", rep, err)
			}
		})
	}
}

// TestRestoreOnAnotherInstanceBringsTheOrderBackWithItsItemsAndEvent: an
// order with items, confirmed, deleted through one store and restored
// through another sharing the Redis comes back whole: the same items,
// status and customer, back in the List and the search, with a
// "restored" event on its feed.
func TestRestoreOnAnotherInstanceBringsTheOrderBackWithItsItemsAndEvent(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			a := fresh(t, tg)
			b := redisstore.New(tg.Client, redisstore.Options{Prefix: a.prefix, Cluster: tg.Cluster})
			ctx := context.Background()
			o := a.create(t, "Grace Hopper", func(in *store.OrderInput) {
				in.Items = []store.ItemInput{{SKU: "KBD-60", Name: "Keyboard", Quantity: "2", UnitPrice: "45.50"}, {Name: "Cable", Quantity: "1", UnitPrice: "3.00"}}
				in.HasItems = true
			})
			o = a.update(t, o.ID, store.OrderInput{Status: ptr("confirmed")})
			if err := a.s.DeleteOrder(ctx, o.ID, 0, o.Version); err != nil {
				t.Fatal(err)
			}
			if p := a.list(t, store.OrderQuery{Q: "hopper"}); p.Total != 0 {
				t.Fatalf("the deleted order is still found: %+v", p)
			}
			r, err := b.RestoreOrder(ctx, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := *o
			want.Version, want.UpdatedAt = o.Version+1, r.UpdatedAt
			if got, _ := json.Marshal(r); string(got) != string(mustJSON(t, &want)) {
				t.Errorf("restored:\n got %s\nwant %s", got, mustJSON(t, &want))
			}
			g, err := a.s.GetOrder(ctx, o.ID)
			if err != nil || g.Status != "confirmed" || len(g.Items) != 2 || g.Items[0].SKU != "KBD-60" {
				t.Fatalf("the other instance reads %+v, %v", g, err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				if p := a.list(t, store.OrderQuery{Q: "hopper"}); p.Total == 1 && len(p.Orders) == 1 && p.Orders[0].ID == o.ID {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the restored order is not found by its customer's name")
				}
				time.Sleep(50 * time.Millisecond)
			}
			evs := testutil.Events(t, a.s.Feed(store.OrderEvents), "0-0")
			if n := len(evs); n == 0 || evs[n-1].Action != store.ActionRestored || !strings.Contains(string(evs[n-1].Data), fmt.Sprintf(`"id":%d`, o.ID)) {
				t.Errorf("the feed's last event: %+v, want %q of order %d", evs, store.ActionRestored, o.ID)
			}
		})
	}
}

// TestRestoringAnOrderWhoseCustomerIsGoneIsRefused: an order that linked a
// customer deleted after it is not brought back linking no one: the
// restore says to restore the customer first, writes nothing, and works
// once the customer is back (the customer lists it again).
func TestRestoringAnOrderWhoseCustomerIsGoneIsRefused(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			c, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("Ada Lovelace")})
			if err != nil {
				t.Fatal(err)
			}
			o := f.create(t, "Ada Lovelace", func(in *store.OrderInput) { in.CustomerID = ptr(fmt.Sprint(c.ID)) })
			if err := f.s.DeleteOrder(ctx, o.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := f.s.DeleteCustomer(ctx, c.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			_, err = f.s.RestoreOrder(ctx, o.ID)
			if store.ErrorCode(err) != store.EINVALID || !strings.Contains(err.Error(), "restore the customer first") {
				t.Fatalf("restoring the order of a deleted customer: %v", err)
			}
			if _, err := f.s.GetOrder(ctx, o.ID); store.ErrorCode(err) != store.ENOTFOUND {
				t.Fatalf("the refused restore left the order: %v", err)
			}
			if _, err := f.s.RestoreCustomer(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			r, err := f.s.RestoreOrder(ctx, o.ID)
			if err != nil || r.CustomerID != c.ID {
				t.Fatalf("the restore once the customer is back: %+v, %v", r, err)
			}
			if err := f.s.DeleteCustomer(ctx, c.ID, 0, 0); store.ErrorCode(err) != store.ECONFLICT {
				t.Errorf("a delete of the customer the restored order links: %v, want %s", err, store.ECONFLICT)
			}
			if rep, err := f.s.Repair(ctx, false); err != nil || rep.Problems() != 0 {
				t.Errorf("repair: %s, %v; want no problems", rep, err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTwoRestoresRacingBringTheRecordBackOnce: several restores of one
// deleted order race (as two people pressing Undo on two instances): one
// wins, the others are refused as not deleted, and the history has one
// "restored" entry.
func TestTwoRestoresRacingBringTheRecordBackOnce(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			a := fresh(t, tg)
			b := redisstore.New(testutil.SecondClient(t, tg), redisstore.Options{Prefix: a.prefix, Cluster: tg.Cluster})
			ctx := context.Background()
			for round := range testutil.Pick(3, 20) {
				o := a.create(t, fmt.Sprintf("Racer %d", round))
				if err := a.s.DeleteOrder(ctx, o.ID, 0, 0); err != nil {
					t.Fatal(err)
				}
				errs := make([]error, 6)
				var wg sync.WaitGroup
				for i := range errs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						s := a.s
						if i%2 == 1 {
							s = b
						}
						_, errs[i] = s.RestoreOrder(ctx, o.ID)
					}()
				}
				wg.Wait()
				won := 0
				for _, err := range errs {
					switch {
					case err == nil:
						won++
					case store.ErrorCode(err) != store.ECONFLICT:
						t.Errorf("round %d: a losing restore got %v, want %s", round, err, store.ECONFLICT)
					}
				}
				if won != 1 {
					t.Fatalf("round %d: %d restores won, want exactly 1 (%v)", round, won, errs)
				}
				p, err := a.s.OrderHistory(ctx, o.ID, "", 100)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, e := range p.Entries {
					if e.Action == store.ActionRestored {
						n++
					}
				}
				if n != 1 || p.Entries[0].Action != store.ActionRestored {
					t.Errorf("round %d: %d restored entries in %+v, want one, the newest", round, n, p.Entries)
				}
			}
		})
	}
}
