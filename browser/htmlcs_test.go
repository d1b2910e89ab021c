package browser_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"orders/store"
)

// HTML_CodeSniffer (testdata/htmlcs.min.js: @pa11y/html_codesniffer 2.6.0,
// BSD-3-Clause, see testdata/htmlcs.LICENSE) is the checker pa11y runs. It
// is injected through DevTools, which the page's CSP does not govern.
const htmlcsRun = `new Promise(resolve => HTMLCS.process("WCAG2AA", document, () => resolve(JSON.stringify(
  HTMLCS.getMessages().filter(m => m.type <= 2).map(m => ({type: m.type, code: m.code, msg: m.msg,
    html: (m.element && m.element.outerHTML || "").slice(0, 160)}))))))`

type htmlcsMessage struct {
	Type int    `json:"type"` // 1 error, 2 warning
	Code string `json:"code"`
	Msg  string `json:"msg"`
	HTML string `json:"html"`
}

// htmlcsWarningsFixed are the warnings HTML_CodeSniffer once reported, which must not
// come back: a table with row and column headers and no headers= on its
// cells, a data table without a caption, and a select whose context is
// unclear (a select that changes the results as soon as it changes).
var htmlcsWarningsFixed = []string{"H43", "H39.3.NoCaption", "H91.Select", "F68", "H44", "H63"}

// htmlcs runs HTML_CodeSniffer's WCAG2AA standard on the page as it is and
// fails on every error and on the warnings of htmlcsWarningsFixed.
func (e *env) htmlcs(t *testing.T, src, what string) {
	t.Helper()
	e.settled(t)
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.HTMLCS === "object"`))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](src)); err != nil {
			t.Fatalf("%s: injecting HTML_CodeSniffer: %v", what, err)
		}
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](htmlcsRun, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: running HTML_CodeSniffer: %v", what, err)
	}
	var msgs []htmlcsMessage
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		t.Fatalf("%s: HTML_CodeSniffer's answer: %v", what, err)
	}
	for _, m := range msgs {
		bad := m.Type == 1
		for _, code := range htmlcsWarningsFixed {
			bad = bad || strings.Contains(m.Code, "."+code)
		}
		if bad {
			t.Errorf("%s: HTML_CodeSniffer %s %s: %s\n\t%s", what, map[int]string{1: "error", 2: "warning"}[m.Type], m.Code, m.Msg, oneLine(m.HTML, 160))
		} else if testing.Verbose() {
			t.Logf("%s: (%d) %s %s", what, m.Type, m.Code, oneLine(m.HTML, 120))
		}
	}
}

// TestHTMLCodeSniffer: the pages pa11y checked, and the List's
// new states, have no HTML_CodeSniffer error, and none of the warnings the
// first-time user's pa11y run reported.
func TestHTMLCodeSniffer(t *testing.T) {
	src, err := os.ReadFile("testdata/htmlcs.min.js")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, true)
	pending, shipped, _, _ := seedStates(t, e.store)
	a, s := strconv.FormatInt(pending.ID, 10), strconv.FormatInt(shipped.ID, 10)
	cat := seedCatalogue(t, e.store)
	mug, inactive := strconv.FormatInt(cat.mug.ID, 10), strconv.FormatInt(cat.cap.ID, 10)
	hist := seedHistory(t, e.store)
	for _, p := range append([]string{
		"/orders", "/orders?sort=customer&per_page=2&page=2", "/orders?from=2000-01-01&to=2999-12-31&status=pending",
		"/orders?page=999", "/orders/inquiry", "/orders/" + a, "/orders/" + s, "/orders/new",
		"/orders/" + a + "/edit", "/orders/" + s + "/edit",
		// The product catalogue's pages.
		"/products", "/products?q=gel", "/products?q=zzzz", "/products?active=false&sort=-name", "/products?per_page=2&page=2",
		"/products/new", "/products/" + mug, "/products/" + inactive, "/products/" + mug + "/edit", "/products/" + mug + "?confirm=delete",
		// The seeded histories (hist.pages).
	}, hist.pages()...) {
		e.do(t, "open "+p, chromedp.Navigate(e.base+p), chromedp.WaitVisible(css("main")))
		e.htmlcs(t, string(src), p)
	}

	// A note refused: the field with its message.
	e.do(t, "note 422", chromedp.Navigate(e.base+hist.pages()[0]), chromedp.WaitVisible(css("#order-history-note")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#order-history .note-form").noValidate = true`),
		chromedp.Click(css("#order-history .note-form button[type=submit]")), chromedp.WaitVisible(css("#order-history-note-err")))
	e.htmlcs(t, string(src), "note 422")

	// The product forms as a person meets them after sending:
	// the New form's 422 (a duplicate SKU), a List row's inline form and
	// its 422, and the Edit form's 409.
	prow := productRow(cat.mug)
	e.do(t, "new product 422", chromedp.Navigate(e.base+"/products/new"), chromedp.WaitVisible(css("#sku")),
		chromedp.SendKeys(css("#sku"), "MUG-1"), chromedp.SendKeys(css("#name"), "Travel mug"), chromedp.SendKeys(css("#unit_price"), "9.90"),
		chromedp.Click(css("#product-edit button[type=submit]")), chromedp.WaitVisible(css("#sku-err")))
	e.htmlcs(t, string(src), "new product 422")
	e.do(t, "product inline edit", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(prow)),
		chromedp.Click(css(prow+" a[hx-get]")), chromedp.WaitVisible(css("#row-"+mug+"-name")))
	e.htmlcs(t, string(src), "product inline edit")
	e.do(t, "product inline edit 422",
		chromedp.Evaluate[chromedp.Void](`document.querySelector("`+prow+` form").noValidate = true;
		  document.getElementById("row-`+mug+`-sku").value = "no spaces allowed"`),
		chromedp.Click(css(prow+" button[type=submit]")), chromedp.WaitVisible(css("#row-"+mug+"-sku-err")))
	e.htmlcs(t, string(src), "product inline edit 422")
	e.do(t, "edit product", chromedp.Navigate(e.base+"/products/"+mug+"/edit"), chromedp.WaitVisible(css("#name")),
		chromedp.SetValue(css("#name"), "Enamel mug, blue"))
	name := "Enamel mug, green"
	if _, err := e.store.UpdateProduct(context.Background(), cat.mug.ID, store.ProductInput{Name: &name}, 0); err != nil {
		t.Fatal(err)
	}
	e.do(t, "edit product 409", chromedp.Click(css("#product-edit button[type=submit]")), chromedp.WaitVisible(css("#product-form .conflict")))
	e.htmlcs(t, string(src), "edit product 409")
}
