package routes

// The List query in routes: sort, from and to (their 400s), every
// query parameter kept by every link, the JSON lower-bound flag, the words
// the page says (past the end, an empty range, match order) and the title.

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// listPageLB is the List JSON with the lower-bound flag; a pointer, so a
// missing field is told from false.
type listPageLB struct {
	listPage
	TotalIsLowerBound *bool `json:"total_is_lower_bound"`
}

func TestListQueryErrors(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		a.createNamed(t, "Ada Lovelace")
		var names []string
		for _, s := range store.Sorts {
			names = append(names, string(s))
		}
		allowed := strings.Join(names, ", ")
		for _, c := range []struct{ query, msg string }{
			{"sort=name", "sort must be one of " + allowed},
			{"sort=-", "sort must be one of"},
			{"sort=created,customer", "sort must be one of"},
			{"sort=%2Bcustomer", "sort must be one of"},
			{"from=2025-13-01", "from must be a date written YYYY-MM-DD"},
			{"from=20250101", "from must be a date"},
			{"from=2025-1-1", "from must be a date"},
			{"from=yesterday", "from must be a date"},
			{"to=2025-02-30", "to must be a date"},
			{"to=2025-01-01T00:00:00Z", "to must be a date"},
			{"from=2025-01-01&to=x", "to must be a date"},
		} {
			for _, p := range []string{"/orders", "/orders/inquiry"} {
				target := p + "?" + c.query
				var e errorJSON
				a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t).JSON(t, &e)
				if !strings.Contains(e.Error, c.msg) {
					t.Errorf("GET %s: got error %q, want it to say %q", target, e.Error, c.msg)
				}
				a.get(t, target, testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error").WantContains(t, html.EscapeString(quotedFirst(c.msg)))
				a.get(t, target, testutil.HXTo("div#order-results")).WantStatus(t, http.StatusBadRequest).WantFragment(t, "error")
			}
		}
		// Every sort is accepted, in any case, with dates or without.
		for _, s := range append(names, "CUSTOMER", "-Total", " updated ") {
			for _, q := range []string{"", "&from=2000-01-01&to=2999-12-31", "&q=ada"} {
				target := "/orders?sort=" + url.QueryEscape(s) + q
				if l := a.list(t, target); l.Total != 1 {
					t.Errorf("GET %s: total %d, want 1", target, l.Total)
				}
			}
		}
	})
}

// listClock is a store clock the test sets.
type listClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *listClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *listClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// datedApp is an app over miniredis whose orders are created one a day
// from 2025-01-01 (order i on day i), with customers and totals in an
// order of their own.
func datedApp(t *testing.T, n int) *testApp {
	t.Helper()
	clk := &listClock{}
	tg := testutil.Miniredis(t)
	a := newTestApp(t, tg.Name, redisstore.New(tg.Client, redisstore.Options{Now: clk.now}))
	for i := 1; i <= n; i++ {
		clk.set(time.Date(2025, 1, i, 12, 0, 0, 0, time.UTC))
		a.create(t, map[string]any{"customer": fmt.Sprintf("%c customer", 'a'+(i*7)%26),
			"items": []any{item("Mug", 1, fmt.Sprintf("%d.00", (i*37)%97+1))}})
	}
	clk.set(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	return a
}

// TestListSortAndDates: sort and from/to reach the store (the rows come
// in the order asked; only the dates asked). Needs the store to honour them.
func TestListSortAndDates(t *testing.T) {
	a := datedApp(t, 10)
	all := a.list(t, "/orders?per_page=100")
	byID := map[int64]orderJSON{}
	for _, o := range all.Orders {
		byID[o.ID] = o
	}
	sorted := func(cmp func(x, y orderJSON) int) string {
		o := slices.Clone(all.Orders)
		slices.SortStableFunc(o, cmp)
		return ids(listPage{Orders: o})
	}
	for _, c := range []struct {
		sort string
		want string
	}{
		{"", "10,9,8,7,6,5,4,3,2,1"},
		{"-created", "10,9,8,7,6,5,4,3,2,1"},
		{"created", "1,2,3,4,5,6,7,8,9,10"},
		{"customer", sorted(func(x, y orderJSON) int { return strings.Compare(x.Customer, y.Customer) })},
		{"-customer", sorted(func(x, y orderJSON) int { return strings.Compare(y.Customer, x.Customer) })},
		{"-total", sorted(func(x, y orderJSON) int { return cents(y.Total) - cents(x.Total) })},
		{"total", sorted(func(x, y orderJSON) int { return cents(x.Total) - cents(y.Total) })},
		{"-updated", "10,9,8,7,6,5,4,3,2,1"},
	} {
		if got := ids(a.list(t, "/orders?sort="+c.sort)); got != c.want {
			t.Errorf("sort=%s: got [%s], want [%s]", c.sort, got, c.want)
		}
	}
	for _, c := range []struct{ query, want string }{
		{"from=2025-01-03&to=2025-01-05", "5,4,3"},
		{"from=2025-01-09", "10,9"},
		{"to=2025-01-02", "2,1"},
		{"from=2025-01-04&to=2025-01-04", "4"},
		{"from=2025-01-03&to=2025-01-05&sort=created", "3,4,5"},
		{"from=2025-02-01", ""},
	} {
		if got := ids(a.list(t, "/orders?"+c.query)); got != c.want {
			t.Errorf("%s: got [%s], want [%s]", c.query, got, c.want)
		}
	}
	_ = byID
}

func cents(s string) int {
	var whole, frac int
	fmt.Sscanf(s, "%d.%d", &whole, &frac)
	return whole*100 + frac
}

// TestListEmptyRange: to before from is an empty answer, not an error
// (docs/api.md), and the page says why.
func TestListEmptyRange(t *testing.T) {
	a := datedApp(t, 3)
	for _, p := range []string{"/orders", "/orders/inquiry"} {
		target := p + "?from=2025-01-03&to=2025-01-01"
		var l listPageLB
		a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l)
		if len(l.Orders) != 0 || l.Total != 0 || l.Next != nil {
			t.Errorf("GET %s: got %d orders, total %d, next %v; want none", target, len(l.Orders), l.Total, l.Next)
		}
		a.get(t, target, testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "the “to” date 2025-01-01 is before the “from” date 2025-01-03")
	}
}

var (
	hrefRE     = regexp.MustCompile(`(?:href|hx-get)="(/orders(?:/inquiry)?(?:\?[^"]*)?)"`)
	pageSizeRE = regexp.MustCompile(`(?s)<div class="page-size">.*?</div>`)
	hiddenRE   = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)
)

// TestListURLRoundTrip: every link and htmx request of the List and the
// Inquiry keeps the whole query: q, status, sort, from, to,
// per_page, and the page where it is the same page.
func TestListURLRoundTrip(t *testing.T) {
	a := datedApp(t, 12)
	a.update(t, 3, map[string]any{"status": "confirmed"}) // "customer" matches all; status narrows
	full := url.Values{"q": {"customer"}, "status": {"pending"}, "sort": {"-total"}, "from": {"2025-01-02"},
		"to": {"2025-01-11"}, "per_page": {"2"}, "page": {"2"}}
	for _, p := range []string{"/orders", "/orders/inquiry"} {
		target := p + "?" + full.Encode()

		// JSON: prev and next keep everything but the page.
		var l listPage
		a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l)
		for name, link := range map[string]*string{"prev": l.Prev, "next": l.Next} {
			if link == nil {
				t.Errorf("GET %s: no %s link", target, name)
				continue
			}
			wantKeeps(t, target+" "+name, *link, full, "page")
		}

		// HTML, as page and as the results fragment: every link to the list.
		for _, h := range []testutil.H{testutil.HPage, testutil.HXTo("div#order-results")} {
			r := a.get(t, target, h).WantStatus(t, http.StatusOK)
			// The page-size links change per_page (25 is the default, left out).
			body := r.Body
			if m := pageSizeRE.FindString(body); m == "" {
				t.Errorf("%s: no page-size choice", r.What)
			} else {
				body = strings.Replace(body, m, "", 1)
				for _, l := range hrefRE.FindAllStringSubmatch(m, -1) {
					wantKeeps(t, target+" page-size link", html.UnescapeString(l[1]), full, "page", "per_page")
				}
			}
			links := hrefRE.FindAllStringSubmatch(body, -1)
			if len(links) < 8 {
				t.Errorf("%s: only %d links to the list", r.What, len(links))
			}
			for _, m := range links {
				u := html.UnescapeString(m[1])
				if u == "/orders" || u == "/orders/inquiry" {
					continue // the navigation and the search form's action
				}
				q, _ := url.ParseQuery(strings.SplitN(u+"?", "?", 2)[1])
				switch {
				case q.Get("sort") != "-total":
					wantKeeps(t, target+" sort link", u, full, "page", "sort") // a column header
				default:
					wantKeeps(t, target+" link", u, full, "page")
				}
			}
			// The results re-fetch themselves (after a delete) at this very URL.
			if m := regexp.MustCompile(`<div id="order-results"[^>]* hx-get="([^"]*)"`).FindStringSubmatch(r.Body); m == nil {
				t.Errorf("GET %s: #order-results has no hx-get", target)
			} else if got := html.UnescapeString(m[1]); got != p+"?"+full.Encode() {
				t.Errorf("GET %s: #order-results refetches %q, want the same URL", target, got)
			}
		}

		// The search form holds q, status, from and to, and keeps sort
		// (the List's, hidden; the Inquiry's, a select) and per_page.
		r := a.get(t, target, testutil.HPage)
		r.WantContains(t, `value="customer"`, `<option value="pending" selected>`, `value="2025-01-02"`, `value="2025-01-11"`)
		hidden := map[string]string{}
		for _, m := range hiddenRE.FindAllStringSubmatch(r.Body, -1) {
			hidden[m[1]] = m[2]
		}
		if hidden["per_page"] != "2" {
			t.Errorf("GET %s: the search form keeps per_page %q, want 2", target, hidden["per_page"])
		}
		if p == "/orders" && hidden["sort"] != "-total" {
			t.Errorf("GET %s: the search form keeps sort %q, want -total", target, hidden["sort"])
		}
		if p == "/orders/inquiry" {
			r.WantContains(t, `<option value="-total" selected>`)
		}
		if _, ok := hidden["page"]; ok {
			t.Errorf("GET %s: the search form keeps the page; a new search starts at page 1", target)
		}
		// The results fragment updates the form's kept values.
		f := a.get(t, target, testutil.HXTo("div#order-results"))
		f.WantContains(t, `<hx-partial hx-target="#search-keep"`, `name="per_page" value="2"`)
	}
}

// wantKeeps checks that link keeps every parameter of full except those
// named in except.
func wantKeeps(t *testing.T, what, link string, full url.Values, except ...string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Errorf("%s: %q is not a URL", what, link)
		return
	}
	got := u.Query()
	for k := range full {
		if slices.Contains(except, k) {
			continue
		}
		if got.Get(k) != full.Get(k) {
			t.Errorf("%s: %q has %s=%q, want %q", what, link, k, got.Get(k), full.Get(k))
		}
	}
}

// TestListLowerBound: the JSON always says total_is_lower_bound; a search
// of several terms matching more than store.MaxCandidates orders (a full
// name) still counts them exactly, and the page says the count, not "at
// least".
func TestListLowerBound(t *testing.T) {
	testutil.Long(t)
	tg := testutil.Miniredis(t)
	st := redisstore.New(tg.Client, redisstore.Options{})
	// Examining 10,000 candidates on miniredis takes longer than the
	// default 1.5 s request deadline when the machine is busy (the whole
	// suite in parallel): this test is about the answer, not the time.
	a := newTestApp(t, tg.Name, st, func(c *Config) { c.RequestTimeout = 30 * time.Second })
	// More orders than a search examines, all named alike: a search of
	// two words has more candidates than it may examine.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "Ada Lovelace"
			for i := w; i < store.MaxCandidates+100; i += 8 {
				if _, err := st.CreateOrder(context.Background(), store.OrderInput{Customer: &name}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var plain listPageLB
	a.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &plain)
	if plain.TotalIsLowerBound == nil || *plain.TotalIsLowerBound || plain.Total != store.MaxCandidates+100 {
		t.Errorf("GET /orders: total %d, total_is_lower_bound %v; want %d, present and false", plain.Total, plain.TotalIsLowerBound, store.MaxCandidates+100)
	}
	const q = "ada lovelace"
	var l listPageLB
	started := time.Now()
	a.get(t, "/orders?q="+url.QueryEscape(q), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l)
	t.Logf("q=%s over %d orders on miniredis: %s", q, store.MaxCandidates+100, time.Since(started).Round(time.Millisecond))
	if l.TotalIsLowerBound == nil || *l.TotalIsLowerBound || l.Total != store.MaxCandidates+100 || l.Next == nil {
		t.Errorf("q=%s: total %d, total_is_lower_bound %v, next %v; want exactly %d, false, and a next page",
			q, l.Total, l.TotalIsLowerBound, l.Next, store.MaxCandidates+100)
	}
	a.get(t, "/orders?q="+url.QueryEscape(q), testutil.HPage).WantStatus(t, http.StatusOK).
		WantContains(t, "Showing 1–25 of ").WantLacks(t, "of at least ")
}

// TestListWords: what the List page says past the end, about a search's
// order, and its title.
func TestListWords(t *testing.T) {
	a := datedApp(t, 30)
	a.get(t, "/orders?page=999", testutil.HPage).WantStatus(t, http.StatusOK).
		WantContains(t, "No orders on page 999 — 30 orders on 2 pages", "Go to the last page (2)", `href="/orders?page=2"`).
		WantLacks(t, "0–0", `rel="next"`)
	a.get(t, "/orders?page=2", testutil.HPage).WantContains(t, "Showing 26–30 of 30", `aria-current="page"`)
	// A search in a sort it can apply comes in that sort; without a sort
	// asked, in match order, and says nothing of a sort.
	a.get(t, "/orders?q=customer&sort=customer", testutil.HPage).WantLacks(t, "Search results come in match order", "Sorting a search needs")
	a.get(t, "/orders?q=customer", testutil.HPage).WantLacks(t, "Search results come in match order", "Sorting a search needs")
	// aria-sort on the sorted header only; none on a search.
	r := a.get(t, "/orders?sort=-total", testutil.HPage)
	if n := strings.Count(r.Body, "aria-sort="); n != 1 || !strings.Contains(r.Body, `aria-sort="descending"><a class="sort" data-sort="total"`) {
		t.Errorf("sort=-total: %d aria-sort attributes, want one, descending, on Total", n)
	}
	if n := strings.Count(a.get(t, "/orders?q=customer", testutil.HPage).Body, "aria-sort="); n != 0 {
		t.Errorf("a search with no sort asked has %d aria-sort attributes, want none (match order)", n)
	}
	// Titles: the list is "Orders", not "Orders · Orders"; fragments carry theirs.
	for _, c := range []struct{ target, title string }{
		{"/orders", "<title>Orders</title>"},
		{"/orders?q=customer&page=2", "<title>Search “customer”, page 2 · Orders</title>"},
		{"/orders?status=pending", "<title>Pending · Orders</title>"},
		{"/orders/inquiry", "<title>Inquiry · Orders</title>"},
		{"/orders/inquiry?from=2025-01-02", "<title>Inquiry: created from 2025-01-02 · Orders</title>"},
	} {
		a.get(t, c.target, testutil.HPage).WantContains(t, c.title)
		a.get(t, c.target, testutil.HXTo("div#order-results")).WantContains(t, c.title)
	}
	a.get(t, "/orders", testutil.HPage).WantLacks(t, "Orders · Orders")
	a.get(t, "/orders/1", testutil.HXTo("main#main")).WantContains(t, "<title>Order 1 · ")
	a.get(t, "/orders/new", testutil.HXTo("main#main")).WantContains(t, "<title>New order · Orders</title>")
	// A row fragment is not a page: it carries no title.
	a.get(t, "/orders/1", testutil.HXTo("tr#order-row-1")).WantLacks(t, "<title>")
	a.get(t, "/orders/1/edit", testutil.HXTo("tr#order-row-1")).WantLacks(t, "<title>")
}

// TestListDeleteRefetch: a row's delete tells the results to
// fetch themselves again, so the count and the page are right.
func TestListDeleteRefetch(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Ada Lovelace")
		r := a.do(t, "DELETE", path(o.ID)+"?version=1", testutil.NoBody, testutil.HXTo("tr#"+rowID(o.ID))).WantStatus(t, http.StatusOK)
		if got := r.Header.Get("HX-Trigger"); got != `{"orders-changed": {"target": "#order-results"}}` {
			t.Errorf("a row's delete: HX-Trigger %q, want the results' refetch event", got)
		}
		a.get(t, "/orders", testutil.HPage).WantContains(t, `hx-trigger="orders-changed"`)
	})
}
