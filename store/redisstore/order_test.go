package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

func ptr[T any](v T) *T { return &v }

// widget is a valid item input.
var widget = store.ItemInput{SKU: "SKU-1", Name: "Widget", Quantity: "2", UnitPrice: "19.99"}

// validInput is a valid new order with one item (store's validation tests
// have their own).
func validInput() store.OrderInput {
	return store.OrderInput{Customer: ptr("Ada Lovelace"), Email: ptr("ada@example.com"),
		Notes: ptr("Leave at the door."), Items: []store.ItemInput{widget}, HasItems: true}
}

// pathTo lists the status changes that bring a new order to s.
func pathTo(s store.Status) []store.Status {
	switch s {
	case store.Confirmed:
		return []store.Status{store.Confirmed}
	case store.Shipped:
		return []store.Status{store.Confirmed, store.Shipped}
	case store.Delivered:
		return []store.Status{store.Confirmed, store.Shipped, store.Delivered}
	case store.Cancelled:
		return []store.Status{store.Cancelled}
	}
	return nil
}

// miniStore returns a store over a fresh miniredis.
func miniStore(t *testing.T) *redisstore.Store {
	t.Helper()
	return testutil.NewStore(t, testutil.Miniredis(t))
}

// createIn creates a valid order and moves it to status s.
func createIn(t *testing.T, ctx context.Context, s *redisstore.Store, st store.Status) *store.Order {
	t.Helper()
	o, err := s.CreateOrder(ctx, validInput())
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for _, next := range pathTo(st) {
		if o, err = s.UpdateOrder(ctx, o.ID, store.OrderInput{Status: ptr(string(next))}, 0); err != nil {
			t.Fatalf("Update to %s: %v", next, err)
		}
	}
	if o.Status != st {
		t.Fatalf("status: got %s, want %s", o.Status, st)
	}
	return o
}

func TestStatusTransitionsUpdate(t *testing.T) {
	ctx := context.Background()
	s := miniStore(t)
	for _, from := range store.Statuses {
		for _, to := range store.Statuses {
			o := createIn(t, ctx, s, from)
			got, err := s.UpdateOrder(ctx, o.ID, store.OrderInput{Status: ptr(string(to))}, 0)
			if from == to || from.CanBecome(to) { // the rule, checked against its table in store
				if err != nil {
					t.Errorf("%s → %s: got %v, want success", from, to, err)
					continue
				}
				want := o.Version + 1
				if from == to {
					want = o.Version // setting the same status again changes nothing
				}
				if got.Status != to || got.Version != want {
					t.Errorf("%s → %s: got status %s version %d, want %s version %d", from, to, got.Status, got.Version, to, want)
				}
				continue
			}
			var e *store.Error
			if err == nil || store.ErrorCode(err) != store.EINVALID {
				t.Errorf("%s → %s: got %v, want %s", from, to, err, store.EINVALID)
				continue
			}
			e = err.(*store.Error)
			want := fmt.Sprintf("cannot change status from %s to %s", from, to)
			if e.Fields["status"] != want {
				t.Errorf("%s → %s: message %q, want %q", from, to, e.Fields["status"], want)
			}
			back, err := s.GetOrder(ctx, o.ID)
			if err != nil || back.Status != from || back.Version != o.Version {
				t.Errorf("%s → %s refused, but stored order is %+v, %v; want status %s version %d", from, to, back, err, from, o.Version)
			}
		}
	}
}

func TestFrozenOnceShipped(t *testing.T) {
	ctx := context.Background()
	s := miniStore(t)
	for _, st := range store.Statuses {
		t.Run(string(st), func(t *testing.T) {
			editable := st == store.Pending || st == store.Confirmed
			if st.ItemsEditable() != editable {
				t.Errorf("%s.ItemsEditable() = %v, want %v", st, st.ItemsEditable(), editable)
			}
			o := createIn(t, ctx, s, st)
			frozen := "cannot change once an order is " + string(st)

			// Items.
			_, err := s.UpdateOrder(ctx, o.ID, store.OrderInput{Items: []store.ItemInput{widget, widget}, HasItems: true}, 0)
			checkUpdate(t, err, editable, "items", frozen)
			// No items at all: a draft may have none, a confirmed order not.
			_, err = s.UpdateOrder(ctx, o.ID, store.OrderInput{HasItems: true}, 0)
			if st == store.Confirmed {
				checkUpdate(t, err, false, "items", "a confirmed order needs at least one item")
			} else {
				checkUpdate(t, err, editable, "items", frozen)
			}
			// Currency: a change is refused; the same value is not a change.
			_, err = s.UpdateOrder(ctx, o.ID, store.OrderInput{Currency: ptr("EUR")}, 0)
			checkUpdate(t, err, editable, "currency", frozen)
			cur, _ := s.GetOrder(ctx, o.ID)
			if _, err = s.UpdateOrder(ctx, o.ID, store.OrderInput{Currency: ptr(strings.ToLower(cur.Currency))}, 0); err != nil {
				t.Errorf("same currency: got %v, want success", err)
			}
			// Customer, email and notes change in every status.
			got, err := s.UpdateOrder(ctx, o.ID, store.OrderInput{Customer: ptr("Grace Hopper"), Email: ptr("grace@example.com"), Notes: ptr("new notes")}, 0)
			if err != nil {
				t.Fatalf("customer/email/notes: got %v, want success", err)
			}
			if got.Customer != "Grace Hopper" || got.Email != "grace@example.com" || got.Notes != "new notes" || got.Status != st {
				t.Errorf("after update: got %q %q %q %s, want Grace Hopper, grace@example.com, new notes, %s", got.Customer, got.Email, got.Notes, got.Status, st)
			}
		})
	}
}

func checkUpdate(t *testing.T, err error, ok bool, key, msg string) {
	t.Helper()
	if ok {
		if err != nil {
			t.Errorf("%s: got %v, want success", key, err)
		}
		return
	}
	e, _ := err.(*store.Error)
	if e == nil || e.Code != store.EINVALID || e.Fields[key] != msg {
		t.Errorf("%s: got %v, want %s with %s: %q", key, err, store.EINVALID, key, msg)
	}
}

func TestCreateNormalizes(t *testing.T) {
	ctx := context.Background()
	s := miniStore(t)
	in := validInput()
	in.Customer = ptr("  Ada Lovelace  ")
	in.Currency = ptr("usd")
	in.Status = ptr(" Pending ")
	o, err := s.CreateOrder(ctx, in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if o.Currency != "USD" || o.Customer != "Ada Lovelace" || o.Status != store.Pending {
		t.Errorf("got currency %q customer %q status %q, want USD, Ada Lovelace, pending", o.Currency, o.Customer, o.Status)
	}
	in.Currency = ptr("eur")
	if o, err = s.CreateOrder(ctx, in); err != nil || o.Currency != "EUR" {
		t.Errorf("currency eur: got %v, %v; want EUR", o, err)
	}
}
