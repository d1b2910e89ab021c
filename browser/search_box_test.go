package browser_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestListShowsWhatItsSearchBoxSays: typing a search, Escape (which clears
// the box and lists everything), then the same search again fetches it
// again, so the rows are the search's; and Enter right after typing sends
// one request for the query, not two.
func TestListShowsWhatItsSearchBoxSays(t *testing.T) {
	e, clk := startList(t, true)
	orders := seedList(t, e, clk, 30)
	matching := func(word string) []int64 {
		var out []int64
		for _, o := range orders {
			if strings.Contains(o.Customer, word) {
				out = append(out, o.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.settled(t)
	// The requests the page sends for a search, as htmx sends them.
	e.do(t, "count the requests", chromedp.Evaluate[chromedp.Void](`window.asked = [];
	  document.addEventListener("htmx:before:request", (e) => { const a = e.detail?.ctx?.request?.action || "";
	    if (a.includes("q=")) window.asked.push(a); });`))
	asked := func(q string) int {
		n := e.eval(t, fmt.Sprintf(`String(window.asked.filter((a) => new URL(a, location.href).searchParams.get("q") === %q).length)`, q))
		var k int
		fmt.Sscan(n, &k)
		return k
	}
	// waitRows waits until the rows are want (sorted), and the box says box.
	waitRows := func(what string, want []int64, box string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			e.settled(t)
			got := e.rowIDs(t)
			slices.Sort(got)
			v := run(t, e, "search box", chromedp.Value(css("#q")))
			if slices.Equal(got, want) && v == box {
				return
			}
			if time.Now().After(deadline) {
				e.shot(t, "failure-search-box")
				t.Fatalf("%s: the box says %q over rows %v, want %q over %v", what, v, got, box, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	all := make([]int64, 0, 25) // the first page: the 25 newest
	for _, o := range orders[len(orders)-25:] {
		all = append(all, o.ID)
	}
	slices.Sort(all)

	e.do(t, "type Liskov", chromedp.Focus(css("#q")), press("Liskov"))
	waitRows("after typing Liskov", matching("Liskov"), "Liskov")
	e.do(t, "escape", press("\x1b"))
	waitRows("after Escape", all, "")
	e.do(t, "type Liskov again", press("Liskov"))
	waitRows("after typing Liskov again", matching("Liskov"), "Liskov")

	// Enter right after typing: one request for the query.
	e.do(t, "escape again", press("\x1b"))
	waitRows("after the second Escape", all, "")
	e.do(t, "type Shannon and press Enter", press("Shannon\r"))
	waitRows("after Enter", matching("Shannon"), "Shannon")
	time.Sleep(600 * time.Millisecond) // past the box's typing delay
	e.settled(t)
	if n := asked("Shannon"); n != 1 {
		t.Errorf("typing Shannon and Enter sent %d requests for it, want 1", n)
	}
	if n := asked("Liskov"); n != 2 {
		t.Errorf("typing Liskov twice (Escape between) sent %d requests for it, want 2", n)
	}
}
