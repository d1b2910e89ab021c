package browser_test

// The customers' pages and the order form's customer picker: typing in
// an order's customer suggests customers; choosing one fills the name and
// the email and links the order, whose page then links the customer, whose
// page lists the order.

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
)

func TestCustomerPickerLinksTheOrder(t *testing.T) {
	e := start(t, true)
	name, email := "Ada Lovelace", "ada@example.com"
	ada, err := e.store.CreateCustomer(context.Background(), store.CustomerInput{Name: &name, Email: &email})
	if err != nil {
		t.Fatal(err)
	}
	e.openNewForm(t)
	e.do(t, "type in the customer", chromedp.Focus(css("#customer")), press("lovel"))
	if got := e.waitOpen(t, "#customer"); len(got) != 1 || got[0] != name {
		t.Fatalf("the customer field suggests %q, want [%s]", got, name)
	}
	e.waitText(t, "[data-product-status]", "1 customer matches")
	if got := e.jsString(t, `document.getElementById("customer-products").getAttribute("aria-label")`); got != "Customers" {
		t.Errorf("the customer suggestions' label: %q, want Customers", got)
	}
	e.do(t, "choose it", press(kb.ArrowDown+kb.Enter))
	if got := e.jsString(t, `[customer.value, email.value, document.querySelector("[name=customer_id]").value].join("|")`); got != name+"|"+email+"|1" {
		t.Errorf("after choosing: customer|email|customer_id = %q", got)
	}
	e.do(t, "an item, create",
		setValue("#items-0-name", "Widget"), setValue("#items-0-quantity", "2"), setValue("#items-0-unit_price", "1.50"),
		chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	o, err := e.store.GetOrder(t.Context(), 1)
	if err != nil || o.CustomerID != ada.ID || o.Email != email {
		t.Fatalf("the stored order: %+v, %v; want it linked to customer %d", o, err, ada.ID)
	}
	e.do(t, "open the customer from the order", chromedp.Click(css(`#order a[href="/customers/1"]`)), chromedp.WaitVisible(css("#customer-orders")))
	e.waitText(t, "#customer-orders", "1 order, the last on")
	e.waitText(t, "#customer-orders", "3.00 USD")

	// Typing on after choosing keeps the text and drops the link.
	e.openNewForm(t)
	e.do(t, "choose Ada again", chromedp.Focus(css("#customer")), press("ada"))
	e.waitOpen(t, "#customer")
	e.do(t, "choose, then type on", press(kb.ArrowDown+kb.Enter), chromedp.Focus(css("#customer")), press(" (her assistant)"))
	if got := e.jsString(t, `document.querySelector("[name=customer_id]").value`); got != "" {
		t.Errorf("customer_id after typing on: %q, want empty", got)
	}
	e.waitText(t, "[data-product-status]", "No customer matches")
	e.checkConsole(t)
}
