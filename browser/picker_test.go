package browser_test

// The product picker of the order forms: typing in
// an item's SKU or name suggests active products as an ARIA combobox;
// choosing one copies its SKU, name and unit price into the row, which the
// person may still change, and the order keeps those copies whatever
// happens to the product afterwards. Without JavaScript the fields are
// plain text.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
	"orders/store/redisstore"
)

// pickerProduct is a product the picker tests seed.
type pickerProduct struct {
	SKU, Name, Price string
	Active           bool
}

// pickerProducts: "mug" matches the first three (the start of a SKU or of
// a word of the name) and an inactive one; "Smuggler" has "mug" inside a
// word only.
var pickerProducts = []pickerProduct{
	{"MUG-01", "Enamel mug", "12.50", true},
	{"MUG-02", "Travel mug", "18.00", true},
	{"WRM-1", "Mug warmer", "21.00", true},
	{"MUG-09", "Chipped mug", "3.00", false},
	{"MAP-1", "Smuggler map", "9.00", true},
	{"PEN-3", "Gel pens", "4.99", true},
}

// seedPickerProducts stores pickerProducts and returns them by name.
func seedPickerProducts(t *testing.T, st *redisstore.Store) map[string]*store.Product {
	t.Helper()
	out := map[string]*store.Product{}
	for _, p := range pickerProducts {
		sku, name, price, active := p.SKU, p.Name, p.Price, p.Active
		got, err := st.CreateProduct(context.Background(), store.ProductInput{SKU: &sku, Name: &name, UnitPrice: &price, Active: &active})
		if err != nil {
			t.Fatalf("seeding product %s: %v", sku, err)
		}
		out[name] = got
	}
	return out
}

// pickerOptions returns the names of the options the combobox sel shows
// (none while its list is closed).
func (e *env) pickerOptions(t *testing.T, sel string) []string {
	t.Helper()
	s := e.jsString(t, fmt.Sprintf(`(() => { const i = document.querySelector(%q);
	  const l = i && document.getElementById(i.getAttribute("aria-controls") || "");
	  if (!l || l.hidden || i.getAttribute("aria-expanded") !== "true") return "[]";
	  return JSON.stringify([...l.querySelectorAll("[role=option]")].map(o => o.querySelector(".product-option-name").textContent)); })()`, sel))
	var names []string
	if err := json.Unmarshal([]byte(s), &names); err != nil {
		t.Fatalf("the options of %s: %v (%s)", sel, err, s)
	}
	return names
}

// waitOpen waits until the combobox sel shows its list.
func (e *env) waitOpen(t *testing.T, sel string) []string {
	t.Helper()
	e.waitUntil(t, sel+"'s list is open", fmt.Sprintf(`(() => { const i = document.querySelector(%q);
	  const l = i && document.getElementById(i.getAttribute("aria-controls") || "");
	  return i.getAttribute("aria-expanded") === "true" && l && !l.hidden && l.querySelector("[role=option]"); })()`, sel))
	return e.pickerOptions(t, sel)
}

// waitClosed waits until the combobox sel's list is closed.
func (e *env) waitClosed(t *testing.T, sel string) {
	t.Helper()
	e.waitUntil(t, sel+"'s list is closed", fmt.Sprintf(`(() => { const i = document.querySelector(%q);
	  const l = document.getElementById(i.getAttribute("aria-controls") || "");
	  return i.getAttribute("aria-expanded") === "false" && !i.hasAttribute("aria-activedescendant") && (!l || l.hidden); })()`, sel))
}

// activeOption returns the name of the option the combobox sel makes
// active (aria-activedescendant), checking that it alone is selected.
func (e *env) activeOption(t *testing.T, sel string) string {
	t.Helper()
	return e.jsString(t, fmt.Sprintf(`(() => { const i = document.querySelector(%q);
	  const id = i.getAttribute("aria-activedescendant"); if (!id) return "(none)";
	  const o = document.getElementById(id); if (!o) return "(missing " + id + ")";
	  const sel = [...o.parentElement.querySelectorAll("[aria-selected=true]")];
	  if (o.getAttribute("role") !== "option" || sel.length !== 1 || sel[0] !== o) return "(aria-selected is wrong)";
	  return o.querySelector(".product-option-name").textContent; })()`, sel))
}

// rowValues returns row n's SKU, name, quantity and unit price.
func (e *env) rowValues(t *testing.T, n int) [4]string {
	t.Helper()
	var v [4]string
	for i, f := range []string{"sku", "name", "quantity", "unit_price"} {
		v[i] = run(t, e, "reading "+f, chromedp.Value(css(fmt.Sprintf("#items-%d-%s", n, f))))
	}
	return v
}

// openNewForm opens the New order form and waits until the picker is ready.
func (e *env) openNewForm(t *testing.T) {
	t.Helper()
	e.do(t, "open the new order form", chromedp.Navigate(e.base+"/orders/new"), chromedp.WaitVisible(css("#customer")))
	e.waitUntil(t, "the picker is ready", `document.querySelector("#items-0-name").getAttribute("role") === "combobox"`)
}

func byName(ps map[string]*store.Product, name string) *store.Product {
	if p := ps[name]; p != nil {
		return p
	}
	return &store.Product{Name: "(no product named " + name + ")"}
}

// TestPickerKeyboard: a person with a keyboard types "mug" in the first
// item's name and gets the matching active products as a combobox's
// listbox (not the inactive one, not a word that only contains "mug");
// the arrows move, Enter chooses without submitting the form, fills SKU,
// name and unit price, updates the totals and moves on to the quantity;
// with the list closed Enter saves as always.
func TestPickerKeyboard(t *testing.T) {
	e := start(t, true)
	ps := seedPickerProducts(t, e.store)
	e.openNewForm(t)
	const name = "#items-0-name"
	e.do(t, "type a customer, a quantity, then mug in the name",
		chromedp.SendKeys(css("#customer"), "Ada Lovelace"),
		chromedp.SendKeys(css("#items-0-quantity"), "2"),
		chromedp.Focus(css(name)), press("mug"))
	got := e.waitOpen(t, name)
	slices.Sort(got)
	if want := []string{"Enamel mug", "Mug warmer", "Travel mug"}; !slices.Equal(got, want) {
		t.Errorf("typing mug suggests %q, want the active products %q (not Chipped mug, inactive; not Smuggler map)", got, want)
	}
	// The combobox's roles and states (WAI-ARIA 1.2).
	aria := e.jsString(t, `(() => { const i = document.querySelector("#items-0-name"), l = document.getElementById(i.getAttribute("aria-controls"));
	  return [i.getAttribute("role"), i.getAttribute("aria-autocomplete"), i.getAttribute("aria-expanded"), l.getAttribute("role"),
	    l.hasAttribute("aria-label") || l.hasAttribute("aria-labelledby"),
	    [...l.children].every(o => o.getAttribute("role") === "option" && o.getAttribute("aria-selected") === "false" && o.id),
	    i.hasAttribute("aria-activedescendant")].join(" "); })()`)
	if aria != "combobox list true listbox true true false" {
		t.Errorf("the combobox says (role, aria-autocomplete, aria-expanded, listbox role, listbox named, options, activedescendant) %q, want %q",
			aria, "combobox list true listbox true true false")
	}
	e.waitText(t, "[data-product-status]", "3 products match")
	first := e.pickerOptions(t, name)[0]

	e.setMarker(t)
	e.do(t, "ArrowDown", press(kb.ArrowDown))
	if a := e.activeOption(t, name); a != first {
		t.Errorf("after ArrowDown the active option is %q, want the first, %q", a, first)
	}
	e.do(t, "ArrowDown, ArrowDown, ArrowUp", press(kb.ArrowDown+kb.ArrowDown+kb.ArrowUp))
	second := e.pickerOptions(t, name)[1]
	if a := e.activeOption(t, name); a != second {
		t.Errorf("after Down, Down, Down, Up the active option is %q, want the second, %q", a, second)
	}
	e.do(t, "ArrowUp", press(kb.ArrowUp))
	if a := e.activeOption(t, name); a != first {
		t.Errorf("ArrowUp went to %q, want the first option again, %q", a, first)
	}
	e.do(t, "Enter chooses", press(kb.Enter))
	e.waitClosed(t, name)
	p := byName(ps, first)
	if got, want := e.rowValues(t, 0), [4]string{p.SKU, p.Name, "2", p.UnitPrice.String()}; got != want {
		t.Errorf("after choosing %q the row holds %q, want %q", first, got, want)
	}
	time.Sleep(300 * time.Millisecond) // a submission, if any, has happened
	if n, _ := e.store.CountOrders(t.Context()); n != 0 || !e.markerKept(t) || e.path(t) != "/orders/new" {
		t.Fatalf("Enter on an option submitted the form: %d orders stored, page kept %v, at %s", n, e.markerKept(t), e.path(t))
	}
	total := p.UnitPrice.Times(2).String()
	e.waitText(t, "#item-rows tr:nth-child(1) output.line-total", total)
	e.waitText(t, "#order-total", total)
	e.waitFocus(t, "after choosing", "#items-0-quantity")
	e.waitText(t, "[data-product-status]", "chosen")

	// No list: Enter saves, as in any field (TestEnterSaves).
	e.do(t, "Enter in the quantity saves", press(kb.Enter), chromedp.WaitVisible(css("#order")))
	o, err := e.store.GetOrder(t.Context(), 1)
	if err != nil {
		t.Fatalf("Enter with the list closed did not save: %v", err)
	}
	if len(o.Items) != 1 || o.Items[0].SKU != p.SKU || o.Items[0].Name != p.Name || o.Items[0].UnitPrice != p.UnitPrice || o.Items[0].Quantity != 2 {
		t.Errorf("stored items %+v, want one: %s %s × 2 at %s", o.Items, p.SKU, p.Name, p.UnitPrice)
	}
}

// TestPickerEscapeClickAndSKU: typing in the SKU field suggests too;
// Escape closes the list without filling anything, a second Escape
// changes nothing; ArrowDown opens the list again; Tab leaves it; a click
// on an option chooses it.
func TestPickerEscapeClickAndSKU(t *testing.T) {
	e := start(t, true)
	ps := seedPickerProducts(t, e.store)
	e.openNewForm(t)
	const sku = "#items-0-sku"
	e.do(t, "type pen in the SKU", chromedp.Focus(css(sku)), press("pen"))
	if got := e.waitOpen(t, sku); !slices.Equal(got, []string{"Gel pens"}) {
		t.Errorf("typing pen in the SKU suggests %q, want [Gel pens]", got)
	}
	e.waitText(t, "[data-product-status]", "1 product matches")
	e.do(t, "Escape", press("\x1b"))
	e.waitClosed(t, sku)
	if got := e.rowValues(t, 0); got != [4]string{"pen", "", "", ""} {
		t.Errorf("after Escape the row holds %q, want only the typed pen", got)
	}
	e.do(t, "a second Escape", press("\x1b"))
	time.Sleep(350 * time.Millisecond)
	if got := e.rowValues(t, 0); got != [4]string{"pen", "", "", ""} || e.path(t) != "/orders/new" {
		t.Errorf("after a second Escape the row holds %q at %s", got, e.path(t))
	}
	e.waitClosed(t, sku)
	e.waitFocus(t, "after Escape", sku)

	// ArrowDown opens the closed list and makes its first option active.
	e.do(t, "ArrowDown", press(kb.ArrowDown))
	e.waitOpen(t, sku)
	if a := e.activeOption(t, sku); a != "Gel pens" {
		t.Errorf("ArrowDown on a closed list made %q active, want Gel pens", a)
	}
	// Tab leaves: the list closes, nothing is filled, focus moves on.
	e.do(t, "Tab", press("\t"))
	e.waitClosed(t, sku)
	e.waitFocus(t, "after Tab", "#items-0-name")
	if got := e.rowValues(t, 0); got != [4]string{"pen", "", "", ""} {
		t.Errorf("Tab filled the row: %q", got)
	}

	// A click chooses.
	e.do(t, "type warm in the name", press("warm"))
	if got := e.waitOpen(t, "#items-0-name"); !slices.Equal(got, []string{"Mug warmer"}) {
		t.Errorf("typing warm suggests %q, want [Mug warmer]", got)
	}
	e.do(t, "click the option", chromedp.Click(css("#items-0-name-products [role=option]")))
	e.waitClosed(t, "#items-0-name")
	w := byName(ps, "Mug warmer")
	if got, want := e.rowValues(t, 0), [4]string{w.SKU, w.Name, "1", w.UnitPrice.String()}; got != want {
		t.Errorf("after a click the row holds %q, want %q", got, want)
	}
	e.waitFocus(t, "after a click", "#items-0-quantity")
	if n, _ := e.store.CountOrders(t.Context()); n != 0 {
		t.Errorf("a click on an option stored %d orders", n)
	}
}

// TestPickerAddedRowSaveAndCopies: a row added with "Add item row" has the
// picker; what a product filled can be changed before saving, and the
// order stores what the form held; the Edit form has the picker too; a
// product changed or deleted afterwards leaves the order as it was.
func TestPickerAddedRowSaveAndCopies(t *testing.T) {
	e := start(t, true)
	ps := seedPickerProducts(t, e.store)
	e.openNewForm(t)
	e.do(t, "choose a mug in row 1",
		chromedp.SendKeys(css("#customer"), "Grace Hopper"),
		chromedp.Focus(css("#items-0-name")), press("enamel"))
	e.waitOpen(t, "#items-0-name")
	e.do(t, "choose it, quantity 2", press(kb.ArrowDown+kb.Enter))
	e.waitFocus(t, "after choosing", "#items-0-quantity")
	e.do(t, "quantity", press("2"))

	e.do(t, "add a row", chromedp.Click(css("[data-add-row]")), chromedp.WaitVisible(css("#items-1-name")))
	if got := e.jsString(t, `(() => { const i = document.getElementById("items-1-sku"), l = document.getElementById(i.getAttribute("aria-controls"));
	  return i.getAttribute("role") + " " + (l && l.closest("tr") === i.closest("tr")); })()`); got != "combobox true" {
		t.Errorf("the added row's SKU field: role and own listbox %q, want combobox true", got)
	}
	e.do(t, "type gel in the added row's name", chromedp.Focus(css("#items-1-name")), press("gel"))
	if got := e.waitOpen(t, "#items-1-name"); !slices.Equal(got, []string{"Gel pens"}) {
		t.Errorf("the added row suggests %q, want [Gel pens]", got)
	}
	e.do(t, "choose, quantity 3", press(kb.ArrowDown+kb.Enter))
	e.waitFocus(t, "after choosing in the added row", "#items-1-quantity")
	e.do(t, "quantity", press("3"))
	pen := byName(ps, "Gel pens")
	if got, want := e.rowValues(t, 1), [4]string{pen.SKU, pen.Name, "3", pen.UnitPrice.String()}; got != want {
		t.Errorf("the added row holds %q, want %q", got, want)
	}
	if got := e.rowValues(t, 0); got[1] != "Enamel mug" {
		t.Errorf("choosing in row 2 changed row 1: %q", got)
	}
	e.waitText(t, "#order-total", "39.97") // 2 × 12.50 + 3 × 4.99

	// The fields stay free text: change what the product filled.
	e.do(t, "edit the chosen values",
		setValue("#items-0-name", "Enamel mug, seconds"),
		setValue("#items-0-unit_price", "10.00"),
		setValue("#items-1-sku", "PEN-3B"))
	e.waitText(t, "#order-total", "34.97")
	e.do(t, "create", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	o, err := e.store.GetOrder(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	type item struct{ SKU, Name, Qty, Price string }
	items := func(o *store.Order) []item {
		var out []item
		for _, it := range o.Items {
			out = append(out, item{it.SKU, it.Name, fmt.Sprint(it.Quantity), it.UnitPrice.String()})
		}
		return out
	}
	want := []item{{"MUG-01", "Enamel mug, seconds", "2", "10.00"}, {"PEN-3B", "Gel pens", "3", "4.99"}}
	if got := items(o); !slices.Equal(got, want) {
		t.Errorf("stored items %+v, want the form's values %+v", got, want)
	}

	// The Edit form: the blank row has the picker.
	e.do(t, "edit the order", chromedp.Navigate(e.base+"/orders/1/edit"), chromedp.WaitVisible(css("#items-2-name")),
		chromedp.Focus(css("#items-2-sku")), press("wrm"))
	if got := e.waitOpen(t, "#items-2-sku"); !slices.Equal(got, []string{"Mug warmer"}) {
		t.Errorf("the Edit form suggests %q, want [Mug warmer]", got)
	}
	e.do(t, "choose by click, quantity 1, save",
		chromedp.Click(css("#items-2-sku-products [role=option]")))
	e.waitFocus(t, "after choosing in the Edit form", "#items-2-quantity")
	e.do(t, "save", press("1"), press(kb.Enter), chromedp.WaitVisible(css("#order")))
	e.waitText(t, "#order", "Mug warmer")
	want = append(want, item{"WRM-1", "Mug warmer", "1", "21.00"})
	if o, _ = e.store.GetOrder(t.Context(), 1); !slices.Equal(items(o), want) {
		t.Errorf("after the edit the items are %+v, want %+v", items(o), want)
	}

	// The order keeps its copies: the products change and go.
	renamed, price := "Renamed mug", "99.00"
	for _, name := range []string{"Enamel mug", "Mug warmer"} {
		if _, err := e.store.UpdateProduct(context.Background(), ps[name].ID, store.ProductInput{Name: &renamed, UnitPrice: &price}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.DeleteProduct(context.Background(), ps["Gel pens"].ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	after, err := e.store.GetOrder(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(items(after), want) || after.Version != o.Version || after.Total != o.Total {
		t.Errorf("after the products changed the order is %+v (version %d, total %s), want %+v (version %d, total %s)",
			items(after), after.Version, after.Total, want, o.Version, o.Total)
	}
	e.do(t, "the order's page", chromedp.Navigate(e.base+"/orders/1"), chromedp.WaitVisible(css("#order")))
	page := e.text(t, "#order")
	for _, s := range []string{"Enamel mug, seconds", "Gel pens", "Mug warmer", "55.97"} {
		if !strings.Contains(page, s) {
			t.Errorf("the order's page after the products changed lacks %q", s)
		}
	}
	if strings.Contains(page, renamed) || strings.Contains(page, price) {
		t.Errorf("the order's page shows the changed product: %q", oneLine(page, 300))
	}
}

// TestPickerRequests: typing is debounced (one request for a word typed
// quickly), nothing is asked for an empty field, only the latest answer
// counts (an older one arriving late is ignored and was aborted), and a
// failed request is silent: no list, no console error, the field is a
// plain text field and Enter saves.
func TestPickerRequests(t *testing.T) {
	e := start(t, true)
	seedPickerProducts(t, e.store)
	e.openNewForm(t)
	// Every request for products the page makes, and a way to slow or
	// break the answers.
	e.do(t, "watch fetch", chromedp.Evaluate[chromedp.Void](`(() => {
	  const real = window.fetch;
	  window.__asked = []; window.__slow = {}; window.__fail = false;
	  window.fetch = (url, opts) => {
	    const u = new URL(String(url), location.href);
	    if (u.pathname !== "/products") return real(url, opts); // htmx's own requests
	    const q = u.searchParams.get("q"), rec = {q, url: String(url), aborted: false};
	    window.__asked.push(rec);
	    if (opts && opts.signal) opts.signal.addEventListener("abort", () => { rec.aborted = true; });
	    if (window.__fail) return Promise.reject(new TypeError("Failed to fetch"));
	    const plain = {headers: opts && opts.headers, credentials: "same-origin"}; // no signal: a late answer does arrive
	    const wait = window.__slow[q] || 0;
	    return new Promise(res => setTimeout(res, wait)).then(() => real(url, plain));
	  };
	})()`))
	asked := func() string {
		return e.jsString(t, `window.__asked.map(r => r.q + (r.aborted ? "(aborted)" : "")).join(",")`)
	}

	const name = "#items-0-name"
	e.do(t, "type mug quickly", chromedp.Focus(css(name)), press("mug"))
	e.waitOpen(t, name)
	time.Sleep(300 * time.Millisecond)
	if got := asked(); got != "mug" {
		t.Errorf("typing mug asked for %q, want one request for mug (debounced)", got)
	}

	// An empty field asks for nothing and shows nothing.
	e.do(t, "empty the field", chromedp.Evaluate[chromedp.Void](`window.__asked = []`),
		press(kb.Backspace+kb.Backspace+kb.Backspace))
	e.waitClosed(t, name)
	e.do(t, "ArrowDown in the empty field", press(kb.ArrowDown))
	time.Sleep(400 * time.Millisecond)
	if got := asked(); got != "" {
		t.Errorf("an emptied field asked for %q, want nothing", got)
	}
	e.waitClosed(t, name)

	// The answer for "gel" comes late, after the one for "mug": the list
	// keeps the mugs.
	e.do(t, "type gel (slow), then mug", chromedp.Evaluate[chromedp.Void](`window.__slow = {gel: 1200}`), press("gel"))
	e.waitUntil(t, "gel is asked for", `window.__asked.some(r => r.q === "gel")`)
	e.do(t, "replace it with mug", press(kb.Backspace+kb.Backspace+kb.Backspace+"mug"))
	e.waitOpen(t, name)
	e.waitUntil(t, "gel's late answer has come", `performance.getEntriesByType("resource").some(r => r.name.includes("q=gel"))`)
	time.Sleep(200 * time.Millisecond)
	if got := e.pickerOptions(t, name); len(got) != 3 || slices.Contains(got, "Gel pens") {
		t.Errorf("after a late answer for gel the list shows %q, want the three mugs", got)
	}
	if got := asked(); got != "gel(aborted),mug" {
		t.Errorf("requests %q, want gel(aborted),mug", got)
	}

	// A failure: no list, nothing said, the field is plain text.
	e.do(t, "fail", chromedp.Evaluate[chromedp.Void](`window.__fail = true; window.__asked = []`),
		press("\x1b"), setValue(name, ""), press("pen"))
	e.waitUntil(t, "pen is asked for", `window.__asked.some(r => r.q === "pen")`)
	time.Sleep(300 * time.Millisecond)
	e.waitClosed(t, name)
	if got := run(t, e, "name", chromedp.Value(css(name))); got != "pen" {
		t.Errorf("after a failed request the field holds %q, want pen", got)
	}
	e.do(t, "finish the row and press Enter",
		chromedp.SendKeys(css("#customer"), "Ada"), chromedp.SendKeys(css("#items-0-quantity"), "1"),
		chromedp.SendKeys(css("#items-0-unit_price"), "2.00"), chromedp.Focus(css(name)), press(kb.Enter),
		chromedp.WaitVisible(css("#order")))
	if o, err := e.store.GetOrder(t.Context(), 1); err != nil || o.Items[0].Name != "pen" {
		t.Errorf("Enter after a failed request stored %+v, %v; want the typed pen", o, err)
	}
}

// TestPickerAccessibility: axe-core finds nothing with the list open and
// an option active, in the light and dark schemes, on a desktop and on a
// 360 px phone, where the list stays on the screen.
func TestPickerAccessibility(t *testing.T) {
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, true)
	seedPickerProducts(t, e.store)
	for _, scheme := range []string{"light", "dark"} {
		e.colorScheme(t, scheme)
		for _, width := range []int64{1280, 360} {
			what := fmt.Sprintf("%s %d px", scheme, width)
			e.do(t, what, chromedp.EmulateViewport(width, 800, chromedp.EmulateMobile))
			e.openNewForm(t)
			e.do(t, what+": type mug", chromedp.Focus(css("#items-0-name")), press("mug"))
			e.waitOpen(t, "#items-0-name")
			e.do(t, what+": ArrowDown", press(kb.ArrowDown))
			e.axe(t, string(src), what+" picker open")
			e.shot(t, "picker-"+strings.ReplaceAll(what, " ", "-"))
			if bad := e.jsString(t, `(() => { const l = document.getElementById("items-0-name-products").getBoundingClientRect(),
			    vw = document.documentElement.clientWidth, out = [];
			  if (l.left < 0 || l.right > vw) out.push("the list spans " + Math.round(l.left) + "–" + Math.round(l.right) + " of " + vw);
			  if (document.documentElement.scrollWidth > vw + 1) out.push("the page scrolls sideways");
			  return out.join("; "); })()`); bad != "" {
				t.Errorf("%s: %s", what, bad)
			}
			// The active option is marked by more than its colour: an outline.
			if got := e.jsString(t, `getComputedStyle(document.querySelector("#items-0-name-products [aria-selected=true]")).outlineStyle`); got != "solid" {
				t.Errorf("%s: the active option's outline is %q, want solid", what, got)
			}
		}
	}
}

// TestPickerWithoutJavaScript: the server sends plain text fields (no
// combobox, no list), typing suggests nothing, and the form creates the
// order with what was typed.
func TestPickerWithoutJavaScript(t *testing.T) {
	e := start(t, false)
	seedPickerProducts(t, e.store)
	e.do(t, "open the new form", chromedp.Navigate(e.base+"/orders/new"), chromedp.WaitVisible(css("#customer")),
		chromedp.SendKeys(css("#customer"), "Dennis Ritchie"),
		fillItem("0", "MUG-01", "mug", "2", "1.25"))
	time.Sleep(400 * time.Millisecond)
	if got := e.jsString(t, `document.querySelectorAll("[role=combobox], [role=listbox], [aria-expanded], [data-product-options]").length`); got != "0" {
		t.Errorf("without JavaScript %s combobox or listbox elements, want none", got)
	}
	if got := e.jsString(t, `document.getElementById("items-0-name").type`); got != "text" {
		t.Errorf("the name field is a %q input, want text", got)
	}
	e.do(t, "create", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	o, err := e.store.GetOrder(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Items) != 1 || o.Items[0].SKU != "MUG-01" || o.Items[0].Name != "mug" || o.Items[0].UnitPrice.String() != "1.25" {
		t.Errorf("without JavaScript stored %+v, want what was typed: MUG-01 mug 1.25", o.Items)
	}
}
