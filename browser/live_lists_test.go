package browser_test

// Attacks on the live updates: what a person in page B sees
// when the changes made elsewhere come in ways the first tests did not
// try: on another page of the List, out of an Inquiry's search, in a
// burst, or when the page's fetch of a change fails once.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"orders/store"
)

// TestLiveNewOnAnotherPage: on page 2 of the List, newest first, an order
// created in A is announced, and B's "show" brings it: it goes to the
// first page, where the new order is (page 2 fetched again would only have
// its rows pushed along by one, the new order nowhere). Under a sort that
// puts new orders anywhere, the announcement says they may be on another
// page.
func TestLiveNewOnAnotherPage(t *testing.T) {
	a, b := startLive(t)
	var names []string
	for i := 0; i < 25; i++ {
		names = append(names, fmt.Sprintf("Customer %02d", i))
	}
	a.seed(t, names...)
	b.openLive(t, "/orders?page=2&per_page=10")
	a.seed(t, "Katherine Johnson")
	b.waitText(t, "[data-live-news]", "1 new order \u2014 show")
	b.do(t, "show in B", chromedp.Click(css("[data-live-show]")))
	b.waitText(t, "#order-results", "Katherine Johnson")
	if got := b.path(t); got != "/orders?per_page=10" {
		t.Errorf("after show B's address is %s, want the first page it shows, /orders?per_page=10", got)
	}
	b.waitFocus(t, "after show", "#results-count")

	b.openLive(t, "/orders?sort=customer&per_page=10")
	a.seed(t, "Mary Jackson")
	b.waitText(t, "[data-live-news]", "1 new order (it may be on another page) \u2014 show")
}

// TestLiveInquiryEntryLeavesItsSearch: an Inquiry entry whose order A
// changes so that it no longer matches B's search (q=Ada) stays where it
// is and shows the change, as a List row does; it does not vanish because
// the Inquiry page it was fetched from no longer holds it, which would
// leave "Showing 1–2 of 2" over one entry.
func TestLiveInquiryEntryLeavesItsSearch(t *testing.T) {
	a, b := startLive(t)
	o := a.seed(t, "Ada Lovelace", "Ada Byron")
	entry := fmt.Sprintf("#inquiry-order-%d", o[0].ID)
	b.openLive(t, "/orders/inquiry?q=Ada")
	b.mark(t, entry)
	name := "Grace King"
	if _, err := a.store.UpdateOrder(t.Context(), o[0].ID, store.OrderInput{Customer: &name}, 0); err != nil {
		t.Fatal(err)
	}
	b.waitJS(t, "the entry shows version 2", fmt.Sprintf(`(document.querySelector(%q) || {dataset: {}}).dataset.liveVersion === "2"`, entry))
	b.waitText(t, entry, "Grace King")
	if !b.marked(t, entry) {
		t.Error("B's entry was replaced, not updated in place (morphed)")
	}
	if n := b.jsString(t, `document.querySelectorAll("[data-entry]").length`); n != "2" {
		t.Errorf("B's Inquiry shows %s entries, want both", n)
	}
}

// TestLiveBurstIsCalm: 300 orders created in a burst while B's List is
// open. The polite region must not read 300 counts out one after another:
// it changes at most about once every 0.8 s, ends at the right count, and
// B's table is left as it was.
func TestLiveBurstIsCalm(t *testing.T) {
	a, b := startLive(t)
	a.seed(t, "Ada Lovelace")
	b.openLive(t, "/orders")
	run(t, b, "watching the region", chromedp.Evaluate[bool](`(() => {
	  window.__news = [];
	  const r = document.querySelector("[data-live-news]");
	  new MutationObserver(() => {
	    const s = r.textContent, last = window.__news[window.__news.length - 1];
	    if (!last || last.s !== s) window.__news.push({s, at: performance.now()});
	  }).observe(r, {subtree: true, childList: true, characterData: true});
	  return true;
	})()`))
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("Burst %03d", i)
	}
	a.seed(t, names...)
	b.waitText(t, "[data-live-news]", "300 new orders \u2014 show")
	news := run(t, b, "the region's changes", chromedp.Evaluate[[]struct {
		S  string  `json:"s"`
		At float64 `json:"at"`
	}](`window.__news`))
	t.Logf("the region changed %d times", len(news))
	for i := 1; i < len(news); i++ {
		if gap := news[i].At - news[i-1].At; gap < 600 {
			t.Errorf("the region changed to %q %.0f ms after %q: a screen reader reads every change", news[i].S, gap, news[i-1].S)
			break
		}
	}
	if got := b.jsString(t, `document.querySelectorAll("[data-rows] > tr").length`); got != "1" {
		t.Errorf("B's table has %s rows, want 1: new orders are announced, not slipped in", got)
	}
	if got := b.jsString(t, `document.querySelector("[data-live-news]").textContent`); strings.Count(got, "new order") != 1 {
		t.Errorf("the region says %q", got)
	}
}

// TestLiveFailedFetchIsRetried: B hears that an order changed, and its
// fetch of the row is answered 503 once (a server restarting, a proxy's
// hiccup). The stream will not say that version again: B must ask again
// by itself, not show the old row until the order's next change.
func TestLiveFailedFetchIsRetried(t *testing.T) {
	a, b := startLive(t)
	b.failedLoads = []string{"503"}
	x := a.seed(t, "Ada Lovelace")[0]
	row := fmt.Sprintf("#order-row-%d", x.ID)
	b.openLive(t, "/orders")
	failed := make(chan struct{}, 1)
	go func() {
		n := 0
		for ev, err := range chromedp.Events(b.ctx, fetch.RequestPaused) {
			if err != nil {
				return
			}
			// Answered from goroutines of their own, each with a deadline:
			// a CDP call made while this loop holds the event may wait for
			// the loop (chromedp's warning about listeners), and the test
			// would hang until go test's timeout.
			id := ev.RequestID
			if n++; n == 1 {
				go func() {
					ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
					defer cancel()
					_, _ = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: id, ResponseCode: 503,
						ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html; charset=utf-8"}}, Body: []byte("<p>Try again.</p>")})
					failed <- struct{}{}
				}()
				continue
			}
			go func() {
				ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
				defer cancel()
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			}()
		}
	}()
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: fmt.Sprintf("*/orders/%d", x.ID)}}}); err != nil {
		t.Fatal(err)
	}
	name := "Ada King"
	if _, err := a.store.UpdateOrder(t.Context(), x.ID, store.OrderInput{Customer: &name}, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("B did not fetch the changed row")
	}
	b.waitText(t, row, "Ada King")
	if got := b.jsString(t, fmt.Sprintf(`document.querySelector(%q).dataset.liveVersion`, row)); got != "2" {
		t.Errorf("B's row says version %s, want 2", got)
	}
}
