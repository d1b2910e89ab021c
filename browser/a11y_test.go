package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"orders/store"
)

// axe-core (testdata/axe.min.js, MPL-2.0, see testdata/axe.LICENSE) is
// injected through DevTools, which the page's CSP does not govern.
const axeRun = `(async () => {
  const r = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}});
  return JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.map(String).join(" "), html: n.html, summary: n.failureSummary || ""}))})));
})()`

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  string `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// settled waits until no htmx request, swap or settle is under way (with
// JavaScript off: until the page is loaded) and no
// transition runs (they fade elements, which would skew the contrast axe
// measures).
func (e *env) settled(t *testing.T) {
	t.Helper()
	const js = `document.readyState === "complete" && (!!window.htmx || !document.documentElement.classList.contains("js")) &&
	  !document.querySelector(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added") &&
	  document.getAnimations().every(a => a.playState !== "running")`
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for the page to settle: %v", err)
	}
}

// axe runs axe-core's WCAG 2.1 A and AA rules on the page as it is now and
// fails the test on every violation.
func (e *env) axe(t *testing.T, src, what string) {
	t.Helper()
	e.settled(t)
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](src)); err != nil {
			t.Fatalf("%s: injecting axe-core: %v", what, err)
		}
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: running axe-core: %v", what, err)
	}
	var violations []axeViolation
	if err := json.Unmarshal([]byte(out), &violations); err != nil {
		t.Fatalf("%s: axe-core's answer: %v", what, err)
	}
	if len(violations) > 0 {
		e.shot(t, "a11y-"+strings.NewReplacer(" ", "-", "/", "-").Replace(what))
	}
	for _, v := range violations {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: axe %s (%s): %s", what, v.ID, v.Impact, v.Help)
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "\n\t%s  %s", n.Target, oneLine(n.HTML, 160))
			if n.Summary != "" {
				fmt.Fprintf(&b, "\n\t\t%s", oneLine(n.Summary, 300))
			}
		}
		t.Error(b.String())
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// colorScheme emulates prefers-color-scheme for the tab ("light" or "dark").
func (e *env) colorScheme(t *testing.T, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(e.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		t.Fatalf("emulating prefers-color-scheme: %s: %v", scheme, err)
	}
	dark := run(t, e, "reading the colour scheme", chromedp.Evaluate[bool](`matchMedia("(prefers-color-scheme: dark)").matches`))
	if dark != (scheme == "dark") {
		t.Fatalf("prefers-color-scheme: dark matches = %v after emulating %s", dark, scheme)
	}
}

// TestAccessibility checks every page, and the states a person reaches on
// them (an inline edit, errors, a conflict, a search, a notice), against
// axe-core's WCAG 2.1 AA rules, in the light and the dark colour scheme.
func TestAccessibility(t *testing.T) {
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	axe := string(src)
	e := start(t, true)
	e.failedLoads = []string{"404"} // the not-found page is visited on purpose
	pending, shipped, cancelled, _ := seedStates(t, e.store)
	a, s, c := strconv.FormatInt(pending.ID, 10), strconv.FormatInt(shipped.ID, 10), strconv.FormatInt(cancelled.ID, 10)
	cat := seedCatalogue(t, e.store)
	mug, inactive := strconv.FormatInt(cat.mug.ID, 10), strconv.FormatInt(cat.cap.ID, 10)
	hist := seedHistory(t, e.store)
	histOrder := "/orders/" + strconv.FormatInt(hist.order, 10)
	bumpProduct := func(p *store.Product) {
		t.Helper()
		name := "Enamel mug " + time.Now().Format("150405.000000000")
		if _, err := e.store.UpdateProduct(context.Background(), p.ID, store.ProductInput{Name: &name}, 0); err != nil {
			t.Fatal(err)
		}
	}
	bump := func(o *store.Order) {
		t.Helper()
		notes := "changed elsewhere at " + time.Now().Format(time.RFC3339Nano)
		if _, err := e.store.UpdateOrder(context.Background(), o.ID, store.OrderInput{Notes: &notes}, 0); err != nil {
			t.Fatal(err)
		}
	}
	pages := []string{
		"/session/new?next=%2Forders",
		"/orders?q=a", "/orders?q=zzzz", "/orders?status=shipped", "/orders?page=99",
		"/orders?per_page=2&page=2", "/orders/" + a, "/orders/" + s, "/orders/" + c,
		"/orders/" + a + "/edit", "/orders/" + s + "/edit", "/orders/inquiry", "/orders/inquiry?q=zzzz",
		"/orders/99999",
		// Sorted, paged with page numbers, filtered by dates, an
		// empty date range, the Inquiry sorted and paged.
		"/orders?sort=customer", "/orders?sort=-total&per_page=2&page=3", "/orders?from=2000-01-01&to=2999-12-31&q=a",
		"/orders?from=2025-02-01&to=2025-01-01", "/orders/inquiry?sort=customer&per_page=2&page=2",
		// Delete's confirmation page (no JavaScript's way to delete).
		"/orders/" + a + "?confirm=delete",
		// The product catalogue's pages in the same states.
		"/products?q=gel", "/products?q=zzzz", "/products?active=false", "/products?sort=-name&per_page=2&page=2",
		"/products/" + mug, "/products/" + inactive, "/products/" + mug + "/edit", "/products/" + mug + "?confirm=delete",
		"/products/99999",
	}
	// A record's page whose timeline holds notes and changes,
	// its history (a page, the older page), a deleted order's history, a
	// product's.
	pages = append(pages, hist.pages()...)
	// Every registered resource's List, New form, record, Edit form,
	// history and delete confirmation.
	regPages, session := registryPages(t, e.base)
	for _, p := range regPages {
		pages = append(pages, p.path)
	}
	if session != "" {
		setSession(t, e, session)
	}
	// A viewer's and a clerk's List and order page, a person's own account
	// page and their tokens.
	roles := rolePages(t, e.base, e.store, pending.ID)
	for _, scheme := range []string{"light", "dark"} {
		e.colorScheme(t, scheme)
		for _, p := range pages {
			e.do(t, scheme+" open "+p, chromedp.Navigate(e.base+p), chromedp.WaitVisible(css("main")))
			e.axe(t, axe, scheme+" "+p)
		}
		for _, p := range roles {
			setSession(t, e, p.session)
			e.do(t, scheme+" open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitVisible(css("main")))
			e.axe(t, axe, scheme+" "+p.name)
			if p.name == "viewer-own-account" {
				// The page that shows a token made, once.
				e.do(t, scheme+" make a token", chromedp.SendKeys(css("#token-name"), "sheet "+scheme),
					chromedp.Click(css("#token-new button[type=submit]")), chromedp.WaitVisible(css("#token-made")))
				e.axe(t, axe, scheme+" a token made")
			}
		}
		if session != "" {
			setSession(t, e, session)
		}
		// A 360 px phone: the list's rows become cards, the item rows show
		// their labels.
		e.do(t, scheme+" phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
		for _, p := range []string{"/orders", "/orders/new", "/orders/" + a, "/orders/inquiry", "/orders/" + a + "?confirm=delete",
			"/products", "/products/new", "/products/" + mug, "/products/" + mug + "?confirm=delete",
			histOrder, histOrder + "/history"} {
			e.do(t, scheme+" phone open "+p, chromedp.Navigate(e.base+p), chromedp.WaitVisible(css("main")))
			e.axe(t, axe, scheme+" phone "+p)
		}
		e.do(t, scheme+" desktop", chromedp.EmulateViewport(1280, 900))

		row := "#order-row-" + a

		// The list after a search, then an inline edit, its errors, its
		// conflict, and the notice after a save.
		e.do(t, scheme+" search", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(row)),
			chromedp.SendKeys(css("#q"), "ad"))
		e.waitText(t, "#order-results .count", "of 2")
		e.axe(t, axe, scheme+" list after a search")

		e.do(t, scheme+" inline edit", chromedp.Click(css(row+" a[hx-get]")), chromedp.WaitVisible(css("#row-"+a+"-customer")))
		e.axe(t, axe, scheme+" inline edit open")

		e.do(t, scheme+" inline edit with errors",
			chromedp.Evaluate[chromedp.Void](`document.querySelector("`+row+` form").noValidate = true;
			  document.getElementById("row-`+a+`-customer").value = ""`),
			chromedp.Click(css(row+" button[type=submit]")),
			chromedp.WaitVisible(css("#row-"+a+"-customer-err")))
		e.axe(t, axe, scheme+" inline edit 422")

		bump(pending)
		e.do(t, scheme+" inline edit conflict",
			chromedp.SetValue(css("#row-"+a+"-customer"), "Ada King"),
			chromedp.Click(css(row+" button[type=submit]")),
			chromedp.WaitVisible(css(row+" .conflict")))
		e.axe(t, axe, scheme+" inline edit 409")

		e.do(t, scheme+" inline save", chromedp.Click(css(row+" button[type=submit]")), chromedp.WaitNotPresent(css(row+" form.row-form")))
		e.waitText(t, "#notice", "saved")
		e.axe(t, axe, scheme+" list with a notice")

		// The New form with errors; the Edit form with a conflict.
		e.do(t, scheme+" new with errors",
			chromedp.Navigate(e.base+"/orders/new"),
			chromedp.WaitVisible(css("#customer")),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
			chromedp.SendKeys(css("#email"), "not an address"),
			fillItem("0", "OK-1", "Notebook", "zero", "2.999"),
			chromedp.Click(css("#order-edit .actions button[type=submit]")),
			chromedp.WaitVisible(css("#customer-err")))
		e.axe(t, axe, scheme+" new order 422")

		e.do(t, scheme+" edit", chromedp.Navigate(e.base+"/orders/"+a+"/edit"), chromedp.WaitVisible(css("#customer")),
			chromedp.SetValue(css("#notes"), "mine"))
		bump(pending)
		e.do(t, scheme+" edit conflict", chromedp.Click(css("#order-edit .actions button[type=submit]")),
			chromedp.WaitVisible(css("#order-form .conflict")))
		e.waitText(t, ".notices", "changed by someone else")
		e.axe(t, axe, scheme+" edit 409")

		// The current row of j and k, and the shortcuts dialog.
		e.do(t, scheme+" current row", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(row)), press("jj"))
		e.do(t, scheme+" current row shown", chromedp.WaitVisible(css("#order-results tr.is-current")))
		e.axe(t, axe, scheme+" list with a current row")
		e.do(t, scheme+" shortcuts", press("?"), chromedp.WaitVisible(css("dialog#shortcuts")))
		e.axe(t, axe, scheme+" shortcuts dialog")
		e.do(t, scheme+" close shortcuts", press("\x1b"), chromedp.WaitNotVisible(css("dialog#shortcuts")))

		// Acting on an order deleted elsewhere, in a list row
		// and on the order's page (pages that no longer hear live updates:
		// withoutLive).
		gone := createOrder(t, e.store, "Deleted Elsewhere", "")
		goneRow := fmt.Sprintf("#order-row-%d", gone.ID)
		e.do(t, scheme+" list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(goneRow)), withoutLive())
		if err := e.store.DeleteOrder(context.Background(), gone.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		e.do(t, scheme+" edit a deleted row", chromedp.Click(css(goneRow+" a[hx-get]")), chromedp.WaitVisible(css(goneRow+".gone")))
		e.axe(t, axe, scheme+" row of an order deleted elsewhere")
		gone = createOrder(t, e.store, "Deleted Elsewhere", "")
		e.do(t, scheme+" order page", chromedp.Navigate(e.base+fmt.Sprintf("/orders/%d", gone.ID)), chromedp.WaitVisible(css("#order")), withoutLive())
		if err := e.store.DeleteOrder(context.Background(), gone.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		e.do(t, scheme+" confirm a deleted order", chromedp.Click(css(".transitions button")), chromedp.WaitVisible(css("#error")))
		e.axe(t, axe, scheme+" order page after acting on a deleted order")

		// Live updates. A List that heard of a new order, of a
		// deleted one and of a change to the order whose row is being
		// edited; an order's page that heard of a change while a note was
		// being typed, then of its order's delete.
		changed, deleted := createOrder(t, e.store, "Changed Elsewhere", ""), createOrder(t, e.store, "Deleted Elsewhere", "")
		changedRow, deletedRow := fmt.Sprintf("#order-row-%d", changed.ID), fmt.Sprintf("#order-row-%d", deleted.ID)
		e.openLive(t, "/orders")
		e.do(t, scheme+" live inline edit", chromedp.Click(css(changedRow+" a[hx-get]")),
			chromedp.WaitVisible(css(fmt.Sprintf("#row-%d-customer", changed.ID))))
		bump(changed)
		createOrder(t, e.store, "Created Elsewhere", "")
		if err := e.store.DeleteOrder(context.Background(), deleted.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		e.do(t, scheme+" live news", chromedp.WaitVisible(css("[data-live-show]")), chromedp.WaitVisible(css(changedRow+" [data-live-compare]")),
			chromedp.WaitVisible(css(deletedRow+".gone")))
		e.axe(t, axe, scheme+" list after live updates")
		e.openLive(t, fmt.Sprintf("/orders/%d", changed.ID))
		e.do(t, scheme+" live note", chromedp.SendKeys(css("#order-history-note"), "typing"))
		bump(changed)
		e.do(t, scheme+" live change", chromedp.WaitVisible(css(".note-form [data-live-notice]")))
		if err := e.store.DeleteOrder(context.Background(), changed.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		e.do(t, scheme+" live delete", chromedp.WaitVisible(css("#order .live-gone-note")), chromedp.WaitVisible(css("#order-history .entry-deleted")))
		e.axe(t, axe, scheme+" order page after live updates")

		// The product List's inline edit, its errors, its
		// conflict and the notice after a save (at 360 px: the cards); the
		// New form with a duplicate SKU; the Edit form with a conflict.
		prow := productRow(cat.mug)
		e.do(t, scheme+" phone products", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile),
			chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(prow)))
		e.do(t, scheme+" product inline edit", chromedp.Click(css(prow+" a[hx-get]")), chromedp.WaitVisible(css("#row-"+mug+"-name")))
		e.axe(t, axe, scheme+" phone product inline edit open")
		e.do(t, scheme+" product inline edit with errors",
			chromedp.Evaluate[chromedp.Void](`document.querySelector("`+prow+` form").noValidate = true;
			  document.getElementById("row-`+mug+`-name").value = ""; document.getElementById("row-`+mug+`-unit_price").value = "1.999"`),
			chromedp.Click(css(prow+" button[type=submit]")),
			chromedp.WaitVisible(css("#row-"+mug+"-name-err")))
		e.axe(t, axe, scheme+" phone product inline edit 422")
		e.do(t, scheme+" desktop", chromedp.EmulateViewport(1280, 900))
		bumpProduct(cat.mug)
		e.do(t, scheme+" product inline edit conflict",
			chromedp.SetValue(css("#row-"+mug+"-name"), "Enamel mug, blue"),
			chromedp.SetValue(css("#row-"+mug+"-unit_price"), "13.00"),
			chromedp.Click(css(prow+" button[type=submit]")),
			chromedp.WaitVisible(css(prow+" .conflict")))
		e.axe(t, axe, scheme+" product inline edit 409")
		e.do(t, scheme+" product inline save", chromedp.Click(css(prow+" button[type=submit]")), chromedp.WaitNotPresent(css(prow+" form.row-form")))
		e.waitText(t, "#notice", "saved")
		e.axe(t, axe, scheme+" product list with a notice")

		e.do(t, scheme+" new product with a duplicate SKU",
			chromedp.Navigate(e.base+"/products/new"), chromedp.WaitVisible(css("#sku")),
			chromedp.SendKeys(css("#sku"), "mug-1"), chromedp.SendKeys(css("#name"), "Travel mug"), chromedp.SendKeys(css("#unit_price"), "9.90"),
			chromedp.Click(css("#product-edit button[type=submit]")), chromedp.WaitVisible(css("#sku-err")))
		e.axe(t, axe, scheme+" new product 422")
		e.do(t, scheme+" edit product", chromedp.Navigate(e.base+"/products/"+mug+"/edit"), chromedp.WaitVisible(css("#name")),
			chromedp.SetValue(css("#unit_price"), "14.00"))
		bumpProduct(cat.mug)
		e.do(t, scheme+" edit product conflict", chromedp.Click(css("#product-edit button[type=submit]")),
			chromedp.WaitVisible(css("#product-form .conflict")))
		e.waitText(t, ".notices", "changed by someone else")
		e.axe(t, axe, scheme+" edit product 409")
		e.do(t, scheme+" product shortcuts", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(prow)), press("j?"),
			chromedp.WaitVisible(css("dialog#shortcuts")))
		e.axe(t, axe, scheme+" product list with a current row and the shortcuts")
		e.do(t, scheme+" close product shortcuts", press("\x1b"), chromedp.WaitNotVisible(css("dialog#shortcuts")))

		// A note refused (its message beside the field, the
		// alert), then a note added (the timeline swapped, the notice).
		e.do(t, scheme+" note 422", chromedp.Navigate(e.base+histOrder), chromedp.WaitVisible(css("#order-history-note")),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#order-history .note-form").noValidate = true`),
			chromedp.Click(css("#order-history .note-form button[type=submit]")), chromedp.WaitVisible(css("#order-history-note-err")))
		e.axe(t, axe, scheme+" note 422")
		e.do(t, scheme+" note added", chromedp.SendKeys(css("#order-history-note"), "Checked in the "+scheme+" scheme."),
			chromedp.Click(css("#order-history .note-form button[type=submit]")), chromedp.WaitNotPresent(css("#order-history-note-err")))
		e.waitText(t, "#notice", "Note added")
		e.axe(t, axe, scheme+" note added")
	}
}
