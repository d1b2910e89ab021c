package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// linksOf reads customer cid's links (order id → holds).
func (f *fixture) linksOf(t *testing.T, cid int64) map[string]string {
	t.Helper()
	h, err := f.tg.Client.HGetAll(context.Background(), f.prefix+"c:{c}:"+strconv.FormatInt(cid, 10)+":links").Result()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// oldHold puts a hold of order oid in customer cid's links as one taken a
// minute ago would be, by a writer long gone.
func (f *fixture) oldHold(t *testing.T, cid int64, oid string) {
	t.Helper()
	key := f.prefix + "c:{c}:" + strconv.FormatInt(cid, 10) + ":links"
	if err := f.tg.Client.HSet(context.Background(), key, oid, "0a1b2c:"+strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10)).Err(); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) customer(t *testing.T, name string) *store.Customer {
	t.Helper()
	c, err := f.s.CreateCustomer(context.Background(), store.CustomerInput{Name: ptr(name)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCustomerLinksFollowTheOrders: an order that links a customer has an
// entry in its links; a change of customer and a delete of the order drop
// it; a delete of a linked customer checks its version first, then
// refuses naming how many orders link it.
func TestCustomerLinksFollowTheOrders(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			ada, bob := f.customer(t, "Ada"), f.customer(t, "Bob")
			o := f.create(t, "Ada", func(in *store.OrderInput) { in.CustomerID = ptr(strconv.FormatInt(ada.ID, 10)) })
			id := strconv.FormatInt(o.ID, 10)
			if got := f.linksOf(t, ada.ID); len(got) != 1 || got[id] == "" {
				t.Fatalf("Ada's links after an order linked her: %v, want order %s", got, id)
			}
			if err := f.s.DeleteCustomer(ctx, ada.ID, ada.Version+1, 0); store.ErrorCode(err) != store.EPRECONDITION {
				t.Errorf("a delete of a customer with orders under a stale If-Match: %v, want EPRECONDITION", err)
			}
			err := f.s.DeleteCustomer(ctx, ada.ID, 0, ada.Version+1)
			if store.ErrorCode(err) != store.ECONFLICT || strings.Contains(err.Error(), "order") {
				t.Errorf("a delete of a customer with orders naming a stale version: %v, want ECONFLICT about the version", err)
			}
			if err := f.s.DeleteCustomer(ctx, ada.ID, 0, 0); store.ErrorCode(err) != store.ECONFLICT || !strings.Contains(err.Error(), "has 1 order") {
				t.Errorf("a delete of a customer with an order: %v, want ECONFLICT saying it has 1 order", err)
			}
			// An update that keeps the customer leaves the entry alone.
			f.update(t, o.ID, store.OrderInput{Notes: ptr("kept"), CustomerID: ptr(strconv.FormatInt(ada.ID, 10))})
			if got := f.linksOf(t, ada.ID); len(got) != 1 {
				t.Errorf("Ada's links after an update that kept her: %v", got)
			}
			f.update(t, o.ID, store.OrderInput{CustomerID: ptr(strconv.FormatInt(bob.ID, 10))})
			if got, bobs := f.linksOf(t, ada.ID), f.linksOf(t, bob.ID); len(got) != 0 || bobs[id] == "" {
				t.Errorf("after the order moved from Ada to Bob: Ada's links %v (want none), Bob's %v (want order %s)", got, bobs, id)
			}
			if err := f.s.DeleteCustomer(ctx, ada.ID, 0, 0); err != nil {
				t.Errorf("a delete of Ada, whom no order links any more: %v", err)
			}
			if _, err := f.s.UpdateOrder(ctx, o.ID, store.OrderInput{CustomerID: ptr(strconv.FormatInt(ada.ID, 10))}, 0); store.ErrorCode(err) != store.EINVALID {
				t.Errorf("a link to the deleted customer: %v, want EINVALID", err)
			}
			if err := f.s.DeleteOrder(ctx, o.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			if got := f.linksOf(t, bob.ID); len(got) != 0 {
				t.Errorf("Bob's links after his order was deleted: %v, want none", got)
			}
		})
	}
}

// TestCustomerLinkHeldByAWriteThatNeverCameDoesNotBlockItsDelete: a hold
// taken by an order write that then stopped (a crash) keeps the customer
// only while a writer could still be at work: a delete waits for it at
// most a second, finds the order not linking the customer, drops the hold
// and deletes; the writer, should it come back, can no longer link. A hold
// already old costs no wait.
func TestCustomerLinkHeldByAWriteThatNeverCameDoesNotBlockItsDelete(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			c := f.customer(t, "Grace")
			o := f.create(t, "Grace")
			if err := f.s.HoldLink(ctx, c.ID, o.ID); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := f.s.DeleteCustomer(ctx, c.ID, 0, 0); err != nil {
				t.Fatalf("a delete beside a hold whose write never came: %v, want it deleted", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the delete took %v, want about a second", d)
			}
			if got := f.linksOf(t, c.ID); len(got) != 0 {
				t.Errorf("the links after the delete: %v, want none", got)
			}
			// A writer stalled between its hold and its transaction: the
			// delete takes its hold over, and it can no longer link.
			stalled := f.customer(t, "Edsger")
			err := f.s.LinkUnderHold(ctx, stalled.ID, o.ID, func() {
				if err := f.s.DeleteCustomer(ctx, stalled.ID, 0, 0); err != nil {
					t.Errorf("a delete beside a stalled writer's hold: %v", err)
				}
			})
			if err == nil {
				t.Errorf("a write under a hold the delete took over linked order %d to deleted customer %d", o.ID, stalled.ID)
			}
			if got, err := f.s.GetOrder(ctx, o.ID); err != nil || got.CustomerID != 0 {
				t.Errorf("the order after the stalled write: %+v, %v; want it linking no customer", got, err)
			}
			// A hold taken a minute ago, whose writer is long gone.
			old := f.customer(t, "Alan")
			f.oldHold(t, old.ID, strconv.FormatInt(o.ID, 10))
			start = time.Now()
			if err := f.s.DeleteCustomer(ctx, old.ID, 0, 0); err != nil {
				t.Fatalf("a delete beside an old hold: %v", err)
			}
			if d := time.Since(start); d > 900*time.Millisecond {
				t.Errorf("a delete beside an old hold took %v, want no wait", d)
			}
		})
	}
}

// TestRepairRebuildsCustomerLinks: a customer whose links are lost stays
// undeletable by its orders index; Repair adds the entry of an order that
// links a customer without one, and drops an old hold whose order does
// not link it (left behind by a writer, not counted as a problem).
func TestRepairRebuildsCustomerLinks(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			c := f.customer(t, "Barbara")
			o := f.create(t, "Barbara", func(in *store.OrderInput) { in.CustomerID = ptr(strconv.FormatInt(c.ID, 10)) })
			key := f.prefix + "c:{c}:" + strconv.FormatInt(c.ID, 10) + ":links"
			if err := tg.Client.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			// Without its links, the orders index still keeps the customer.
			if err := f.s.DeleteCustomer(ctx, c.ID, 0, 0); store.ErrorCode(err) != store.ECONFLICT || !strings.Contains(err.Error(), "has 1 order") {
				t.Errorf("a delete of a customer whose links are lost: %v, want ECONFLICT saying it has 1 order", err)
			}
			f.oldHold(t, c.ID, "999")
			r, err := f.s.Repair(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if r.Missing != 1 || r.Holds != 1 || r.Problems() != 1 {
				t.Errorf("Repair: %v, want 1 missing (order %d's link, a problem) and 1 hold left behind (order 999's, none)", r, o.ID)
			}
			got := f.linksOf(t, c.ID)
			if len(got) != 1 || got[strconv.FormatInt(o.ID, 10)] == "" {
				t.Errorf("the links after Repair: %v, want order %d's alone", got, o.ID)
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 || r.Holds != 0 {
				t.Errorf("a second look: %v, %v; want nothing", r, err)
			}
		})
	}
}
