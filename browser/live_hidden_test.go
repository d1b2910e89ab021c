package browser_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"orders/routes"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestLiveHiddenTabFreesItsStream: a tab the person puts behind others
// closes its event stream, so it holds none of the browser's six
// connections to the host, nor one of the instance's streams; shown again
// it reconnects with its Last-Event-ID and hears what it missed
// (docs/operations.md). The instance here holds one stream at most: a
// second page opens its own only once the first is hidden.
func TestLiveHiddenTabFreesItsStream(t *testing.T) {
	exe := chromiumPath(t)
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	st := redisstore.New(rdb, redisstore.Options{})
	app, err := routes.New(routes.Config{Store: st, Files: testutil.Files(t), Logger: testutil.Logger(t), MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + testutil.Serve(t, app)
	root := browser(t, exe)
	tab := func() *env {
		ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("opening a tab: %v", err)
		}
		e := openTab(t, ctx, base, st, true)
		e.failedLoads = []string{"503"} // the stream refused while the other holds the only one
		return e
	}
	// visible sets what document.hidden says, as the browser does when
	// the tab goes behind another or comes back, and tells the page.
	visible := func(e *env, shown bool) {
		t.Helper()
		hidden := "true"
		if shown {
			hidden = "false"
		}
		e.do(t, "the tab's visibility", chromedp.Evaluate[chromedp.Void](`Object.defineProperty(document, "hidden", {configurable: true, get: () => `+hidden+`});
		  document.dispatchEvent(new Event("visibilitychange"))`))
	}
	a, b := tab(), tab()
	a.seed(t, "Ada Lovelace")
	a.openLive(t, "/orders")

	visible(a, false)
	b.openLive(t, "/orders") // fails unless A's stream was closed

	// While A is hidden, an order is created; B is then closed, A shown.
	a.seed(t, "Grace Hopper")
	b.waitText(t, "[data-live-news]", "1 new order")
	b.do(t, "close B's page", chromedp.Navigate("about:blank"))
	visible(a, true)
	a.waitText(t, "[data-live-news]", "1 new order \u2014 show")
	if got := a.jsString(t, `document.querySelectorAll("[data-rows] > tr").length`); got != "1" {
		t.Errorf("A's table has %s rows, want 1: the order created while it was hidden is announced, not slipped in", got)
	}
}
