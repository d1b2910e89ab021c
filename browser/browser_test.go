// Package browser_test drives the real application in Debian's headless
// Chromium (chromedp, no browser download): what a person does, with
// JavaScript on and off.
package browser_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"orders/routes"
	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

type env struct {
	base  string
	ctx   context.Context
	store *redisstore.Store

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
	dialogs []string
	// failedLoads are more statuses whose "Failed to load resource" console
	// lines a test expects (a visit to a 404 page).
	failedLoads []string
}

// smokeTest is the one browser test that runs without ORDERS_FULL=1: a
// person creates an order with two items and moves it along. Every other
// browser test drives Chromium for many seconds, so they run in .ci/run.
const smokeTest = "TestCreateOrderWithTwoItems"

// chromiumPath returns Chromium's path. It skips the test when there is
// none (fails with ORDERS_REQUIRE_BROWSER=1), and every test but the smoke
// test without ORDERS_FULL=1.
func chromiumPath(t *testing.T) string {
	if name, _, _ := strings.Cut(t.Name(), "/"); name != smokeTest {
		testutil.Long(t)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ORDERS_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium on PATH and ORDERS_REQUIRE_BROWSER=1: install Debian's chromium (.ci/run does)")
	}
	testutil.Skip(t, "no chromium on PATH (apt-get install chromium, or run .ci/run)")
	return ""
}

// serve serves the application on a free loopback port over a fresh
// embedded store, and returns its base URL ("http://127.0.0.1:port").
func serve(t *testing.T) (string, *redisstore.Store) {
	t.Helper()
	return serveWith(t, redisstore.Options{})
}

// serveWith is serve over a store with the given options (a clock), its
// Redis client with the given hooks (a delay).
func serveWith(t *testing.T, opts redisstore.Options, hooks ...redis.Hook) (string, *redisstore.Store) {
	t.Helper()
	return serveOn(t, miniredis.RunT(t), opts, hooks...)
}

// serveOn is serveWith over a given Redis: several instances of the
// application can share one (browser/live_test.go).
func serveOn(t *testing.T, m *miniredis.Miniredis, opts redisstore.Options, hooks ...redis.Hook) (string, *redisstore.Store) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	t.Cleanup(func() { rdb.Close() })
	st := redisstore.New(rdb, opts)
	app, err := routes.New(routes.Config{Store: st, Files: testutil.Files(t), Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + testutil.Serve(t, app), st
}

// start serves the application (serve) and opens a Chromium tab, with
// JavaScript on or off.
func start(t *testing.T, javascript bool) *env {
	t.Helper()
	return startWith(t, javascript, redisstore.Options{})
}

// startWith is start over a store with the given options and Redis hooks.
func startWith(t *testing.T, javascript bool, so redisstore.Options, hooks ...redis.Hook) *env {
	t.Helper()
	exe := chromiumPath(t)
	base, st := serveWith(t, so, hooks...)
	return openTab(t, browser(t, exe), base, st, javascript)
}

// browser starts Chromium (exe) for the test; it lives until the test ends.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	// The first Do starts the browser; the browser lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// openTab is the env of a tab (ctx) on the application at base: its console
// and dialogs watched, JavaScript on or off.
func openTab(t *testing.T, ctx context.Context, base string, st *redisstore.Store, javascript bool) *env {
	t.Helper()
	e := &env{base: base, ctx: ctx, store: st}
	messages := chromedp.Console(ctx)
	go func() {
		for msg, err := range messages {
			if err != nil {
				return
			}
			e.mu.Lock()
			e.console = append(e.console, msg)
			e.mu.Unlock()
		}
	}()
	// hx-confirm uses window.confirm: accept every dialog, and note it.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			e.mu.Lock()
			e.dialogs = append(e.dialogs, ev.Message)
			e.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	if !javascript {
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled,
			emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("disabling JavaScript: %v", err)
		}
	}
	t.Cleanup(func() { e.checkConsole(t) })
	return e
}

// do runs steps with a deadline, failing the test with where it stopped.
func (e *env) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		e.shot(t, "failure-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
}

func run[T any](t *testing.T, e *env, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func (e *env) text(t *testing.T, sel string) string {
	t.Helper()
	return strings.TrimSpace(run(t, e, "reading "+sel, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible)))
}

func (e *env) path(t *testing.T) string {
	t.Helper()
	loc := run(t, e, "reading the location", chromedp.Location())
	return strings.TrimPrefix(loc, e.base)
}

// waitText waits until sel's text contains want.
func (e *env) waitText(t *testing.T, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && el.textContent.includes(%q); })()`, sel, want)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		got, _ := chromedp.Run(e.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||"(missing)"`, sel)))
		e.shot(t, "failure-waittext")
		t.Fatalf("waiting for %s to contain %q: %v; it holds %q", sel, want, err, strings.TrimSpace(got))
	}
}

// marker sets a value on window; it survives htmx swaps and dies with a page load.
func (e *env) setMarker(t *testing.T) {
	run(t, e, "setting the marker", chromedp.Evaluate[bool](`window.__noReload = true`))
}

func (e *env) markerKept(t *testing.T) bool {
	return run(t, e, "reading the marker", chromedp.Evaluate[bool](`window.__noReload === true`))
}

// shot saves a screenshot when ORDERS_SCREENSHOTS names a folder.
func (e *env) shot(t *testing.T, name string) {
	dir := os.Getenv("ORDERS_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
}

// checkConsole fails the test on any console error or exception, except
// the failed-resource lines Chromium logs for statuses the app answers on
// purpose (422 for invalid input, 409 for a conflict).
func (e *env) checkConsole(t *testing.T) {
	time.Sleep(100 * time.Millisecond)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.console {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		text := m.String()
		if strings.Contains(text, "Failed to load resource") && expectedLoadFailure(text, e.failedLoads) {
			continue
		}
		t.Errorf("console %s: %s (%s:%d)", m.Type, text, m.URL, m.Line+1)
	}
}

// expectedLoadFailure reports whether a "Failed to load resource" line is
// for a status the app answers on purpose: 422, 409, or one of more.
func expectedLoadFailure(text string, more []string) bool {
	for _, s := range append([]string{"422", "409"}, more...) {
		if strings.Contains(text, "status of "+s+" ") {
			return true
		}
	}
	return false
}

func (e *env) seed(t *testing.T, customers ...string) []*store.Order {
	t.Helper()
	var out []*store.Order
	for _, c := range customers {
		name, qty, price := "Mug", "2", "12.50"
		o, err := e.store.CreateOrder(context.Background(), store.OrderInput{Customer: &c, HasItems: true,
			Items: []store.ItemInput{{Name: name, Quantity: qty, UnitPrice: price}}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}
