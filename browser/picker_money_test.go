package browser_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
)

// TestPickerWarnsAcrossCurrenciesFillsQuantityAndAddsARow: in an EUR
// order, a 45.00 USD lamp is offered with a visible warning, and choosing
// it fills SKU and name, quantity 1, but leaves the price empty, says why
// beside the items and puts the focus in the price; a product in the
// order's currency fills its price. Choosing a product in the last row
// adds an empty row after it; a quantity already typed is kept. The warning
// states pass axe-core in light and dark.
func TestPickerWarnsAcrossCurrenciesFillsQuantityAndAddsARow(t *testing.T) {
	e := start(t, true)
	for _, p := range []struct{ sku, name, price, currency string }{
		{"LAMP-1", "Desk lamp", "45.00", "USD"},
		{"SHADE-1", "Lamp shade", "12.40", "EUR"},
	} {
		sku, name, price, currency := p.sku, p.name, p.price, p.currency
		if _, err := e.store.CreateProduct(context.Background(), store.ProductInput{SKU: &sku, Name: &name, UnitPrice: &price, Currency: &currency}); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatalf("axe-core: %v", err)
	}
	axe := string(src)
	e.openNewForm(t)
	e.do(t, "an EUR order; type desk in the first item's name",
		chromedp.SendKeys(css("#customer"), "Ada Lovelace"),
		setValue("#currency", "EUR"),
		chromedp.Focus(css("#items-0-name")), press("desk"))
	e.waitOpen(t, "#items-0-name")
	if got := e.text(t, "#items-0-name-products [role=option]"); !strings.Contains(got, "Priced in USD, not EUR: the price is not copied") {
		t.Errorf("the USD lamp's option in an EUR order reads %q, want a warning that it is priced in USD", got)
	}
	for _, scheme := range []string{"light", "dark"} {
		e.colorScheme(t, scheme)
		e.axe(t, axe, scheme+" picker option in another currency")
	}
	e.colorScheme(t, "light")

	e.do(t, "choose the USD lamp", press(kb.ArrowDown+kb.Enter))
	e.waitClosed(t, "#items-0-name")
	if got, want := e.rowValues(t, 0), [4]string{"LAMP-1", "Desk lamp", "1", ""}; got != want {
		t.Errorf("after choosing the USD lamp in an EUR order the row holds %q, want %q (no price copied)", got, want)
	}
	e.waitUntil(t, "the warning beside the items shows", `!document.querySelector("[data-picker-warning]").hidden`)
	if got := e.text(t, "[data-picker-warning]"); !strings.Contains(got, "priced in USD (45.00 USD)") || !strings.Contains(got, "not copied") || !strings.Contains(got, "in EUR") {
		t.Errorf("the warning reads %q, want it to say the lamp is priced in USD and its price was not copied", got)
	}
	e.waitFocus(t, "after choosing across currencies", "#items-0-unit_price")
	e.waitUntil(t, "an empty row follows the last", `!!document.getElementById("items-1-name")`)
	if got := e.rowValues(t, 1); got != [4]string{"", "", "", ""} {
		t.Errorf("the row added after the chosen one holds %q, want it empty", got)
	}
	e.waitFocus(t, "after the row was added", "#items-0-unit_price")
	for _, scheme := range []string{"light", "dark"} {
		e.colorScheme(t, scheme)
		e.axe(t, axe, scheme+" picker warning beside the items")
	}
	e.colorScheme(t, "light")

	// The product in the order's currency, in the new last row, with a
	// quantity already typed: price copied, quantity kept, warning gone,
	// another row after it.
	e.do(t, "type the price, a quantity and shade in row 2",
		press("40"),
		chromedp.SendKeys(css("#items-1-quantity"), "3"),
		chromedp.Focus(css("#items-1-name")), press("shade"))
	e.waitOpen(t, "#items-1-name")
	if got := e.text(t, "#items-1-name-products [role=option]"); strings.Contains(got, "Priced in") {
		t.Errorf("an EUR product in an EUR order reads %q, want no warning", got)
	}
	e.do(t, "choose the shade", press(kb.ArrowDown+kb.Enter))
	e.waitClosed(t, "#items-1-name")
	if got, want := e.rowValues(t, 1), [4]string{"SHADE-1", "Lamp shade", "3", "12.40"}; got != want {
		t.Errorf("after choosing the EUR shade the row holds %q, want %q", got, want)
	}
	e.waitUntil(t, "the warning hides", `document.querySelector("[data-picker-warning]").hidden`)
	e.waitUntil(t, "another empty row follows", `!!document.getElementById("items-2-name")`)
	e.waitText(t, "#order-total", "77.20") // 40 + 3 × 12.40
	e.do(t, "save", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	o, err := e.store.GetOrder(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if o.Currency != "EUR" || len(o.Items) != 2 || o.Items[0].UnitPrice.In("EUR") != "40.00" || o.Total.In("EUR") != "77.20" {
		t.Errorf("stored %s order with items %+v total %s, want EUR, two items, 77.20", o.Currency, o.Items, o.Total.In("EUR"))
	}
	e.checkConsole(t)
}
