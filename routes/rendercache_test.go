package routes

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// The parts of the pages drawn from the render cache: the List's rows,
// the Inquiry's orders, an order's page (its body and timeline).
var (
	tbodyRE   = regexp.MustCompile(`(?s)<tbody[^>]*>.*?</tbody>`)
	inquiryRE = regexp.MustCompile(`(?s)<article class="inquiry-order".*</article>`)
	orderRE   = regexp.MustCompile(`(?s)<article id="order".*?</article>`)
)

// listRows is the rows of the orders' List as app a draws them for h.
func listRows(t *testing.T, a *testApp, h testutil.H) string {
	t.Helper()
	return drawnPart(t, a, "/orders?sort=-created", h, tbodyRE)
}

// drawnPart is the part of target's answer to h that re matches.
func drawnPart(t *testing.T, a *testApp, target string, h testutil.H, re *regexp.Regexp) string {
	t.Helper()
	return re.FindString(a.get(t, target, h).WantStatus(t, http.StatusOK).Body)
}

// TestListRowsAfterEveryWriteMatchTheirUncachedDrawing: two instances
// that keep drawn fragments (a and b, each its own Redis client) and one
// that draws every fragment every time (fresh) serve the same orders.
// After each kind of write, through either instance, the List's rows, the
// Inquiry's orders and each order's page (its body and timeline) on a
// and b are byte for byte those fresh draws: nothing is shown as it was
// before the write, on the instance that wrote or the other.
func TestListRowsAfterEveryWriteMatchTheirUncachedDrawing(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			opts := redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster}
			a := newTestApp(t, tg.Name+"-a", redisstore.New(tg.Client, opts))
			b := newTestApp(t, tg.Name+"-b", redisstore.New(testutil.SecondClient(t, tg), opts))
			fresh := newTestApp(t, tg.Name+"-fresh", redisstore.New(tg.Client, opts), func(c *Config) { c.RenderCacheMiB = -1 })

			var ids []int64
			for i, name := range []string{"Grace Hopper", "Alan Turing", "Ada Lovelace"} {
				ids = append(ids, a.create(t, map[string]any{"customer": name, "email": fmt.Sprintf("p%d@example.com", i),
					"items": []any{item("Mug", i+1, "1.50")}}).ID)
			}
			type part struct {
				target string
				h      testutil.H
				re     *regexp.Regexp
			}
			same := func(step string) {
				t.Helper()
				parts := []part{
					{"/orders?sort=-created", testutil.HPage, tbodyRE},
					{"/orders?sort=-created", testutil.HXTo("div#" + orderResource.ResultsID()), tbodyRE},
					{"/orders/inquiry?sort=-created", testutil.HPage, inquiryRE},
				}
				// The same pages in another zone: their times differ, so
				// must what is drawn for them.
				berlin := testutil.HPage.With(testutil.H{"Cookie": "tz=Europe/Berlin"})
				parts = append(parts, part{"/orders?sort=-created", berlin, tbodyRE}, part{"/orders/inquiry?sort=-created", berlin, inquiryRE})
				for _, id := range ids {
					parts = append(parts, part{path(id), testutil.HPage, orderRE}, part{path(id), berlin, orderRE})
				}
				for _, p := range parts {
					want := drawnPart(t, fresh, p.target, p.h, p.re)
					if want == "" && p.re != orderRE {
						t.Fatalf("%s: the uncached %s shows nothing", step, p.target)
					}
					for _, app := range []*testApp{a, b, a, b} {
						if got := drawnPart(t, app, p.target, p.h, p.re); got != want {
							t.Fatalf("%s: instance %s shows %s other than drawn afresh:\n got %s\nwant %s", step, app.target, p.target,
								testutil.Snippet(got), testutil.Snippet(want))
						}
					}
				}
			}
			same("before any write")
			b.update(t, ids[0], map[string]any{"customer": "Grace B. Hopper", "version": 1})
			same("a change of the name on b")
			a.update(t, ids[1], map[string]any{"status": "confirmed", "version": 1})
			same("a status change on a")
			b.update(t, ids[2], map[string]any{"items": []any{item("Mug", 9, "1.50"), item("Lamp", 1, "45.00")}, "version": 1})
			same("new items (count and total) on b")
			a.do(t, http.MethodPost, orderResource.HistoryPath(ids[2]), testutil.JSON(map[string]any{"note": "called"}), testutil.HJSON).
				WantStatus(t, http.StatusCreated)
			same("a note on a")
			deleted := ids[1]
			b.do(t, http.MethodDelete, path(deleted), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
			ids = []int64{ids[0], ids[2]}
			same("a delete on b")
			if rows := listRows(t, a, testutil.HPage); strings.Contains(rows, rowID(deleted)) {
				t.Errorf("instance a still lists the order b deleted")
			}
			if rows := listRows(t, a, testutil.HPage); !strings.Contains(rows, "Grace B. Hopper") || !strings.Contains(rows, `data-live-version="2"`) {
				t.Errorf("instance a's rows lack b's change: %s", testutil.Snippet(rows))
			}
		})
	}
}

// TestTheRenderCacheCountsOnMetrics: the second List draws nothing anew,
// and /metrics says so.
func TestTheRenderCacheCountsOnMetrics(t *testing.T) {
	tg := testutil.Miniredis(t)
	m := NewMetrics()
	a := newTestApp(t, tg.Name, testutil.NewStore(t, tg), func(c *Config) { c.Metrics = m })
	for i := range 3 {
		a.createNamed(t, fmt.Sprintf("Customer %d", i))
	}
	figures := func() map[string]float64 { return scrape(t, m) }
	a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK)
	first := figures()
	a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK)
	second := figures()
	// Three rows, and the layout's two parts around them (the frame).
	if got := first["orders_render_cache_misses_total"]; got != 5 {
		t.Errorf("the first List drew %v fragments, want 5", got)
	}
	if hits, misses := second["orders_render_cache_hits_total"]-first["orders_render_cache_hits_total"],
		second["orders_render_cache_misses_total"]-first["orders_render_cache_misses_total"]; hits != 5 || misses != 0 {
		t.Errorf("the second List: %v fragments from the cache and %v drawn, want 5 and 0", hits, misses)
	}
	if second["orders_render_cache_bytes"] <= 0 {
		t.Errorf("render_cache_bytes is %v with rows kept", second["orders_render_cache_bytes"])
	}
}

// TestTheRenderCacheStaysWithinItsBound: rows of 100,000 distinct orders
// drawn through a 1 MiB cache leave it holding at most 1 MiB, and the
// rows of a page asked for again and again are kept.
func TestTheRenderCacheStaysWithinItsBound(t *testing.T) {
	v, err := newViews(os.DirFS(".."), TemplateFuncs(), []string{layoutBare}, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := testutil.Pick(20_000, 100_000)
	name := orderResource.Partial("row")
	row := func(i int) *view {
		o := &store.Order{ID: int64(i + 1), Version: 1, Customer: fmt.Sprintf("Customer %d", i), Status: store.Pending,
			Currency: "EUR", Total: store.Money(i), ItemCount: 1, UpdatedAt: time.Unix(int64(i), 0)}
		return &view{R: orderResource, Record: o, orderRow: newOrderRow(orderResource, nil, zoned{}, o, &can{Update: true})}
	}
	draw := func(i int) {
		r := row(i)
		if _, err := v.draw(name, fmt.Appendf(nil, "%v", *r.orderRow), r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		draw(i)
	}
	v.drawn.cache.CleanUp()
	if held := v.drawn.cache.WeightedSize(); held > 1<<20 {
		t.Errorf("after %d distinct rows the cache holds %d bytes, past its 1 MiB", n, held)
	}
	if v.drawn.misses.Load() != uint64(n) {
		t.Errorf("%d rows drawn, want %d", v.drawn.misses.Load(), n)
	}
	// A page's rows asked again and again stay, whatever passed by. The
	// cache admits an entry by an estimate of how often it is asked for
	// (W-TinyLFU: a sketch, not a count), so most of them, not always
	// every one.
	for range 5 {
		for i := range 25 {
			draw(i)
		}
		v.drawn.cache.CleanUp()
	}
	hits := v.drawn.hits.Load()
	for i := range 25 {
		draw(i)
	}
	if got := v.drawn.hits.Load() - hits; got < 20 {
		t.Errorf("of 25 rows drawn five times before, %d came from the cache the sixth time, want at least 20", got)
	}
}
