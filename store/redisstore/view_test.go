package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// mkView stores a view of owner, or fails the test.
func mkView(t *testing.T, s *redisstore.Store, owner, name, resource, query string, shared bool) *store.View {
	t.Helper()
	v, err := s.CreateView(context.Background(), store.ViewInput{Name: ptr(name), Resource: ptr(resource), Query: ptr(query), Shared: ptr(shared), Owner: owner})
	if err != nil {
		t.Fatalf("CreateView(%s, %s): %v", owner, name, err)
	}
	return v
}

// viewNames are the names of the views of a page, in order.
func viewNames(p store.ViewPage) string {
	var out []string
	for _, v := range p.Views {
		out = append(out, v.Name)
	}
	return strings.Join(out, "|")
}

// TestAPersonListsTheirOwnViewsAndTheSharedOnes: each person's List is
// their own views and the shared ones, by List then name, without
// another's private views; a view made shared or private moves in or out
// of everyone's List at once, and a deleted one leaves every List.
func TestAPersonListsTheirOwnViewsAndTheSharedOnes(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		mkView(t, s, "ann", "Pending", "orders", "status=pending", false)
		mkView(t, s, "ann", "Active", "products", "active=true", false)
		team := mkView(t, s, "max", "Shipped", "orders", "status=shipped", true)
		bobs := mkView(t, s, "bob", "Bob's", "orders", "", false)
		list := func(q store.ViewQuery) string {
			t.Helper()
			p, err := s.ListViews(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if int(p.Total) < len(p.Views) {
				t.Errorf("ListViews(%+v): total %d below the %d shown", q, p.Total, len(p.Views))
			}
			return viewNames(p)
		}
		for _, c := range []struct {
			q    store.ViewQuery
			want string
		}{
			{store.ViewQuery{Owner: "ann"}, "Pending|Shipped|Active"},
			{store.ViewQuery{Owner: "bob"}, "Bob's|Shipped"},
			{store.ViewQuery{Owner: "max"}, "Shipped"},
			{store.ViewQuery{Owner: "nobody"}, "Shipped"},
			{store.ViewQuery{Owner: "ann", Resource: "products"}, "Active"},
			{store.ViewQuery{Owner: "ann", Resource: "customers"}, ""},
			{store.ViewQuery{Owner: "ann", Q: "ship"}, "Shipped"},
			{store.ViewQuery{Owner: "ann", Q: "pend orders"}, ""},
			{store.ViewQuery{Owner: "ann", Q: strconv.FormatInt(team.ID, 10)}, "Shipped"},
			{store.ViewQuery{Owner: "ann", Q: strconv.FormatInt(bobs.ID, 10)}, ""},
			{store.ViewQuery{Owner: "ann", PerPage: 2, Page: 2}, "Active"},
		} {
			if got := list(c.q); got != c.want {
				t.Errorf("ListViews(%+v) = %q, want %q", c.q, got, c.want)
			}
		}
		if _, err := s.UpdateView(ctx, team.ID, store.ViewInput{Shared: ptr(false), Owner: "ann"}, 0); err != nil {
			t.Fatal(err)
		}
		if got := list(store.ViewQuery{Owner: "ann"}); got != "Pending|Active" {
			t.Errorf("after Shipped was made private: ann lists %q", got)
		}
		if got := list(store.ViewQuery{Owner: "max"}); got != "Shipped" {
			t.Errorf("after Shipped was made private: its owner lists %q", got)
		}
		if cur, _ := s.GetView(ctx, team.ID); cur.Owner != "max" {
			t.Errorf("a change named another owner: the view is %q's, want it still max's", cur.Owner)
		}
		if err := s.DeleteView(ctx, bobs.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		if got := list(store.ViewQuery{Owner: "bob"}); got != "" {
			t.Errorf("after the delete bob lists %q", got)
		}
		if r, err := s.Repair(ctx, false); err != nil || r.Missing+r.Dangling+r.Stale+r.Damaged != 0 {
			t.Errorf("Repair after the writes: %+v, %v; want nothing to fix", r, err)
		}
	})
}

// TestABadViewWritesNothing: a view with a bad name, List or query, or
// without an owner, is refused with its field named and nothing stored.
func TestABadViewWritesNothing(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		for _, c := range []struct {
			in    store.ViewInput
			field string
		}{
			{store.ViewInput{Name: ptr(""), Resource: ptr("orders"), Owner: "ann"}, "name"},
			{store.ViewInput{Name: ptr(strings.Repeat("é", 101)), Resource: ptr("orders"), Owner: "ann"}, "name"},
			{store.ViewInput{Name: ptr("x"), Resource: ptr("users"), Owner: "ann"}, "resource"},
			{store.ViewInput{Name: ptr("x"), Resource: ptr("orders"), Query: ptr("?q=a"), Owner: "ann"}, "query"},
			{store.ViewInput{Name: ptr("x"), Resource: ptr("orders"), Query: ptr(strings.Repeat("q=a&", 501)), Owner: "ann"}, "query"},
			{store.ViewInput{Name: ptr("x"), Resource: ptr("customers"), Query: ptr("status=pending"), Owner: "ann"}, "query"},
			{store.ViewInput{Name: ptr("x"), Resource: ptr("orders"), Query: ptr("q=%"), Owner: "ann"}, "query"},
			{store.ViewInput{Name: ptr("x"), Resource: ptr("orders")}, "owner"},
		} {
			_, err := s.CreateView(ctx, c.in)
			var e *store.Error
			if !asError(err, &e) || e.Code != store.EINVALID || e.Fields[c.field] == "" {
				t.Errorf("CreateView(%+v): %v, want a field error of %s", c.in, err, c.field)
			}
		}
		if p, err := s.ListViews(ctx, store.ViewQuery{Owner: "ann"}); err != nil || p.Total != 0 {
			t.Errorf("after refused views: %d listed, %v; want none", p.Total, err)
		}
	})
}

// asError is errors.As for a *store.Error.
func asError(err error, e **store.Error) bool {
	se, ok := err.(*store.Error)
	*e = se
	return ok
}
