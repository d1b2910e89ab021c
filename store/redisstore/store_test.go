package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
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

// TestStore runs the storage suite against every Redis testutil finds.
func TestStore(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) { runSuite(t, tg) })
	}
}

// clock is a settable time source for redisstore.Options.Now.
type clock struct{ unix atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(c.unix.Load(), 0) }
func (c *clock) Advance(d time.Duration) { c.unix.Add(int64(d / time.Second)) }

// fixture is a store with its own key space inside a target.
type fixture struct {
	s      *redisstore.Store
	tg     testutil.Target
	prefix string
	clock  *clock
}

var fixtures atomic.Int64

// fresh returns a store whose keys no other subtest shares, so ids start at
// 1 and the collection starts empty. Its keys sit under the target's
// prefix, which the target's cleanup deletes.
func fresh(t *testing.T, tg testutil.Target) *fixture {
	t.Helper()
	c := &clock{}
	c.unix.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix())
	prefix := fmt.Sprintf("%ss%d:", tg.Prefix, fixtures.Add(1))
	s := redisstore.New(tg.Client, redisstore.Options{Prefix: prefix, Cluster: tg.Cluster, Now: c.Now})
	return &fixture{s: s, tg: tg, prefix: prefix, clock: c}
}

func (f *fixture) create(t *testing.T, customer string, mod ...func(*store.OrderInput)) *store.Order {
	t.Helper()
	// One item, so the order can be confirmed (a test that wants a draft
	// without items says so with a mod).
	in := store.OrderInput{Customer: ptr(customer), HasItems: true,
		Items: []store.ItemInput{{Name: "Widget", Quantity: "1", UnitPrice: "1.00"}}}
	for _, m := range mod {
		m(&in)
	}
	o, err := f.s.CreateOrder(context.Background(), in)
	if err != nil {
		t.Fatalf("Create(%q): %v", customer, err)
	}
	return o
}

func (f *fixture) update(t *testing.T, id int64, in store.OrderInput) *store.Order {
	t.Helper()
	o, err := f.s.UpdateOrder(context.Background(), id, in, 0)
	if err != nil {
		t.Fatalf("Update(%d): %v", id, err)
	}
	return o
}

func (f *fixture) list(t *testing.T, q store.OrderQuery) store.OrderPage {
	t.Helper()
	p, err := f.s.ListOrders(context.Background(), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return p
}

// keys lists every key of the fixture, on every master of a cluster.
func (f *fixture) keys(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		ks, err := scanAll(ctx, c, f.prefix+"*")
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	}
	var err error
	if cc, ok := f.tg.Client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, f.tg.Client)
	}
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	slices.Sort(out)
	for i := range out {
		out[i] = strings.TrimPrefix(out[i], f.prefix)
	}
	return out
}

func scanAll(ctx context.Context, c redis.Cmdable, match string) ([]string, error) {
	var out []string
	iter := c.Scan(ctx, 0, match, 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

func ids(p store.OrderPage) []int64 {
	out := []int64{}
	for _, o := range p.Orders {
		out = append(out, o.ID)
	}
	return out
}

// wantPage checks a page's ids and total.
func wantPage(t *testing.T, what string, p store.OrderPage, total int64, want ...int64) {
	t.Helper()
	if want == nil {
		want = []int64{}
	}
	if got := ids(p); !slices.Equal(got, want) || p.Total != total {
		t.Errorf("%s: got ids %v total %d, want ids %v total %d", what, got, p.Total, want, total)
	}
}

// wantCode checks that err is a *store.Error with the given code.
func wantCode(t *testing.T, what string, err error, code string) *store.Error {
	t.Helper()
	var e *store.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: got error %v, want code %s", what, err, code)
	}
	return e
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func withItems(its ...store.ItemInput) func(*store.OrderInput) {
	return func(in *store.OrderInput) { in.Items, in.HasItems = its, true }
}

func runSuite(t *testing.T, tg testutil.Target) {
	ctx := context.Background()

	t.Run("Create", func(t *testing.T) {
		f := fresh(t, tg)
		its := []store.ItemInput{
			{SKU: "MUG-01", Name: "Mug", Quantity: "3", UnitPrice: "0.10"},
			{Name: "Tee", Quantity: "2", UnitPrice: "19.99"},
			{SKU: "LMP.D_1", Name: "Lamp", Quantity: "1", UnitPrice: "1000000"},
		}
		o := f.create(t, "Ada Lovelace", withItems(its...), func(in *store.OrderInput) { in.Email = ptr("ada@example.com") })
		if o.ID != 1 || o.Version != 1 || o.Status != store.Pending || o.Currency != "USD" {
			t.Errorf("got id %d version %d status %s currency %s, want 1, 1, pending, USD", o.ID, o.Version, o.Status, o.Currency)
		}
		if !o.CreatedAt.Equal(f.clock.Now()) || !o.UpdatedAt.Equal(o.CreatedAt) || o.CreatedAt.Location() != time.UTC {
			t.Errorf("got created_at %v updated_at %v, want both %v in UTC", o.CreatedAt, o.UpdatedAt, f.clock.Now().UTC())
		}
		wantItems := []store.Item{
			{SKU: "MUG-01", Name: "Mug", Quantity: 3, UnitPrice: 10, LineTotal: 30},
			{Name: "Tee", Quantity: 2, UnitPrice: 1999, LineTotal: 3998},
			{SKU: "LMP.D_1", Name: "Lamp", Quantity: 1, UnitPrice: 100_000_000, LineTotal: 100_000_000},
		}
		if !slices.Equal(o.Items, wantItems) {
			t.Errorf("items:\n got %+v\nwant %+v", o.Items, wantItems)
		}
		if o.ItemCount != 3 || o.Total.String() != "1000040.28" {
			t.Errorf("got item_count %d total %s, want 3 and 1000040.28", o.ItemCount, o.Total)
		}
		for want := int64(2); want <= 3; want++ {
			if o := f.create(t, "Next"); o.ID != want {
				t.Errorf("next id: got %d, want %d", o.ID, want)
			}
		}
		// Without items: an empty list, not null.
		if o := f.create(t, "Empty", withItems()); o.Items == nil || o.ItemCount != 0 || o.Total != 0 {
			t.Errorf("order without items: got items %v count %d total %d, want [] 0 0", o.Items, o.ItemCount, o.Total)
		}
		// Invalid: nothing stored, no id used up.
		_, err := f.s.CreateOrder(ctx, store.OrderInput{Customer: ptr("")})
		e := wantCode(t, "invalid create", err, store.EINVALID)
		if e.Fields["customer"] != "is required" {
			t.Errorf("fields: got %v, want customer: is required", e.Fields)
		}
		if n, _ := f.s.CountOrders(ctx); n != 4 {
			t.Errorf("Count after invalid create: got %d, want 4", n)
		}
		if o := f.create(t, "After"); o.ID != 5 {
			t.Errorf("id after invalid create: got %d, want 5", o.ID)
		}
	})

	t.Run("Get", func(t *testing.T) {
		f := fresh(t, tg)
		o := f.create(t, "Grace Hopper", withItems(widget, widget, store.ItemInput{Name: "Third", Quantity: "7", UnitPrice: "0.01"}),
			func(in *store.OrderInput) { in.Notes = ptr("two\nlines"); in.Currency = ptr("EUR") })
		got, err := f.s.GetOrder(ctx, o.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if g, w := jsonOf(t, got), jsonOf(t, o); g != w {
			t.Errorf("Get:\n got %s\nwant %s", g, w)
		}
		empty := f.create(t, "No Items", withItems())
		if got, err := f.s.GetOrder(ctx, empty.ID); err != nil || got.Items == nil || len(got.Items) != 0 {
			t.Errorf("Get of an order without items: got %+v, %v; want items []", got, err)
		}
		_, err = f.s.GetOrder(ctx, 999)
		wantCode(t, "Get missing", err, store.ENOTFOUND)
	})

	t.Run("Update", func(t *testing.T) {
		f := fresh(t, tg)
		o := f.create(t, "Ada Lovelace", withItems(widget, widget), func(in *store.OrderInput) {
			in.Email = ptr("ada@example.com")
			in.Notes = ptr("first")
		})
		f.clock.Advance(time.Minute)

		// Only the fields present change.
		u := f.update(t, o.ID, store.OrderInput{Notes: ptr("second")})
		if u.Notes != "second" || u.Customer != o.Customer || u.Email != o.Email || u.Status != o.Status ||
			u.Currency != o.Currency || !slices.Equal(u.Items, o.Items) || u.Total != o.Total {
			t.Errorf("notes-only update changed more: got %+v, from %+v", u, o)
		}
		if u.Version != 2 || !u.CreatedAt.Equal(o.CreatedAt) || !u.UpdatedAt.Equal(f.clock.Now()) {
			t.Errorf("got version %d created %v updated %v, want 2, %v, %v", u.Version, u.CreatedAt, u.UpdatedAt, o.CreatedAt, f.clock.Now().UTC())
		}
		if got, _ := f.s.GetOrder(ctx, o.ID); jsonOf(t, got) != jsonOf(t, u) {
			t.Errorf("Get after update:\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, u))
		}
		// A clearing value is stored (not skipped as empty).
		if u = f.update(t, o.ID, store.OrderInput{Email: ptr(""), Notes: ptr("")}); u.Email != "" || u.Notes != "" {
			t.Errorf("clearing email and notes: got %q %q", u.Email, u.Notes)
		}
		if got, _ := f.s.GetOrder(ctx, o.ID); got.Email != "" || got.Notes != "" {
			t.Errorf("Get after clearing: got email %q notes %q, want empty", got.Email, got.Notes)
		}
		// An update that changes nothing keeps the version, so
		// it never makes a stale form out of someone else's.
		unchanged := jsonOf(t, u)
		if u = f.update(t, o.ID, store.OrderInput{Status: ptr("pending")}); u.Version != 3 {
			t.Errorf("same-status update: got version %d, want 3", u.Version)
		}
		if u = f.update(t, o.ID, store.OrderInput{Customer: ptr("  Ada Lovelace "), Email: ptr("")}); u.Version != 3 {
			t.Errorf("update to the same values: got version %d, want 3", u.Version)
		}
		if u = f.update(t, o.ID, store.OrderInput{}); u.Version != 3 {
			t.Errorf("empty update: got version %d, want 3", u.Version)
		}
		if got, _ := f.s.GetOrder(ctx, o.ID); jsonOf(t, got) != unchanged {
			t.Errorf("a no-op update changed the stored order:\n got %s\nwant %s", jsonOf(t, got), unchanged)
		}

		// Items are replaced as a whole, and cleared with an empty list.
		u = f.update(t, o.ID, store.OrderInput{HasItems: true, Items: []store.ItemInput{{Name: "Only", Quantity: "4", UnitPrice: "2.50"}}})
		want := []store.Item{{Name: "Only", Quantity: 4, UnitPrice: 250, LineTotal: 1000}}
		got, _ := f.s.GetOrder(ctx, o.ID)
		if !slices.Equal(u.Items, want) || !slices.Equal(got.Items, want) || got.ItemCount != 1 || got.Total != 1000 {
			t.Errorf("replace items: got %+v (stored %+v count %d total %s), want %+v total 10.00", u.Items, got.Items, got.ItemCount, got.Total, want)
		}
		u = f.update(t, o.ID, store.OrderInput{HasItems: true})
		got, _ = f.s.GetOrder(ctx, o.ID)
		if len(u.Items) != 0 || len(got.Items) != 0 || got.ItemCount != 0 || got.Total != 0 {
			t.Errorf("clear items: got %+v, stored %+v count %d total %s, want none", u.Items, got.Items, got.ItemCount, got.Total)
		}
		if u.Version != 5 {
			t.Errorf("version after 4 changing updates: got %d, want 5", u.Version)
		}

		// A stale version in the body: ECONFLICT with the stored order.
		_, err := f.s.UpdateOrder(ctx, o.ID, store.OrderInput{Customer: ptr("Stale"), Version: ptr(int64(3))}, 0)
		e := wantCode(t, "stale version", err, store.ECONFLICT)
		if cur := e.CurrentOrder(); cur == nil || cur.Version != 5 || cur.Customer != "Ada Lovelace" {
			t.Errorf("conflict Current: got %+v, want version 5 customer Ada Lovelace", e.Current)
		}
		// The current version in the body succeeds.
		if u = f.update(t, o.ID, store.OrderInput{Customer: ptr("Ada King"), Version: ptr(int64(5))}); u.Version != 6 || u.Customer != "Ada King" {
			t.Errorf("update with current version: got version %d customer %q, want 6, Ada King", u.Version, u.Customer)
		}
		// If-Match.
		_, err = f.s.UpdateOrder(ctx, o.ID, store.OrderInput{Customer: ptr("Nope")}, 5)
		e = wantCode(t, "If-Match mismatch", err, store.EPRECONDITION)
		if cur := e.CurrentOrder(); cur == nil || cur.Version != 6 {
			t.Errorf("precondition Current: got %+v, want version 6", e.Current)
		}
		if u, err = f.s.UpdateOrder(ctx, o.ID, store.OrderInput{Notes: ptr("matched")}, 6); err != nil || u.Version != 7 {
			t.Errorf("If-Match current: got %v, %v; want version 7", u, err)
		}

		// Invalid values: EINVALID with fields, nothing stored.
		before, _ := f.s.GetOrder(ctx, o.ID)
		_, err = f.s.UpdateOrder(ctx, o.ID, store.OrderInput{
			Customer: ptr("Changed"), Email: ptr("bad"), HasItems: true,
			Items: []store.ItemInput{{Name: "x", Quantity: "0", UnitPrice: "1"}},
		}, 0)
		e = wantCode(t, "invalid update", err, store.EINVALID)
		if e.Fields["email"] == "" || e.Fields["items[0][quantity]"] == "" || len(e.Fields) != 2 {
			t.Errorf("fields: got %v, want email and items[0][quantity]", e.Fields)
		}
		after, _ := f.s.GetOrder(ctx, o.ID)
		if jsonOf(t, after) != jsonOf(t, before) {
			t.Errorf("invalid update stored something:\n got %s\nwant %s", jsonOf(t, after), jsonOf(t, before))
		}
		if p := f.list(t, store.OrderQuery{Q: "changed"}); p.Total != 0 {
			t.Errorf("invalid update reached the name index: %v", ids(p))
		}

		_, err = f.s.UpdateOrder(ctx, 999, store.OrderInput{Notes: ptr("x")}, 0)
		wantCode(t, "Update missing", err, store.ENOTFOUND)
	})

	t.Run("Delete", func(t *testing.T) {
		f := fresh(t, tg)
		a := f.create(t, "Ada Lovelace", withItems(widget, widget))
		b := f.create(t, "Ada Byron", withItems(widget))
		c := f.create(t, "Alan Turing")
		f.update(t, b.ID, store.OrderInput{Status: ptr("confirmed")})

		err := f.s.DeleteOrder(ctx, b.ID, 1, 0)
		wantCode(t, "Delete with stale If-Match", err, store.EPRECONDITION)
		if e, ok := err.(*store.Error); !ok || e.CurrentOrder() == nil || len(e.CurrentOrder().Items) != 1 {
			t.Errorf("Delete 412: Current = %+v, want the stored order with its 1 item", e)
		}
		wantCode(t, "Delete with stale body version", f.s.DeleteOrder(ctx, b.ID, 0, 1), store.ECONFLICT)
		if _, err := f.s.GetOrder(ctx, b.ID); err != nil {
			t.Fatalf("refused delete removed the order: %v", err)
		}
		if err := f.s.DeleteOrder(ctx, b.ID, 2, 0); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		_, err = f.s.GetOrder(ctx, b.ID)
		wantCode(t, "Get deleted", err, store.ENOTFOUND)
		wantCode(t, "Delete again", f.s.DeleteOrder(ctx, b.ID, 0, 0), store.ENOTFOUND)
		wantCode(t, "Update deleted", func() error { _, err := f.s.UpdateOrder(ctx, b.ID, store.OrderInput{}, 0); return err }(), store.ENOTFOUND)

		if n, _ := f.s.CountOrders(ctx); n != 2 {
			t.Errorf("Count: got %d, want 2", n)
		}
		wantPage(t, "list", f.list(t, store.OrderQuery{}), 2, c.ID, a.ID)
		wantPage(t, "search ada", f.list(t, store.OrderQuery{Q: "ada"}), 1, a.ID)
		wantPage(t, "confirmed", f.list(t, store.OrderQuery{Status: store.Confirmed}), 0)
		wantPage(t, "search id", f.list(t, store.OrderQuery{Q: fmt.Sprint(b.ID)}), 0)

		// Nothing of the deleted orders is left: once all are gone, only the
		// id counter remains, a tombstone per deleted id that expires (so no
		// retried create brings an order back), each one's values kept for
		// an undo, which expire with the undo window, and each one's
		// history, which expires in 30 days, and the event stream, which
		// keeps the last EventsKept events.
		for _, o := range []*store.Order{a, c} {
			if err := f.s.DeleteOrder(ctx, o.ID, 0, 0); err != nil {
				t.Fatalf("Delete(%d): %v", o.ID, err)
			}
		}
		if k := f.keys(t); !slices.Equal(k, []string{"o:events", "o:{1}:gone", "o:{1}:h", "o:{1}:undo", "o:{2}:gone", "o:{2}:h", "o:{2}:undo", "o:{3}:gone", "o:{3}:h", "o:{3}:undo", "seq"}) {
			t.Errorf("keys after deleting everything: got %q, want only seq, three tombstones, three histories, three undo copies and the events", k)
		}
		for _, id := range []string{"1", "2", "3"} {
			if ttl := f.tg.Client.PTTL(ctx, f.prefix+"o:{"+id+"}:undo").Val(); ttl <= 0 || ttl > store.UndoWindow {
				t.Errorf("undo copy of deleted order %s: TTL %v, want at most %v", id, ttl, store.UndoWindow)
			}
		}
		for _, id := range []string{"1", "2", "3"} {
			if ttl := f.tg.Client.TTL(ctx, f.prefix+"o:{"+id+"}:h").Val(); ttl < 29*24*time.Hour || ttl > 30*24*time.Hour {
				t.Errorf("history of deleted order %s: TTL %v, want 30 days", id, ttl)
			}
		}
		for _, id := range []string{"1", "2", "3"} {
			if ttl := f.tg.Client.TTL(ctx, f.prefix+"o:{"+id+"}:gone").Val(); ttl < 24*time.Hour || ttl > 26*time.Hour {
				t.Errorf("tombstone of order %s: TTL %v, want about 25 h", id, ttl)
			}
		}
		// Ids are never reused.
		if o := f.create(t, "Grace Hopper"); o.ID != 4 {
			t.Errorf("id after deletes: got %d, want 4", o.ID)
		}
	})

	t.Run("ListOrderAndPaging", func(t *testing.T) {
		f := fresh(t, tg)
		for i := 1; i <= 5; i++ {
			f.create(t, fmt.Sprintf("Customer %d", i))
		}
		wantPage(t, "all", f.list(t, store.OrderQuery{}), 5, 5, 4, 3, 2, 1)
		wantPage(t, "page 1 of 2", f.list(t, store.OrderQuery{Page: 1, PerPage: 2}), 5, 5, 4)
		wantPage(t, "page 2 of 2", f.list(t, store.OrderQuery{Page: 2, PerPage: 2}), 5, 3, 2)
		wantPage(t, "page 3 of 2", f.list(t, store.OrderQuery{Page: 3, PerPage: 2}), 5, 1)
		wantPage(t, "page past end", f.list(t, store.OrderQuery{Page: 4, PerPage: 2}), 5)
		// Huge pages are empty, never wrap around to the start.
		for _, pg := range []int{1 << 40, math.MaxInt / 50, math.MaxInt/100 + 2, math.MaxInt} {
			wantPage(t, fmt.Sprint("page ", pg), f.list(t, store.OrderQuery{Page: pg, PerPage: 100}), 5)
			wantPage(t, fmt.Sprint("search, page ", pg), f.list(t, store.OrderQuery{Q: "cust", Page: pg, PerPage: 100}), 5)
			wantPage(t, fmt.Sprint("digits, page ", pg), f.list(t, store.OrderQuery{Q: "3", Page: pg, PerPage: 100}), 1)
		}
		wantPage(t, "page 0", f.list(t, store.OrderQuery{Page: 0, PerPage: 2}), 5, 5, 4)
		wantPage(t, "page -3", f.list(t, store.OrderQuery{Page: -3, PerPage: 2}), 5, 5, 4)
		p := f.list(t, store.OrderQuery{Page: 2, PerPage: 2})
		if p.Page != 2 || p.PerPage != 2 {
			t.Errorf("page numbers: got %d/%d, want 2/2", p.Page, p.PerPage)
		}
		if p.Orders[0].Items != nil {
			t.Errorf("List without Items loaded items: %+v", p.Orders[0].Items)
		}
		if p := f.list(t, store.OrderQuery{Page: 9}); p.Orders == nil {
			t.Errorf("empty page: Orders is nil, want []")
		}
	})

	t.Run("ListPerPageClamp", func(t *testing.T) {
		f := fresh(t, tg)
		if n, err := f.s.Seed(ctx, 130, nil); err != nil || n != 130 {
			t.Fatalf("Seed: %d, %v", n, err)
		}
		for _, tt := range []struct{ in, want int }{{0, 25}, {-5, 1}, {1, 1}, {100, 100}, {101, 100}, {500, 100}} {
			p := f.list(t, store.OrderQuery{PerPage: tt.in})
			if p.PerPage != tt.want || len(p.Orders) != tt.want || p.Total != 130 {
				t.Errorf("per_page %d: got per_page %d, %d orders, total %d; want %d, %d, 130", tt.in, p.PerPage, len(p.Orders), p.Total, tt.want, tt.want)
			}
		}
		p := f.list(t, store.OrderQuery{Page: 2, PerPage: 100})
		if len(p.Orders) != 30 || p.Orders[0].ID != 30 || p.Orders[29].ID != 1 {
			t.Errorf("page 2 of 100: got %d orders %v, want 30 from id 30 down to 1", len(p.Orders), ids(p))
		}
	})

	t.Run("ListStatusFilter", func(t *testing.T) {
		f := fresh(t, tg)
		for i := 1; i <= 6; i++ {
			f.create(t, fmt.Sprintf("C%d", i))
		}
		for _, id := range []int64{2, 4, 5} {
			f.update(t, id, store.OrderInput{Status: ptr("confirmed")})
		}
		f.update(t, 3, store.OrderInput{Status: ptr("cancelled")})
		wantPage(t, "confirmed", f.list(t, store.OrderQuery{Status: store.Confirmed}), 3, 5, 4, 2)
		wantPage(t, "confirmed page 2", f.list(t, store.OrderQuery{Status: store.Confirmed, Page: 2, PerPage: 2}), 3, 2)
		wantPage(t, "pending", f.list(t, store.OrderQuery{Status: store.Pending}), 2, 6, 1)
		wantPage(t, "cancelled", f.list(t, store.OrderQuery{Status: store.Cancelled}), 1, 3)
		wantPage(t, "shipped", f.list(t, store.OrderQuery{Status: store.Shipped}), 0)
		// The filter follows a status change.
		f.update(t, 4, store.OrderInput{Status: ptr("shipped")})
		wantPage(t, "confirmed after shipping 4", f.list(t, store.OrderQuery{Status: store.Confirmed}), 2, 5, 2)
		wantPage(t, "shipped after shipping 4", f.list(t, store.OrderQuery{Status: store.Shipped}), 1, 4)
		wantPage(t, "all", f.list(t, store.OrderQuery{}), 6, 6, 5, 4, 3, 2, 1)
	})

	t.Run("ListSearch", func(t *testing.T) {
		f := fresh(t, tg)
		names := []string{"Ada Lovelace", "Alan Turing", "ada lovelace", "Adam Smith", "Grace Hopper", "Ada Lovelace", "Ádám Kovács", "Bob"}
		for _, n := range names {
			f.create(t, n)
		}
		// Name order, then newest first for equal (case-folded) names.
		wantPage(t, "ada", f.list(t, store.OrderQuery{Q: "ada"}), 5, 6, 3, 1, 7, 4)
		wantPage(t, "ADA L", f.list(t, store.OrderQuery{Q: "ADA L"}), 3, 6, 3, 1)
		wantPage(t, "  ada lovelace  ", f.list(t, store.OrderQuery{Q: "  ada lovelace  "}), 3, 6, 3, 1)
		wantPage(t, "ada page 2", f.list(t, store.OrderQuery{Q: "ada", Page: 2, PerPage: 3}), 5, 7, 4)
		wantPage(t, "ada page 3", f.list(t, store.OrderQuery{Q: "ada", Page: 3, PerPage: 3}), 5)
		wantPage(t, "a", f.list(t, store.OrderQuery{Q: "a"}), 6, 6, 3, 1, 7, 4, 2)
		wantPage(t, "ádám (accents and case folded)", f.list(t, store.OrderQuery{Q: "ÁDÁM"}), 2, 7, 4)
		wantPage(t, "lovelace (any word)", f.list(t, store.OrderQuery{Q: "lovelace"}), 3, 6, 3, 1)
		wantPage(t, "ovelace (not the start of a word)", f.list(t, store.OrderQuery{Q: "ovelace"}), 0)
		wantPage(t, "zzz", f.list(t, store.OrderQuery{Q: "zzz"}), 0)
		wantPage(t, "blank q is no search", f.list(t, store.OrderQuery{Q: "   "}), 8, 8, 7, 6, 5, 4, 3, 2, 1)

		// Search and status filter together.
		f.update(t, 3, store.OrderInput{Status: ptr("confirmed")})
		f.update(t, 2, store.OrderInput{Status: ptr("confirmed")})
		wantPage(t, "ada+confirmed", f.list(t, store.OrderQuery{Q: "ada", Status: store.Confirmed}), 1, 3)
		wantPage(t, "ada+pending", f.list(t, store.OrderQuery{Q: "ada", Status: store.Pending}), 4, 6, 1, 7, 4)
		wantPage(t, "a+confirmed", f.list(t, store.OrderQuery{Q: "a", Status: store.Confirmed}), 2, 3, 2)

		// The name index follows a change of name.
		f.update(t, 1, store.OrderInput{Customer: ptr("Zoe Zed")})
		wantPage(t, "ada after rename", f.list(t, store.OrderQuery{Q: "ada"}), 4, 6, 3, 7, 4)
		wantPage(t, "zoe after rename", f.list(t, store.OrderQuery{Q: "zoe"}), 1, 1)
		wantPage(t, "zoe+pending after rename", f.list(t, store.OrderQuery{Q: "zoe", Status: store.Pending}), 1, 1)
		// And a change of name and status at once.
		f.update(t, 1, store.OrderInput{Customer: ptr("Yves"), Status: ptr("cancelled")})
		wantPage(t, "zoe after second rename", f.list(t, store.OrderQuery{Q: "zoe"}), 0)
		wantPage(t, "yves+cancelled", f.list(t, store.OrderQuery{Q: "yves", Status: store.Cancelled}), 1, 1)
		wantPage(t, "yves+pending", f.list(t, store.OrderQuery{Q: "yves", Status: store.Pending}), 0)
	})

	t.Run("ListSearchDigits", func(t *testing.T) {
		f := fresh(t, tg)
		f.create(t, "12 Monkeys Ltd") // 1: its name starts with "1" too
		f.create(t, "Bob")            // 2
		f.create(t, "1 Stop Shop")    // 3
		f.create(t, "100 Acres")      // 4
		f.create(t, "19 Bakers")      // 5
		for i := 6; i <= 11; i++ {
			f.create(t, "Filler")
		}
		f.create(t, "Twelve Inc") // 12
		// Names starting with "1", in name order: 1 stop shop (3),
		// 100 acres (4), 12 monkeys ltd (1), 19 bakers (5).
		wantPage(t, "q=1", f.list(t, store.OrderQuery{Q: "1"}), 4, 1, 3, 4, 5)
		for pp := 1; pp <= 4; pp++ {
			var all []int64
			for page := 1; page <= 5; page++ {
				p := f.list(t, store.OrderQuery{Q: "1", Page: page, PerPage: pp})
				if p.Total != 4 {
					t.Errorf("q=1 per_page %d page %d: total %d, want 4", pp, page, p.Total)
				}
				if want := min(pp, max(4-(page-1)*pp, 0)); len(p.Orders) != want {
					t.Errorf("q=1 per_page %d page %d: got %v, want %d orders", pp, page, ids(p), want)
				}
				all = append(all, ids(p)...)
			}
			if !slices.Equal(all, []int64{1, 3, 4, 5}) {
				t.Errorf("q=1 per_page %d, pages joined: got %v, want [1 3 4 5]", pp, all)
			}
		}
		// The exact id first, then the names: 12 is "Twelve Inc".
		wantPage(t, "q=12", f.list(t, store.OrderQuery{Q: "12"}), 2, 12, 1)
		wantPage(t, "q=12 page 1 of 1", f.list(t, store.OrderQuery{Q: "12", PerPage: 1}), 2, 12)
		wantPage(t, "q=12 page 2 of 1", f.list(t, store.OrderQuery{Q: "12", Page: 2, PerPage: 1}), 2, 1)
		wantPage(t, "q=12 page 3 of 1", f.list(t, store.OrderQuery{Q: "12", Page: 3, PerPage: 1}), 2)
		wantPage(t, "q=2: id only", f.list(t, store.OrderQuery{Q: "2"}), 1, 2)
		wantPage(t, "q=19: names only", f.list(t, store.OrderQuery{Q: "19"}), 1, 5)
		wantPage(t, "q=19 page 2 of 1", f.list(t, store.OrderQuery{Q: "19", Page: 2, PerPage: 1}), 1)
		wantPage(t, "q=99: nothing", f.list(t, store.OrderQuery{Q: "99"}), 0)
		wantPage(t, "q=012 is a name search", f.list(t, store.OrderQuery{Q: "012"}), 0)
		// With a status filter, the exact id only when it has that status.
		f.update(t, 12, store.OrderInput{Status: ptr("confirmed")})
		f.update(t, 3, store.OrderInput{Status: ptr("confirmed")})
		wantPage(t, "q=12 confirmed", f.list(t, store.OrderQuery{Q: "12", Status: store.Confirmed}), 1, 12)
		wantPage(t, "q=12 pending", f.list(t, store.OrderQuery{Q: "12", Status: store.Pending}), 1, 1)
		wantPage(t, "q=1 confirmed", f.list(t, store.OrderQuery{Q: "1", Status: store.Confirmed}), 1, 3)
		wantPage(t, "q=1 pending", f.list(t, store.OrderQuery{Q: "1", Status: store.Pending}), 3, 1, 4, 5)
		// A deleted exact id is not listed.
		if err := f.s.DeleteOrder(ctx, 12, 0, 0); err != nil {
			t.Fatal(err)
		}
		wantPage(t, "q=12 after delete", f.list(t, store.OrderQuery{Q: "12"}), 1, 1)
	})

	t.Run("ListItems", func(t *testing.T) {
		f := fresh(t, tg)
		a := f.create(t, "Ada", withItems(widget, widget))
		f.create(t, "Bob", withItems())
		c := f.create(t, "Cy", withItems(store.ItemInput{Name: "One", Quantity: "1", UnitPrice: "1"}))
		p := f.list(t, store.OrderQuery{})
		for _, o := range p.Orders {
			if o.Items != nil {
				t.Errorf("order %d: items loaded without Query.Items: %+v", o.ID, o.Items)
			}
		}
		if p.Orders[2].ItemCount != 2 || p.Orders[2].Total != a.Total {
			t.Errorf("summary of %d: got item_count %d total %s, want 2, %s", a.ID, p.Orders[2].ItemCount, p.Orders[2].Total, a.Total)
		}
		for _, q := range []store.OrderQuery{{Items: true}, {Items: true, Q: "a"}, {Items: true, Status: store.Pending}} {
			p := f.list(t, q)
			for _, o := range p.Orders {
				var want []store.Item
				switch o.ID {
				case a.ID:
					want = a.Items
				case c.ID:
					want = c.Items
				}
				if o.Items == nil || !slices.Equal(o.Items, want) {
					t.Errorf("query %+v, order %d: got items %+v, want %+v", q, o.ID, o.Items, want)
				}
			}
		}
	})

	t.Run("ConcurrentSameVersion", func(t *testing.T) {
		f := fresh(t, tg)
		o := f.create(t, "Race")
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = f.s.UpdateOrder(ctx, o.ID, store.OrderInput{Notes: ptr(fmt.Sprint("writer ", i)), Version: ptr(o.Version)}, 0)
			})
		}
		wg.Wait()
		ok, conflict := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case store.ErrorCode(err) == store.ECONFLICT:
				conflict++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != 1 || conflict != n-1 {
			t.Errorf("got %d successes and %d conflicts, want 1 and %d", ok, conflict, n-1)
		}
		if got, _ := f.s.GetOrder(ctx, o.ID); got.Version != 2 {
			t.Errorf("final version: got %d, want 2", got.Version)
		}
	})

	t.Run("ConcurrentNoVersion", func(t *testing.T) {
		f := fresh(t, tg)
		o := f.create(t, "Race")
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		versions := make([]int64, n)
		for i := range n {
			wg.Go(func() {
				u, err := f.s.UpdateOrder(ctx, o.ID, store.OrderInput{Notes: ptr(fmt.Sprint("writer ", i))}, 0)
				errs[i] = err
				if u != nil {
					versions[i] = u.Version
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		slices.Sort(versions)
		for i, v := range versions {
			if v != int64(i+2) {
				t.Errorf("versions returned: got %v, want 2…%d each once", versions, n+1)
				break
			}
		}
		if got, _ := f.s.GetOrder(ctx, o.ID); got.Version != n+1 {
			t.Errorf("final version: got %d, want %d", got.Version, n+1)
		}
	})

	t.Run("Seed", func(t *testing.T) {
		f := fresh(t, tg)
		n, err := f.s.Seed(ctx, 50, nil)
		if err != nil || n != 50 {
			t.Fatalf("Seed: got %d, %v; want 50", n, err)
		}
		if c, err := f.s.CountOrders(ctx); err != nil || c != 50 {
			t.Fatalf("Count: got %d, %v; want 50", c, err)
		}
		p := f.list(t, store.OrderQuery{PerPage: 100, Items: true})
		if len(p.Orders) != 50 || p.Total != 50 {
			t.Fatalf("List: got %d orders, total %d; want 50", len(p.Orders), p.Total)
		}
		for i, o := range p.Orders {
			if o.ID != int64(50-i) {
				t.Errorf("order %d: got id %d, want %d (newest first)", i, o.ID, 50-i)
			}
			if len(o.Items) < 1 || len(o.Items) > 5 || o.ItemCount != len(o.Items) {
				t.Errorf("order %d: %d items, item_count %d; want 1–5, equal", o.ID, len(o.Items), o.ItemCount)
			}
			var sum store.Money
			for _, it := range o.Items {
				if it.LineTotal != it.UnitPrice.Times(it.Quantity) {
					t.Errorf("order %d item %q: line total %s, want %s", o.ID, it.Name, it.LineTotal, it.UnitPrice.Times(it.Quantity))
				}
				sum += it.LineTotal
			}
			if o.Total != sum {
				t.Errorf("order %d: total %s, want sum of lines %s", o.ID, o.Total, sum)
			}
			if !o.Status.Valid() || o.Version != 1 || o.Customer == "" || o.Currency != "USD" {
				t.Errorf("order %d: status %q version %d customer %q currency %q", o.ID, o.Status, o.Version, o.Customer, o.Currency)
			}
			if errs := store.Validate(nil, store.OrderInput{Customer: &o.Customer, Email: &o.Email}); errs != nil {
				t.Errorf("order %d: seeded customer/email invalid: %v", o.ID, errs)
			}
		}
		// Seeded orders are in every index: each status filter and a search.
		var byStatus int64
		for _, st := range store.Statuses {
			byStatus += f.list(t, store.OrderQuery{Status: st}).Total
		}
		if byStatus != 50 {
			t.Errorf("sum of status totals: got %d, want 50", byStatus)
		}
		first := strings.Fields(p.Orders[0].Customer)[0]
		if s := f.list(t, store.OrderQuery{Q: first, PerPage: 100}); s.Total == 0 || !slices.Contains(ids(s), p.Orders[0].ID) {
			t.Errorf("search %q: got %v, want it to include %d", first, ids(s), p.Orders[0].ID)
		}
		// A later create continues after the seeded ids.
		if o := f.create(t, "After Seed"); o.ID != 51 {
			t.Errorf("id after seed: got %d, want 51", o.ID)
		}
	})

	t.Run("RoundTrips", func(t *testing.T) {
		f := fresh(t, tg)
		if _, err := f.s.Seed(ctx, 150, nil); err != nil {
			t.Fatalf("Seed: %v", err)
		}
		f.create(t, "12 Monkeys")
		c, n := testutil.CountingClient(t, tg)
		s := redisstore.New(c, redisstore.Options{Prefix: f.prefix, Cluster: tg.Cluster})
		for _, q := range []store.OrderQuery{
			{PerPage: 10},
			{PerPage: 100},
			{PerPage: 100, Items: true},
			{PerPage: 100, Page: 2, Items: true},
			{PerPage: 100, Status: store.Delivered, Items: true},
			{PerPage: 100, Q: "a", Items: true},
			{PerPage: 100, Q: "12", Items: true},
			{PerPage: 100, Q: "12", Page: 1, Status: store.Pending},
		} {
			n.Reset()
			p, err := s.ListOrders(ctx, q)
			if err != nil {
				t.Fatalf("List(%+v): %v", q, err)
			}
			if len(p.Orders) == 0 {
				t.Fatalf("List(%+v): no orders; the count would prove nothing", q)
			}
			if got := n.Calls(); got != 2 {
				t.Errorf("List(%+v) with %d orders: %d round trips, want 2", q, len(p.Orders), got)
			}
		}
		n.Reset()
		if _, err := s.GetOrder(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if got := n.Calls(); got != 1 {
			t.Errorf("Get: %d round trips, want 1", got)
		}
	})
}
