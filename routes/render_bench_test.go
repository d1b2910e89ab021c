package routes

// What a page costs against its JSON: the order pages served in process
// (the handler on a fasthttp request, no network) over miniredis with
// fixed data and a fixed clock, as a signed-in clerk and in protected
// mode. ORDERS_RENDER_GOLDENS=<dir> saves each page's HTML there on the
// first run and compares later runs with it byte for byte.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// renderCase is one request of the benchmark.
type renderCase struct {
	name, target string
	h            testutil.H
}

// renderOrders is how many orders the benchmark's store holds.
const renderOrders = 300

// renderCases are the order pages, each as a page, and as JSON (and the
// List as an htmx swap of its results).
func renderCases() []renderCase {
	id := strconv.Itoa(renderOrders / 2)
	return []renderCase{
		{"list/page", "/orders", testutil.HPage},
		{"list/fragment", "/orders", testutil.HXTo("div#order-results")},
		{"list/json", "/orders", testutil.HJSON},
		{"list100/page", "/orders?per_page=100", testutil.HPage},
		{"list100/json", "/orders?per_page=100", testutil.HJSON},
		{"order/page", "/orders/" + id, testutil.HPage},
		{"order/json", "/orders/" + id, testutil.HJSON},
		{"inquiry/page", "/orders/inquiry", testutil.HPage},
		{"inquiry/json", "/orders/inquiry", testutil.HJSON},
	}
}

// renderApp is the application over a miniredis holding renderOrders
// orders made at fixed times, and the session cookie of its person
// ("" in protected mode).
type renderApp struct {
	handler fasthttp.RequestHandler
	cookie  string
}

func newRenderApp(tb testing.TB, clerk bool) *renderApp {
	tb.Helper()
	mr := miniredis.RunT(tb)
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	mr.SetTime(base)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	// Each write while seeding is a minute after the one before; then the
	// clock stops, so sessions never expire however long a run takes.
	var tick atomic.Int64
	seeding := true
	now := func() time.Time {
		if seeding {
			tick.Add(1)
		}
		return base.Add(time.Duration(tick.Load()) * time.Minute)
	}
	st := redisstore.New(c, redisstore.Options{Now: now})
	ctx := context.Background()
	statuses := []string{"pending", "confirmed", "shipped"}
	for i := 1; i <= renderOrders; i++ {
		cust, email, cur, notes := fmt.Sprintf("Customer %d O'Hara & Sons", i), fmt.Sprintf("buyer%d@example.com", i), "USD", "<fragile>"
		if i%3 == 0 {
			email = ""
		}
		in := store.OrderInput{Customer: &cust, Email: &email, Currency: &cur, Notes: &notes, HasItems: true}
		for k := 0; k < 1+i%3; k++ {
			in.Items = append(in.Items, store.ItemInput{SKU: fmt.Sprintf("SKU-%d", k), Name: fmt.Sprintf("Widget %d", k),
				Quantity: strconv.Itoa(1 + k), UnitPrice: fmt.Sprintf("%d.%02d", 3+i%50, i%100)})
		}
		o, err := st.CreateOrder(ctx, in)
		if err != nil {
			tb.Fatalf("making order %d: %v", i, err)
		}
		for _, s := range statuses[1 : 1+i%len(statuses)] {
			if _, err := st.UpdateOrder(ctx, o.ID, store.OrderInput{Status: &s}, 0); err != nil {
				tb.Fatalf("moving order %d to %s: %v", i, s, err)
			}
		}
	}
	seeding = false
	a := newTestApp(tb, "miniredis", st)
	ra := &renderApp{handler: a.app.Handler()}
	if clerk {
		addAccount(tb, st, "admin", store.RoleAdmin)
		addAccount(tb, st, "clerk", store.RoleClerk)
		ra.cookie = sessionCookie + "=" + a.signIn(tb, "clerk")
	}
	return ra
}

// serve answers one request of rc into a fresh ctx, and returns the
// status.
func (a *renderApp) serve(ctx *fasthttp.RequestCtx, rc renderCase) int {
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI(rc.target)
	req.Header.SetHost(testutil.Host)
	for k, v := range rc.h {
		req.Header.Set(k, v)
	}
	if a.cookie != "" {
		req.Header.Set("Cookie", a.cookie)
	}
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	a.handler(ctx)
	return ctx.Response.StatusCode()
}

// renderModes are who the pages are drawn for.
var renderModes = []struct {
	name  string
	clerk bool
}{{"clerk", true}, {"protected", false}}

// BenchmarkRender serves each order page and its JSON in turn:
// go test ./routes -run '^$' -bench Render -benchmem.
func BenchmarkRender(b *testing.B) {
	for _, m := range renderModes {
		a := newRenderApp(b, m.clerk)
		for _, rc := range renderCases() {
			b.Run(m.name+"/"+rc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					// A fresh context each time, as the server gives
					// each request: one reused ends the next request's
					// context with the last one.
					var ctx fasthttp.RequestCtx
					if st := a.serve(&ctx, rc); st != 200 {
						b.Fatalf("GET %s: %d, want 200: %s", rc.target, st, ctx.Response.Body())
					}
				}
			})
		}
	}
}

// liveCursor is a page's live-event cursor, whose instance part is random.
var liveCursor = regexp.MustCompile(`(events\?after=[0-9-]+)\.[0-9a-z]+`)

// TestRenderedPagesStayTheSame compares every page of the benchmark with
// the copy saved in $ORDERS_RENDER_GOLDENS (made on the first run): a
// change that should only make rendering cheaper leaves each byte as it
// was.
func TestRenderedPagesStayTheSame(t *testing.T) {
	dir := os.Getenv("ORDERS_RENDER_GOLDENS")
	if dir == "" {
		t.Skip("ORDERS_RENDER_GOLDENS names no folder to keep the pages in")
	}
	for _, m := range renderModes {
		a := newRenderApp(t, m.clerk)
		for _, rc := range renderCases() {
			var ctx fasthttp.RequestCtx
			if st := a.serve(&ctx, rc); st != 200 {
				t.Fatalf("GET %s as %s: %d, want 200", rc.target, m.name, st)
			}
			// The live stream's cursor names the instance, which is drawn
			// at random.
			got := liveCursor.ReplaceAll(ctx.Response.Body(), []byte("$1.instance"))
			if enc := ctx.Response.Header.ContentEncoding(); len(enc) > 0 {
				t.Fatalf("GET %s: coded %s, want plain", rc.target, enc)
			}
			file := filepath.Join(dir, m.name+"_"+strings.ReplaceAll(rc.name, "/", "_")+".html")
			want, err := os.ReadFile(file)
			if os.IsNotExist(err) {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				lo := max(i-200, 0)
				t.Errorf("GET %s as %s differs from %s at byte %d:\ngot  …%s…\nwant …%s…", rc.target, m.name, file, i,
					got[lo:min(i+200, len(got))], want[lo:min(i+200, len(want))])
			}
		}
	}
}
