package browser_test

// The product catalogue as a person uses it: the
// New form (a duplicate SKU first), the product's page, Edit, Delete; the
// List's inline edit (Enter saves, Escape cancels), the Active box, the
// search, the status filter, a sort header and a row's Delete; with
// JavaScript on and off. The accessibility and validity suites walk the
// same pages (a11y_test.go, html_test.go, htmlcs_test.go).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
	"orders/store/redisstore"
)

// catalogue is what the product tests seed: four active products and an
// inactive one, whose SKU order, name order and ids all differ; the mug
// has been edited once (a stale version exists), the lamp's name needs
// escaping.
type catalogue struct {
	mug, pen, cap, lamp, old *store.Product
}

func seedCatalogue(t *testing.T, st *redisstore.Store) catalogue {
	t.Helper()
	ctx := context.Background()
	create := func(sku, name, price string, active bool) *store.Product {
		t.Helper()
		p, err := st.CreateProduct(ctx, store.ProductInput{SKU: &sku, Name: &name, UnitPrice: &price, Active: &active})
		if err != nil {
			t.Fatalf("seeding product %s: %v", sku, err)
		}
		return p
	}
	c := catalogue{
		pen:  create("PEN-2", "Gel pen, blue", "1.05", true),
		mug:  create("MUG-1", "Enamel mug", "12.50", true),
		old:  create("OLD-9", "Old stock", "0.99", true),
		cap:  create("CAP-3", "Baseball cap", "18.00", false),
		lamp: create("LMP-4", `Desk lamp "Arc" <small> & co`, "45.00", true),
	}
	name := "Enamel mug, white"
	mug, err := st.UpdateProduct(ctx, c.mug.ID, store.ProductInput{Name: &name}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.mug = mug
	return c
}

// all is the catalogue's products in SKU order (the List's own).
func (c catalogue) all() []*store.Product {
	return []*store.Product{c.cap, c.lamp, c.mug, c.old, c.pen}
}

func productIDs(ps ...*store.Product) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func productRow(p *store.Product) string { return fmt.Sprintf("#product-row-%d", p.ID) }

// wantProductRows waits until the List shows the rows want, in order.
func (e *env) wantProductRows(t *testing.T, what string, want ...*store.Product) {
	t.Helper()
	ids := productIDs(want...)
	js := fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#product-results tbody tr[id^='product-row-']")].map(r => +r.id.slice(12))) === %q`,
		strings.ReplaceAll(fmt.Sprint(ids), " ", ","))
	e.waitUntil(t, what+": the rows are "+fmt.Sprint(ids), `document.readyState === "complete" && `+js)
}

// storedProduct reads a product back; gone reports that it is not stored.
func storedProduct(t *testing.T, st *redisstore.Store, id int64) (p *store.Product, gone bool) {
	t.Helper()
	p, err := st.GetProduct(context.Background(), id)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return nil, true
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, false
}

// TestProductCreateEditDelete: the New form refuses a SKU another product
// has (case aside), naming that product, with focus on the SKU field and
// what was typed kept; then creates the product, edits it on its own page
// (Active off, a new price, Enter saves) and deletes it from there: with
// JavaScript after the confirm dialog, without it through the
// confirmation page.
func TestProductCreateEditDelete(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(map[bool]string{true: "javascript", false: "no javascript"}[js], func(t *testing.T) {
			e := start(t, js)
			c := seedCatalogue(t, e.store)
			e.do(t, "open the New form from the List",
				chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css("#product-results table")),
				chromedp.Click(css(`#products .page-head a[href="/products/new"]`)), chromedp.WaitVisible(css("#sku")))
			if got := e.path(t); got != "/products/new" {
				t.Errorf("New product went to %q, want /products/new", got)
			}
			if js {
				e.setMarker(t)
			}
			if got := e.jsString(t, `document.getElementById("active").checked`); got != "true" {
				t.Errorf("a new product's Active box is checked=%s, want checked", got)
			}
			if got := run(t, e, "currency", chromedp.Value(css("#currency"))); got != "USD" {
				t.Errorf("a new product's currency is %q, want USD", got)
			}

			e.do(t, "a SKU the mug has",
				chromedp.SendKeys(css("#sku"), "mug-1"),
				chromedp.SendKeys(css("#name"), "Travel mug"),
				chromedp.SendKeys(css("#unit_price"), "9.90"),
				chromedp.Click(css("#product-edit button[type=submit]")),
				chromedp.WaitVisible(css("#sku-err")))
			if got, want := e.text(t, "#sku-err"), fmt.Sprintf("product %d", c.mug.ID); !strings.Contains(got, want) {
				t.Errorf("the SKU's message is %q, want it to name %s", got, want)
			}
			if got := e.attr(t, "#sku", "aria-invalid"); got != "true" {
				t.Errorf("the SKU field's aria-invalid is %q, want true", got)
			}
			if js {
				e.waitFocus(t, "after the 422", "#sku")
			}
			for sel, want := range map[string]string{"#sku": "mug-1", "#name": "Travel mug", "#unit_price": "9.90"} {
				if got := run(t, e, "value of "+sel, chromedp.Value(css(sel))); got != want {
					t.Errorf("%s kept %q, want %q", sel, got, want)
				}
			}
			if page, _ := e.store.ListProducts(context.Background(), store.ProductQuery{}); page.Total != 5 {
				t.Errorf("%d products stored after a refused create, want 5", page.Total)
			}

			e.do(t, "another SKU",
				chromedp.SetValue(css("#sku"), "MUG-TRAVEL"),
				chromedp.Click(css("#product-edit button[type=submit]")),
				chromedp.WaitVisible(css("#product")))
			// (The refused create may have used up an id: ids need not be dense.)
			id, err := strconv.ParseInt(strings.TrimPrefix(e.path(t), "/products/"), 10, 64)
			if p, gone := storedProduct(t, e.store, id); err != nil || gone || p.SKU != "MUG-TRAVEL" || p.Name != "Travel mug" || !p.Active {
				t.Fatalf("after create the URL is %q, want the new product's page (%v, %+v)", e.path(t), err, p)
			}
			e.waitText(t, "#notice", fmt.Sprintf("Product %d created.", id))
			e.waitText(t, "#product h1", "MUG-TRAVEL")
			e.waitText(t, "#product h1 .badge", "Active")
			if js {
				e.waitFocus(t, "after create", "#product h1")
			}

			// Edit on its own page: Active off, a new price, Enter saves.
			e.do(t, "edit",
				chromedp.Click(css(`#product a[href$="/edit"]`)), chromedp.WaitVisible(css("#product-form")),
				chromedp.Click(css("#active")),
				chromedp.SetValue(css("#unit_price"), "11.00"),
				chromedp.SendKeys(css("#name"), kb.Enter),
				chromedp.WaitVisible(css("#product")))
			e.waitText(t, "#product h1 .badge", "Inactive")
			e.waitText(t, "#product .facts", "11.00 USD")
			e.waitText(t, "#notice", fmt.Sprintf("Product %d saved.", id))
			if p, _ := storedProduct(t, e.store, id); p == nil || p.Active || p.UnitPrice.String() != "11.00" || p.Version != 2 {
				t.Errorf("after the edit the product is %+v, want inactive at 11.00, version 2", p)
			}
			if js {
				e.waitFocus(t, "after save", "#product h1")
				if !e.markerKept(t) {
					t.Error("create or edit reloaded the page; want htmx swaps")
				}
			}

			// Delete from its page.
			e.do(t, "delete", chromedp.Click(css("#product .page-head button.danger")))
			if !js {
				e.do(t, "the confirmation page", chromedp.WaitVisible(css("#product-delete")))
				e.waitPath(t, fmt.Sprintf("/products/%d?", id), "confirm=delete")
				e.waitText(t, "#product-delete h1", "Delete product MUG-TRAVEL?")
				if _, gone := storedProduct(t, e.store, id); gone {
					t.Fatal("the confirmation page deleted the product")
				}
				e.do(t, "confirm", chromedp.Click(css("#product-delete button.danger")))
			}
			e.do(t, "the List", chromedp.WaitVisible(css("#products")))
			e.waitText(t, "#notice", fmt.Sprintf("Product %d deleted.", id))
			if got := e.path(t); got != "/products" {
				t.Errorf("after delete the URL is %q, want /products", got)
			}
			if _, gone := storedProduct(t, e.store, id); !gone {
				t.Error("the product is still stored after Delete")
			}
			if js {
				if len(e.dialogs) != 1 || !strings.Contains(e.dialogs[0], "Delete product MUG-TRAVEL") {
					t.Errorf("confirm dialogs %q, want one asking to delete MUG-TRAVEL", e.dialogs)
				}
				e.waitFocus(t, "after delete", "main h1")
			} else if len(e.dialogs) != 0 {
				t.Errorf("without JavaScript a dialog asked %q", e.dialogs)
			}
		})
	}
}

// TestProductListInline: the List with JavaScript: a row edits in place
// (focus in its first field with the cursor at the end; Enter saves and
// focus goes to the row's Edit link; Escape leaves without saving), the
// Active box, the search as one types, the status filter, a sort header
// (focus stays on it) and a row's Delete after the confirm dialog (focus
// goes to the row that takes its place), the shortcuts j, e and ?; never
// a page load.
func TestProductListInline(t *testing.T) {
	e := start(t, true)
	c := seedCatalogue(t, e.store)
	e.do(t, "open the List", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(productRow(c.pen))))
	e.setMarker(t)
	e.wantProductRows(t, "by SKU", c.all()...)
	if got := e.attr(t, `#product-results th[aria-sort]`, "aria-sort"); got != "ascending" || !strings.HasPrefix(e.text(t, `#product-results th[aria-sort]`), "SKU") {
		t.Errorf("the plain List's sorted header is %q (%s), want SKU ascending", e.text(t, `#product-results th[aria-sort]`), got)
	}

	// Enter saves the row.
	pen, n := productRow(c.pen), c.pen.ID
	field := func(p *store.Product, name string) string { return fmt.Sprintf("#row-%d-%s", p.ID, name) }
	e.do(t, "edit a row", chromedp.Click(css(pen+" a[hx-get]")), chromedp.WaitVisible(css(field(c.pen, "name"))))
	e.waitFocus(t, "the row form opens", field(c.pen, "sku"))
	if got := e.jsString(t, fmt.Sprintf(`(() => { const i = document.querySelector(%q); return i.selectionStart + "/" + i.value.length; })()`, field(c.pen, "sku"))); got != "5/5" {
		t.Errorf("the SKU field's cursor is at %s, want the end of the text (5/5)", got)
	}
	e.do(t, "change the name, Enter", chromedp.SetValue(css(field(c.pen, "name")), "Gel pen, black"),
		chromedp.SendKeys(css(field(c.pen, "name")), kb.Enter), chromedp.WaitNotPresent(css(pen+" form.row-form")))
	e.waitText(t, pen, "Gel pen, black")
	e.waitText(t, "#notice", fmt.Sprintf("Product %d saved.", n))
	e.waitFocus(t, "after an inline save", pen+` a[href$="/edit"]`)
	if p, _ := storedProduct(t, e.store, n); p.Name != "Gel pen, black" || p.Version != 2 || !p.Active {
		t.Errorf("after the inline save the pen is %+v, want the new name at version 2, still active", p)
	}

	// Escape leaves without saving.
	e.do(t, "edit, type, Escape", chromedp.Click(css(pen+" a[hx-get]")), chromedp.WaitVisible(css(field(c.pen, "name"))),
		chromedp.SendKeys(css(field(c.pen, "name")), " zzz"), chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotPresent(css(pen+" form.row-form")))
	e.waitFocus(t, "after Escape", pen+` a[href$="/edit"]`)
	if got := e.text(t, pen); strings.Contains(got, "zzz") {
		t.Errorf("after Escape the row says %q", got)
	}
	if p, _ := storedProduct(t, e.store, n); p.Version != 2 {
		t.Errorf("Escape saved: version %d", p.Version)
	}

	// The Active box: the mug leaves the order forms.
	mug := productRow(c.mug)
	e.do(t, "untick Active", chromedp.Click(css(mug+" a[hx-get]")), chromedp.WaitVisible(css(field(c.mug, "active"))),
		chromedp.Click(css(field(c.mug, "active"))), chromedp.Click(css(mug+" button[type=submit]")),
		chromedp.WaitNotPresent(css(mug+" form.row-form")))
	e.waitText(t, mug+" .badge", "Inactive")
	if p, _ := storedProduct(t, e.store, c.mug.ID); p.Active || p.Name != c.mug.Name {
		t.Errorf("after unticking Active the mug is %+v, want inactive, its name kept", p)
	}

	// The search narrows as one types; the URL follows.
	e.do(t, "search", chromedp.SendKeys(css("#q"), "gel"))
	e.waitShows(t, "#results-count", "of 1")
	e.waitPath(t, "/products?", "q=gel")
	e.wantProductRows(t, "searching gel", c.pen)
	e.do(t, "clear the search", setValue("#q", ""))
	e.waitShows(t, "#results-count", "of 5")

	// The status filter.
	e.do(t, "only the inactive", setValue("#active-filter", "false"))
	e.waitPath(t, "active=false")
	e.waitShows(t, "#results-count", "of 2")
	e.wantProductRows(t, "inactive", c.cap, c.mug)
	e.do(t, "only the active", setValue("#active-filter", "true"))
	e.waitPath(t, "active=true")
	e.wantProductRows(t, "active", c.lamp, c.old, c.pen)
	e.do(t, "every status", setValue("#active-filter", ""))
	e.waitShows(t, "#results-count", "of 5")

	// A sort header: by name, then the other way; focus stays on it.
	e.do(t, "sort by name", chromedp.Click(css(`#product-results th a.sort[data-sort=name]`)))
	e.waitPath(t, "sort=name")
	e.waitShows(t, `#product-results th[aria-sort="ascending"]`, "Name")
	e.wantProductRows(t, "by name", c.cap, c.lamp, c.mug, c.pen, c.old)
	e.waitFocus(t, "after sorting", `#product-results th a.sort[data-sort=name]`)
	e.do(t, "sort by name, Z to A", chromedp.Click(css(`#product-results th a.sort[data-sort=name]`)))
	e.waitPath(t, "sort=-name")
	e.wantProductRows(t, "by name, Z to A", c.old, c.pen, c.mug, c.lamp, c.cap)

	// Delete from a row: the confirm dialog, the row goes, focus goes to
	// the row that takes its place.
	old := productRow(c.old)
	e.do(t, "delete a row", chromedp.Click(css(old+" button.danger")), chromedp.WaitNotPresent(css(old)))
	e.waitText(t, "#notice", fmt.Sprintf("Product %d deleted.", c.old.ID))
	if len(e.dialogs) != 1 || !strings.Contains(e.dialogs[0], "Delete product OLD-9 (Old stock)?") {
		t.Errorf("confirm dialogs %q, want one asking to delete OLD-9", e.dialogs)
	}
	if _, gone := storedProduct(t, e.store, c.old.ID); !gone {
		t.Error("the deleted row's product is still stored")
	}
	e.waitShows(t, "#results-count", "of 4")
	e.waitFocusIn(t, strings.TrimPrefix(productRow(c.pen), "#"))

	// The shortcuts work on product rows: j moves to the next row, e edits
	// it in place; ? lists them in words for any resource's list.
	e.do(t, "press j", press("j"))
	e.waitFocusIn(t, strings.TrimPrefix(mug, "#"))
	e.do(t, "press e", press("e"), chromedp.WaitVisible(css(field(c.mug, "sku"))))
	e.waitFocus(t, "after e", field(c.mug, "sku"))
	e.do(t, "leave the row", press("\x1b"), chromedp.WaitNotPresent(css(mug+" form.row-form")))
	e.do(t, "press ?", press("?"), chromedp.WaitVisible(css("dialog#shortcuts")))
	if got := e.text(t, "dialog#shortcuts"); !strings.Contains(got, "Edit the current row") || strings.Contains(got, "current order") {
		t.Errorf("on the product List the shortcuts dialog says %q, want rows, not orders", got)
	}
	e.do(t, "close the shortcuts", press("\x1b"), chromedp.WaitNotVisible(css("dialog#shortcuts")))
	if !e.markerKept(t) {
		t.Error("the List reloaded the page; want htmx swaps")
	}
	e.shot(t, "products-list")
}

// TestProductListWithoutJavaScript: the same List without JavaScript: the
// search and the filter by the Search button, a sort header link, Edit
// and the Active box through the edit page (an unticked box sends the
// hidden false; a ticked one true), a row's Delete through the
// confirmation page, whose Keep it keeps it.
func TestProductListWithoutJavaScript(t *testing.T) {
	e := start(t, false)
	c := seedCatalogue(t, e.store)
	e.do(t, "open the List", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(productRow(c.pen))))
	e.wantProductRows(t, "by SKU", c.all()...)

	e.do(t, "search", chromedp.SendKeys(css("#q"), "lamp"), chromedp.Click(css("#search button[type=submit]")))
	e.waitPath(t, "q=lamp")
	e.waitShows(t, "#results-count", "of 1")
	e.wantProductRows(t, "searching lamp", c.lamp)

	e.do(t, "filter", setValue("#q", ""), setValue("#active-filter", "false"), chromedp.Click(css("#search button[type=submit]")))
	e.waitPath(t, "active=false")
	e.waitShows(t, "#results-count", "of 1")
	e.wantProductRows(t, "inactive", c.cap)

	e.do(t, "every product", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(productRow(c.pen))),
		chromedp.Click(css(`#product-results th a.sort[data-sort=name]`)))
	e.waitPath(t, "sort=name")
	e.wantProductRows(t, "by name", c.cap, c.lamp, c.mug, c.pen, c.old)

	// Edit goes to the edit page; untick Active, save; tick it, save.
	e.do(t, "edit the pen", chromedp.Click(css(productRow(c.pen)+" a[href$='/edit']")), chromedp.WaitVisible(css("#product-form")))
	e.waitPath(t, fmt.Sprintf("/products/%d/edit", c.pen.ID))
	e.do(t, "untick Active", chromedp.Click(css("#active")), chromedp.Click(css("#product-edit button[type=submit]")),
		chromedp.WaitVisible(css("#product")))
	e.waitShows(t, "#product h1 .badge", "Inactive")
	if p, _ := storedProduct(t, e.store, c.pen.ID); p.Active {
		t.Error("an unticked Active box left the product active")
	}
	e.do(t, "tick Active", chromedp.Click(css(`#product a[href$="/edit"]`)), chromedp.WaitVisible(css("#product-form")),
		chromedp.Click(css("#active")), chromedp.Click(css("#product-edit button[type=submit]")), chromedp.WaitVisible(css("#product")))
	e.waitShows(t, "#product h1 .badge", "Active")
	if p, _ := storedProduct(t, e.store, c.pen.ID); !p.Active || p.Version != 3 {
		t.Errorf("after ticking Active the pen is %+v, want active at version 3", p)
	}

	// A row's Delete asks on a confirmation page; Keep it keeps it.
	e.do(t, "back to the List", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(productRow(c.old))),
		chromedp.Click(css(productRow(c.old)+" button.danger")), chromedp.WaitVisible(css("#product-delete")))
	e.waitShows(t, "#product-delete", "Old stock")
	e.do(t, "keep it", chromedp.Click(css(`#product-delete a[href="/products/`+strconv.FormatInt(c.old.ID, 10)+`"]`)),
		chromedp.WaitVisible(css("#product")))
	if _, gone := storedProduct(t, e.store, c.old.ID); gone {
		t.Fatal("Keep it deleted the product")
	}
	e.do(t, "delete", chromedp.Click(css("#product .page-head button.danger")), chromedp.WaitVisible(css("#product-delete")),
		chromedp.Click(css("#product-delete button.danger")), chromedp.WaitVisible(css("#products")))
	e.waitShows(t, "#notice", fmt.Sprintf("Product %d deleted.", c.old.ID))
	e.waitPath(t, "/products")
	e.wantProductRows(t, "after the delete", c.cap, c.lamp, c.mug, c.pen)
	if _, gone := storedProduct(t, e.store, c.old.ID); !gone {
		t.Error("the product is still stored after the confirmation page's Delete")
	}
}
