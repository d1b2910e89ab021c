package browser_test

// A calm page: live news that moves nothing, one notice for one change,
// shortcuts that say they exist, and filters that leave a phone's first
// screen to the orders.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
	"orders/testutil"
)

// nuStates keeps documents as the browser holds them (after script, in a
// state a person reached) for one run of the Nu Html Checker.
type nuStates struct {
	docs      *htmlDocs
	java, jar string
}

func newNuStates(t *testing.T) *nuStates {
	t.Helper()
	// Its tests drive a browser for many seconds: long ones, whether or
	// not the checker is installed.
	testutil.Long(t)
	java, jar := vnuJar(t)
	return &nuStates{docs: &htmlDocs{t: t, dir: t.TempDir(), src: map[string]string{}}, java: java, jar: jar}
}

// keep saves e's document as it is now under name.
func (n *nuStates) keep(t *testing.T, e *env, name string) {
	t.Helper()
	html := e.jsString(t, `"<!doctype html>\n" + document.documentElement.outerHTML`)
	file := filepath.Join(n.docs.dir, fmt.Sprintf("%02d-state-%s.html", len(n.docs.files)+1, strings.ReplaceAll(name, " ", "-")))
	if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	n.docs.files = append(n.docs.files, file)
	n.docs.src[file] = html
}

// check runs the checker on every kept document.
func (n *nuStates) check() { n.docs.validate(n.java, n.jar) }

// axeAnyJS is axe for a tab with JavaScript on or off: axe-core's own
// timers need script running, so a tab without it has script back for the
// check alone (the page's scripts ran, or not, at its load; none start now).
func (e *env) axeAnyJS(t *testing.T, js bool, src, what string) {
	t.Helper()
	if !js {
		e.scripts(t, true)
		defer e.scripts(t, false)
	}
	e.axe(t, src, what)
}

// scripts turns script execution in the tab on or off.
func (e *env) scripts(t *testing.T, on bool) {
	t.Helper()
	if _, err := chromedp.Call(e.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on}); err != nil {
		t.Fatalf("script execution %v: %v", on, err)
	}
}

// seenSaying counts the elements a person sees (rendered, larger than the
// one pixel of a screen-reader-only text) whose own text says phrase: the
// innermost that holds it, so a notice counts once however deep.
func (e *env) seenSaying(t *testing.T, phrase string) int {
	t.Helper()
	return run(t, e, "counting what says "+phrase, chromedp.Evaluate[int](fmt.Sprintf(`(() => {
	  const p = %q, has = (el) => el.textContent.includes(p);
	  const seen = (el) => { const r = el.getBoundingClientRect(); return el.checkVisibility() && r.width > 1 && r.height > 1; };
	  return [...document.body.querySelectorAll("*")].filter((el) => has(el) && ![...el.children].some(has) && seen(el)).length;
	})()`, phrase)))
}

// firstRowTop is where the List's first row starts, in CSS pixels from
// the top of the screen.
func (e *env) firstRowTop(t *testing.T) float64 {
	t.Helper()
	return run(t, e, "the first row's top", chromedp.Evaluate[float64](`document.querySelector("[data-rows] > tr").getBoundingClientRect().top`))
}

// TestNewOrdersNoticeMovesNothing: "1 new order — show" appears without
// moving the table under the pointer (the first row stays where it was, to
// the pixel), on a desktop and on a phone in the dark scheme; it is seen
// on the screen and announced (a polite status), and passes axe-core and
// the Nu Html Checker.
func TestNewOrdersNoticeMovesNothing(t *testing.T) {
	nu := newNuStates(t)
	axe := axeSource(t)
	a, b := startLive(t)
	a.seed(t, "Ada Lovelace", "Grace Hopper", "Alan Turing")
	for _, c := range []struct {
		name          string
		width, height int64
		scheme        string
	}{{"desktop light", 1280, 900, "light"}, {"phone dark", 360, 740, "dark"}} {
		b.colorScheme(t, c.scheme)
		b.do(t, c.name+": size", chromedp.EmulateViewport(c.width, c.height, chromedp.EmulateMobile))
		b.openLive(t, "/orders")
		b.settled(t)
		before := b.firstRowTop(t)
		a.seed(t, "Katherine Johnson "+c.scheme)
		b.waitText(t, "[data-live-news]", "1 new order \u2014 show")
		b.settled(t)
		if after := b.firstRowTop(t); after != before {
			t.Errorf("%s: the first row moved from %.1f px to %.1f px when the new-order notice appeared; want no move", c.name, before, after)
		}
		if !b.jsBool(t, `(() => { const el = document.querySelector("[data-live-count]"), r = el.getBoundingClientRect();
		  return el.checkVisibility() && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth; })()`) {
			t.Errorf("%s: the new-order notice is not on the screen", c.name)
		}
		if got := b.jsString(t, `document.querySelector("[data-live-news]").getAttribute("role") + " " + document.querySelector("[data-live-news]").getAttribute("aria-live")`); got != "status polite" {
			t.Errorf("%s: the notice's region is %q, want a polite status", c.name, got)
		}
		b.shot(t, "calm-new-order-"+strings.ReplaceAll(c.name, " ", "-"))
		b.axe(t, axe, c.name+" new-order notice")
		nu.keep(t, b, c.name+" new-order notice")
		// show still brings it, and focus goes to the results' summary.
		b.do(t, c.name+": show", chromedp.Click(css("[data-live-show]")))
		b.waitText(t, "#order-results", "Katherine Johnson "+c.scheme)
	}
	nu.check()
}

// TestOneNoticePerChange: an order changed elsewhere while B edits its row
// inline is said once where B looks (the row form's note), not again in
// the live region's view; B's save then gets the 409's one warning and the
// comparison, without a third copy of the news. An order deleted elsewhere
// while B reads its page is said once on the page. Each state passes
// axe-core and the Nu Html Checker on a phone in the dark scheme.
func TestOneNoticePerChange(t *testing.T) {
	nu := newNuStates(t)
	axe := axeSource(t)
	a, b := startLive(t)
	b.colorScheme(t, "dark")
	b.do(t, "phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	x, row, _ := typingInline(t, a, b, "Annie Easley", "Annie J. Easley")
	confirmed := "confirmed"
	if _, err := a.store.UpdateOrder(context.Background(), x.ID, store.OrderInput{Status: &confirmed}, 0); err != nil {
		t.Fatal(err)
	}
	changed := fmt.Sprintf("Order %d was changed elsewhere", x.ID)
	b.waitText(t, row+" form [data-live-notice]", changed)
	b.waitText(t, "[data-live-news]", changed) // announced, too
	b.settled(t)
	if n := b.seenSaying(t, changed); n != 1 {
		t.Errorf("after the change elsewhere B sees %d notices saying %q, want 1 (the row form's)", n, changed)
	}
	b.shot(t, "calm-row-changed")
	b.axe(t, axe, "row changed elsewhere")
	nu.keep(t, b, "row changed elsewhere")

	b.do(t, "save in B", chromedp.Click(css(row+" form button[type=submit]:not([data-live-compare])")),
		chromedp.WaitVisible(css(fmt.Sprintf("#conflict-%d", x.ID))))
	b.waitText(t, "#notice-alert", "compare and choose below")
	b.settled(t)
	for phrase, want := range map[string]int{changed: 0, "Nothing of yours is saved yet": 1, "by someone else": 1} {
		if n := b.seenSaying(t, phrase); n != want {
			t.Errorf("after B's save met the change B sees %d notices saying %q, want %d", n, phrase, want)
		}
	}
	b.shot(t, "calm-row-conflict")
	b.axe(t, axe, "row conflict")
	nu.keep(t, b, "row conflict")

	y := a.seed(t, "Mary Jackson")[0]
	page := fmt.Sprintf("/orders/%d", y.ID)
	a.openLive(t, page)
	b.openLive(t, page)
	a.do(t, "delete in A", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	gone := fmt.Sprintf("Order %d was deleted elsewhere", y.ID)
	b.waitText(t, "#order .live-gone-note", gone)
	b.waitText(t, "[data-live-news]", gone) // announced, too
	b.settled(t)
	if n := b.seenSaying(t, gone); n != 1 {
		t.Errorf("after the delete elsewhere B sees %d messages saying %q, want 1", n, gone)
	}
	b.shot(t, "calm-page-deleted")
	b.axe(t, axe, "page deleted elsewhere")
	nu.keep(t, b, "page deleted elsewhere")
	nu.check()
}

// tabPath presses Tab from the focused element until focus is inside
// stop, and returns the id (or tag) of each element it passed.
func (e *env) tabPath(t *testing.T, stop string) []string {
	t.Helper()
	var path []string
	for i := 0; i < 40; i++ {
		e.do(t, "tab", chromedp.KeyEvent(kb.Tab))
		if e.jsBool(t, fmt.Sprintf(`document.activeElement.closest(%q)`, stop)) {
			return path
		}
		path = append(path, e.jsString(t, `document.activeElement.id || document.activeElement.tagName + " " + document.activeElement.textContent.trim().slice(0, 20)`))
	}
	t.Fatalf("40 Tabs did not reach %s: %v", stop, path)
	return nil
}

// TestShortcutsSaidAndReachable: every page shows a "?" hint of the
// keyboard shortcuts; with JavaScript it opens the shortcuts dialog (focus
// comes back to it), without it unfolds the list and says the keys need
// JavaScript. n puts the focus in the new order's first field, not on the
// page's body; Down from the search box goes to the first row and j on
// from there; Tab from the search box to the rows passes no date input.
// Each state passes axe-core and the Nu Html Checker, on a phone in the
// dark scheme.
func TestShortcutsSaidAndReachable(t *testing.T) {
	nu := newNuStates(t)
	axe := axeSource(t)
	e := start(t, true)
	orders := e.seed(t, "Ada Lovelace", "Grace Hopper", "Alan Turing")
	newest, next := orders[2].ID, orders[1].ID
	for _, path := range []string{"/orders", fmt.Sprintf("/orders/%d", newest), "/orders/inquiry", "/products"} {
		e.do(t, "open "+path, chromedp.Navigate(e.base+path), chromedp.WaitVisible(css("main")))
		if got := e.jsString(t, `(document.querySelector(".shortcuts-hint > summary") || {innerText: "(none)"}).innerText.trim()`); got != "? Shortcuts" {
			t.Errorf("%s: the shortcuts hint says %q, want \"? Shortcuts\"", path, got)
		}
	}
	// n: the new order's first field has the focus.
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.settled(t)
	e.do(t, "press n", press("n"), chromedp.WaitVisible(css("#customer")))
	e.waitFocus(t, "after n", "#customer")
	e.do(t, "type", press("Ada"))
	if got := run(t, e, "customer", chromedp.Value(css("#customer"))); got != "Ada" {
		t.Errorf("typing after n gave the customer field %q, want Ada", got)
	}

	// Down from the search box, then j.
	e.do(t, "back to the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.settled(t)
	e.do(t, "search box", press("/"))
	e.waitFocus(t, "after /", "#q")
	e.do(t, "down", chromedp.KeyEvent(kb.ArrowDown))
	e.waitFocusIn(t, fmt.Sprintf("order-row-%d", newest))
	e.do(t, "j", press("j"))
	e.waitFocusIn(t, fmt.Sprintf("order-row-%d", next))

	// Tab from the search box to the rows: no stop in a date input.
	e.do(t, "search box again", chromedp.Focus(css("#q")))
	path := e.tabPath(t, "[data-rows]")
	t.Logf("Tab from the search box to the first row passes %d stops: %v", len(path), path)
	for _, id := range path {
		if id == "from" || id == "to" {
			t.Errorf("Tab from the search box to the rows stops in the date input #%s: %v", id, path)
		}
	}

	e.do(t, "the list again", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
	e.settled(t)
	e.do(t, "open the hint", chromedp.Click(css(".shortcuts-hint > summary")), chromedp.WaitVisible(css("dialog#shortcuts")))
	if got := e.text(t, "dialog#shortcuts"); !strings.Contains(got, "New order") || !strings.Contains(got, "From the search box") {
		t.Errorf("the dialog the hint opens says %q", got)
	}
	if e.jsBool(t, `document.querySelector(".shortcuts-hint").open`) {
		t.Error("with JavaScript the hint unfolded its list as well as opening the dialog")
	}
	e.axe(t, axe, "shortcuts dialog from the hint")
	nu.keep(t, e, "shortcuts dialog")
	e.do(t, "close", press("\x1b"), chromedp.WaitNotVisible(css("dialog#shortcuts")))
	e.waitFocus(t, "after closing the dialog", ".shortcuts-hint > summary")

	// On a phone, dark, without JavaScript: the hint unfolds the list.
	off := start(t, false)
	off.seed(t, "Ada Lovelace")
	off.colorScheme(t, "dark")
	off.do(t, "phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	off.do(t, "open the list without JS", chromedp.Navigate(off.base+"/orders"), chromedp.WaitVisible(css("#order-results")))
	off.do(t, "unfold the hint", chromedp.Click(css(".shortcuts-hint > summary")), chromedp.WaitVisible(css(".shortcuts-panel")))
	if got := off.text(t, ".shortcuts-panel"); !strings.Contains(got, "Search") || !strings.Contains(got, "JavaScript") {
		t.Errorf("without JavaScript the unfolded hint says %q; want the keys and that they need JavaScript", got)
	}
	if !off.jsBool(t, `(() => { const r = document.querySelector(".shortcuts-panel").getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth; })()`) {
		t.Error("on a phone the unfolded hint runs off the screen")
	}
	off.shot(t, "calm-shortcuts-hint-no-js")
	off.axeAnyJS(t, false, axe, "phone dark shortcuts hint without JS")
	nu.keep(t, off, "shortcuts hint without JS")
	nu.check()
}

// TestFiltersFoldOnPhones: at 360 × 740 the List's filters fold behind a
// "Filters" control (a details element: no script needed), so the first
// orders show whole on the first screen; the control unfolds them; a
// filter in use keeps them unfolded; on a wide screen they show without
// the control. With JavaScript on and off, light and dark, axe-core and
// the Nu Html Checker on each state.
func TestFiltersFoldOnPhones(t *testing.T) {
	nu := newNuStates(t)
	axe := axeSource(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "js", false: "no-js"}[js]
		e := start(t, js)
		names := make([]string, 12)
		for i := range names {
			names[i] = fmt.Sprintf("Customer %02d", i+1)
		}
		e.seed(t, names...)
		for _, scheme := range []string{"light", "dark"} {
			what := name + " " + scheme
			e.colorScheme(t, scheme)
			e.do(t, what+": phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile),
				chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-results table")))
			// The first order starts on the first screen, far enough up to
			// read whose it is (its customer's link shows whole).
			top := run(t, e, "the first row", chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector("[data-rows] > tr");
			  return [r.getBoundingClientRect().top, r.querySelector("td:nth-child(2) a").getBoundingClientRect().bottom]; })()`))
			t.Logf("%s: at 360 × 740 the first order starts %.0f px down, its customer's link ends %.0f px down", what, top[0], top[1])
			if top[1] > 740 {
				t.Errorf("%s: at 360 × 740 the first order's customer ends %.0f px down, below the first screen (the row starts at %.0f px)", what, top[1], top[0])
			}
			if e.jsBool(t, `document.getElementById("status-filter").checkVisibility()`) {
				t.Errorf("%s: at 360 px the status filter shows before the Filters control is used", what)
			}
			if got := e.text(t, "details.filters > summary"); got != "Filters" {
				t.Errorf("%s: the control says %q, want Filters", what, got)
			}
			e.shot(t, "calm-filters-folded-"+strings.ReplaceAll(what, " ", "-"))
			e.axeAnyJS(t, js, axe, what+" filters folded")
			nu.keep(t, e, what+" filters folded")
			e.do(t, what+": unfold", chromedp.Click(css("details.filters > summary")), chromedp.WaitVisible(css("#status-filter")))
			e.shot(t, "calm-filters-open-"+strings.ReplaceAll(what, " ", "-"))
			e.axeAnyJS(t, js, axe, what+" filters unfolded")
			nu.keep(t, e, what+" filters unfolded")

			// A filter in use: unfolded from the start, dates too.
			e.do(t, what+": filtered", chromedp.Navigate(e.base+"/orders?status=pending&from=2000-01-01"), chromedp.WaitVisible(css("#order-results")))
			if !e.jsBool(t, `document.getElementById("status-filter").checkVisibility() && document.getElementById("from").checkVisibility()`) {
				t.Errorf("%s: with status and from in use the filters are folded", what)
			}

			// A wide screen: the filters show, the control does not.
			e.do(t, what+": desktop", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#status-filter")))
			if e.jsBool(t, `document.querySelector("details.filters > summary").checkVisibility()`) {
				t.Errorf("%s: on a wide screen the Filters control shows", what)
			}
			e.axeAnyJS(t, js, axe, what+" filters on a wide screen")
			nu.keep(t, e, what+" filters on a wide screen")
		}
	}
	nu.check()
}
