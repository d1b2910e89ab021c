package browser_test

// Undo of a delete: the notice after a delete offers Undo, which brings
// the record back, with JavaScript on (htmx) and off (a plain form), and
// a page on another instance that marked the record deleted shows it again.

import (
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUndoFromTheDeleteNotice: a row deleted on the List leaves a notice
// with Undo (axe-clean, light and dark); pressing it brings the order back
// on its own page, at the next version, with "Restored" in its timeline,
// and the address is the order's.
func TestUndoFromTheDeleteNotice(t *testing.T) {
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, true)
	x := e.seed(t, "Ada Lovelace", "Alan Turing", "Grace Hopper")[2]
	row := fmt.Sprintf("#order-row-%d", x.ID)
	e.do(t, "open the List", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(row)))
	e.do(t, "delete a row", chromedp.Click(css(row+" button.danger")), chromedp.WaitNotPresent(css(row)))
	e.waitText(t, "#notice", fmt.Sprintf("Order %d deleted.", x.ID))
	e.waitJS(t, "the Undo control", `!!document.querySelector("#notice form.notice-undo button[type=submit]")`)
	for _, scheme := range []string{"light", "dark"} {
		e.colorScheme(t, scheme)
		e.shot(t, "undo-notice-"+scheme)
		e.axe(t, string(src), scheme+" delete notice with Undo")
	}
	e.colorScheme(t, "light")
	e.do(t, "undo", chromedp.Click(css("#notice form.notice-undo button")), chromedp.WaitVisible(css("#order")))
	e.waitText(t, "#notice", fmt.Sprintf("Order %d restored.", x.ID))
	e.waitText(t, "#order", "Grace Hopper")
	e.waitText(t, "#order .history", "Restored")
	if got := e.path(t); got != fmt.Sprintf("/orders/%d", x.ID) {
		t.Errorf("after Undo the address is %q, want the order's", got)
	}
	o, err := e.store.GetOrder(t.Context(), x.ID)
	if err != nil || o.Version != x.Version+1 || len(o.Items) != 1 {
		t.Errorf("the restored order: %+v, %v; want it back at version %d with its item", o, err, x.Version+1)
	}
	e.checkConsole(t)
}

// TestUndoWithoutJavaScript: the confirmation page's delete leads to the
// List with the notice's Undo, a plain form; sending it shows the order's
// page again, saying it was restored.
func TestUndoWithoutJavaScript(t *testing.T) {
	e := start(t, false)
	x := e.seed(t, "Dennis Ritchie")[0]
	page := fmt.Sprintf("/orders/%d", x.ID)
	e.do(t, "open the order", chromedp.Navigate(e.base+page), chromedp.WaitVisible(css("#order")))
	e.do(t, "delete without JS", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#order-delete")),
		chromedp.Click(css("#order-delete button.danger")), chromedp.WaitVisible(css("#orders")))
	e.waitText(t, "#notice", fmt.Sprintf("Order %d deleted.", x.ID))
	e.do(t, "undo without JS", chromedp.Click(css("#notice form.notice-undo button")), chromedp.WaitVisible(css("#order")))
	e.waitText(t, "#notice", fmt.Sprintf("Order %d restored.", x.ID))
	if got := e.path(t); got != page {
		t.Errorf("after Undo the address is %q, want %s", got, page)
	}
	if _, err := e.store.GetOrder(t.Context(), x.ID); err != nil {
		t.Errorf("the order is not back: %v", err)
	}
}

// TestLiveRestoreUnmarksRow: a row page B marked deleted (deleted on
// instance A) comes back, unmarked and usable, when A undoes the delete.
func TestLiveRestoreUnmarksRow(t *testing.T) {
	a, b := startLive(t)
	x := a.seed(t, "Ada Lovelace", "Grace Hopper")[1]
	row := fmt.Sprintf("#order-row-%d", x.ID)
	a.openLive(t, "/orders")
	b.openLive(t, "/orders")
	b.watch(t, "the delete in B", fmt.Sprintf(`document.querySelector(%q).classList.contains("gone")`, row))
	a.do(t, "delete in A", chromedp.Click(css(row+" button.danger")), chromedp.WaitNotPresent(css(row)))
	b.waitJS(t, "B marks the row deleted", fmt.Sprintf(`document.querySelector(%q).classList.contains("gone")`, row))
	a.do(t, "undo in A", chromedp.Click(css("#notice form.notice-undo button")), chromedp.WaitVisible(css("#order")))
	b.waitJS(t, "B shows the row again", fmt.Sprintf(`(() => { const r = document.querySelector(%[1]q);
	  return r && !r.classList.contains("gone") && !r.hasAttribute("data-live-gone") && r.dataset.liveVersion === %[2]q &&
	    !r.querySelector("button.danger").disabled && r.querySelector(".badge").textContent.trim() !== "Deleted"; })()`, row, fmt.Sprint(x.Version+1)))
	b.shot(t, "live-row-restored")
}
