package browser_test

// The List and Inquiry: sortable headers, page numbers and
// sizes, the date filter, the count after a delete and past the end, the
// tab title after swaps, the busy state, paging focus and scrolling, and
// the keyboard shortcuts; with JavaScript on and off, and at 360 px.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

// clock is a store clock the test sets: orders get the created dates it says.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// listDay0 is the created date of the first seeded order; order i (from 0)
// is created i days later at noon UTC.
var listDay0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// seeded is what the list tests know about an order they stored.
type seeded struct {
	ID       int64
	Customer string
	Cents    int // its total
	Created  time.Time
}

// seedList stores n orders, one a day from listDay0, whose customer names
// and totals are in an order of their own (neither follows the ids), and
// sets the clock back to now.
func seedList(t *testing.T, e *env, clk *clock, n int) []seeded {
	t.Helper()
	firsts := []string{"Ada", "Barbara", "Claude", "Dennis", "Edsger", "Frances", "Grace", "Hedy", "Ivan", "Joan"}
	lasts := []string{"Turing", "Liskov", "Shannon", "Ritchie", "Dijkstra", "Allen", "Hopper", "Lamarr", "Sutherland", "Clarke"}
	var out []seeded
	for i := 0; i < n; i++ {
		day := listDay0.AddDate(0, 0, i)
		clk.set(day)
		// 7 and 10 are coprime: each (first, last) pair once in 100.
		name := firsts[(i*7)%len(firsts)] + " " + lasts[i/len(firsts)%len(lasts)]
		cents := ((i*37)%97 + 1) * 100 // distinct for i < 97
		price := fmt.Sprintf("%d.00", cents/100)
		o, err := e.store.CreateOrder(context.Background(), store.OrderInput{Customer: &name, HasItems: true,
			Items: []store.ItemInput{{Name: "Mug", Quantity: "1", UnitPrice: price}}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seeded{ID: o.ID, Customer: name, Cents: cents, Created: day})
	}
	clk.set(time.Now())
	return out
}

// startList starts the app over a store whose clock the test sets.
func startList(t *testing.T, javascript bool, hooks ...redis.Hook) (*env, *clock) {
	t.Helper()
	clk := &clock{t: time.Now()}
	return startWith(t, javascript, redisstore.Options{Now: clk.Now}, hooks...), clk
}

// rowIDs returns the ids of the List rows shown, in order.
func (e *env) rowIDs(t *testing.T) []int64 {
	t.Helper()
	js := `JSON.stringify([...document.querySelectorAll("#order-results tbody tr[id^='order-row-']")].map(r => r.id.slice(10)))`
	var raw []string
	if err := json.Unmarshal([]byte(run(t, e, "reading the rows", chromedp.Evaluate[string](js))), &raw); err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(raw))
	for i, s := range raw {
		out[i], _ = strconv.ParseInt(s, 10, 64)
	}
	return out
}

// sortedIDs returns the ids of orders in the order less gives, the first n.
func sortedIDs(orders []seeded, n int, less func(a, b seeded) int) []int64 {
	o := slices.Clone(orders)
	slices.SortStableFunc(o, less)
	var out []int64
	for _, s := range o[:min(n, len(o))] {
		out = append(out, s.ID)
	}
	return out
}

func byCustomer(a, b seeded) int {
	return strings.Compare(strings.ToLower(a.Customer), strings.ToLower(b.Customer))
}
func byTotalDesc(a, b seeded) int { return b.Cents - a.Cents }
func byIDDesc(a, b seeded) int    { return int(b.ID - a.ID) }

// waitPath waits until the location's path and query contain each of want.
func (e *env) waitPath(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Read without failing: a plain form's navigation may be under way.
		loc, _ := chromedp.Run(e.ctx, chromedp.Location())
		got := strings.TrimPrefix(loc, e.base)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(got, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.shot(t, "failure-waitpath")
			t.Fatalf("the URL is %q, want it to contain %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// attr reads an attribute of the first element sel matches ("" when absent).
func (e *env) attr(t *testing.T, sel, name string) string {
	t.Helper()
	return run(t, e, "reading "+name+" of "+sel, chromedp.Evaluate[string](fmt.Sprintf(
		`(document.querySelector(%q) || {getAttribute: () => null}).getAttribute(%q) || ""`, sel, name)))
}

func (e *env) eval(t *testing.T, js string) string {
	t.Helper()
	return run(t, e, "evaluating "+js, chromedp.Evaluate[string](js))
}

func (e *env) title(t *testing.T) string {
	t.Helper()
	return run(t, e, "reading the title", chromedp.Title())
}

// waitTitle waits until document.title is want.
func (e *env) waitTitle(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.title(t) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the tab title is %q, want %q", e.title(t), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const sortedTH = `#order-results th[aria-sort]`

// waitShows waits until sel's text contains want, like waitText, reading
// through page loads (a plain link or form navigates while it polls).
func (e *env) waitShows(t *testing.T, sel, want string) {
	t.Helper()
	// Once the document is parsed whole: a plain navigation's header can
	// show before all its rows are parsed (seen under load in .ci/run).
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return document.readyState !== "loading" && !!el && el.textContent.includes(%q); })()`, sel, want)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			got, _ := chromedp.Run(e.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||"(missing)"`, sel)))
			e.shot(t, "failure-waitshows")
			t.Fatalf("waiting for %s to contain %q: it holds %q (last error %v)", sel, want, strings.TrimSpace(got), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestListSortHeaders: the column headers sort, say how (aria-sort), keep
// the query, and the search form keeps the sort.
func TestListSortHeaders(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(map[bool]string{true: "javascript", false: "no javascript"}[js], func(t *testing.T) {
			e, clk := startList(t, js)
			orders := seedList(t, e, clk, 30)
			e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
			if js {
				e.setMarker(t)
			}
			if got := e.text(t, sortedTH); !strings.HasPrefix(strings.ToLower(got), "created") || e.attr(t, sortedTH, "aria-sort") != "descending" {
				t.Errorf("the plain list's sorted header is %q (%s), want Created descending", got, e.attr(t, sortedTH, "aria-sort"))
			}
			if got, want := e.rowIDs(t), sortedIDs(orders, 25, byIDDesc); !slices.Equal(got, want) {
				t.Errorf("plain list rows %v, want newest first %v", got, want)
			}

			click := func(label string) {
				t.Helper()
				e.do(t, "click the "+label+" header", chromedp.Click(css(fmt.Sprintf(`#order-results th a.sort[data-sort=%q]`, label))))
			}
			click("customer")
			e.waitPath(t, "sort=customer")
			e.waitShows(t, sortedTH, "Customer")
			if got := e.attr(t, sortedTH, "aria-sort"); got != "ascending" {
				t.Errorf("after Customer: aria-sort %q, want ascending", got)
			}
			if n := e.eval(t, `String(document.querySelectorAll("#order-results th[aria-sort]").length)`); n != "1" {
				t.Errorf("%s headers carry aria-sort, want exactly one", n)
			}
			// Waits for the store to honour sort.
			if got, want := e.rowIDs(t), sortedIDs(orders, 25, byCustomer); !slices.Equal(got, want) {
				t.Errorf("sorted by customer: rows %v, want %v", got, want)
			}
			if js {
				if got := e.eval(t, `document.activeElement.closest("th") ? document.activeElement.closest("th").textContent.trim() : document.activeElement.tagName`); !strings.HasPrefix(got, "Customer") {
					t.Errorf("after sorting, focus is on %q, want the Customer header", got)
				}
			}
			e.shot(t, "list-sorted-customer")

			click("customer")
			e.waitPath(t, "sort=-customer")
			e.waitShows(t, `#order-results th[aria-sort="descending"]`, "Customer")

			click("total")
			e.waitPath(t, "sort=-total")
			e.waitShows(t, `#order-results th[aria-sort="descending"]`, "Total")
			if got, want := e.rowIDs(t), sortedIDs(orders, 25, byTotalDesc); !slices.Equal(got, want) {
				t.Errorf("sorted by total: rows %v, want largest first %v", got, want)
			}

			// The search keeps the sort, and its matches come in that sort.
			if js {
				e.do(t, "search", chromedp.SendKeys(css("#q"), "grace"))
			} else {
				e.do(t, "search", chromedp.SendKeys(css("#q"), "grace"), chromedp.Click(css("#search button[type=submit]")))
			}
			e.waitPath(t, "q=grace", "sort=-total")
			if got := e.path(t); js && (strings.Contains(got, "from=") || strings.Contains(got, "status=")) {
				t.Errorf("the search's URL %q carries the form's empty fields", got)
			}
			e.waitShows(t, `#order-results th[aria-sort="descending"]`, "Total")
			if n := e.count(t, "#order-results .match-note"); n != 0 {
				t.Errorf("a sorted search of a few matches says it comes in match order")
			}
			totals := e.eval(t, `[...document.querySelectorAll("#order-results tbody td[data-label=Total]")].map(td => td.textContent.replace(/[^0-9.]/g, "")).join(" ")`)
			var last float64 = -1
			for _, f := range strings.Fields(totals) {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil || last >= 0 && v > last {
					t.Errorf("the search's rows are not largest total first: %s", totals)
					break
				}
				last = v
			}
			if totals == "" {
				t.Error("the search for grace shows no rows")
			}
			if js && !e.markerKept(t) {
				t.Error("sorting reloaded the page; want htmx swaps")
			}
		})
	}
}

// TestListPageNumbers: page numbers, the page size, paging scrolls to the
// top of the results and focuses their summary, with and
// without JavaScript, and at 360 px.
func TestListPageNumbers(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(map[bool]string{true: "javascript", false: "no javascript"}[js], func(t *testing.T) {
			e, clk := startList(t, js)
			seedList(t, e, clk, 40)
			e.do(t, "open page 6", chromedp.Navigate(e.base+"/orders?per_page=2&page=6"), chromedp.WaitVisible(css(".pager .pages")))
			if js {
				e.setMarker(t)
			}
			pages := e.eval(t, `[...document.querySelectorAll(".pager .pages li")].map(li => li.textContent.replace("Page", "").trim()).join(" ")`)
			if pages != "1 … 4 5 6 7 8 … 20" {
				t.Errorf("page numbers %q, want %q", pages, "1 … 4 5 6 7 8 … 20")
			}
			if got := e.text(t, `.pager .pages a[aria-current="page"]`); !strings.HasSuffix(got, "6") {
				t.Errorf("the current page link says %q, want 6", got)
			}
			e.waitShows(t, "#results-count", "Showing 11–12 of 40")
			e.shot(t, "list-page-numbers")

			// Older from the bottom of the page: the results' top shows.
			e.do(t, "scroll down and click Older",
				chromedp.EmulateViewport(1280, 500),
				chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.documentElement.scrollHeight)`),
				chromedp.Click(css(`.pager a[rel=next]`)))
			e.waitPath(t, "page=7")
			e.waitShows(t, "#results-count", "Showing 13–14 of 40")
			top := e.eval(t, `String(Math.round(document.getElementById("order-results").getBoundingClientRect().top))`)
			if n, _ := strconv.Atoi(top); n < -5 || n > 500 {
				t.Errorf("after Older the results' top is at %s px of a 500 px window, want it in view", top)
			}
			if js {
				if got := e.eval(t, `document.activeElement.id`); got != "results-count" {
					t.Errorf("after Older focus is on %q, want the results summary", got)
				}
			}

			e.do(t, "go to the last page", chromedp.Click(css(`.pager .pages li:last-child a`)))
			e.waitPath(t, "page=20")
			e.waitShows(t, "#results-count", "Showing 39–40 of 40")
			if n := e.eval(t, `String(document.querySelectorAll(".pager a[rel=next]").length)`); n != "0" {
				t.Error("the last page has an Older link")
			}

			// The page size: the first order shown stays in view.
			e.do(t, "choose 25 a page", chromedp.Click(css(`.pager .page-size li:nth-child(1) a`)))
			e.waitPath(t, "page=2")
			e.waitShows(t, "#results-count", "Showing 26–40 of 40")
			if got := e.text(t, `.pager .page-size a[aria-current]`); !strings.HasPrefix(got, "25") {
				t.Errorf("current page size %q, want 25", got)
			}
			e.do(t, "choose 50 a page", chromedp.Click(css(`.pager .page-size a[href*="per_page=50"]`)))
			e.waitPath(t, "per_page=50")
			e.waitShows(t, "#results-count", "Showing 1–40 of 40")
			if n := e.eval(t, `String(document.querySelectorAll(".pager .pages").length)`); n != "0" {
				t.Error("one page shows page numbers")
			}
			if js && !e.markerKept(t) {
				t.Error("paging reloaded the page; want htmx swaps")
			}

			// 360 px: nothing wider than the screen; the sort links show.
			e.do(t, "phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile),
				chromedp.Navigate(e.base+"/orders?per_page=5&page=3&sort=customer"), chromedp.WaitVisible(css(".pager .pages")))
			if w := e.eval(t, `String(document.documentElement.scrollWidth)`); w != "360" {
				t.Errorf("at 360 px the page is %s px wide", w)
			}
			e.do(t, "sort on a phone", chromedp.WaitVisible(css(`#order-results th a.sort[data-sort=total]`)),
				chromedp.Click(css(`#order-results th a.sort[data-sort=total]`)))
			e.waitPath(t, "sort=-total")
			e.shot(t, "list-phone")
			e.do(t, "desktop", chromedp.EmulateViewport(1280, 900))
		})
	}
}

// TestListDateFilter: from and to narrow the list by created date, keep in
// the URL and the form, and a range that ends before it starts says so.
func TestListDateFilter(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(map[bool]string{true: "javascript", false: "no javascript"}[js], func(t *testing.T) {
			e, clk := startList(t, js)
			orders := seedList(t, e, clk, 10) // 2025-01-01 … 2025-01-10
			// The dates are folded while empty; their summary opens them.
			e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("details.dates-fold > summary")),
				chromedp.Click(css("details.dates-fold > summary")), chromedp.WaitVisible(css("#from")))
			// A text field that reads YYYY-MM-DD: one stop for Tab, and the
			// format pages write, whatever the browser's locale.
			if got := e.attr(t, "#from", "type"); got != "text" {
				t.Errorf("the from field is type %q, want text", got)
			}
			if got := e.attr(t, "#from", "placeholder"); got != "YYYY-MM-DD" {
				t.Errorf("the from field's placeholder is %q, want YYYY-MM-DD", got)
			}
			if got := e.text(t, `label[for=from]`); got == "" {
				t.Error("the from field has no label")
			}
			set := func(id, value string) {
				t.Helper()
				e.do(t, "set "+id, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
					`(() => { const el = document.getElementById(%q); el.value = %q; el.dispatchEvent(new Event("change", {bubbles: true})); })()`, id, value)))
			}
			set("from", "2025-01-03")
			set("to", "2025-01-05")
			if !js {
				e.do(t, "submit", chromedp.Click(css("#search button[type=submit]")))
			}
			e.waitPath(t, "from=2025-01-03", "to=2025-01-05")
			// Waits for the store to honour from and to.
			e.waitShows(t, "#results-count", "of 3")
			want := []int64{orders[4].ID, orders[3].ID, orders[2].ID}
			if got := e.rowIDs(t); !slices.Equal(got, want) {
				t.Errorf("orders created 3–5 January: rows %v, want %v", got, want)
			}
			e.shot(t, "list-dates")
			e.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(css("#from")))
			if got := run(t, e, "from", chromedp.Value(css("#from"))); got != "2025-01-03" {
				t.Errorf("after reload from holds %q", got)
			}
			e.waitShows(t, "#results-count", "of 3")

			set("from", "2025-01-06")
			if !js {
				e.do(t, "submit", chromedp.Click(css("#search button[type=submit]")))
			}
			e.waitPath(t, "from=2025-01-06", "to=2025-01-05")
			e.do(t, "the page", chromedp.WaitVisible(css("#results-count")))
			e.waitShows(t, "#results-count", "before the “from” date")
		})
	}
}

// TestListCountAfterDelete: a delete from the list leaves the
// right count and a full page; a page past the end says so and links to
// the last page.
func TestListCountAfterDelete(t *testing.T) {
	e, clk := startList(t, true)
	orders := seedList(t, e, clk, 30)
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.waitShows(t, "#results-count", "Showing 1–25 of 30")
	doomed := orders[27] // the third row
	row := fmt.Sprintf("#order-row-%d", doomed.ID)
	e.do(t, "delete a row", chromedp.Click(css(row+" button.danger")), chromedp.WaitNotPresent(css(row)))
	e.waitShows(t, "#results-count", "Showing 1–25 of 29")
	// The results' refetch leaves the delete's notice alone.
	e.waitShows(t, "#notice", fmt.Sprintf("Order %d deleted.", doomed.ID))
	if n := len(e.rowIDs(t)); n != 25 {
		t.Errorf("after the delete the page shows %d rows, want 25 (the next order moves up)", n)
	}
	// Focus goes to the row that took the deleted one's place.
	want := fmt.Sprintf("order-row-%d", orders[26].ID)
	e.waitFocusIn(t, want)

	e.do(t, "a page past the end", chromedp.Navigate(e.base+"/orders?page=999"), chromedp.WaitVisible(css("#results-count")))
	e.waitShows(t, "#results-count", "No orders on page 999 — 29 orders on 2 pages")
	if strings.Contains(e.text(t, "#order-results"), "0–0") {
		t.Error("a page past the end says 0–0")
	}
	e.shot(t, "list-past-end")
	e.do(t, "go to the last page", chromedp.Click(css(`#order-results .results-head a`)))
	e.waitPath(t, "page=2")
	e.waitShows(t, "#results-count", "Showing 26–29 of 29")
}

// waitFocusIn waits until the focused element is inside the element with id.
func (e *env) waitFocusIn(t *testing.T, id string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.getElementById(%q); return !!el && el.contains(document.activeElement); })()`, id)
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		got := e.eval(t, `document.activeElement.outerHTML.slice(0, 120)`)
		t.Fatalf("focus is on %s, want it inside #%s", got, id)
	}
}

// TestTabTitle: every swap that changes the page changes the
// tab title; the list is "Orders", not "Orders · Orders".
func TestTabTitle(t *testing.T) {
	e := start(t, true)
	e.seed(t, "Ada Lovelace", "Alan Turing")
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-row-1")))
	e.waitTitle(t, "Orders")
	e.setMarker(t)
	e.do(t, "search", chromedp.SendKeys(css("#q"), "ad"))
	e.waitShows(t, "#results-count", "of 1")
	e.waitTitle(t, "Search “ad” · Orders")
	// An inline edit is not a new page: the title stays.
	e.do(t, "inline edit", chromedp.Click(css("#order-row-1 a[hx-get]")), chromedp.WaitVisible(css("#row-1-customer")))
	e.waitTitle(t, "Search “ad” · Orders")
	e.do(t, "cancel", chromedp.KeyEvent("\x1b"), chromedp.WaitNotPresent(css("#row-1-customer")))

	e.do(t, "new order", chromedp.Navigate(e.base+"/orders/new"), chromedp.WaitVisible(css("#customer")))
	e.waitTitle(t, "New order · Orders")
	e.setMarker(t)
	e.do(t, "create", chromedp.SendKeys(css("#customer"), "Grace Hopper"), fillItem("0", "", "Compiler", "1", "10.00"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	e.waitTitle(t, "Order 3 · Grace Hopper · Orders")
	e.do(t, "edit", chromedp.Click(css(`#order a[href="/orders/3/edit"]`)), chromedp.WaitVisible(css("#order-form")))
	e.waitTitle(t, "Edit order 3 · Orders")
	e.do(t, "save", chromedp.SetValue(css("#customer"), "Grace B. Hopper"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	e.waitTitle(t, "Order 3 · Grace B. Hopper · Orders")
	if !e.markerKept(t) {
		t.Error("create or edit reloaded the page; the titles above came from htmx swaps")
	}
	e.do(t, "inquiry", chromedp.Navigate(e.base+"/orders/inquiry?page=2&per_page=1"), chromedp.WaitVisible(css("#order-results")))
	e.waitTitle(t, "Inquiry: page 2 · Orders")
}

// slowRedis delays every Redis command while on: a slow search. A new
// connection's handshake (HELLO, CLIENT SETINFO) is not delayed: the
// live-update feed holds one pooled connection in its blocking XREAD, so
// a request may open a second one, and two slow handshakes on top of a
// slow search would be a slow dial, which this test is not about.
type slowRedis struct{ on atomic.Bool }

func handshake(cmds ...redis.Cmder) bool {
	for _, c := range cmds {
		if n := c.Name(); n != "hello" && n != "client" {
			return false
		}
	}
	return len(cmds) > 0
}

func (s *slowRedis) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (s *slowRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if s.on.Load() && !handshake(cmd) {
			time.Sleep(400 * time.Millisecond)
		}
		return next(ctx, cmd)
	}
}

func (s *slowRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if s.on.Load() && !handshake(cmds...) {
			time.Sleep(400 * time.Millisecond)
		}
		return next(ctx, cmds)
	}
}

// TestListBusy: while a search or a page loads, the results
// say so: aria-busy and a visible indicator; both go when it arrives.
func TestListBusy(t *testing.T) {
	slow := &slowRedis{}
	e, clk := startList(t, true, slow)
	seedList(t, e, clk, 30)
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	slow.on.Store(true)
	defer slow.on.Store(false)
	busy := `(() => { const r = document.getElementById("order-results"); return !!r && r.getAttribute("aria-busy") === "true"; })()`
	check := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](busy, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
			t.Fatalf("%s: #order-results never said aria-busy=true: %v", what, err)
		}
		bar := e.eval(t, `getComputedStyle(document.getElementById("order-results"), "::before").content`)
		dim := e.eval(t, `getComputedStyle(document.querySelector("#order-results > .results-head")).opacity`)
		if bar == "none" || bar == "" || dim == "1" {
			t.Errorf("%s: while busy the bar is %q and the results' opacity %s, want a bar and a dimmed table", what, bar, dim)
		}
		e.shot(t, "list-busy")
		ctx2, cancel2 := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel2()
		if _, err := chromedp.Run(ctx2, chromedp.Poll[bool]("!"+busy, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("%s: #order-results stayed busy: %v", what, err)
		}
		e.settled(t)
		if cls := e.attr(t, "#order-results", "class"); strings.Contains(cls, "htmx-request") {
			t.Errorf("%s: after the swap #order-results keeps class %q", what, cls)
		}
	}
	e.do(t, "search", chromedp.SendKeys(css("#q"), "grace"))
	check("search")
	e.do(t, "another search", setValue("#q", ""), chromedp.SendKeys(css("#q"), "a"))
	check("another search")
	slow.on.Store(false)
	e.do(t, "clear the search", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(".pager a[rel=next]")))
	slow.on.Store(true)
	e.do(t, "older", chromedp.Click(css(".pager a[rel=next]")))
	check("paging")
}

// press types keys as a person does: each key down carries its text, so
// a keydown handler that calls preventDefault stops the character, as in a
// real browser (chromedp.KeyEvent sends the character as a separate event,
// which no handler can stop).
func press(keys string, mods ...chromedp.Modifier) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range keys {
			var down *input.DispatchKeyEventParams
			for _, k := range kb.Encode(r) {
				for _, m := range mods {
					k.Modifiers |= int64(m)
				}
				switch k.Type {
				case kb.KeyDown:
					down = k
					continue
				case kb.KeyChar:
					if k.Modifiers&^int64(chromedp.ModifierShift) == 0 {
						down.Text, down.UnmodifiedText = k.Text, k.UnmodifiedText
					}
					continue
				}
				if down != nil {
					if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *down); err != nil {
						return err
					}
					down = nil
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// setValue sets a field's value as script would (chromedp.SetValue refuses
// some fields) and says it changed.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector(%q);
	  el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); })()`, sel, value))
}

// TestShortcuts: / n j k e ? and Escape, never while typing, never with
// Ctrl, Alt or Meta.
func TestShortcuts(t *testing.T) {
	e, clk := startList(t, true)
	orders := seedList(t, e, clk, 5)
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.settled(t)
	focused := func() string { return e.eval(t, `document.activeElement.id || document.activeElement.tagName`) }

	// "/" focuses the search and is not typed; typed in the box, n and / are text.
	e.do(t, "press /", press("/"))
	if got := focused(); got != "q" {
		t.Fatalf("after / focus is on %q, want the search box", got)
	}
	if got := run(t, e, "search box", chromedp.Value(css("#q"))); got != "" {
		t.Errorf("/ was typed into the search box: %q", got)
	}
	e.do(t, "type n/j in the search", press("n/je?"))
	if got := run(t, e, "search box", chromedp.Value(css("#q"))); got != "n/je?" {
		t.Errorf("typing in the search box gave %q, want n/je?", got)
	}
	if got := e.path(t); !strings.HasPrefix(got, "/orders") || strings.HasPrefix(got, "/orders/new") {
		t.Errorf("typing n in the search box went to %q", got)
	}
	if n := e.eval(t, `String(document.querySelectorAll("dialog[open]").length)`); n != "0" {
		t.Error("typing ? in the search box opened the shortcuts")
	}
	e.do(t, "clear and leave the search", setValue("#q", ""),
		chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	e.do(t, "reload", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.settled(t)

	// j and k move between rows, with a visible current row.
	newest := orders[len(orders)-1].ID
	row := func(id int64) string { return fmt.Sprintf("order-row-%d", id) }
	e.do(t, "press j", press("j"))
	e.waitFocusIn(t, row(newest))
	e.do(t, "press j", press("j"))
	e.waitFocusIn(t, row(newest-1))
	if got := e.attr(t, "#"+row(newest-1), "class"); !strings.Contains(got, "is-current") {
		t.Errorf("the current row's class is %q, want is-current", got)
	}
	bg := e.eval(t, fmt.Sprintf(`getComputedStyle(document.querySelector("#%s td")).backgroundColor`, row(newest-1)))
	other := e.eval(t, fmt.Sprintf(`getComputedStyle(document.querySelector("#%s td")).backgroundColor`, row(newest)))
	if bg == other {
		t.Errorf("the current row looks like the others (%s)", bg)
	}
	e.shot(t, "shortcut-current-row")
	e.do(t, "press k", press("k"))
	e.waitFocusIn(t, row(newest))
	// With Alt, Ctrl or Meta, j does nothing.
	for _, m := range []chromedp.Modifier{chromedp.ModifierAlt, chromedp.ModifierCtrl, chromedp.ModifierMeta} {
		e.do(t, "press j with a modifier", press("j", m))
		e.waitFocusIn(t, row(newest))
	}

	// e edits the current row in place.
	e.do(t, "press e", press("e"), chromedp.WaitVisible(css(fmt.Sprintf("#row-%d-customer", newest))))
	if got := focused(); got != fmt.Sprintf("row-%d-customer", newest) {
		t.Errorf("after e focus is on %q, want the row's customer field", got)
	}
	// Typing e, j, n in the row's field is text.
	e.do(t, "type in the row", press("jen"))
	if got := run(t, e, "row customer", chromedp.Value(css(fmt.Sprintf("#row-%d-customer", newest)))); !strings.HasSuffix(got, "jen") {
		t.Errorf("typing in the row form gave %q", got)
	}
	e.do(t, "escape the edit", press("\x1b"), chromedp.WaitNotPresent(css(fmt.Sprintf("#row-%d-customer", newest))))

	// ? lists the shortcuts in a dialog; Escape closes it and focus returns.
	e.do(t, "focus a row", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector("#%s a").focus()`, row(newest-2))))
	e.do(t, "press ?", press("?"), chromedp.WaitVisible(css("dialog#shortcuts")))
	if got := e.text(t, "dialog#shortcuts"); !strings.Contains(got, "New order") || !strings.Contains(got, "Search") {
		t.Errorf("the shortcuts dialog says %q", got)
	}
	if got := e.eval(t, `String(!!document.activeElement.closest("dialog#shortcuts"))`); got != "true" {
		t.Error("the open dialog does not hold focus")
	}
	e.shot(t, "shortcuts-dialog")
	e.do(t, "press j in the dialog", press("j"))
	e.do(t, "escape", press("\x1b"), chromedp.WaitNotVisible(css("dialog#shortcuts")))
	e.waitFocusIn(t, row(newest-2))

	// n opens a new order; there, typing n in a field is text.
	e.do(t, "press n", press("n"), chromedp.WaitVisible(css("#customer")))
	if got := e.path(t); got != "/orders/new" {
		t.Errorf("n went to %q, want /orders/new", got)
	}
	e.do(t, "type in the form", chromedp.Click(css("#customer")), press("n/"), chromedp.Click(css("#notes")), press("n?"))
	if got := run(t, e, "customer", chromedp.Value(css("#customer"))); got != "n/" {
		t.Errorf("typing in the customer field gave %q", got)
	}
	if got := e.path(t); got != "/orders/new" {
		t.Errorf("typing n in a field went to %q", got)
	}
}

// TestInquiryFiltersAndShortcuts: the Inquiry has the List's search,
// filters and pages, a sort choice of its own, and j, k and e.
func TestInquiryFiltersAndShortcuts(t *testing.T) {
	e, clk := startList(t, true)
	orders := seedList(t, e, clk, 6)
	e.do(t, "open the inquiry", chromedp.Navigate(e.base+"/orders/inquiry?per_page=2"), chromedp.WaitVisible(css("#order-results .inquiry-order")))
	e.setMarker(t)
	e.do(t, "sort by customer", setValue("#sort", "customer"))
	e.waitPath(t, "sort=customer", "per_page=2")
	want := sortedIDs(orders, 2, byCustomer)
	e.waitShows(t, "#order-results .inquiry-order h2", orders[slices.IndexFunc(orders, func(o seeded) bool { return o.ID == want[0] })].Customer)
	e.waitShows(t, "#results-count", "Showing 1–2 of 6")
	e.do(t, "next page", chromedp.Click(css(`.pager a[rel=next]`)))
	e.waitPath(t, "sort=customer", "per_page=2", "page=2")
	e.waitTitle(t, "Inquiry: page 2 · Orders")
	if !e.markerKept(t) {
		t.Error("the Inquiry reloaded; want htmx swaps")
	}
	e.do(t, "blur", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), press("j"))
	first := e.eval(t, `document.querySelector("#order-results .inquiry-order").id`)
	e.waitFocusIn(t, first)
	e.do(t, "e opens the order's edit page", press("e"), chromedp.WaitVisible(css("#order-form")))
	if got := e.path(t); !strings.HasSuffix(got, "/edit") {
		t.Errorf("e on the Inquiry went to %q, want the order's edit page", got)
	}
}
