package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/testutil"
)

// TestHistoryOfAnOrdersLife: every step of an order's life is one entry,
// newest first, with who, how, the version and what changed (fields and
// items); a note changes nothing but the history; a change that changes
// nothing adds nothing; a deleted order's history stays for 30 days.
func TestHistoryOfAnOrdersLife(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			web := store.WithActor(context.Background(), "alice", "web")
			api := store.WithActor(context.Background(), "bob", "api")
			o, err := f.s.CreateOrder(web, store.OrderInput{Customer: ptr("Ada"), HasItems: true, Items: []store.ItemInput{
				{SKU: "MUG-1", Name: "Mug", Quantity: "2", UnitPrice: "3.50"},
				{Name: "Pen", Quantity: "10", UnitPrice: "0.25"},
			}})
			if err != nil {
				t.Fatal(err)
			}
			f.clock.unix.Add(60)
			if _, err := f.s.UpdateOrder(api, o.ID, store.OrderInput{Customer: ptr("Ada Lovelace"), Email: ptr("ada@example.com"), HasItems: true,
				Items: []store.ItemInput{
					{SKU: "MUG-1", Name: "Mug", Quantity: "3", UnitPrice: "3.50"},
					{SKU: "TEE", Name: "Tee", Quantity: "1", UnitPrice: "19.99"},
				}}, 0); err != nil {
				t.Fatal(err)
			}
			// The same values again: no change, no entry.
			if _, err := f.s.UpdateOrder(api, o.ID, store.OrderInput{Customer: ptr("Ada Lovelace")}, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.AddOrderNote(web, o.ID, "  Called her: ships Friday.  "); err != nil {
				t.Fatal(err)
			}
			cur, err := f.s.GetOrder(context.Background(), o.ID)
			if err != nil || cur.Version != 2 {
				t.Fatalf("after a note the order is %+v, %v; want version 2 (a note changes no version)", cur, err)
			}
			if _, err := f.s.UpdateOrder(context.Background(), o.ID, store.OrderInput{Status: ptr("confirmed")}, 0); err != nil {
				t.Fatal(err)
			}
			if err := f.s.DeleteOrder(web, o.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			h, err := f.s.OrderHistory(context.Background(), o.ID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range h.Entries {
				got = append(got, e.Action+" v"+strconv.FormatInt(e.Version, 10)+" "+e.Actor+"/"+e.Via)
			}
			want := []string{"deleted v3 alice/web", "updated v3 anonymous/api", "note v2 alice/web", "updated v2 bob/api", "created v1 alice/web"}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Fatalf("history:\n%s\nwant\n%s", strings.Join(got, "; "), strings.Join(want, "; "))
			}
			created, updated, note, status := h.Entries[4], h.Entries[3], h.Entries[2], h.Entries[1]
			if c := created.Changes["customer"]; c.From != nil || c.To != "Ada" || created.Items == nil || len(created.Items.Added) != 2 {
				t.Errorf("created entry: %+v, items %+v; want customer to Ada and 2 items added", created.Changes, created.Items)
			}
			if c := updated.Changes["customer"]; c.From != "Ada" || c.To != "Ada Lovelace" {
				t.Errorf("updated customer: %+v", c)
			}
			if c := updated.Changes["email"]; c.From != "" || c.To != "ada@example.com" {
				t.Errorf("updated email: %+v", c)
			}
			if _, ok := updated.Changes["status"]; ok {
				t.Errorf("updated entry lists the status, which did not change: %+v", updated.Changes)
			}
			it := updated.Items
			if it == nil || len(it.Added) != 1 || it.Added[0].SKU != "TEE" || len(it.Removed) != 1 || it.Removed[0].Name != "Pen" ||
				len(it.Changed) != 1 || it.Changed[0].From.Quantity != 2 || it.Changed[0].To.Quantity != 3 {
				t.Errorf("updated items: %+v; want TEE added, Pen removed, the mug 2 → 3", it)
			}
			if note.Note != "Called her: ships Friday." || note.Changes != nil {
				t.Errorf("note entry: %+v", note)
			}
			if c := status.Changes["status"]; c.From != "pending" || c.To != "confirmed" || len(status.Changes) != 1 {
				t.Errorf("status entry: %+v", status.Changes)
			}
			if !h.Entries[4].At.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) || h.Entries[0].At.Before(h.Entries[4].At.Add(time.Minute)) {
				t.Errorf("times: created %v, deleted %v", h.Entries[4].At, h.Entries[0].At)
			}
			// A page of two, then the rest by its cursor.
			p1, err := f.s.OrderHistory(context.Background(), o.ID, "", 2)
			if err != nil || len(p1.Entries) != 2 || p1.Next == "" {
				t.Fatalf("page 1: %+v, %v", p1, err)
			}
			p2, err := f.s.OrderHistory(context.Background(), o.ID, p1.Next, 2)
			if err != nil || len(p2.Entries) != 2 || p2.Entries[0].Action != "note" {
				t.Fatalf("page 2: %+v, %v", p2, err)
			}
			p3, err := f.s.OrderHistory(context.Background(), o.ID, p2.Next, 2)
			if err != nil || len(p3.Entries) != 1 || p3.Next != "" || p3.Entries[0].Action != "created" {
				t.Fatalf("page 3: %+v, %v", p3, err)
			}
			// Kept for 30 days after the delete, not for ever.
			ttl := f.tg.Client.TTL(context.Background(), f.prefix+"o:{"+strconv.FormatInt(o.ID, 10)+"}:h").Val()
			if ttl < 29*24*time.Hour || ttl > 30*24*time.Hour {
				t.Errorf("history TTL after the delete: %v, want 30 days", ttl)
			}
			// A note on a deleted order is a 404, and adds nothing.
			if _, err := f.s.AddOrderNote(web, o.ID, "too late"); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("note on a deleted order: %v, want not found", err)
			}
			if _, err := f.s.OrderHistory(context.Background(), 999, "", 0); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("history of an order that never was: %v, want not found", err)
			}
		})
	}
}

// TestHistoryKeepsChangesAndNotesApart: notes never push a change out of
// a record's history. A record keeps its newest MaxHistory changes and at
// most MaxHistoryNotes notes, and a note past that is refused, naming the
// limit; notes are checked like every field (1–2000 characters).
func TestHistoryKeepsChangesAndNotesApart(t *testing.T) {
	f := fresh(t, testutil.Targets(t)[0])
	ctx := context.Background()
	o := f.create(t, "Many")
	for i := 0; i < store.MaxHistoryNotes; i++ {
		if _, err := f.s.AddOrderNote(ctx, o.ID, "note "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.s.AddOrderNote(ctx, o.ID, "one too many")
	if store.ErrorCode(err) != store.EINVALID || !strings.Contains(err.(*store.Error).Fields["note"], strconv.Itoa(store.MaxHistoryNotes)) {
		t.Fatalf("note %d: %v, want it refused as invalid, naming the limit", store.MaxHistoryNotes+1, err)
	}
	// Every entry is still there, the create the oldest.
	all := func() []store.HistoryEntry {
		var out []store.HistoryEntry
		for cursor := ""; ; {
			p, err := f.s.OrderHistory(ctx, o.ID, cursor, store.MaxPerPage)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Entries...)
			if cursor = p.Next; cursor == "" {
				return out
			}
		}
	}
	h := all()
	if len(h) != store.MaxHistoryNotes+1 || h[len(h)-1].Action != store.ActionCreated || h[0].Note != "note "+strconv.Itoa(store.MaxHistoryNotes-1) {
		t.Fatalf("after %d notes: %d entries, oldest %+v, newest %+v; want every note and the create", store.MaxHistoryNotes, len(h), h[len(h)-1], h[0])
	}

	// Changes past MaxHistory push out the oldest changes only.
	v := o.Version
	for i := 0; i < store.MaxHistory+3; i++ {
		cur, err := f.s.UpdateOrder(ctx, o.ID, store.OrderInput{Customer: ptr("Many " + strconv.Itoa(i))}, v)
		if err != nil {
			t.Fatal(err)
		}
		v = cur.Version
	}
	h = all()
	changes, notes := 0, 0
	for i, e := range h {
		if e.Action == store.ActionNote {
			notes++
		} else {
			changes++
		}
		if i > 0 && cursorNumber(t, e.Cursor) >= cursorNumber(t, h[i-1].Cursor) {
			t.Fatalf("entries out of order: %s after %s", e.Cursor, h[i-1].Cursor)
		}
	}
	if changes != store.MaxHistory || notes != store.MaxHistoryNotes {
		t.Errorf("after %d changes: %d changes and %d notes kept, want %d and %d", store.MaxHistory+3, changes, notes, store.MaxHistory, store.MaxHistoryNotes)
	}
	if h[0].Version != v || h[0].Action != store.ActionUpdated {
		t.Errorf("newest entry %+v, want the update to version %d", h[0], v)
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", store.MaxNote+1), "a\x00b"} {
		if _, err := f.s.AddOrderNote(ctx, o.ID, bad); store.ErrorCode(err) != store.EINVALID {
			t.Errorf("note %.20q: %v, want invalid", bad, err)
		}
	}
}

func cursorNumber(t *testing.T, cursor string) int64 {
	n, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil {
		t.Fatalf("cursor %q is no number", cursor)
	}
	return n
}

// TestProductHistory: products have the same history and notes.
func TestProductHistory(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := store.WithActor(context.Background(), "carol", "web")
			p, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr("MUG-1"), Name: ptr("Mug"), UnitPrice: ptr("3.50")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.UpdateProduct(ctx, p.ID, store.ProductInput{UnitPrice: ptr("4"), Active: boolPtr(false)}, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.AddProductNote(ctx, p.ID, "Supplier raised prices"); err != nil {
				t.Fatal(err)
			}
			h, err := f.s.ProductHistory(ctx, p.ID, "", 0)
			if err != nil || len(h.Entries) != 3 {
				t.Fatalf("history: %+v, %v", h, err)
			}
			up := h.Entries[1]
			if up.Action != "updated" || up.Version != 2 || up.Changes["unit_price"] != (store.FieldChange{From: "3.50", To: "4.00"}) ||
				up.Changes["active"] != (store.FieldChange{From: true, To: false}) || len(up.Changes) != 2 {
				t.Errorf("update entry: %+v", up)
			}
		})
	}
}

// TestHistoryWithDamagedEntries: entries that cannot be read (damaged, or
// written by some other program) are skipped, and paging goes on past
// them: a page made only of them is an empty page with its next cursor,
// never a failure (it was a panic: index out of range).
func TestHistoryWithDamagedEntries(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			o := f.create(t, "Damaged")
			hk := f.prefix + "o:{" + strconv.FormatInt(o.ID, 10) + "}:h"
			for i := 100; i < 110; i++ {
				must(t, f.tg.Client.ZAdd(ctx, hk, redis.Z{Score: float64(i), Member: fmt.Sprintf("%012dgarbage", i)}).Err())
			}
			h, err := f.s.OrderHistory(ctx, o.ID, "", 5)
			if err != nil || len(h.Entries) != 0 || h.Next != "105" {
				t.Fatalf("a page of damaged entries: %+v, %v; want no entries and next 105", h, err)
			}
			var seen []string
			for cursor, pages := "", 0; pages < 10; pages++ {
				h, err := f.s.OrderHistory(ctx, o.ID, cursor, 5)
				must(t, err)
				for _, e := range h.Entries {
					seen = append(seen, e.Action)
				}
				if cursor = h.Next; cursor == "" {
					break
				}
			}
			if !slices.Equal(seen, []string{store.ActionCreated}) {
				t.Errorf("walking the pages read %v, want the create alone", seen)
			}
		})
	}
}
