package browser_test

// Live updates: two instances of the application
// over one Redis, a Chromium page on each. A person acts in page A, on
// instance A; page B, on instance B, must follow within a second, through
// B's event stream (GET /<plural>/events, fed through Redis), without ever
// overwriting what the person in B is typing.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"orders/store"
	"orders/store/redisstore"
)

// liveWithin is what the contract promises: a change made anywhere shows
// within a second.
const liveWithin = time.Second

// startLive serves two instances of the application over one Redis and
// opens a page on each, in one Chromium but separate browser contexts (no
// cookie, cache or connection shared): a on instance A, b on instance B.
// Both envs hold the same store.
func startLive(t *testing.T) (a, b *env) {
	t.Helper()
	exe := chromiumPath(t)
	m := miniredis.RunT(t)
	baseA, st := serveOn(t, m, redisstore.Options{})
	baseB, _ := serveOn(t, m, redisstore.Options{})
	root := browser(t, exe)
	tab := func(base string) *env {
		ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("opening a tab: %v", err)
		}
		return openTab(t, ctx, base, st, true)
	}
	return tab(baseA), tab(baseB)
}

// openLive opens path and waits until the page's event stream is open:
// from then on it hears every change.
func (e *env) openLive(t *testing.T, path string) {
	t.Helper()
	e.do(t, "open "+path, chromedp.Navigate(e.base+path), chromedp.WaitVisible(css("main")),
		// When the page's last write was answered (within reads it).
		chromedp.Evaluate[chromedp.Void](`document.addEventListener("htmx:after:request", (e) => {
		  const c = e.detail && e.detail.ctx;
		  if (c && c.request && c.request.method !== "GET") window.__wroteAt = Date.now();
		})`))
	e.waitLive(t)
}

// waitLive waits until the page's event stream is connected.
func (e *env) waitLive(t *testing.T) {
	t.Helper()
	js := `document.querySelector("[data-live-stream]") &&
	  document.querySelector("[data-live-stream]").getAttribute("data-live-state") === "open"`
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("the event stream did not open: %v; the page's requests for it: %s", err, e.jsString(t,
			`JSON.stringify(performance.getEntriesByType("resource").filter(r => r.name.includes("/events")).map(r => [r.name, r.responseStatus, Math.round(r.startTime), Math.round(r.responseStart)]))`))
	}
}

// watch starts watching page B (e) for js to become true, before the
// person in page A acts: the moment it does, by the page's own clock, is
// when B showed the change (within reads it).
func (e *env) watch(t *testing.T, what, js string) {
	t.Helper()
	run(t, e, "watching for "+what, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
	  const seen = (window.__seen = window.__seen || {});
	  delete seen[%[1]q];
	  const holds = () => { try { return !!(%[2]s); } catch (err) { return false; } };
	  const check = () => { if (!seen[%[1]q] && holds()) { seen[%[1]q] = Date.now(); obs.disconnect(); } };
	  const obs = new MutationObserver(check);
	  obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
	  check();
	  return true;
	})()`, what, js)))
}

// within waits until page B (e) has shown what watch watches for, and
// logs how long it took: from since (just before the person in page A
// acted) and from when A's write was answered (the change had happened by
// then). The contract's second runs from the change: the test fails when
// B shows it later than liveWithin after A's write was answered.
func (e *env) within(t *testing.T, what string, a *env, since time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, liveWithin+4*time.Second)
	defer cancel()
	shown, err := chromedp.Run(ctx, chromedp.Poll[float64](fmt.Sprintf(`(window.__seen || {})[%q]`, what), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		e.shot(t, "failure-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: not shown in B %v after A acted: %v", what, time.Since(since).Round(time.Millisecond), err)
	}
	wrote := run(t, a, "when A's write was answered", chromedp.Poll[float64](`window.__wroteAt`, chromedp.WithPollingInterval(10*time.Millisecond)))
	seen := time.UnixMilli(int64(shown))
	took, after := seen.Sub(since), seen.Sub(time.UnixMilli(int64(wrote)))
	t.Logf("%s: shown in B %v after A acted, %v after A's write was answered", what,
		took.Round(time.Millisecond), after.Round(time.Millisecond))
	if after > liveWithin {
		t.Errorf("%s: shown in B %v after A's write was answered, want within %v", what, after.Round(time.Millisecond), liveWithin)
	}
}

// act runs what the person in page A does to make a change, and returns
// when they started.
func (e *env) act(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) time.Time {
	t.Helper()
	run(t, e, "forgetting the last write", chromedp.Evaluate[bool](`!(window.__wroteAt = 0)`))
	since := time.Now()
	e.do(t, what, steps...)
	return since
}

// mark tags the element sel with a property a morph keeps and a
// replacement loses.
func (e *env) mark(t *testing.T, sel string) {
	t.Helper()
	run(t, e, "marking "+sel, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).__live = true`, sel)))
}

// marked reports whether sel is still the element mark tagged.
func (e *env) marked(t *testing.T, sel string) bool {
	t.Helper()
	return run(t, e, "reading the mark of "+sel, chromedp.Evaluate[bool](fmt.Sprintf(`!!(document.querySelector(%q) || {}).__live`, sel)))
}

// TestLiveEditShowsElsewhere: a row edited in page A, on instance A, shows
// in page B, on instance B, within a second: the row updates in place (the
// same element, morphed; focus stays on B's Edit link), B's notices are
// left alone, and B never fetches what it already shows.
func TestLiveEditShowsElsewhere(t *testing.T) {
	a, b := startLive(t)
	orders := a.seed(t, "Ada Lovelace", "Grace Hopper")
	x := orders[0]
	row := fmt.Sprintf("#order-row-%d", x.ID)
	a.openLive(t, "/orders")
	b.openLive(t, "/orders")
	b.mark(t, row)
	b.do(t, "focus in B", chromedp.Focus(css(row+" a[hx-get]")))

	a.do(t, "edit in A", chromedp.Click(css(row+" a[hx-get]")), chromedp.WaitVisible(css(fmt.Sprintf("#row-%d-customer", x.ID))),
		chromedp.SetValue(css(fmt.Sprintf("#row-%d-customer", x.ID)), "Ada King"))
	b.watch(t, "the edit in B", fmt.Sprintf(`document.querySelector(%q).textContent.includes("Ada King")`, row))
	since := a.act(t, "save in A", chromedp.Click(css(row+" .row-buttons button[type=submit]")))
	b.within(t, "the edit in B", a, since)

	if got := b.jsString(t, fmt.Sprintf(`document.querySelector(%q).dataset.liveVersion`, row)); got != "2" {
		t.Errorf("B's row says version %s, want 2", got)
	}
	if !b.marked(t, row) {
		t.Error("B's row was replaced, not updated in place (morphed)")
	}
	if !b.jsBool(t, fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, row+" a[hx-get]")) {
		t.Errorf("focus in B moved to %s, want B's Edit link of the row it was on", b.focused(t))
	}
	if got := b.jsString(t, `document.querySelector("#notice").textContent.trim()`); got != "" {
		t.Errorf("B's notice region says %q: a live update is not B's action", got)
	}
	a.waitText(t, "#notice", fmt.Sprintf("Order %d saved.", x.ID))
}

// jsBool evaluates js (an expression) as a boolean.
func (e *env) jsBool(t *testing.T, js string) bool {
	t.Helper()
	return run(t, e, "evaluating "+oneLine(js, 60), chromedp.Evaluate[bool](`!!(`+js+`)`))
}

// TestLiveDeleteMarksRow: a row deleted in page A stays in page B, marked
// deleted (the gone row's look and a Deleted badge) with its actions
// disabled, within a second; A's own row goes as it always did.
func TestLiveDeleteMarksRow(t *testing.T) {
	a, b := startLive(t)
	x := a.seed(t, "Ada Lovelace", "Grace Hopper")[1]
	row := fmt.Sprintf("#order-row-%d", x.ID)
	a.openLive(t, "/orders")
	b.openLive(t, "/orders")
	// B's focus is on the row's Delete, which the delete disables: it must
	// not fall to the page's body (a keyboard or screen reader user would
	// lose their place), but go to the row, whose badge says Deleted.
	b.do(t, "focus in B", chromedp.Focus(css(row+" button.danger")))

	b.watch(t, "the delete in B", fmt.Sprintf(`document.querySelector(%q).classList.contains("gone")`, row))
	since := a.act(t, "delete in A", chromedp.Click(css(row+" button.danger")), chromedp.WaitNotPresent(css(row)))
	b.within(t, "the delete in B", a, since)
	b.shot(t, "live-row-deleted")
	if got := b.text(t, row+" .badge"); got != "Deleted" {
		t.Errorf("B's deleted row's badge says %q, want Deleted", got)
	}
	if !b.jsBool(t, fmt.Sprintf(`document.querySelector(%q).disabled && document.querySelector(%q).inert`,
		row+" button.danger", row+" a[hx-get]")) {
		t.Error("B's deleted row still offers Edit or Delete")
	}
	if got := b.jsString(t, `document.querySelectorAll("[data-rows] > tr").length`); got != "2" {
		t.Errorf("B shows %s rows, want both, the deleted one marked", got)
	}
	if !b.jsBool(t, fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, row)) {
		t.Errorf("B's focus went to %s when the row it was in was deleted, want the row", b.focused(t))
	}
}

// TestLiveCreateAnnounced: an order created in page A is announced in
// page B's polite region ("1 new order — show") within a second, and is
// not slipped into B's table; B's "show" brings it, keeping B's rows and
// moving focus to the results' summary, not the body.
func TestLiveCreateAnnounced(t *testing.T) {
	a, b := startLive(t)
	first := a.seed(t, "Ada Lovelace")[0]
	b.openLive(t, "/orders")
	b.mark(t, fmt.Sprintf("#order-row-%d", first.ID))
	a.openLive(t, "/orders/new")
	a.do(t, "fill in A", chromedp.SendKeys(css("#customer"), "Katherine Johnson"), fillItem("0", "MUG-1", "Enamel mug", "1", "12.50"))
	b.watch(t, "the announcement in B", `document.querySelector("[data-live-news]").textContent.includes("1 new order \u2014 show")`)
	since := a.act(t, "create in A", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	b.within(t, "the announcement in B", a, since)
	if got := b.jsString(t, `document.querySelector("[data-live-news]").getAttribute("role") + " " + document.querySelector("[data-live-news]").getAttribute("aria-live")`); got != "status polite" {
		t.Errorf("the region is %q, want a polite status", got)
	}
	if got := b.jsString(t, `document.querySelectorAll("[data-rows] > tr").length`); got != "1" {
		t.Errorf("B's table has %s rows before show, want 1: a new order is announced, not slipped in", got)
	}
	b.shot(t, "live-new-order")
	b.do(t, "show in B", chromedp.Click(css("[data-live-show]")))
	b.waitText(t, "#order-results", "Katherine Johnson")
	if !b.marked(t, fmt.Sprintf("#order-row-%d", first.ID)) {
		t.Error("show replaced B's rows; want them kept (morphed) and the new one added")
	}
	b.waitFocus(t, "after show", "#results-count")
	if got := b.jsString(t, `document.querySelector("[data-live-news]").textContent`); strings.Contains(got, "new order") {
		t.Errorf("after show the region still says %q", got)
	}
}

// TestLiveCreateUnderAFilter: a List filtered by creation dates does not
// announce an order created today outside them; under a search (q), which
// an event cannot judge, the announcement says the new order may not be in
// it, and "show" runs the search again.
func TestLiveCreateUnderAFilter(t *testing.T) {
	a, b := startLive(t)
	a.seed(t, "Ada Lovelace")
	// Counts the stream's created events, after app.js has handled them
	// (its listener was added first).
	hear := chromedp.Evaluate[chromedp.Void](`document.addEventListener("created", (e) => {
	  if (e.target.hasAttribute && e.target.hasAttribute("data-live-stream")) window.__created = (window.__created || 0) + 1;
	})`)
	for _, path := range []string{"/orders?to=2001-01-31", "/orders?from=2999-01-01"} {
		b.openLive(t, path)
		b.do(t, "listen for creates", hear)
		a.seed(t, "Grace Hopper")
		b.waitJS(t, "the create heard in B", `window.__created === 1`)
		if got := b.jsString(t, `document.querySelector("[data-live-news]").textContent`); strings.Contains(got, "new order") {
			t.Errorf("%s announces %q for an order created today, outside its dates", path, got)
		}
	}

	b.openLive(t, "/orders?q=Katherine")
	b.do(t, "listen for creates", hear)
	a.seed(t, "Mary Jackson", "Katherine Johnson")
	b.waitJS(t, "both creates heard in B", `window.__created === 2`)
	b.waitText(t, "[data-live-news]", "2 new orders (this search may not include them) \u2014 show")
	b.do(t, "show in B", chromedp.Click(css("[data-live-show]")))
	b.waitText(t, "#order-results", "Katherine Johnson")
	if got := b.jsString(t, `document.querySelector("#order-results").textContent`); strings.Contains(got, "Mary Jackson") {
		t.Error("show under q=Katherine lists Mary Jackson: it must run the search, not list every new order")
	}
}

// typingInline seeds an order of customer (through A's store) and opens
// page B on the List with that order's row in an inline edit, typed in
// its customer field; it returns the order and the row's and the field's
// selectors.
func typingInline(t *testing.T, a, b *env, customer, typed string) (x *store.Order, row, field string) {
	t.Helper()
	x = a.seed(t, customer)[0]
	row = fmt.Sprintf("#order-row-%d", x.ID)
	field = fmt.Sprintf("#row-%d-customer", x.ID)
	b.openLive(t, "/orders")
	b.do(t, "inline edit in B", chromedp.Click(css(row+" a[hx-get]")), chromedp.WaitVisible(css(field)),
		chromedp.SetValue(css(field), typed))
	return x, row, field
}

// TestLiveInlineEditKept: what the person in B types into an inline row
// edit survives a change of that order in A: B's row form says the order
// changed ("Order N was changed elsewhere — now version 2"), and its
// Compare sends the form with its stale version, which the server answers
// with the conflict comparison, yours beside theirs, saving nothing.
func TestLiveInlineEditKept(t *testing.T) {
	a, b := startLive(t)
	x, row, field := typingInline(t, a, b, "Frances Allen", "Frances E. Allen")
	a.openLive(t, fmt.Sprintf("/orders/%d", x.ID))

	want := fmt.Sprintf("Order %d was changed elsewhere \u2014 now version 2.", x.ID)
	b.watch(t, "the notice in B's row form", fmt.Sprintf(`document.querySelector(%q).textContent.includes(%q)`, row+" form [data-live-notice]", want))
	since := a.act(t, "confirm in A", chromedp.Click(css(".transitions form:first-of-type button")), chromedp.WaitVisible(css("#order .status-confirmed")))
	b.within(t, "the notice in B's row form", a, since)
	if got := run(t, b, "B's field", chromedp.Value(css(field))); got != "Frances E. Allen" {
		t.Errorf("B's field holds %q after A's change, want what B typed", got)
	}
	b.waitText(t, "[data-live-news]", want)
	b.shot(t, "live-row-form-changed")

	b.do(t, "compare in B", chromedp.Click(css(row+" [data-live-compare]")), chromedp.WaitVisible(css(fmt.Sprintf("#conflict-%d", x.ID))))
	wantRows(t, "B's comparison", b.rowsText(t, fmt.Sprintf("#conflict-%d-fields", x.ID)), []string{
		"Customer | Frances E. Allen | Frances Allen",
		"Status | Pending A confirmed order cannot become pending: saving keeps Confirmed. | Confirmed",
	})
	if got := run(t, b, "B's field", chromedp.Value(css(field))); got != "Frances E. Allen" {
		t.Errorf("B's field holds %q after Compare, want what B typed", got)
	}
	if cur, _ := a.store.GetOrder(context.Background(), x.ID); cur.Customer != "Frances Allen" || cur.Version != 2 {
		t.Errorf("Compare saved something: %q at version %d", cur.Customer, cur.Version)
	}
	if n := b.jsString(t, `document.querySelectorAll("[data-live-notice]").length`); n != "0" {
		t.Errorf("the comparison still carries %s changed-notices: it is of the current version", n)
	}

	// Deleted in A while B's row form is open: B's text stays, to copy,
	// and its form can no longer save.
	gone := fmt.Sprintf("Order %d was deleted elsewhere. It can no longer be saved.", x.ID)
	b.watch(t, "the delete in B's row form", fmt.Sprintf(`document.querySelector(%q).textContent.includes(%q)`, row+" form [data-live-notice]", gone))
	since = a.act(t, "delete in A", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	b.within(t, "the delete in B's row form", a, since)
	if !b.jsBool(t, fmt.Sprintf(`[...document.querySelectorAll(%q)].every(b => b.disabled)`, row+" form button[type=submit]")) {
		t.Error("B's row form of a deleted order can still save")
	}
	if got := run(t, b, "B's field", chromedp.Value(css(field))); got != "Frances E. Allen" {
		t.Errorf("B's field holds %q after the delete, want what B typed", got)
	}
}

// TestLiveDeleteAfterAConflict: B saves an inline edit over A's change
// and gets the 409 (its warning: "compare and choose below"); then A
// deletes the order. The warning no longer holds (nothing is left to
// choose) and goes; B's row form says the order was deleted, keeps B's
// text and can no longer save.
func TestLiveDeleteAfterAConflict(t *testing.T) {
	a, b := startLive(t)
	x, row, field := typingInline(t, a, b, "Annie Easley", "Annie J. Easley")
	confirmed := "confirmed"
	if _, err := a.store.UpdateOrder(context.Background(), x.ID, store.OrderInput{Status: &confirmed}, 0); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, row+" form [data-live-notice]", "was changed elsewhere")
	b.do(t, "save in B", chromedp.Click(css(row+" form button[type=submit]:not([data-live-compare])")),
		chromedp.WaitVisible(css(fmt.Sprintf("#conflict-%d", x.ID))))
	b.waitText(t, "#notice-alert", "compare and choose below")

	a.openLive(t, fmt.Sprintf("/orders/%d", x.ID))
	gone := fmt.Sprintf("Order %d was deleted elsewhere. It can no longer be saved.", x.ID)
	b.watch(t, "the delete in B's row form", fmt.Sprintf(`document.querySelector(%q).textContent.includes(%q)`, row+" form [data-live-notice]", gone))
	since := a.act(t, "delete in A", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	b.within(t, "the delete in B's row form", a, since)
	if !b.jsBool(t, `!document.querySelector(".notice-region .notice-warning")`) {
		t.Errorf("the 409's warning stays once the order is deleted: %q", b.jsString(t, `document.querySelector("#notice-alert").textContent.trim()`))
	}
	if !b.jsBool(t, fmt.Sprintf(`[...document.querySelectorAll(%q)].every(b => b.disabled)`, row+" button[type=submit]")) {
		t.Error("B's row form of a deleted order, or its comparison, can still save")
	}
	if got := run(t, b, "B's field", chromedp.Value(css(field))); got != "Annie J. Easley" {
		t.Errorf("B's field holds %q after the delete, want what B typed", got)
	}
	b.shot(t, "live-row-deleted-after-conflict")
}

// TestLiveEditPageKept: the same on the Edit page: B's text stays, the
// form says the order changed, and Compare answers the comparison.
func TestLiveEditPageKept(t *testing.T) {
	a, b := startLive(t)
	x := a.seed(t, "Mary Jackson")[0]
	b.openLive(t, fmt.Sprintf("/orders/%d/edit", x.ID))
	b.do(t, "type in B", chromedp.SendKeys(css("#notes"), "leave at the gate"))
	a.openLive(t, fmt.Sprintf("/orders/%d", x.ID))

	b.watch(t, "the notice in B's form", fmt.Sprintf(`document.querySelector("#order-edit [data-live-notice]").textContent.includes(%q)`,
		fmt.Sprintf("Order %d was changed elsewhere \u2014 now version 2.", x.ID)))
	since := a.act(t, "confirm in A", chromedp.Click(css(".transitions form:first-of-type button")), chromedp.WaitVisible(css("#order .status-confirmed")))
	b.within(t, "the notice in B's form", a, since)
	if got := run(t, b, "B's notes", chromedp.Value(css("#notes"))); got != "leave at the gate" {
		t.Errorf("B's notes hold %q after A's change, want what B typed", got)
	}
	b.shot(t, "live-edit-form-changed")
	b.do(t, "compare in B", chromedp.Click(css("#order-edit [data-live-compare]")), chromedp.WaitVisible(css("#order-form .conflict")))
	wantRows(t, "B's comparison", b.rowsText(t, fmt.Sprintf("#conflict-%d-fields", x.ID)), []string{
		"Status | Pending A confirmed order cannot become pending: saving keeps Confirmed. | Confirmed",
		"Notes | leave at the gate | empty",
	})
	if got := run(t, b, "B's notes", chromedp.Value(css("#notes"))); got != "leave at the gate" {
		t.Errorf("B's notes hold %q after Compare, want what B typed", got)
	}
	if cur, _ := a.store.GetOrder(context.Background(), x.ID); cur.Notes != "" || cur.Version != 2 {
		t.Errorf("Compare saved something: notes %q at version %d", cur.Notes, cur.Version)
	}

	// Deleted in A while B looks at the comparison: no way to save is left
	// (the comparison's "Save mine over theirs" is the form's default
	// button, outside it: Enter in a field sent a PUT, whose 404 replaced
	// the page and B's text), and B's text stays.
	b.watch(t, "the delete in B's form", fmt.Sprintf(`document.querySelector("#order-edit [data-live-notice]").textContent.includes(%q)`,
		fmt.Sprintf("Order %d was deleted elsewhere. It can no longer be saved.", x.ID)))
	since = a.act(t, "delete in A", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	b.within(t, "the delete in B's form", a, since)
	if !b.jsBool(t, `[...document.querySelectorAll("#order-form button[type=submit], #order-form button:not([type])")].every(b => b.disabled) &&
	    [...document.querySelectorAll("#order-form .conflict-choices a")].every(a => a.inert)`) {
		t.Error("B's form of a deleted order, or its comparison, still offers to save or to open it")
	}
	if !b.jsBool(t, `!document.querySelector(".notice-region .notice-warning")`) {
		t.Errorf("the 409's warning stays once the order is deleted: %q", b.jsString(t, `document.querySelector("#notice-alert").textContent.trim()`))
	}
	b.do(t, "Enter in B's customer field", chromedp.Focus(css("#customer")), chromedp.KeyEvent("\r"), chromedp.Sleep(300*time.Millisecond))
	if got := run(t, b, "B's notes", chromedp.Value(css("#notes"))); got != "leave at the gate" {
		t.Errorf("B's notes hold %q after Enter in a field of the deleted order's form, want what B typed", got)
	}
	if !strings.HasSuffix(b.jsString(t, `location.pathname`), "/edit") {
		t.Errorf("Enter in a field of the deleted order's form left the Edit page for %s", b.jsString(t, `location.pathname`))
	}
}

// TestLiveReadPage: the order's page in B follows A: a status change shows
// in place within a second (its timeline too); a note B is typing is
// kept while the page around it changes, and says the order changed; a
// delete says so on the page and disables its actions.
func TestLiveReadPage(t *testing.T) {
	a, b := startLive(t)
	x := a.seed(t, "Dorothy Vaughan")[0]
	page := fmt.Sprintf("/orders/%d", x.ID)
	a.openLive(t, page)
	b.openLive(t, page)
	b.mark(t, "#order")

	b.watch(t, "the status in B", `!!document.querySelector("#order h1 .status-confirmed")`)
	since := a.act(t, "confirm in A", chromedp.Click(css(".transitions form:first-of-type button")), chromedp.WaitVisible(css("#order .status-confirmed")))
	b.within(t, "the status in B", a, since)
	if !b.marked(t, "#order") {
		t.Error("B's page was replaced, not updated in place (morphed)")
	}
	b.waitText(t, "#order-history", "Status")
	b.waitText(t, "[data-live-news]", fmt.Sprintf("Order %d was changed elsewhere", x.ID))

	b.do(t, "a note in B", chromedp.SendKeys(css("#order-history-note"), "called the customer"))
	b.watch(t, "the shipment in B", `!!document.querySelector("#order h1 .status-shipped")`)
	since = a.act(t, "ship in A", chromedp.Click(css(".transitions form:first-of-type button")), chromedp.WaitVisible(css("#order .status-shipped")))
	b.within(t, "the shipment in B", a, since)
	if got := run(t, b, "B's note", chromedp.Value(css("#order-history-note"))); got != "called the customer" {
		t.Errorf("B's note holds %q after A's change, want what B typed", got)
	}
	b.waitText(t, ".note-form [data-live-notice]", fmt.Sprintf("Order %d was changed elsewhere \u2014 now version 3.", x.ID))
	b.shot(t, "live-note-kept")
	if !b.jsBool(t, `document.activeElement === document.getElementById("order-history-note")`) {
		t.Errorf("focus in B moved to %s, want the note B is typing", b.focused(t))
	}

	b.watch(t, "the delete in B", `document.querySelector("#order .live-gone-note").textContent.includes("was deleted elsewhere")`)
	since = a.act(t, "delete in A", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	b.within(t, "the delete in B", a, since)
	if !b.jsBool(t, `[...document.querySelectorAll("#order .page-head button, #order .transitions button")].every(b => b.disabled) &&
	    document.querySelector("#order .page-head a[hx-get]").inert`) {
		t.Error("B's page of a deleted order still offers its actions")
	}
	if got := run(t, b, "B's note", chromedp.Value(css("#order-history-note"))); got != "called the customer" {
		t.Errorf("B's note holds %q after the delete, want what B typed (to copy)", got)
	}
	b.waitText(t, ".note-form [data-live-notice]", fmt.Sprintf("Order %d was deleted elsewhere. Your text is kept, but it can no longer be saved.", x.ID))
	// The timeline says who deleted it, at its head, and still holds the
	// latest five entries (the create, two changes: four now).
	b.waitText(t, "#order-history .timeline > li:first-child", "Deleted by")
	if n := run(t, b, "B's timeline", chromedp.Evaluate[int](`document.querySelectorAll("#order-history .timeline > li.entry").length`)); n != 4 {
		t.Errorf("B's timeline holds %d entries after the delete, want 4 (created, confirmed, shipped, deleted)", n)
	}
	if got := run(t, b, "B's note", chromedp.Value(css("#order-history-note"))); got != "called the customer" {
		t.Errorf("B's note holds %q once the timeline shows the delete, want what B typed", got)
	}
	b.shot(t, "live-page-deleted")
}

// TestLiveInquiry: an Inquiry entry follows A's change in place, and a
// deleted one is marked.
func TestLiveInquiry(t *testing.T) {
	a, b := startLive(t)
	orders := a.seed(t, "Ada Lovelace", "Grace Hopper")
	x, y := orders[0], orders[1]
	entry := fmt.Sprintf("#inquiry-order-%d", x.ID)
	b.openLive(t, "/orders/inquiry")
	b.mark(t, entry)
	a.openLive(t, "/orders")

	row := fmt.Sprintf("#order-row-%d", x.ID)
	a.do(t, "edit in A", chromedp.Click(css(row+" a[hx-get]")), chromedp.WaitVisible(css(fmt.Sprintf("#row-%d-customer", x.ID))),
		chromedp.SetValue(css(fmt.Sprintf("#row-%d-customer", x.ID)), "Ada King"))
	b.watch(t, "the edit in B's Inquiry", fmt.Sprintf(`document.querySelector(%q).textContent.includes("Ada King")`, entry))
	since := a.act(t, "save in A", chromedp.Click(css(row+" .row-buttons button[type=submit]")))
	b.within(t, "the edit in B's Inquiry", a, since)
	if !b.marked(t, entry) {
		t.Error("B's entry was replaced, not updated in place (morphed)")
	}
	b.watch(t, "the delete in B's Inquiry", fmt.Sprintf(`document.querySelector(%q).classList.contains("gone")`,
		fmt.Sprintf("#inquiry-order-%d", y.ID)))
	since = a.act(t, "delete in A", chromedp.Click(css(fmt.Sprintf("#order-row-%d button.danger", y.ID))))
	b.within(t, "the delete in B's Inquiry", a, since)
}

// TestLiveProductEdit: products follow too: a product renamed in page A's
// catalogue shows in page B's within a second, in place.
func TestLiveProductEdit(t *testing.T) {
	a, b := startLive(t)
	cat := seedCatalogue(t, a.store)
	row := fmt.Sprintf("#product-row-%d", cat.pen.ID)
	field := fmt.Sprintf("#row-%d-name", cat.pen.ID)
	a.openLive(t, "/products")
	b.openLive(t, "/products")
	b.mark(t, row)
	a.do(t, "edit in A", chromedp.Click(css(row+" a[hx-get]")), chromedp.WaitVisible(css(field)), chromedp.SetValue(css(field), "Gel pen, red"))
	b.watch(t, "the edit in B", fmt.Sprintf(`document.querySelector(%q).textContent.includes("Gel pen, red")`, row))
	since := a.act(t, "save in A", chromedp.Click(css(row+" .row-buttons button[type=submit]")))
	b.within(t, "the edit in B", a, since)
	if !b.marked(t, row) {
		t.Error("B's product row was replaced, not updated in place (morphed)")
	}
}

// withoutLive closes the page's event stream: the page then acts as one
// whose connection dropped, which no longer hears what changes elsewhere
// (for tests of the server's answers to acting on a stale page).
func withoutLive() chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("[data-live-stream]").forEach((s) => s.remove())`)
}

// reconnectStale closes the page's event stream (withoutLive) and keeps a
// copy that, once reconnect runs, asks for the events after a cursor the
// server never had: the server answers event: reset, as it does for a
// page that was away longer than the stream keeps.
func (e *env) reconnectStale(t *testing.T) (reconnect func()) {
	t.Helper()
	run(t, e, "closing the stream", chromedp.Evaluate[bool](`(() => {
	  const s = document.querySelector("[data-live-stream]"), c = s.cloneNode(false);
	  c.removeAttribute("data-live-state");
	  c.setAttribute("hx-sse:connect", s.getAttribute("hx-sse:connect") + "?after=no-such-cursor");
	  s.remove();
	  window.__staleStream = c;
	  return true;
	})()`))
	return func() {
		t.Helper()
		run(t, e, "reconnecting", chromedp.Evaluate[bool](`(() => {
		  document.querySelector(".notices").append(window.__staleStream);
		  htmx.process(window.__staleStream);
		  return true;
		})()`))
		e.waitLive(t)
	}
}

// TestLiveReset: a page whose cursor the server no longer has (event:
// reset) reads again what it shows: the List fetches its rows again, in
// place; with an inline edit open it only offers to ("This list may be
// out of date — show"), and the edited order's form says it changed.
func TestLiveReset(t *testing.T) {
	a, b := startLive(t)
	orders := a.seed(t, "Ada Lovelace", "Grace Hopper")
	x, y := orders[0], orders[1]
	rowX, rowY := fmt.Sprintf("#order-row-%d", x.ID), fmt.Sprintf("#order-row-%d", y.ID)
	customer := func(o *store.Order, name string) {
		t.Helper()
		if _, err := a.store.UpdateOrder(context.Background(), o.ID, store.OrderInput{Customer: &name}, 0); err != nil {
			t.Fatal(err)
		}
	}
	b.openLive(t, "/orders")
	b.mark(t, rowX)
	reconnect := b.reconnectStale(t)
	customer(x, "Ada King")
	reconnect()
	b.waitText(t, rowX, "Ada King")
	if !b.marked(t, rowX) {
		t.Error("after a reset B's row was replaced, not updated in place (morphed)")
	}

	field := fmt.Sprintf("#row-%d-customer", y.ID)
	b.do(t, "inline edit in B", chromedp.Click(css(rowY+" a[hx-get]")), chromedp.WaitVisible(css(field)), chromedp.SetValue(css(field), "Grace B. Hopper"))
	reconnect = b.reconnectStale(t)
	customer(x, "Ada, Countess of Lovelace")
	customer(y, "Rear Admiral Hopper")
	reconnect()
	b.waitText(t, rowY+" [data-live-notice]", fmt.Sprintf("Order %d was changed elsewhere \u2014 now version 2.", y.ID))
	b.waitText(t, "[data-live-news]", "This list may be out of date \u2014 show")
	if got := run(t, b, "B's field", chromedp.Value(css(field))); got != "Grace B. Hopper" {
		t.Errorf("B's field holds %q after the reset, want what B typed", got)
	}
	if got := b.text(t, rowX); strings.Contains(got, "Countess") {
		t.Errorf("with a form open B's list was fetched again (%q); want only the offer", got)
	}
}

// TestLiveReconnect: a stream that drops (here its reader is cancelled,
// which is what a lost connection or a server's shutdown looks like to
// htmx's SSE extension) is opened again by the extension within a second,
// with Last-Event-ID, and the change made meanwhile is replayed to the
// page.
func TestLiveReconnect(t *testing.T) {
	a, b := startLive(t)
	x := a.seed(t, "Ada Lovelace")[0]
	row := fmt.Sprintf("#order-row-%d", x.ID)
	asked := make(chan string, 16)
	go func() {
		for ev, err := range chromedp.Events(b.ctx, network.RequestWillBeSent) {
			if err != nil {
				return
			}
			if u, err := url.Parse(ev.Request.URL); err == nil && u.Path == "/orders/events" {
				id, _ := ev.Request.Headers["Last-Event-ID"].(string)
				asked <- id
			}
		}
	}()
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	customer := func(name string) {
		t.Helper()
		if _, err := a.store.UpdateOrder(context.Background(), x.ID, store.OrderInput{Customer: &name}, 0); err != nil {
			t.Fatal(err)
		}
	}
	b.openLive(t, "/orders")
	select {
	case id := <-asked:
		if id != "" {
			t.Errorf("the first request for the stream sent Last-Event-ID %q, want none", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the page did not ask for its stream")
	}
	customer("Ada King")
	b.waitText(t, row, "Ada King")
	last := b.jsString(t, `document.querySelector("[data-live-stream]")._htmx.sse.lastEventId`)

	dropped := time.Now()
	b.jsString(t, `document.querySelector("[data-live-stream]")._htmx.sse.reader.cancel() && "dropped"`)
	customer("Ada, Countess of Lovelace") // within the extension's first delay (0.5 s ± 30 %)
	b.waitText(t, row, "Countess")
	t.Logf("the change made while the stream was down shown %v after it dropped", time.Since(dropped).Round(time.Millisecond))
	select {
	case id := <-asked:
		if id != last {
			t.Errorf("the stream was asked again with Last-Event-ID %q, want %q, the last event the page had", id, last)
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream was not asked for again")
	}
}
