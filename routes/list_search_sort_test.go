package routes

import (
	"strings"
	"testing"

	"orders/testutil"
)

// TestListSearchInTheSortAsked: with a search, a sort asked for orders the
// rows (a column header's link changes the rows, not only the URL), the
// header says so (aria-sort) and links the other way round with the
// search kept; the total stays exact.
func TestListSearchInTheSortAsked(t *testing.T) {
	a := datedApp(t, 10)
	for _, sort := range []string{"-created", "created", "customer", "-customer", "-updated", "updated", "-total", "total"} {
		want := a.list(t, "/orders?sort="+sort)
		got := a.list(t, "/orders?q=customer&sort="+sort)
		if ids(got) != ids(want) || got.Total != 10 {
			t.Errorf("q=customer&sort=%s: [%s] of %d, want [%s] of 10", sort, ids(got), got.Total, ids(want))
		}
		paged := a.list(t, "/orders?q=customer&per_page=3&page=2&sort="+sort)
		if w := strings.Join(strings.Split(ids(want), ",")[3:6], ","); ids(paged) != w {
			t.Errorf("q=customer&sort=%s page 2 of 3 a page: [%s], want [%s]", sort, ids(paged), w)
		}
	}
	// A search that matches some: in the sort, only those.
	h := a.list(t, "/orders?q=h+customer&sort=total")
	if len(h.Orders) != 1 || !strings.HasPrefix(h.Orders[0].Customer, "h ") {
		t.Errorf("q=h customer&sort=total: %+v", h.Orders)
	}
	r := a.get(t, "/orders?q=customer&sort=-total", testutil.HPage)
	if n := strings.Count(r.Body, "aria-sort="); n != 1 || !strings.Contains(r.Body, `aria-sort="descending"><a class="sort" data-sort="total"`) {
		t.Errorf("q=customer&sort=-total: %d aria-sort attributes, want one, descending, on Total", n)
	}
	r.WantContains(t, `href="/orders?q=customer&amp;sort=total"`).WantLacks(t, "match order")
}
