package browser_test

// Notices: kinds that look different and
// are announced in the right live region, a new notice replacing the old,
// dismissal from the keyboard, a flash shown once.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// waitJS waits until the expression is true.
func (e *env) waitJS(t *testing.T, what, js string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		e.shot(t, "failure-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// regionText is the text of a live region (#notice or #notice-alert).
func (e *env) regionText(t *testing.T, id string) string {
	t.Helper()
	return strings.TrimSpace(run(t, e, "reading #"+id, chromedp.Evaluate[string](
		`(document.getElementById(`+fmt.Sprintf("%q", id)+`) || {textContent: "(missing)"}).textContent`)))
}

// back goes back in the tab's history without waiting for a load event:
// a page restored from the back/forward cache sends none. The caller
// waits with waitBack.
func (e *env) back(t *testing.T) {
	t.Helper()
	h, err := chromedp.Call(e.ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil || h.CurrentIndex < 1 {
		t.Fatalf("reading the history: %v (at %d)", err, h.CurrentIndex)
	}
	if _, err := chromedp.Call(e.ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[h.CurrentIndex-1].ID}); err != nil {
		t.Fatalf("going back: %v", err)
	}
}

// waitBack waits until js is true, retrying across the new document's
// execution context.
func (e *env) waitBack(t *testing.T, what, js string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(e.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.shot(t, "failure-"+strings.ReplaceAll(what, " ", "-"))
	t.Fatalf("waiting until %s: timed out", what)
}

// setFlash puts a notice in the flash cookie, as a redirect would.
func (e *env) setFlash(t *testing.T, value string) {
	t.Helper()
	httpOnly := true
	if _, err := chromedp.Call(e.ctx, network.SetCookie, network.SetCookieParams{Name: "notice",
		Value: url.QueryEscape(value), URL: e.base + "/", Path: "/", HTTPOnly: &httpOnly}); err != nil {
		t.Fatalf("setting the flash cookie: %v", err)
	}
}

// TestStaleSavedNoticeGoesOnError: the case — "Order N saved."
// stayed above "The changes were not saved". A later screen starts with no
// notice, and an error replaces a success in the same list.
func TestStaleSavedNoticeGoesOnError(t *testing.T) {
	e := start(t, true)
	e.seed(t, "Ada Lovelace", "Alan Turing")

	// The full form: saved, then Edit again, then a failed save.
	e.do(t, "save the form",
		chromedp.Navigate(e.base+"/orders/1/edit"), chromedp.WaitVisible(css("#customer")),
		setValues(map[string]string{"notes": "ring twice"}),
		chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	e.waitText(t, "#notice", "Order 1 saved.")
	e.do(t, "edit again", chromedp.Click(css(`#order a[href="/orders/1/edit"]`)), chromedp.WaitVisible(css("#order-form")))
	e.waitJS(t, "the saved notice is gone after moving on", `document.getElementById("notice").textContent.trim() === ""`)
	e.do(t, "save with an error",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
		setValues(map[string]string{"customer": ""}),
		chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#customer-err")))
	e.shot(t, "notice-error-after-saved")
	if got := e.regionText(t, "notice") + e.regionText(t, "notice-alert"); strings.Contains(got, "saved.") {
		t.Errorf("after a failed save the notices say %q: a stale saved beside the error", got)
	}

	// The list: two rows open, one saved, then the other fails.
	e.do(t, "open both rows",
		chromedp.Navigate(e.base+"/orders"),
		chromedp.Click(css("#order-row-1 a[hx-get]")), chromedp.WaitVisible(css("#row-1-customer")),
		chromedp.Click(css("#order-row-2 a[hx-get]")), chromedp.WaitVisible(css("#row-2-customer")),
		setValues(map[string]string{"row-1-customer": "Ada King"}),
		chromedp.Click(css("#order-row-1 .row-buttons button[type=submit]")), chromedp.WaitNotPresent(css("#row-1-customer")))
	e.waitText(t, "#notice", "Order 1 saved.")
	e.do(t, "fail the other row",
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#order-row-2 form").noValidate = true`),
		setValues(map[string]string{"row-2-customer": ""}),
		chromedp.Click(css("#order-row-2 .row-buttons button[type=submit]")), chromedp.WaitVisible(css("#row-2-customer-err")))
	e.waitText(t, "#notice-alert", "Error: Order 2 was not saved")
	if got := e.regionText(t, "notice"); got != "" {
		t.Errorf("after the failed row save #notice still says %q", got)
	}
	e.shot(t, "notice-row-error")
}

// TestNoticeDismissKeyboard: a notice is dismissed from the keyboard
// (Tab to its button, Enter; or Escape inside it), and focus lands on the
// page heading, not on the body. Without JavaScript no dismiss button
// shows (it could do nothing) and the notice is gone on the next page.
func TestNoticeDismissKeyboard(t *testing.T) {
	e := start(t, true)
	e.seed(t, "Ada Lovelace")
	tabTo := func(sel string) {
		t.Helper()
		for i := 0; i < 20; i++ {
			if run(t, e, "focus", chromedp.Evaluate[bool](`document.activeElement.matches(`+fmt.Sprintf("%q", sel)+`)`)) {
				return
			}
			e.do(t, "tab", chromedp.KeyEvent(kb.Tab))
		}
		t.Fatalf("Tab never reached %s", sel)
	}
	for _, key := range []string{kb.Enter, kb.Escape} {
		e.setFlash(t, "success:Order 1 saved.")
		e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#notice .notice")))
		e.waitJS(t, "the dismiss button shows", `getComputedStyle(document.querySelector("#notice .notice-dismiss")).display !== "none"`)
		tabTo("#notice .notice-dismiss")
		e.do(t, "press the key", chromedp.KeyEvent(key))
		e.waitJS(t, "the notice is dismissed", `!document.querySelector("#notice .notice")`)
		if got := run(t, e, "focus", chromedp.Evaluate[string](`document.activeElement.tagName + " " + document.activeElement.textContent.trim()`)); got != "H1 Orders" {
			t.Errorf("after dismissing with %q focus is on %q, want the page heading", key, got)
		}
		// The region stays, so the next notice is announced.
		if n := run(t, e, "regions", chromedp.Evaluate[int](`document.querySelectorAll("#notice[role=status], #notice-alert[role=alert]").length`)); n != 2 {
			t.Errorf("after dismissing: %d live regions, want both", n)
		}
	}

	off := start(t, false)
	off.seed(t, "Grace Hopper")
	off.setFlash(t, "success:Order 1 saved.")
	off.do(t, "open the list without JS", chromedp.Navigate(off.base+"/orders"), chromedp.WaitVisible(css("#notice .notice")))
	if d := run(t, off, "dismiss display", chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#notice .notice-dismiss")).display`)); d != "none" {
		t.Errorf("without JS the dismiss button shows (display %q): a control that does nothing", d)
	}
	off.do(t, "the next page", chromedp.Navigate(off.base+"/orders/1"), chromedp.WaitVisible(css("#order")))
	if got := off.regionText(t, "notice"); got != "" {
		t.Errorf("without JS the next page still shows %q", got)
	}
}

// TestFlashShowsOnce: the notice that follows a redirect shows on the page
// the redirect leads to, and not on a reload, nor after going back to it.
func TestFlashShowsOnce(t *testing.T) {
	t.Run("no-js", func(t *testing.T) {
		e := start(t, false)
		e.do(t, "create without JS",
			chromedp.Navigate(e.base+"/orders/new"), chromedp.WaitVisible(css("#customer")),
			chromedp.SendKeys(css("#customer"), "Dennis Ritchie"),
			chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
		e.waitText(t, "#notice", "Success: Order 1 created.")
		e.wantShownOnce(t, "/orders/1", "#order", "/orders", "#order-results")
	})
	t.Run("js", func(t *testing.T) {
		e := start(t, true)
		e.seed(t, "Ken Thompson", "Rob Pike")
		// A delete from the order's own page leads to the list (HX-Location).
		e.do(t, "delete", chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")),
			chromedp.Click(css(`#order form[hx-delete] button`)))
		e.waitText(t, "#notice", "Order 1 deleted.")
		e.wantShownOnce(t, "/orders", "#order-results", "/orders/2", "#order")
	})
}

// wantShownOnce checks that the notice on the page at path (with element
// sel) is gone after a reload, and after going to away (awaySel) and back.
func (e *env) wantShownOnce(t *testing.T, path, sel, away, awaySel string) {
	t.Helper()
	none := func(when string) {
		t.Helper()
		if got := e.regionText(t, "notice") + e.regionText(t, "notice-alert"); got != "" {
			t.Errorf("%s the notices say %q, want nothing: a notice shows once", when, got)
		}
	}
	e.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(css(sel)))
	none("after a reload")
	e.do(t, "away", chromedp.Navigate(e.base+away), chromedp.WaitVisible(css(awaySel)))
	e.back(t)
	e.waitBack(t, "back on "+path, fmt.Sprintf(`location.pathname === %q && document.readyState === "complete" && !!document.querySelector(%q)`, path, sel))
	none("back on " + path)
}

// TestNoticeKindsAccessible: success, warning and error differ by icon and
// word as well as colour, sit in the live region of their kind, and pass
// axe-core in light and dark; so does the conflict view (fields and items,
// desktop and phone).
func TestNoticeKindsAccessible(t *testing.T) {
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	axe := string(src)
	e := start(t, true)
	o := conflictOrder(t, e.store)
	id := fmt.Sprint(o.ID)
	kinds := []struct{ kind, region, label, text string }{
		{"success", "notice", "Success:", "Order 1 saved."},
		{"warning", "notice-alert", "Warning:", "Order 1 was changed by someone else."},
		{"error", "notice-alert", "Error:", "Order 1 was not saved: please correct the marked fields."},
	}
	for _, scheme := range []string{"light", "dark"} {
		e.colorScheme(t, scheme)
		looks := map[string]string{}
		for _, k := range kinds {
			e.setFlash(t, k.kind+":"+k.text)
			e.do(t, scheme+" "+k.kind, chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#"+k.region+" .notice")))
			e.waitText(t, "#"+k.region, k.label+" "+k.text)
			role := map[string]string{"notice": "status", "notice-alert": "alert"}[k.region]
			look := run(t, e, "the notice's look", chromedp.Evaluate[string](`(() => {
			  const n = document.querySelector("#`+k.region+`[role=`+role+`] .notice"), s = getComputedStyle(n);
			  return [s.backgroundColor, s.borderLeftColor, n.querySelector("svg.notice-icon").innerHTML, n.querySelector(".notice-kind").textContent].join(" | ");
			})()`))
			for other, l := range looks {
				for i, part := range strings.Split(look, " | ") {
					if strings.Split(l, " | ")[i] == part {
						t.Errorf("%s: %s and %s share %q: the kinds must differ in colour, icon and word", scheme, k.kind, other, part)
					}
				}
			}
			looks[k.kind] = look
			e.shot(t, "notice-"+scheme+"-"+k.kind)
			e.axe(t, axe, scheme+" notice "+k.kind)
		}

		// The conflict view, with fields and items, then on a phone.
		conflictAt := func(what string) {
			e.do(t, what+": edit", chromedp.Navigate(e.base+"/orders/"+id+"/edit"), chromedp.WaitVisible(css("#customer")), editMine())
			cur, _ := e.store.GetOrder(context.Background(), o.ID)
			theirs(t, e.store, o.ID, fmt.Sprintf("K. Johnson v%d", cur.Version+1))
			e.do(t, what+": save", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#conflict-"+id)))
		}
		conflictAt(scheme + " conflict")
		e.shot(t, "conflict-"+scheme)
		e.axe(t, axe, scheme+" conflict")
		e.do(t, scheme+" phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
		conflictAt(scheme + " phone conflict")
		e.shot(t, "conflict-"+scheme+"-phone")
		e.axe(t, axe, scheme+" phone conflict")
		// Keep theirs, so the next round starts from the stored items.
		e.do(t, scheme+" keep theirs", chromedp.Click(css("#conflict-"+id+" a.button")), chromedp.WaitNotPresent(css("#conflict-"+id)))
		e.do(t, scheme+" desktop", chromedp.EmulateViewport(1280, 900))
	}
}
