package browser_test

// The order forms and the order page as a person uses them, with
// JavaScript on and off.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
	"orders/store/redisstore"
)

// jsString evaluates js (an expression) and returns its value as a string.
func (e *env) jsString(t *testing.T, js string) string {
	t.Helper()
	return run(t, e, "evaluating "+oneLine(js, 60), chromedp.Evaluate[string](`String(`+js+`)`))
}

// waitUntil evaluates js (an expression) every 50 ms until it is true. (A
// loop of Evaluate, not chromedp.Poll, which keeps polling the execution
// context of a document that history.back() has left.)
func (e *env) waitUntil(t *testing.T, what, js string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+js+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	e.shot(t, "failure-"+strings.ReplaceAll(what, " ", "-"))
	t.Fatalf("waiting until %s: timed out (last error %v; focus is on %s, the URL is %s)", what, last, e.focused(t), e.path(t))
}

// focused describes the focused element: "TAG#id.class 'text'".
func (e *env) focused(t *testing.T) string {
	t.Helper()
	return e.jsString(t, `(() => { const a = document.activeElement; if (!a) return "nothing";
	  return a.tagName + (a.id ? "#" + a.id : "") + (a.className ? "." + String(a.className).replace(/ /g, ".") : "") +
	    " '" + (a.textContent || a.value || "").trim().slice(0, 30) + "'"; })()`)
}

// waitFocus waits until the focused element matches the CSS selector sel.
func (e *env) waitFocus(t *testing.T, what, sel string) {
	t.Helper()
	e.waitUntil(t, what+": focus on "+sel, fmt.Sprintf(`document.activeElement && document.activeElement.matches(%q)`, sel))
}

// createOrder stores an order with one item for a test to act on.
func createOrder(t *testing.T, st *redisstore.Store, customer, email string) *store.Order {
	t.Helper()
	o, err := st.CreateOrder(context.Background(), store.OrderInput{Customer: &customer, Email: &email, HasItems: true,
		Items: []store.ItemInput{{SKU: "MUG-1", Name: "Enamel mug", Quantity: "2", UnitPrice: "12.50"}}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestEnterSaves: Enter in a field of the New or Edit form
// saves the order, with JavaScript and without; it never adds an item row
// (the "Add item row" button is not the form's default button) nor sends
// the form to the URL.
func TestEnterSaves(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(map[bool]string{true: "javascript", false: "no-javascript"}[js], func(t *testing.T) {
			e := start(t, js)
			e.do(t, "fill the new form and press Enter in the customer field",
				chromedp.Navigate(e.base+"/orders/new"),
				chromedp.WaitVisible(css("#customer")),
				fillItem("0", "PEN-1", "Gel pen", "3", "1.50"),
				chromedp.SendKeys(css("#customer"), "Ada Lovelace"),
				chromedp.SendKeys(css("#customer"), kb.Enter),
				chromedp.WaitVisible(css("#order")),
			)
			if got := e.path(t); got != "/orders/1" {
				t.Errorf("after Enter the URL is %q, want /orders/1 (the saved order)", got)
			}
			o, err := e.store.GetOrder(t.Context(), 1)
			if err != nil {
				t.Fatalf("Enter did not create the order: %v", err)
			}
			if o.Customer != "Ada Lovelace" || len(o.Items) != 1 || o.Total.String() != "4.50" {
				t.Errorf("created %q with %d items, total %s; want Ada Lovelace, 1 item, 4.50", o.Customer, len(o.Items), o.Total)
			}

			// The Edit form: Enter in the email field saves too.
			e.do(t, "edit, press Enter in the email field",
				chromedp.Navigate(e.base+"/orders/1/edit"),
				chromedp.WaitVisible(css("#email")),
				chromedp.SendKeys(css("#email"), "ada@example.com"),
				chromedp.SetValue(css("#items-0-quantity"), "30"),
				chromedp.SendKeys(css("#email"), kb.Enter),
				chromedp.WaitVisible(css("#order")),
			)
			e.waitText(t, "#order .facts", "ada@example.com")
			if got := e.path(t); got != "/orders/1" {
				t.Errorf("after Enter in the edit form the URL is %q, want /orders/1", got)
			}
			if o, _ := e.store.GetOrder(t.Context(), 1); o.Email != "ada@example.com" || o.Version != 2 || o.Total.String() != "45.00" {
				t.Errorf("after the edit: email %q, version %d, total %s; want ada@example.com, 2, 45.00", o.Email, o.Version, o.Total)
			}
		})
	}
}

// TestNoJavaScriptControlsWork: without JavaScript every control
// shown does something: Remove takes its row away (the server answers the
// form without it), totals are computed by the server, and Delete, from the
// order's page or from the list, asks on a confirmation page first.
func TestNoJavaScriptControlsWork(t *testing.T) {
	e := start(t, false)
	e.do(t, "fill two rows (Add item row asks the server)",
		chromedp.Navigate(e.base+"/orders/new"),
		chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Dennis Ritchie"),
		fillItem("0", "C-1", "The C book", "1", "39.95"),
		chromedp.Click(css("[data-add-row]")),
		chromedp.WaitVisible(css("#items-1-name")),
	)
	// The server's answer whole before typing into it.
	e.waitUntil(t, "the form with a second row loaded", `document.readyState === "complete"`)
	e.do(t, "fill the second row, add a third",
		fillItem("1", "", "Bookmark", "2", "0.50"),
		chromedp.Click(css("[data-add-row]")),
		chromedp.WaitVisible(css("#items-2-name")),
	)
	e.waitUntil(t, "the form with a third row loaded", `document.readyState === "complete"`)
	// Totals come with the page: no "–" for rows that have amounts.
	if got := e.text(t, "#item-rows tr:nth-child(1) output.line-total"); got != "39.95" {
		t.Errorf("line total of row 1 without JavaScript = %q, want 39.95", got)
	}
	if got := e.text(t, "#order-total"); got != "40.95" {
		t.Errorf("order total without JavaScript = %q, want 40.95", got)
	}
	// Every button shown submits a form: none that needs a script.
	if bad := e.jsString(t, `[...document.querySelectorAll("button")].filter(b => b.offsetParent !== null &&
	    !(b.type === "submit" && b.form)).map(b => b.outerHTML.slice(0, 80)).join("\n")`); bad != "" {
		t.Errorf("buttons that do nothing without JavaScript:\n%s", bad)
	}
	e.do(t, "remove the first row", chromedp.Click(css(`button[data-remove-row][value="0"]`)), chromedp.WaitNotPresent(css("#items-0-name")))
	if got := run(t, e, "row 2's name", chromedp.Value(css("#items-1-name"))); got != "Bookmark" {
		t.Errorf("after removing row 1 the Bookmark row holds %q", got)
	}
	if got := e.text(t, "#order-total"); got != "1.00" {
		t.Errorf("order total after removing the book = %q, want 1.00", got)
	}
	e.do(t, "create", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	if o, err := e.store.GetOrder(t.Context(), 1); err != nil || len(o.Items) != 1 || o.Items[0].Name != "Bookmark" {
		t.Fatalf("created %+v, %v; want one item, the bookmark", o, err)
	}
	e.do(t, "open the edit form", chromedp.Navigate(e.base+"/orders/1/edit"), chromedp.WaitVisible(css("#order-form")))
	if got := e.text(t, "#order-total"); got != "1.00" {
		t.Errorf("edit form total without JavaScript = %q, want 1.00", got)
	}

	// Delete from the order's page: a confirmation page, then the delete.
	e.do(t, "delete from the order's page",
		chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")),
		chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#order-delete")))
	e.shot(t, "delete-confirmation")
	if got := e.path(t); !strings.HasPrefix(got, "/orders/1?confirm=delete") {
		t.Errorf("Delete led to %q, want the confirmation /orders/1?confirm=delete…", got)
	}
	if _, err := e.store.GetOrder(t.Context(), 1); err != nil {
		t.Fatalf("Delete deleted before the confirmation: %v", err)
	}
	e.waitText(t, "#order-delete h1", "Delete order 1?")
	e.do(t, "keep it", chromedp.Click(css(`#order-delete a[href="/orders/1"]`)), chromedp.WaitVisible(css("#order")))
	e.do(t, "delete again and confirm",
		chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#order-delete")),
		chromedp.Click(css("#order-delete button.danger")), chromedp.WaitVisible(css("#orders")))
	e.waitText(t, "#notice", "Order 1 deleted.")
	if got := e.path(t); got != "/orders" {
		t.Errorf("after the confirmed delete the URL is %q, want /orders", got)
	}
	if _, err := e.store.GetOrder(t.Context(), 1); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("order 1 after the confirmed delete: %v, want not found", err)
	}

	// Delete from a list row: the same confirmation.
	createOrder(t, e.store, "Ken Thompson", "")
	e.do(t, "delete from the list",
		chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-row-2")),
		chromedp.Click(css("#order-row-2 button.danger")), chromedp.WaitVisible(css("#order-delete")))
	if _, err := e.store.GetOrder(t.Context(), 2); err != nil {
		t.Fatalf("the list's Delete deleted before the confirmation: %v", err)
	}
	e.do(t, "confirm", chromedp.Click(css("#order-delete button.danger")), chromedp.WaitVisible(css("#orders")))
	if n, _ := e.store.CountOrders(t.Context()); n != 0 {
		t.Errorf("%d orders stored after confirming the last delete", n)
	}
}

// TestItemRowsWithJavaScript: with JavaScript the Add and Remove row
// buttons change the rows in place, without leaving the page: an added row
// gets the focus, a removed row goes and focus moves to the Remove button
// of the row before it, what was typed in the other rows stays, and the
// order saves the rows shown.
func TestItemRowsWithJavaScript(t *testing.T) {
	e := start(t, true)
	e.do(t, "fill a row, add a second",
		chromedp.Navigate(e.base+"/orders/new"), chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Barbara Liskov"),
		fillItem("0", "A-1", "Abstraction", "1", "2.00"))
	e.setMarker(t)
	e.do(t, "add a row", chromedp.Click(css("[data-add-row]")), chromedp.WaitVisible(css("#items-1-name")))
	e.waitFocus(t, "after Add item row", "#items-1-sku")
	// The server answers the typed rows and, after them, the new row and a
	// blank one (as without JavaScript).
	e.do(t, "fill it and the next", fillItem("1", "B-2", "Bookmark", "2", "0.50"),
		chromedp.WaitVisible(css("#items-2-name")), fillItem("2", "C-3", "Chalk", "3", "1.00"))
	e.waitText(t, "#order-total", "6.00")

	e.do(t, "remove the second row", chromedp.Click(css(`button[data-remove-row][value="1"]`)),
		chromedp.WaitNotPresent(css("#items-1-name")))
	e.waitFocus(t, "after Remove", `button[data-remove-row][value="0"]`)
	if got, want := [2][4]string{e.rowValues(t, 0), e.rowValues(t, 2)}, [2][4]string{{"A-1", "Abstraction", "1", "2.00"}, {"C-3", "Chalk", "3", "1.00"}}; got != want {
		t.Errorf("after removing row 2 the rows hold %q, want %q", got, want)
	}
	e.waitText(t, "#order-total", "5.00")
	if !e.markerKept(t) || e.path(t) != "/orders/new" {
		t.Errorf("adding and removing rows left the page: at %s, page kept %v", e.path(t), e.markerKept(t))
	}
	e.do(t, "create", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	o, err := e.store.GetOrder(t.Context(), 1)
	if err != nil || len(o.Items) != 2 || o.Items[0].Name != "Abstraction" || o.Items[1].Name != "Chalk" {
		t.Fatalf("created %+v, %v; want the two rows shown", o, err)
	}
}

// TestFocusAfterActions: after each action focus lands somewhere
// sensible, never on the page's body: the page heading after a page-sized
// swap (create, save, a status change, a delete from the order's page),
// the customer field with the cursor at the end when an inline edit opens,
// the row's Edit link after an inline save or Escape.
func TestFocusAfterActions(t *testing.T) {
	e := start(t, true)
	e.do(t, "create",
		chromedp.Navigate(e.base+"/orders/new"),
		chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Grace Hopper"),
		fillItem("0", "", "Compiler", "1", "10"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#order")),
	)
	e.waitFocus(t, "after create", "#order h1")

	e.do(t, "confirm", chromedp.Click(css(".transitions button")))
	e.waitText(t, "#order h1", "Confirmed")
	e.waitFocus(t, "after a status change", "#order h1")

	e.do(t, "edit and save",
		chromedp.Click(css(`#order a[href="/orders/1/edit"]`)),
		chromedp.WaitVisible(css("#order-form")),
		chromedp.SetValue(css("#customer"), "Grace B. Hopper"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#order")),
	)
	e.waitFocus(t, "after save", "#order h1")

	// A save that fails: the first field with an error.
	e.do(t, "save with an error",
		chromedp.Click(css(`#order a[href="/orders/1/edit"]`)),
		chromedp.WaitVisible(css("#order-form")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
		chromedp.SetValue(css("#email"), "not an address"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#email-err")),
	)
	e.waitFocus(t, "after a failed save", "#email")

	// Inline edit in the list.
	createOrder(t, e.store, "Alan Turing", "")
	e.do(t, "open an inline edit",
		chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-row-2")),
		chromedp.Click(css("#order-row-2 a[hx-get]")), chromedp.WaitVisible(css("#row-2-customer")))
	e.waitFocus(t, "inline edit open", "#row-2-customer")
	if got := e.jsString(t, `(() => { const i = document.getElementById("row-2-customer"); return i.selectionStart + "," + i.selectionEnd + "/" + i.value.length; })()`); got != "11,11/11" {
		t.Errorf("inline edit cursor (start,end/length) = %s, want at the end of the text (11,11/11)", got)
	}
	// Typing goes after the existing text.
	e.do(t, "type", chromedp.KeyEvent(" M."))
	if got := run(t, e, "row customer", chromedp.Value(css("#row-2-customer"))); got != "Alan Turing M." {
		t.Errorf("typing into the opened inline edit gave %q, want Alan Turing M.", got)
	}
	e.do(t, "escape", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(css("#row-2-customer")))
	e.waitFocus(t, "after Escape", `#order-row-2 a[href="/orders/2/edit"]`)

	e.do(t, "inline save",
		chromedp.Click(css("#order-row-2 a[hx-get]")), chromedp.WaitVisible(css("#row-2-customer")),
		chromedp.SendKeys(css("#row-2-customer"), " (Bletchley)"),
		chromedp.Click(css("#order-row-2 button[type=submit]")),
		chromedp.WaitNotPresent(css("#row-2-customer")))
	e.waitText(t, "#order-row-2", "Alan Turing (Bletchley)")
	e.waitFocus(t, "after an inline save", `#order-row-2 a[href="/orders/2/edit"]`)

	// Delete from the order's page: the list's heading.
	e.do(t, "delete from the order's page",
		chromedp.Navigate(e.base+"/orders/2"), chromedp.WaitVisible(css("#order")),
		chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	e.waitFocus(t, "after a delete", "main h1")
}

// columnWidths returns the widths of the item entry table's header cells.
func (e *env) columnWidths(t *testing.T) []float64 {
	t.Helper()
	var w []float64
	s := e.jsString(t, `JSON.stringify([...document.querySelectorAll(".item-rows thead th")].map(th => th.getBoundingClientRect().width))`)
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// overflowing lists the visible elements of main that reach past the
// viewport or past the box of the section they are in, and whether the
// page scrolls sideways.
const overflowing = `(() => {
  const out = [], vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw + 1) out.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " > " + vw);
  for (const el of document.querySelectorAll("main input:not([type=hidden]), main select, main textarea, main button:not(.default-submit), main a, main dd, main td, main .error-text")) {
    const r = el.getBoundingClientRect();
    if (!r.width) continue;
    const box = el.closest("section, article, form, .table-wrap, fieldset");
    const b = box ? box.getBoundingClientRect() : {left: 0, right: vw};
    if (r.left < -1 || r.right > vw + 1 || r.right > b.right + 1 || r.left < b.left - 1) {
      out.push(el.tagName + (el.id ? "#" + el.id : "") + " spans " + Math.round(r.left) + "–" + Math.round(r.right) +
        " in " + Math.round(b.left) + "–" + Math.round(b.right) + " (viewport " + vw + ")");
    }
  }
  return out.join("\n");
})()`

// TestFormLayoutHolds: a validation message does not reflow the
// item table (each column keeps its width; the message wraps inside it);
// an email address shows whole in its field and on the order page; nothing
// reaches past the page or its box at 1280 px or at 360 px.
func TestFormLayoutHolds(t *testing.T) {
	e := start(t, true)
	const email = "grace.hopper@logistics.example.com"
	createOrder(t, e.store, "Grace Brewster Murray Hopper", email)
	e.do(t, "open the new form", chromedp.Navigate(e.base+"/orders/new"), chromedp.WaitVisible(css("#customer")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
		chromedp.SendKeys(css("#customer"), "Grace Hopper"),
		chromedp.SendKeys(css("#email"), email),
		fillItem("0", "OK-1", "A notebook with a rather long name", "1", "2.50"))
	before := e.columnWidths(t)
	nameBefore := e.jsString(t, `document.getElementById("items-0-name").getBoundingClientRect().width`)
	e.do(t, "save with errors in the quantity and the price",
		chromedp.SetValue(css("#items-0-quantity"), "zero"),
		chromedp.SetValue(css("#items-0-unit_price"), "2.999"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#items-0-quantity-err")))
	e.shot(t, "layout-item-errors")
	after := e.columnWidths(t)
	if len(before) != len(after) || len(before) < 5 {
		t.Fatalf("item table columns before %v, after %v", before, after)
	}
	for i := range before {
		if d := after[i] - before[i]; d > 1 || d < -1 {
			t.Errorf("column %d of the item table went from %.0f px to %.0f px with a validation message; want it to keep its width", i+1, before[i], after[i])
		}
	}
	if got := e.jsString(t, `document.getElementById("items-0-name").getBoundingClientRect().width`); got != nameBefore {
		t.Errorf("the item name field went from %s px to %s px wide with a validation message", nameBefore, got)
	}
	if got := e.jsString(t, `(() => { const i = document.getElementById("email"); return i.scrollWidth <= i.clientWidth; })()`); got != "true" {
		t.Errorf("at 1280 px the email field cuts %q off", email)
	}

	check := func(what string) {
		t.Helper()
		if bad := e.jsString(t, overflowing); bad != "" {
			e.shot(t, "overflow-"+strings.ReplaceAll(what, " ", "-"))
			t.Errorf("%s:\n%s", what, bad)
		}
	}
	for _, width := range []int64{1280, 360} {
		e.do(t, "viewport", chromedp.EmulateViewport(width, 800, chromedp.EmulateMobile))
		for _, p := range []string{"/orders/new", "/orders/1/edit", "/orders/1", "/orders/1?confirm=delete"} {
			e.do(t, "open "+p, chromedp.Navigate(e.base+p), chromedp.WaitVisible(css("main h1")))
			check(fmt.Sprintf("%s at %d px", p, width))
		}
		e.do(t, "errors", chromedp.Navigate(e.base+"/orders/1/edit"), chromedp.WaitVisible(css("#customer")),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
			chromedp.SetValue(css("#items-0-unit_price"), "2.999"),
			chromedp.SetValue(css("#email"), "a very long and wrong email address that goes on and on"),
			chromedp.Click(css("#order-edit .actions button[type=submit]")),
			chromedp.WaitVisible(css("#items-0-unit_price-err")))
		check(fmt.Sprintf("the edit form with errors at %d px", width))
		e.do(t, "inline edit", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-row-1")),
			chromedp.Click(css("#order-row-1 a[hx-get]")), chromedp.WaitVisible(css("#row-1-email")))
		check(fmt.Sprintf("the list's inline edit at %d px", width))
		if got := e.jsString(t, `(() => { const i = document.getElementById("row-1-email"); return i.scrollWidth <= i.clientWidth; })()`); width == 1280 && got != "true" {
			t.Errorf("at 1280 px the inline edit's email field cuts %q off", email)
		}
		e.do(t, "order page", chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")))
		e.shot(t, fmt.Sprintf("layout-order-%d", width))
		// The address is one line where it fits, and never broken inside
		// a word: each line ends at the end of the address or at a hyphen.
		lines := e.jsString(t, `(() => { const a = document.querySelector("#order .facts a[href^='mailto:']");
		  const r = document.createRange(), tops = [], out = []; let line = "";
		  const w = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
		  for (let t = w.nextNode(); t; t = w.nextNode()) for (let i = 0; i < t.length; i++) {
		    r.setStart(t, i); r.setEnd(t, i + 1); const top = Math.round(r.getBoundingClientRect().top);
		    if (line && top !== tops[tops.length - 1]) { out.push(line); line = ""; } if (!line) tops.push(top); line += t.data[i]; }
		  out.push(line); return out.join("|"); })()`)
		if width == 1280 && lines != email {
			t.Errorf("at 1280 px the email on the order page is laid out as %q, want one line", lines)
		}
		if parts := strings.Split(lines, "|"); width == 360 && len(parts) > 1 {
			for i, p := range parts[:len(parts)-1] {
				if !strings.HasSuffix(p, "-") && !strings.HasSuffix(p, "@") && !strings.HasPrefix(parts[i+1], ".") {
					t.Errorf("at 360 px the email on the order page breaks inside a word: %q", lines)
				}
			}
		}
	}
}

// TestDeletedElsewhere: acting on an order deleted in another
// tab says so, with a link back to the list, in the representation asked
// for: the order's page (status change, save, delete), a list row (inline
// edit, save, delete), a plain form without JavaScript. The pages do not
// follow live updates here (withoutLive: as after a lost connection); one
// that does marks the order deleted itself (browser/live_test.go).
func TestDeletedElsewhere(t *testing.T) {
	e := start(t, true)
	e.failedLoads = []string{"404"}
	gone := func(id int64) {
		t.Helper()
		if err := e.store.DeleteOrder(context.Background(), id, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	wantGonePage := func(what string, id int64) {
		t.Helper()
		want := fmt.Sprintf("Order %d was not found: it has been deleted, or it never existed", id)
		e.waitText(t, "main", want)
		e.waitText(t, "#notice-alert", fmt.Sprintf("Order %d was not found", id))
		if n := e.jsString(t, `document.querySelectorAll("main a[href='/orders']").length`); n == "0" {
			t.Errorf("%s: no link back to the list", what)
		}
		if strings.Contains(e.jsString(t, `document.querySelector("main").textContent`), "not found\n") {
			t.Errorf("%s: the raw store message shows", what)
		}
	}

	// On the order's page: a status change, a save, a delete.
	a := createOrder(t, e.store, "Ada Lovelace", "")
	e.do(t, "open order", chromedp.Navigate(e.base+fmt.Sprintf("/orders/%d", a.ID)), chromedp.WaitVisible(css("#order")), withoutLive())
	gone(a.ID)
	e.do(t, "confirm a deleted order", chromedp.Click(css(".transitions button")))
	wantGonePage("status change", a.ID)
	e.shot(t, "deleted-elsewhere-page")

	b := createOrder(t, e.store, "Alan Turing", "")
	e.do(t, "open the edit form", chromedp.Navigate(e.base+fmt.Sprintf("/orders/%d/edit", b.ID)), chromedp.WaitVisible(css("#order-form")), withoutLive())
	gone(b.ID)
	e.do(t, "save a deleted order", chromedp.SetValue(css("#customer"), "A. Turing"), chromedp.Click(css("#order-edit .actions button[type=submit]")))
	wantGonePage("save", b.ID)

	c := createOrder(t, e.store, "Barbara Liskov", "")
	e.do(t, "open order", chromedp.Navigate(e.base+fmt.Sprintf("/orders/%d", c.ID)), chromedp.WaitVisible(css("#order")), withoutLive())
	gone(c.ID)
	e.do(t, "delete a deleted order", chromedp.Click(css("#order .page-head button.danger")))
	wantGonePage("delete", c.ID)

	// In a list row: open the inline edit, save it, delete the row.
	rows := []*store.Order{createOrder(t, e.store, "Edsger Dijkstra", ""), createOrder(t, e.store, "Frances Allen", ""),
		createOrder(t, e.store, "Radia Perlman", "")}
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(fmt.Sprintf("#order-row-%d", rows[2].ID))), withoutLive())
	wantGoneRow := func(what string, id int64) {
		t.Helper()
		row := fmt.Sprintf("#order-row-%d", id)
		e.waitText(t, row, fmt.Sprintf("Order %d has been deleted", id))
		if n := e.jsString(t, `document.querySelectorAll("`+row+` a[href='/orders']").length`); n != "1" {
			t.Errorf("%s: the row has no link to the current list", what)
		}
		e.waitText(t, "#notice-alert", fmt.Sprintf("Order %d was not found", id))
	}
	gone(rows[0].ID)
	e.do(t, "inline edit of a deleted order", chromedp.Click(css(fmt.Sprintf("#order-row-%d a[hx-get]", rows[0].ID))))
	wantGoneRow("inline edit", rows[0].ID)
	e.shot(t, "deleted-elsewhere-row")
	row1 := fmt.Sprintf("#order-row-%d", rows[1].ID)
	e.do(t, "open an inline edit", chromedp.Click(css(row1+" a[hx-get]")), chromedp.WaitVisible(css(row1+" form")))
	// Visible is not yet live: on a loaded machine the Save click could come
	// before htmx has taken the new form over, and submit it as a plain form
	// (a whole 404 page, no row). The focus moves into the form once it has.
	e.waitFocus(t, "the inline edit", row1+" form input")
	gone(rows[1].ID)
	e.do(t, "save it", chromedp.Click(css(row1+" button[type=submit]")))
	wantGoneRow("inline save", rows[1].ID)
	gone(rows[2].ID)
	e.do(t, "delete a deleted row", chromedp.Click(css(fmt.Sprintf("#order-row-%d button.danger", rows[2].ID))))
	wantGoneRow("row delete", rows[2].ID)

	// Without JavaScript: the plain form's answer is the same page.
	n := start(t, false)
	n.failedLoads = []string{"404"}
	d := createOrder(t, n.store, "Grace Hopper", "")
	n.do(t, "open the edit form", chromedp.Navigate(n.base+fmt.Sprintf("/orders/%d/edit", d.ID)), chromedp.WaitVisible(css("#order-form")))
	if err := n.store.DeleteOrder(context.Background(), d.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	n.do(t, "save without JavaScript", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#error")))
	n.waitText(t, "main", fmt.Sprintf("Order %d was not found: it has been deleted, or it never existed", d.ID))
	if got := n.jsString(t, `document.querySelectorAll("main a[href='/orders']").length`); got == "0" {
		t.Error("without JavaScript: no link back to the list")
	}
}

// TestNoCSPErrorsAfterValidation: after the browser's own
// validation bubble, two failed saves log no console error at all (beyond
// the 422 loads themselves). The settle step of htmx copied each old
// field's style attribute onto the new field with setAttribute, which the
// CSP (style-src 'self') refuses: one error per field, whenever something
// had given the fields a style (the browser filling a form, an extension,
// a script through CSSOM, which the CSP allows). Headless Chromium adds
// none of its own, so the test gives every field one through CSSOM first.
func TestNoCSPErrorsAfterValidation(t *testing.T) {
	for _, path := range []string{"/orders/new", "/orders/1/edit"} {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "-"), func(t *testing.T) {
			e := start(t, true)
			createOrder(t, e.store, "Katherine Johnson", "")
			e.do(t, "the browser's bubble", chromedp.Navigate(e.base+path), chromedp.WaitVisible(css("#customer")),
				chromedp.Evaluate[chromedp.Void](`document.getElementById("customer").value = ""`),
				chromedp.Click(css("#order-edit .actions button[type=submit]")))
			if got := e.jsString(t, `document.getElementById("customer").validity.valueMissing && document.activeElement.id === "customer"`); got != "true" {
				t.Errorf("the browser's validation did not stop the empty customer (focus on %s)", e.focused(t))
			}
			e.do(t, "styled fields",
				chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#order-edit input, #order-edit select, #order-edit textarea").forEach(f => f.style.backgroundPosition = "right center")`))
			for i := 1; i <= 2; i++ {
				e.do(t, fmt.Sprintf("failed save %d", i),
					chromedp.SendKeys(css("#customer"), "K"),
					chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
					chromedp.SetValue(css("#items-0-quantity"), "zero"),
					chromedp.Click(css("#order-edit .actions button[type=submit]")),
					chromedp.WaitVisible(css("#items-0-quantity-err")))
				e.settled(t)
				e.do(t, "style again", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#order-edit input").forEach(f => f.style.backgroundPosition = "right center")`))
			}
			time.Sleep(200 * time.Millisecond)
			e.mu.Lock()
			defer e.mu.Unlock()
			var errs, loads int
			for _, m := range e.console {
				if m.Type != chromedp.ConsoleError && !m.IsException() {
					continue
				}
				if strings.Contains(m.String(), "Failed to load resource") && strings.Contains(m.String(), "422") {
					loads++
					continue
				}
				errs++
				if errs <= 3 {
					t.Errorf("console error after the validation bubble: %s", oneLine(m.String(), 200))
				}
			}
			if errs > 0 || loads != 2 {
				t.Errorf("%d console errors (want 0) and %d failed loads (want the 2 saves' 422)", errs, loads)
			}
		})
	}
}

// TestBackAfterSave: Back after a save leads to the page before
// the edit, not into the edit form with the old values.
func TestBackAfterSave(t *testing.T) {
	t.Run("javascript", func(t *testing.T) {
		e := start(t, true)
		createOrder(t, e.store, "Margaret Hamilton", "")
		e.do(t, "list, order, edit, save",
			chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-row-1")),
			chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")),
			chromedp.Click(css(`#order a[href="/orders/1/edit"]`)), chromedp.WaitVisible(css("#order-form")),
			chromedp.SetValue(css("#customer"), "Margaret H. Hamilton"),
			chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
		e.waitText(t, "#order .facts", "Margaret H. Hamilton")
		// History: the list, the order, and the order again where the edit
		// form was (replaced, not pushed, by the save).
		e.do(t, "back", chromedp.Evaluate[chromedp.Void](`history.back()`))
		e.waitUntil(t, "back has happened", `location.pathname !== "/orders/1/edit" && document.readyState === "complete"`)
		time.Sleep(300 * time.Millisecond) // a history restore, if any, has swapped
		if got := e.path(t); got != "/orders/1" {
			t.Errorf("Back after the save went to %q, want /orders/1, the page before the edit", got)
		}
		if e.jsString(t, `!!document.getElementById("order-form")`) == "true" {
			t.Error("Back after the save shows the edit form")
		}
		e.waitText(t, "#order .facts", "Margaret H. Hamilton")
		e.do(t, "back again", chromedp.Evaluate[chromedp.Void](`history.back()`))
		e.waitUntil(t, "the list shows", `document.getElementById("orders")`)
		if got := e.path(t); got != "/orders" {
			t.Errorf("a second Back went to %q, want /orders", got)
		}
	})
	t.Run("no-javascript", func(t *testing.T) {
		e := start(t, false)
		createOrder(t, e.store, "Margaret Hamilton", "")
		e.do(t, "order, edit, save",
			chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")),
			chromedp.Click(css(`#order a[href="/orders/1/edit"]`)), chromedp.WaitVisible(css("#order-form")),
			chromedp.SetValue(css("#customer"), "Margaret H. Hamilton"),
			chromedp.SetValue(css("#notes"), "Apollo"),
			chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
		e.do(t, "back", chromedp.Evaluate[chromedp.Void](`history.back()`))
		time.Sleep(500 * time.Millisecond)
		e.do(t, "the page shows", chromedp.WaitVisible(css("main h1")))
		// A plain form cannot replace its history entry: Back may show the
		// edit form, but with the stored values and the new version, so a
		// second save is no stale overwrite.
		if e.jsString(t, `!!document.getElementById("order-edit")`) == "true" {
			if got := run(t, e, "customer", chromedp.Value(css("#customer"))); got != "Margaret H. Hamilton" {
				t.Errorf("Back shows the edit form with customer %q, want the saved value", got)
			}
			if got := run(t, e, "version", chromedp.Value(css(`#order-edit input[name=version]`))); got != "2" {
				t.Errorf("Back shows the edit form at version %s, want 2", got)
			}
		}
	})
}

// TestPrintStylesheet: an order prints as a clean document: no
// navigation, no buttons or forms, the items table and totals in full.
func TestPrintStylesheet(t *testing.T) {
	e := start(t, true)
	createOrder(t, e.store, "Hedy Lamarr", "hedy@example.com")
	e.do(t, "open the order", chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")))
	if _, err := chromedp.Call(e.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		t.Fatal(err)
	}
	defer chromedp.Call(e.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: ""})
	if got := e.jsString(t, `matchMedia("print").matches`); got != "true" {
		t.Fatalf("print media is not emulated")
	}
	e.shot(t, "print-order")
	shown := e.jsString(t, `[...document.querySelectorAll("header, nav, button, form, .notices, .transitions, .actions, a.button")]
	  .filter(el => el.getClientRects().length > 0).map(el => el.tagName + "." + el.className).join(", ")`)
	if shown != "" {
		t.Errorf("in print: shown %s; want navigation, buttons and forms hidden", shown)
	}
	for sel, want := range map[string]string{
		"#order h1":                        "Order 1",
		"#order .facts":                    "Hedy Lamarr",
		"#order .items-table tbody":        "Enamel mug",
		"#order .items-table tfoot .total": "25.00 USD",
	} {
		visible := e.jsString(t, fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return "missing";
		  const r = el.getBoundingClientRect(); return getComputedStyle(el).display !== "none" && r.height > 0 ? el.textContent : "hidden"; })()`, sel))
		if !strings.Contains(visible, want) {
			t.Errorf("in print: %s is %q, want it shown with %q", sel, oneLine(visible, 80), want)
		}
	}
	if got := e.jsString(t, `getComputedStyle(document.querySelector("#order .items-table")).display`); got != "table" {
		t.Errorf("in print the items table is display:%s, want a table", got)
	}
}
