package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// fillItem types one item row of the New or Edit form.
func fillItem(n, sku, name, qty, price string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.SendKeys(css("#items-"+n+"-sku"), sku),
		chromedp.SendKeys(css("#items-"+n+"-name"), name),
		chromedp.SendKeys(css("#items-"+n+"-quantity"), qty),
		chromedp.SendKeys(css("#items-"+n+"-unit_price"), price),
	)
}

func TestCreateOrderWithTwoItems(t *testing.T) {
	e := start(t, true)
	e.do(t, "open the new order form",
		chromedp.Navigate(e.base+"/orders/new"),
		chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Grace Hopper"),
		chromedp.SendKeys(css("#email"), "grace@example.com"),
		fillItem("0", "MUG-1", "Enamel mug", "3", "0.10"),
		chromedp.Click(css("[data-add-row]")),
		chromedp.WaitVisible(css("#items-1-name")),
		fillItem("1", "PEN-2", "Gel pen", "2", "1.50"),
	)
	// The total is previewed as one types.
	e.waitText(t, "#order-total", "3.30")
	e.setMarker(t)
	e.shot(t, "new-order-filled")
	e.do(t, "create", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	if got := e.path(t); got != "/orders/1" {
		t.Errorf("after create the URL is %q, want /orders/1", got)
	}
	if !e.markerKept(t) {
		t.Error("create reloaded the page; want an htmx swap")
	}
	e.waitText(t, "#order .total", "3.30 USD")
	e.waitText(t, "#notice", "Order 1 created.")
	if got := e.text(t, "#order .items-table tbody"); !strings.Contains(got, "Enamel mug") || !strings.Contains(got, "Gel pen") {
		t.Errorf("items table = %q, want both items", got)
	}
	e.shot(t, "order-created")

	// A status change from the order's page.
	e.do(t, "confirm", chromedp.Click(css(".transitions button")))
	e.waitText(t, "#order h1", "Confirmed")

	// Back after an htmx navigation shows the right full page.
	e.do(t, "open edit", chromedp.Click(css(`#order a[href="/orders/1/edit"]`)), chromedp.WaitVisible(css("#order-form")))
	if got := e.path(t); got != "/orders/1/edit" {
		t.Errorf("after Edit the URL is %q, want /orders/1/edit", got)
	}
	e.do(t, "go back", chromedp.NavigateBack(), chromedp.WaitVisible(css("#order")))
	if got := e.path(t); got != "/orders/1" {
		t.Errorf("after back the URL is %q, want /orders/1", got)
	}

	// Edit on its own page, then delete from the order's page.
	e.do(t, "edit",
		chromedp.Click(css(`#order a[href="/orders/1/edit"]`)),
		chromedp.WaitVisible(css("#order-form")),
		chromedp.SetValue(css("#customer"), "Grace B. Hopper"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#order")),
	)
	e.waitText(t, "#order .facts", "Grace B. Hopper")
	e.do(t, "delete", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#orders")))
	e.waitText(t, "#notice", "Order 1 deleted.")
	if got := e.path(t); got != "/orders" {
		t.Errorf("after delete the URL is %q, want /orders", got)
	}
	if len(e.dialogs) != 1 || !strings.Contains(e.dialogs[0], "Delete order 1") {
		t.Errorf("confirmation dialogs = %q, want one asking to delete order 1", e.dialogs)
	}
}

func TestServerValidationKeepsInput(t *testing.T) {
	e := start(t, true)
	e.do(t, "fill an invalid order",
		chromedp.Navigate(e.base+"/orders/new"),
		chromedp.WaitVisible(css("#customer")),
		// The browser's own checks would stop the request: test the server's.
		chromedp.Evaluate[chromedp.Void](`document.getElementById("order-edit").noValidate = true`),
		chromedp.SendKeys(css("#email"), "not an address"),
		fillItem("0", "OK-1", "Notebook", "zero", "2.999"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#customer-err")),
	)
	e.shot(t, "validation-errors")
	for sel, want := range map[string]string{
		"#customer-err":           "Customer is required",
		"#email-err":              "one email address",
		"#items-0-quantity-err":   "whole number",
		"#items-0-unit_price-err": "two decimals",
	} {
		if got := e.text(t, sel); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want it to contain %q", sel, got, want)
		}
	}
	for sel, want := range map[string]string{"#email": "not an address", "#items-0-name": "Notebook", "#items-0-quantity": "zero"} {
		if got := run(t, e, "value of "+sel, chromedp.Value(css(sel))); got != want {
			t.Errorf("%s kept %q, want %q", sel, got, want)
		}
	}
	focused := run(t, e, "focused element", chromedp.Evaluate[string](`document.activeElement.id`))
	if focused != "customer" {
		t.Errorf("focus is on %q, want the first invalid field (customer)", focused)
	}
	if got := e.path(t); got != "/orders/new" {
		t.Errorf("URL after a failed create = %q, want /orders/new", got)
	}
}

func TestListInlineEditSearchAndDelete(t *testing.T) {
	e := start(t, true)
	orders := e.seed(t, "Ada Lovelace", "Alan Turing", "Adele Goldberg", "Barbara Liskov")
	ada := orders[0]
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#order-row-1")))
	e.setMarker(t)

	// Inline edit: Edit, change the customer, Save; the row comes back.
	e.do(t, "inline edit",
		chromedp.Click(css("#order-row-1 a[hx-get]")),
		chromedp.WaitVisible(css("#row-1-customer")),
		chromedp.SetValue(css("#row-1-customer"), "Ada King"),
		chromedp.Click(css("#order-row-1 button[type=submit]")),
	)
	e.waitText(t, "#order-row-1", "Ada King")
	e.waitText(t, "#notice", "Order 1 saved.")
	_ = ada

	// Escape leaves an inline edit without saving.
	e.do(t, "edit then escape",
		chromedp.Click(css("#order-row-2 a[hx-get]")),
		chromedp.WaitVisible(css("#row-2-customer")),
		chromedp.SendKeys(css("#row-2-customer"), "zzz"),
		chromedp.KeyEvent("\x1b"),
		chromedp.WaitNotPresent(css("#row-2-customer")),
	)
	e.waitText(t, "#order-row-2", "Alan Turing")

	// Live search narrows the rows and the URL follows; reload keeps them.
	e.do(t, "search", chromedp.SendKeys(css("#q"), "ad"))
	e.waitText(t, "#order-results .count", "of 2")
	if got := e.path(t); got != "/orders?q=ad&status=" && got != "/orders?q=ad" {
		t.Errorf("URL after search = %q, want /orders?q=ad", got)
	}
	if !e.markerKept(t) {
		t.Error("the inline edit or the search reloaded the page")
	}
	e.shot(t, "list-search")
	e.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(css("#order-results")))
	e.waitText(t, "#order-results .count", "of 2")
	if got := run(t, e, "search box", chromedp.Value(css("#q"))); got != "ad" {
		t.Errorf("after reload the search box holds %q, want ad", got)
	}

	// Delete asks first, removes the row, and says so.
	e.do(t, "delete a row", chromedp.Click(css("#order-row-3 button.danger")), chromedp.WaitNotPresent(css("#order-row-3")))
	e.waitText(t, "#notice", "Order 3 deleted.")
	if _, err := e.store.GetOrder(t.Context(), 3); err == nil {
		t.Error("order 3 is still stored after the row was deleted")
	}
}

func TestWithoutJavaScript(t *testing.T) {
	e := start(t, false)
	e.do(t, "create without JS",
		chromedp.Navigate(e.base+"/orders/new"),
		chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Dennis Ritchie"),
		fillItem("0", "C-1", "The C book", "1", "39.95"),
		// No JavaScript: "Add item row" asks the server for a form with one more row.
		chromedp.Click(css("[data-add-row]")),
		chromedp.WaitVisible(css("#items-1-name")),
		fillItem("1", "", "Bookmark", "2", "0.50"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#order")),
	)
	if got := e.path(t); got != "/orders/1" {
		t.Errorf("after a plain create the URL is %q, want /orders/1", got)
	}
	e.waitText(t, "#order .total", "40.95 USD")
	e.waitText(t, "#notice", "Order 1 created.")

	e.do(t, "edit without JS",
		chromedp.Click(css(`#order a[href="/orders/1/edit"]`)),
		chromedp.WaitVisible(css("#order-form")),
		chromedp.SetValue(css("#customer"), "Dennis M. Ritchie"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")),
		chromedp.WaitVisible(css("#order")),
	)
	e.waitText(t, "#order .facts", "Dennis M. Ritchie")
	e.waitText(t, "#notice", "Order 1 saved.")

	// Without JavaScript Delete asks on a confirmation page first.
	e.do(t, "delete without JS", chromedp.Click(css("#order .page-head button.danger")), chromedp.WaitVisible(css("#order-delete")),
		chromedp.Click(css("#order-delete button.danger")), chromedp.WaitVisible(css("#orders")))
	e.waitText(t, "#notice", "Order 1 deleted.")
	if n, _ := e.store.CountOrders(t.Context()); n != 0 {
		t.Errorf("%d orders stored after deleting the only one", n)
	}
}
