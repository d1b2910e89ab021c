package routes

// List and Inquiry queries: search, filter, pages, links.

import (
	"html"
	"net/http"
	"net/url"
	"orders/testutil"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"orders/store"
)

// listPage is the List or Inquiry JSON.
type listPage struct {
	Orders  []orderJSON `json:"orders"`
	Page    int         `json:"page"`
	PerPage int         `json:"per_page"`
	Total   int64       `json:"total"`
	Prev    *string     `json:"prev"`
	Next    *string     `json:"next"`
}

func (a *testApp) list(t *testing.T, target string) listPage {
	t.Helper()
	var l listPage
	a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusOK).WantNegotiated(t).JSON(t, &l)
	return l
}

func ids(l listPage) string {
	var s []string
	for _, o := range l.Orders {
		s = append(s, strconv.FormatInt(o.ID, 10))
	}
	return strings.Join(s, ",")
}

func TestListQuery(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		// ids 1…7 in a fresh store
		for i, name := range []string{"Alice Smith", "alex", "ALBERT", "Bob", "bobby", "2nd Avenue Deli", "Zed"} {
			if o := a.createNamed(t, name); o.ID != int64(i+1) {
				t.Fatalf("created %q as order %d, want %d (a fresh store)", name, o.ID, i+1)
			}
		}
		a.update(t, 4, map[string]any{"status": "confirmed"})
		a.update(t, 5, map[string]any{"status": "confirmed"})

		for _, c := range []struct {
			query string
			ids   string
			total int64
		}{
			{"", "7,6,5,4,3,2,1", 7}, // newest first
			{"q=al", "3,2,1", 3},     // name order: albert, alex, alice smith
			{"q=AL", "3,2,1", 3},
			{"q=%20al%20", "3,2,1", 3},
			{"q=alice+s", "1", 1},
			{"q=bob", "4,5", 2},
			{"q=2", "2,6", 2}, // the order with id 2 first, then names starting with 2
			{"q=6", "6", 1},   // id 6; no name starts with 6
			{"q=2nd", "6", 1}, // not an id: a name prefix
			{"q=99", "", 0},   // no such id, no such name
			{"q=zz", "", 0},
			{"status=confirmed", "5,4", 2},
			{"status=confirmed&q=bob", "4,5", 2},
			{"status=pending&q=b", "", 0},
			{"status=pending", "7,6,3,2,1", 5},
			{"status=shipped", "", 0},
			{"status=confirmed&q=4", "4", 1},
			{"status=pending&q=4", "", 0},
			{"per_page=2", "7,6", 7},
			{"per_page=2&page=2", "5,4", 7},
			{"per_page=2&page=4", "1", 7},
			{"per_page=2&page=5", "", 7}, // past the end: empty, not an error
			{"page=999999999999999999999", "", 7},
			{"q=al&per_page=1&page=2", "2", 3},
			{"q=2&per_page=1&page=1", "2", 2},
			{"q=2&per_page=1&page=2", "6", 2},
			{"q=2&per_page=1&page=3", "", 2},
		} {
			for _, p := range []string{"/orders", "/orders/inquiry"} {
				target := p + "?" + c.query
				l := a.list(t, target)
				if got := ids(l); got != c.ids || l.Total != c.total {
					t.Errorf("GET %s: got ids [%s] total %d, want [%s] total %d", target, got, l.Total, c.ids, c.total)
				}
			}
		}

		t.Run("clamping", func(t *testing.T) {
			for _, c := range []struct {
				query         string
				page, perPage int
			}{
				{"", 1, 25},
				{"per_page=0", 1, 1},
				{"per_page=-5", 1, 1},
				{"per_page=101", 1, 100},
				{"per_page=99999999999999999999", 1, 100},
				{"page=0", 1, 25},
				{"page=-3", 1, 25},
				{"page=-99999999999999999999", 1, 25},
				{"page=3&per_page=3", 3, 3},
			} {
				l := a.list(t, "/orders?"+c.query)
				if l.Page != c.page || l.PerPage != c.perPage {
					t.Errorf("GET /orders?%s: got page %d per_page %d, want %d and %d", c.query, l.Page, l.PerPage, c.page, c.perPage)
				}
			}
		})

		t.Run("status in any case", func(t *testing.T) {
			want := a.list(t, "/orders?status=pending").Total
			if l := a.list(t, "/orders?status=Pending"); l.Total != want || want == 0 {
				t.Errorf("GET /orders?status=Pending: got total %d, want %d (as status=pending, and not 0)", l.Total, want)
			}
		})

		t.Run("bad query", func(t *testing.T) {
			for _, q := range []string{"status=bogus", "page=abc", "per_page=1.5"} {
				for _, p := range []string{"/orders", "/orders/inquiry"} {
					var e errorJSON
					a.get(t, p+"?"+q, testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t).JSON(t, &e)
					if e.Error == "" {
						t.Errorf("GET %s?%s: got %+v, want an error message", p, q, e)
					}
					a.get(t, p+"?"+q, testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error")
				}
			}
		})

		t.Run("prev and next keep the query", func(t *testing.T) {
			for _, p := range []string{"/orders", "/orders/inquiry"} {
				l := a.list(t, p+"?q=al&per_page=1&page=2")
				wantLink(t, "prev", l.Prev, p, url.Values{"q": {"al"}, "per_page": {"1"}}, 1)
				wantLink(t, "next", l.Next, p, url.Values{"q": {"al"}, "per_page": {"1"}}, 3)
				l = a.list(t, p+"?status=confirmed&per_page=1")
				if l.Prev != nil {
					t.Errorf("GET %s page 1: got prev %q, want null", p, *l.Prev)
				}
				wantLink(t, "next", l.Next, p, url.Values{"status": {"confirmed"}, "per_page": {"1"}}, 2)
				l = a.list(t, p+"?status=confirmed&per_page=1&page=2")
				if l.Next != nil {
					t.Errorf("GET %s last page: got next %q, want null", p, *l.Next)
				}
				// Following next gives the next page.
				l = a.list(t, p+"?per_page=3")
				seen := ids(l)
				for l.Next != nil {
					l = a.list(t, *l.Next)
					seen += "," + ids(l)
				}
				if seen != "7,6,5,4,3,2,1" {
					t.Errorf("following next from %s?per_page=3: got [%s], want [7,6,5,4,3,2,1]", p, seen)
				}
			}
		})

		t.Run("html pager and search keep the query", func(t *testing.T) {
			for _, c := range []struct{ p, root string }{{"/orders", "orders"}, {"/orders/inquiry", "inquiry"}} {
				r := a.get(t, c.p+"?q=al&status=pending&per_page=1&page=2", testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, c.root)
				r.WantContains(t, `id="q"`, `value="al"`, `<option value="pending" selected>`, `name="per_page" value="1"`, "Showing 2–2 of 3")
				links := pagerLinks(r.Body)
				wantLink(t, "html prev", strp(links["prev"]), c.p, url.Values{"q": {"al"}, "status": {"pending"}, "per_page": {"1"}}, 1)
				wantLink(t, "html next", strp(links["next"]), c.p, url.Values{"q": {"al"}, "status": {"pending"}, "per_page": {"1"}}, 3)
				// The results fragment carries the same pager.
				f := a.get(t, c.p+"?q=al&status=pending&per_page=1&page=2", testutil.HXTo("div#order-results")).WantStatus(t, http.StatusOK)
				if fl := pagerLinks(f.Body); fl["next"] != links["next"] || fl["prev"] != links["prev"] {
					t.Errorf("GET %s results fragment: got pager %v, want %v", c.p, fl, links)
				}
			}
		})

		t.Run("entries", func(t *testing.T) {
			wantListJSON(t, a.get(t, "/orders", testutil.HJSON), false, 7)
			wantListJSON(t, a.get(t, "/orders/inquiry", testutil.HJSON), true, 7)
			l := a.list(t, "/orders/inquiry?q=1")
			if len(l.Orders) != 1 || len(l.Orders[0].Items) != 1 || l.Orders[0].Items[0].Name != "Widget" || l.Orders[0].Items[0].LineTotal != "3.00" {
				t.Errorf("GET /orders/inquiry?q=1: got %+v, want order 1 with its Widget item", l.Orders)
			}
			// The Inquiry page shows the items; the List page does not.
			a.get(t, "/orders/inquiry?q=alice", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "Widget", "Alice Smith", `id="inquiry-order-1"`)
			a.get(t, "/orders?q=alice", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "Alice Smith", `id="order-row-1"`).WantLacks(t, "Widget")
		})

		t.Run("html empty", func(t *testing.T) {
			a.get(t, "/orders?q=zz", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "No orders match “zz”")
			a.get(t, "/orders?per_page=2&page=9", testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "orders")
		})
	})
}

// TestListEscapes: what people type is escaped in pages and links.
func TestListEscapes(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, `<script>alert("x")</script> & Co`)
		r := a.get(t, "/orders?q="+url.QueryEscape(`<script>`), testutil.HPage).WantStatus(t, http.StatusOK)
		r.WantLacks(t, `<script>alert`).WantContains(t, "&lt;script&gt;alert")
		a.get(t, path(o.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, `<script>alert`)
		a.get(t, "/orders?q="+url.QueryEscape(`"><b>`), testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, `"><b>`)
	})
}

var pagerRE = regexp.MustCompile(`<a rel="(prev|next)" href="([^"]*)"`)

// pagerLinks returns the pager's prev and next hrefs, unescaped.
func pagerLinks(body string) map[string]string {
	out := map[string]string{}
	for _, m := range pagerRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// wantLink checks a prev or next URL: its path, its query, and its page
// (page 1 may be left out).
func wantLink(t *testing.T, name string, link *string, wantPath string, wantQuery url.Values, wantPage int) {
	t.Helper()
	if link == nil {
		t.Errorf("%s: got no link, want page %d of %s?%s", name, wantPage, wantPath, wantQuery.Encode())
		return
	}
	u, err := url.Parse(*link)
	if err != nil {
		t.Errorf("%s: %q is not a URL: %v", name, *link, err)
		return
	}
	q := u.Query()
	page := 1
	if p := q.Get("page"); p != "" {
		page, _ = strconv.Atoi(p)
	}
	q.Del("page")
	if u.Path != wantPath || q.Encode() != wantQuery.Encode() || page != wantPage {
		t.Errorf("%s: got %q, want page %d of %s?%s", name, *link, wantPage, wantPath, wantQuery.Encode())
	}
}

// TestListSaysWhereNewMembersShow: the results tell the live updates where
// members created elsewhere would show: on the first page under a newest
// first sort (show goes there), on any page under another sort, and maybe
// not at all under a search.
func TestListSaysWhereNewMembersShow(t *testing.T) {
	page := func(s store.Sort, q string, n int, more bool) *listView {
		l := &listView{listing: orderListing, Path: "/orders", Sort: s, Q: q, PerPage: 10, Page: listResult{Page: n}}
		if more {
			l.Next = "more"
		}
		return l
	}
	for _, c := range []struct {
		name         string
		l            *listView
		show, unsure string
	}{
		{"newest first, page 3", page(store.SortCreatedDesc, "", 3, true), "/orders?per_page=10", ""},
		{"last changed first, page 1", page(store.SortUpdatedDesc, "", 1, true), "/orders?per_page=10&sort=-updated", ""},
		{"by customer, more pages", page(store.SortCustomer, "", 2, true), "/orders?page=2&per_page=10&sort=customer", "page"},
		{"by customer, one page", page(store.SortCustomer, "", 1, false), "/orders?per_page=10&sort=customer", ""},
		{"a search", page(store.SortCreatedDesc, "ada", 2, false), "/orders?per_page=10&q=ada", "search"},
	} {
		if got := c.l.LiveNewURL(); got != c.show {
			t.Errorf("%s: show goes to %s, want %s", c.name, got, c.show)
		}
		if got := c.l.LiveNewUnsure(); got != c.unsure {
			t.Errorf("%s: unsure %q, want %q", c.name, got, c.unsure)
		}
	}
}
