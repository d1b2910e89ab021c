package routes

// What only products promise: a SKU unique case aside, the
// fields and their checks, the active checkbox, the List's query, and
// orders that never change when a product does. What every resource
// promises is in resources_test.go, which runs products too.

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"orders/store"
	"orders/testutil"
)

// productJSON is the JSON of one product, money kept as the string sent.
type productJSON struct {
	ID        int64  `json:"id"`
	SKU       string `json:"sku"`
	Name      string `json:"name"`
	UnitPrice string `json:"unit_price"`
	Currency  string `json:"currency"`
	Active    bool   `json:"active"`
	Version   int64  `json:"version"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// productList is GET /products as JSON.
type productList struct {
	Products          []productJSON `json:"products"`
	Page              int           `json:"page"`
	PerPage           int           `json:"per_page"`
	Total             int64         `json:"total"`
	TotalIsLowerBound *bool         `json:"total_is_lower_bound"`
	Prev              *string       `json:"prev"`
	Next              *string       `json:"next"`
}

func productPath(id int64, rest ...string) string {
	return productResource.MemberPath(id) + strings.Join(rest, "")
}

// productCount is the number of products stored.
func (a *testApp) productCount(t testing.TB) int64 {
	t.Helper()
	p, err := a.store.ListProducts(t.Context(), store.ProductQuery{PerPage: 1})
	if err != nil {
		t.Fatalf("counting products: %v", err)
	}
	return p.Total
}

// createProduct makes a product through POST /products (JSON).
func (a *testApp) createProduct(t testing.TB, v map[string]any) productJSON {
	t.Helper()
	var p productJSON
	a.do(t, http.MethodPost, "/products", testutil.JSON(v), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &p)
	return p
}

func (a *testApp) fetchProduct(t testing.TB, id int64) productJSON {
	t.Helper()
	var p productJSON
	a.get(t, productPath(id), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &p)
	return p
}

func (a *testApp) listProducts(t testing.TB, query string) productList {
	t.Helper()
	var l productList
	a.get(t, "/products?"+query, testutil.HJSON).WantStatus(t, http.StatusOK).WantNegotiated(t).JSON(t, &l)
	return l
}

func product(sku, name, price string) map[string]any {
	return map[string]any{"sku": sku, "name": name, "unit_price": price}
}

// TestProductCreate: the fields as stored and shown, their defaults, and
// money read as text from a JSON string or number.
func TestProductCreate(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		r := a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": " KBD-60 ", "name": "  Compact  keyboard ", "unit_price": "49.5"}), testutil.HJSON)
		r.WantStatus(t, http.StatusCreated)
		var p productJSON
		r.JSON(t, &p)
		r.WantHeader(t, "Location", productPath(p.ID))
		want := productJSON{ID: p.ID, SKU: "KBD-60", Name: "Compact  keyboard", UnitPrice: "49.50", Currency: "USD", Active: true, Version: 1,
			CreatedAt: p.CreatedAt, UpdatedAt: p.CreatedAt}
		if p != want || !strings.HasSuffix(p.CreatedAt, "Z") {
			t.Errorf("%s: got %+v, want %+v", r.What, p, want)
		}
		q := a.createProduct(t, map[string]any{"sku": "mouse.2_b", "name": "Mouse", "unit_price": jsonNumber("19.99"), "currency": "eur", "active": false})
		if q.UnitPrice != "19.99" || q.Currency != "EUR" || q.Active || q.SKU != "mouse.2_b" {
			t.Errorf("a JSON number price, lower-case currency, inactive: got %+v", q)
		}
		for _, price := range []any{jsonNumber("0"), "0.00", "1000000.00", jsonNumber("0.1"), "7"} {
			a.createProduct(t, map[string]any{"sku": fmt.Sprintf("P-%v", price), "name": "Priced", "unit_price": price})
		}
		// The page, the fragment and the row show what is stored.
		a.get(t, productPath(q.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "product").
			WantContains(t, "<code>mouse.2_b</code>", "19.99 EUR", "Inactive", "(version 1)", "<title>Product "+itoa(q.ID)+" · mouse.2_b · Orders</title>")
		a.get(t, productPath(q.ID), testutil.HXTo("tr#product-row-"+itoa(q.ID))).WantStatus(t, http.StatusOK).
			WantContains(t, "<code>mouse.2_b</code>", "Mouse", "19.99 <small", "Inactive")
	})
}

// TestProductValidation: every field's check, over JSON (errors.<field>)
// and a form (the message beside the field, the typed value kept); wrong
// JSON types are a 400, never a 422 or a 500; nothing is stored.
func TestProductValidation(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		held := a.createProduct(t, product("HELD-1", "Held", "1.00"))
		valid := func(field string, v any) map[string]any {
			b := map[string]any{"sku": "NEW-1", "name": "New", "unit_price": "2.00"}
			if v == nil {
				delete(b, field)
			} else {
				b[field] = v
			}
			return b
		}
		const msgSKU = "must be at most 64 letters, digits, '-', '_' or '.'"
		for _, c := range []struct {
			field string
			value any // nil: not sent
			msg   string
		}{
			{"sku", nil, "is required"},
			{"sku", "", "is required"},
			{"sku", "   ", "is required"},
			{"sku", "\u200b", "is required"},
			{"sku", "bad sku", msgSKU},
			{"sku", "bad!", msgSKU},
			{"sku", "ÉTÉ-1", msgSKU},
			{"sku", "a/b", msgSKU},
			{"sku", strings.Repeat("S", 65), msgSKU},
			{"sku", "AB\u202eC", "must not contain bidirectional override"},
			{"name", nil, "is required"},
			{"name", "", "is required"},
			{"name", " \t ", "is required"},
			{"name", "\u200b\ufeff", "is required"},
			{"name", strings.Repeat("n", 201), "must be at most 200 characters"},
			{"name", "tab\there", "must not contain control characters"},
			{"name", "line\nbreak", "must not contain control characters"},
			{"name", "evil\u202eeman", "must not contain bidirectional override"},
			{"unit_price", nil, "is required"},
			{"unit_price", "", ""},
			{"unit_price", "abc", ""},
			{"unit_price", "19.999", "two decimals"},
			{"unit_price", jsonNumber("19.999"), "two decimals"},
			{"unit_price", "-1.00", ""},
			{"unit_price", "1e2", ""},
			{"unit_price", "1,50", ""},
			{"unit_price", "1000000.01", "must be at most 1000000.00"},
			{"unit_price", jsonNumber("1e400"), ""},
			{"currency", "", "three-letter ISO 4217 code"},
			{"currency", "US", "three-letter ISO 4217 code"},
			{"currency", "dollars", "three-letter ISO 4217 code"},
			{"currency", "€€€", "three-letter ISO 4217 code"},
			{"currency", "U1D", "three-letter ISO 4217 code"},
		} {
			var e errorJSON
			r := a.do(t, http.MethodPost, "/products", testutil.JSON(valid(c.field, c.value)), testutil.HJSON)
			r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t).JSON(t, &e)
			if got := e.Errors[c.field]; got == "" || !strings.Contains(got, c.msg) || len(e.Errors) != 1 {
				t.Errorf("POST /products with %s %q: errors %v, want only %s: %q", c.field, c.value, e.Errors, c.field, c.msg)
			}
			// A change of an existing product is checked the same way
			// (a field not sent is kept, so it is not required).
			if c.value != nil {
				a.do(t, http.MethodPut, productPath(held.ID), testutil.JSON(map[string]any{c.field: c.value}), testutil.HJSON).
					WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
				if got := e.Errors[c.field]; got == "" || !strings.Contains(got, c.msg) {
					t.Errorf("PUT %s with %s %q: errors %v, want %s: %q", productPath(held.ID), c.field, c.value, e.Errors, c.field, c.msg)
				}
			}
		}
		// A form: every message beside its field, every typed value kept.
		for _, mode := range []struct {
			name string
			h    testutil.H
			page bool
		}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
			r := a.do(t, http.MethodPost, "/products", testutil.Form("sku", "bad sku", "name", "", "unit_price", "1.001", "currency", "dollars",
				"active", "true", "active", "false"), mode.h).WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
			if mode.page {
				r.WantPage(t, "product-form")
			} else {
				r.WantFragment(t, "product-form")
			}
			r.WantFieldError(t, "sku", "SKU "+msgSKU[:20], "bad sku")
			r.WantFieldError(t, "name", "Name is required", "")
			r.WantFieldError(t, "unit_price", "two decimals", "1.001")
			r.WantFieldError(t, "currency", "three-letter", "dollars")
			r.WantContains(t, "The product was not created: please correct the marked fields.", `action="/products"`, `hx-post="/products"`)
			if box := testutil.Tag(r.Body, "active"); !strings.Contains(box, "checked") {
				t.Errorf("%s: the active box %s, want it checked as sent", r.What, box)
			}
		}
		// Wrong JSON types: 400, whatever the representation.
		for _, c := range []struct{ body, want string }{
			{`{"sku": 60, "name": "x", "unit_price": "1"}`, "field sku: must be a string"},
			{`{"sku": "X", "name": ["x"], "unit_price": "1"}`, "field name: must be a string"},
			{`{"sku": "X", "name": "x", "unit_price": true}`, "field unit_price: must be a decimal string"},
			{`{"sku": "X", "name": "x", "unit_price": [1]}`, "field unit_price"},
			{`{"sku": "X", "name": "x", "unit_price": "1", "active": "true"}`, "field active: must be true or false"},
			{`{"sku": "X", "name": "x", "unit_price": "1", "active": 1}`, "field active: must be true or false"},
			{`{"sku": "X", "name": "x", "unit_price": "1", "active": "yes"}`, "field active: must be true or false"},
			{`{"sku": "X", "name": "x", "unit_price": "1", "active": {}}`, "field active: must be true or false"},
			{`{"sku": "X", "name": "x", "unit_price": "1", "currency": ["USD"]}`, "field currency: must be a string"},
			{`{"sku": "X", "name": "x", "unit_price": "1", "version": "1"}`, "field version: must be a whole number"},
		} {
			for _, m := range []struct{ method, path string }{{http.MethodPost, "/products"}, {http.MethodPut, productPath(held.ID)}} {
				var e errorJSON
				a.do(t, m.method, m.path, testutil.JSON(c.body), testutil.HJSON).WantStatus(t, http.StatusBadRequest).JSON(t, &e)
				if !strings.Contains(e.Error, c.want) {
					t.Errorf("%s %s %s: error %q, want %q", m.method, m.path, c.body, e.Error, c.want)
				}
				a.do(t, m.method, m.path, testutil.JSON(c.body), testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error").
					WantContains(t, strings.ReplaceAll(capitalized(c.want), `"`, "&#34;"))
				a.do(t, m.method, m.path, testutil.JSON(c.body), testutil.HXTo("main#main")).WantStatus(t, http.StatusBadRequest).WantFragment(t, "error")
			}
		}
		// A form's active is true or false (a checkbox's on, 1 and 0 too).
		for _, v := range []string{"yes", "", "2", "truthy"} {
			var e errorJSON
			a.do(t, http.MethodPost, "/products", testutil.Form("sku", "F-1", "name", "x", "unit_price", "1", "active", v), testutil.HJSON).
				WantStatus(t, http.StatusBadRequest).JSON(t, &e)
			if e.Error != "active must be true or false" {
				t.Errorf("a form's active=%q: error %q, want active must be true or false", v, e.Error)
			}
		}
		if n := a.productCount(t); n != 1 {
			t.Errorf("%d products after 422s and 400s, want 1", n)
		}
		if got := a.fetchProduct(t, held.ID); got != held {
			t.Errorf("after refused changes: %+v, want %+v", got, held)
		}
	})
}

// TestProductActive: a form's checkbox sends "true" before a hidden
// "false" (the first value counts), so an unticked box sends "false"
// alone; a create without active is active; a change without it keeps it.
func TestProductActive(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for i, c := range []struct {
			kv   []string
			want bool
		}{
			{[]string{"active", "true", "active", "false"}, true},
			{[]string{"active", "false"}, false},
			{nil, true},
			{[]string{"active", "on", "active", "false"}, true},
			{[]string{"active", "0"}, false},
			{[]string{"active", "FALSE", "active", "true"}, false},
		} {
			for j, enc := range []func(kv ...string) testutil.Body{testutil.Form, testutil.Multipart} {
				kv := append([]string{"sku", fmt.Sprintf("ACT-%d-%d", i, j), "name", "Box", "unit_price", "1"}, c.kv...)
				var p productJSON
				a.do(t, http.MethodPost, "/products", enc(kv...), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &p)
				if p.Active != c.want {
					t.Errorf("POST /products %v: active %v, want %v", kv, p.Active, c.want)
				}
			}
		}
		p := a.createProduct(t, product("TOGGLE", "Toggle", "1.00"))
		row := testutil.HXTo("tr#product-row-" + itoa(p.ID))
		// The inline form unticked: the hidden false alone.
		a.do(t, http.MethodPut, productPath(p.ID), testutil.Form("_method", "PUT", "version", "1", "sku", "TOGGLE", "name", "Toggle",
			"unit_price", "1.00", "active", "false"), row).WantStatus(t, http.StatusOK).WantContains(t, "Inactive")
		if got := a.fetchProduct(t, p.ID); got.Active || got.Version != 2 {
			t.Errorf("after unticking: %+v, want inactive at version 2", got)
		}
		// A change that does not send active keeps it.
		a.do(t, http.MethodPut, productPath(p.ID), testutil.Form("name", "Renamed"), testutil.HJSON).WantStatus(t, http.StatusOK)
		a.do(t, http.MethodPut, productPath(p.ID), testutil.JSON(map[string]any{"name": "Renamed again", "active": nil}), testutil.HJSON).WantStatus(t, http.StatusOK)
		if got := a.fetchProduct(t, p.ID); got.Active || got.Version != 4 {
			t.Errorf("after changes without active: %+v, want still inactive at version 4", got)
		}
		// The forms show the box as stored.
		for _, h := range []testutil.H{testutil.HPage, row} {
			r := a.get(t, productPath(p.ID, "/edit"), h).WantStatus(t, http.StatusOK)
			id := "active"
			if h["HX-Target"] != "" {
				id = "row-" + itoa(p.ID) + "-active"
			}
			box := testutil.Tag(r.Body, id)
			if box == "" || strings.Contains(box, "checked") {
				t.Errorf("%s: the active box %q, want it there and unticked", r.What, box)
			}
			r.WantContains(t, `<input type="hidden" name="active" value="false">`)
		}
	})
}

// TestProductDuplicateSKU: a SKU another product has, in any case, is a
// 422 whose errors.sku names the holder, over JSON and forms, on create
// and on change; the form shown again is the one the request came from
// (the New form, the product's Edit form, its List row) with what the
// person typed; the SKU is free again once its holder lets it go.
func TestProductDuplicateSKU(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		holder := a.createProduct(t, product("KBD-60", "Compact keyboard", "49.00"))
		other := a.createProduct(t, product("MUG-1", "Enamel mug", "5.00"))
		msg := "is already the SKU of product " + itoa(holder.ID)
		for _, sku := range []string{"KBD-60", "kbd-60", " Kbd-60 "} {
			var e errorJSON
			r := a.do(t, http.MethodPost, "/products", testutil.JSON(product(sku, "Another", "1.00")), testutil.HJSON)
			r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t).JSON(t, &e)
			if e.Errors["sku"] != msg || e.Error == "" || e.RequestID == "" {
				t.Errorf("%s with SKU %q: got %+v, want errors.sku %q", r.What, sku, e, msg)
			}
		}
		for _, mode := range []struct {
			name string
			h    testutil.H
			page bool
		}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
			for _, enc := range []func(kv ...string) testutil.Body{testutil.Form, testutil.Multipart} {
				r := a.do(t, http.MethodPost, "/products", enc("sku", "kbd-60", "name", "Typed name", "unit_price", "2.50", "active", "false"), mode.h)
				r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
				if mode.page {
					r.WantPage(t, "product-form")
				} else {
					r.WantFragment(t, "product-form")
				}
				r.WantFieldError(t, "sku", "SKU "+msg, "kbd-60")
				r.WantContains(t, "New product", `value="Typed name"`, `value="2.50"`, `hx-post="/products"`)
			}
		}
		if n := a.productCount(t); n != 2 {
			t.Fatalf("%d products after duplicate creates, want 2", n)
		}

		// A change to the holder's SKU.
		var e errorJSON
		a.do(t, http.MethodPut, productPath(other.ID), testutil.JSON(map[string]any{"sku": "kbd-60", "version": 1}), testutil.HJSON).
			WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
		if e.Errors["sku"] != msg {
			t.Errorf("PUT another product's SKU: errors %v, want sku %q", e.Errors, msg)
		}
		for _, mode := range []struct {
			name string
			h    testutil.H
			page bool
		}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
			r := a.do(t, http.MethodPost, productPath(other.ID), testutil.Form("_method", "PUT", "version", "1", "sku", "KBD-60", "name", "Typed mug"), mode.h)
			r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
			if mode.page {
				r.WantPage(t, "product-form")
			} else {
				r.WantFragment(t, "product-form")
			}
			// The Edit form of that product: saving it again changes it,
			// never creates another.
			r.WantFieldError(t, "sku", "SKU "+msg, "KBD-60")
			r.WantContains(t, "Edit product", `action="`+productPath(other.ID)+`"`, `hx-put="`+productPath(other.ID)+`"`,
				`name="_method" value="PUT"`, `name="version" value="1"`, `value="Typed mug"`, "The changes were not saved")
			r.WantLacks(t, "New product", `hx-post="/products"`, "Create product")
		}
		row := "product-row-" + itoa(other.ID)
		r := a.do(t, http.MethodPut, productPath(other.ID), testutil.Form("version", "1", "sku", "kbd-60", "name", "Enamel mug", "unit_price", "5.00", "active", "false"),
			testutil.HXTo("tr#"+row))
		r.WantStatus(t, http.StatusUnprocessableEntity)
		if !strings.HasPrefix(strings.TrimSpace(r.Body), `<tr id="`+row+`" class="editing" data-live="form"`) {
			t.Errorf("%s: want that product's row form; got:\n%s", r.What, testutil.Snippet(r.Body))
		}
		r.WantFieldError(t, "row-"+itoa(other.ID)+"-sku", "SKU "+msg, "kbd-60")
		r.WantContains(t, `name="version" value="1"`, `hx-put="`+productPath(other.ID)+`"`)
		wantNotice(t, r, noticeError, "Product "+itoa(other.ID)+" was not saved")
		if got := a.fetchProduct(t, other.ID); got != other {
			t.Errorf("after refused SKU changes: %+v, want %+v", got, other)
		}

		// Its own SKU in another case is no duplicate.
		h := a.fetchProduct(t, holder.ID)
		var p productJSON
		a.do(t, http.MethodPut, productPath(holder.ID), testutil.JSON(map[string]any{"sku": "kbd-60", "version": h.Version}), testutil.HJSON).
			WantStatus(t, http.StatusOK).JSON(t, &p)
		if p.SKU != "kbd-60" || p.Version != h.Version+1 {
			t.Errorf("a product's own SKU in lower case: %+v, want sku kbd-60 at version %d", p, h.Version+1)
		}
		// A product that takes a new SKU lets the old one go.
		a.do(t, http.MethodPut, productPath(holder.ID), testutil.JSON(map[string]any{"sku": "KBD-61"}), testutil.HJSON).WantStatus(t, http.StatusOK)
		taken := a.createProduct(t, product("Kbd-60", "Takes the freed SKU", "1.00"))
		a.do(t, http.MethodPost, "/products", testutil.JSON(product("KBD-61", "x", "1")), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
		if e.Errors["sku"] != "is already the SKU of product "+itoa(holder.ID) {
			t.Errorf("the renamed SKU: errors %v, want it held by product %d", e.Errors, holder.ID)
		}
		// A deleted product lets its SKU go.
		a.do(t, http.MethodDelete, productPath(taken.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		again := a.createProduct(t, product("KBD-60", "Again", "1.00"))
		if again.ID == taken.ID {
			t.Errorf("a new product got the deleted product's id %d", again.ID)
		}
		a.do(t, http.MethodPost, "/products", testutil.JSON(product("kbd-60", "x", "1")), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
		if e.Errors["sku"] != "is already the SKU of product "+itoa(again.ID) {
			t.Errorf("the SKU taken again: errors %v, want it held by product %d", e.Errors, again.ID)
		}
	})
}

// listCatalogue makes the List tests' products, ids 1 to 6 in this order.
func listCatalogue(t *testing.T, a *testApp) {
	t.Helper()
	for _, p := range []map[string]any{
		{"sku": "KBD-60", "name": "Compact keyboard", "unit_price": "49.00"},
		{"sku": "KBD-87", "name": "Tenkeyless Keyboard", "unit_price": "59.00"},
		{"sku": "MUG-1", "name": "Enamel mug", "unit_price": "5.00", "active": false},
		{"sku": "PEN-2", "name": "Gel pen, blue", "unit_price": "1.05"},
		{"sku": "cable-usb", "name": "USB-C cable", "unit_price": "9.99", "active": false},
		{"sku": "ZED.9", "name": "Zither by Émile", "unit_price": "120.00"},
	} {
		a.createProduct(t, p)
	}
}

func productIDs(ps []productJSON) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = itoa(p.ID)
	}
	return strings.Join(s, ",")
}

// TestProductListQuery: q finds by id, by the start of the SKU, by the
// start of any word of the name, every term, any case and accent; active
// narrows to true or false (empty: every product; anything else 400);
// every sort orders as it says (anything else 400).
func TestProductListQuery(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		listCatalogue(t, a)
		for _, c := range []struct{ query, want string }{
			{"q=kbd", "1,2"},
			{"q=KBD-8", "2"},
			{"q=keyboard", "1,2"},
			{"q=key", "1,2"},
			{"q=tenk", "2"},
			{"q=board", ""},
			{"q=mug", "3"},
			{"q=blue", "4"},
			{"q=pen", "4"},
			{"q=usb", "5"},
			{"q=CABLE", "5"},
			{"q=emile", "6"},
			{"q=%C3%89MILE", "6"},
			{"q=zed.9", "6"},
			{"q=3", "3"},
			{"q=99", ""},
			{"q=kbd+compact", "1"},
			{"q=compact+kbd", "1"},
			{"q=kbd+zither", ""},
			{"q=%20%20kbd%20%20", "1,2"},
			{"q=kbd&active=true", "1,2"},
			{"q=mug&active=true", ""},
			{"q=mug&active=false", "3"},
			{"q=c&active=false", "5"},
			{"active=true", "1,2,4,6"},
			{"active=TRUE", "1,2,4,6"},
			{"active=false", "5,3"},
			{"active=", "5,1,2,3,4,6"},
		} {
			l := a.listProducts(t, c.query)
			got := productIDs(l.Products)
			sortedGot, sortedWant := strings.Split(got, ","), strings.Split(c.want, ",")
			if strings.HasPrefix(c.query, "q=") {
				sort.Strings(sortedGot)
				sort.Strings(sortedWant)
			}
			if strings.Join(sortedGot, ",") != strings.Join(sortedWant, ",") || l.Total != int64(len(l.Products)) {
				t.Errorf("GET /products?%s: got [%s] (total %d), want [%s]", c.query, got, l.Total, c.want)
			}
		}
		// An id is found first, before what merely starts with its digits.
		a.createProduct(t, product("1000-A", "Numbered", "1.00"))
		if got := productIDs(a.listProducts(t, "q=1").Products); !strings.HasPrefix(got, "1,") || !strings.Contains(got, ",7") {
			t.Errorf("q=1: got [%s], want product 1 first, then product 7 (SKU 1000-A)", got)
		}
		a.do(t, http.MethodDelete, productPath(7), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)

		for _, c := range []struct{ sort, want string }{
			{"", "5,1,2,3,4,6"},
			{"sku", "5,1,2,3,4,6"},
			{"-sku", "6,4,3,2,1,5"},
			{"name", "1,3,4,2,5,6"},
			{"-name", "6,5,2,4,3,1"},
			{"created", "1,2,3,4,5,6"},
			{"-created", "6,5,4,3,2,1"},
			{"SKU", "5,1,2,3,4,6"},
			{"%20-Name%20", "6,5,2,4,3,1"},
		} {
			if got := productIDs(a.listProducts(t, "sort="+c.sort).Products); got != c.want {
				t.Errorf("sort=%s: got [%s], want [%s]", c.sort, got, c.want)
			}
			want := slices.DeleteFunc(strings.Split(c.want, ","), func(id string) bool { return id == "3" || id == "5" })
			if got := productIDs(a.listProducts(t, "active=true&sort="+c.sort).Products); got != strings.Join(want, ",") {
				t.Errorf("active=true&sort=%s: got [%s], want [%s]", c.sort, got, strings.Join(want, ","))
			}
		}
		// Pages of a sort, with links that keep the query.
		l := a.listProducts(t, "active=true&sort=-name&per_page=3")
		if productIDs(l.Products) != "6,2,4" || l.Total != 4 || l.Prev != nil || l.Next == nil || *l.Next != "/products?active=true&page=2&per_page=3&sort=-name" {
			t.Errorf("page 1: got [%s] total %d prev %v next %v", productIDs(l.Products), l.Total, l.Prev, l.Next)
		}
		if l.Next != nil {
			var l2 productList
			a.get(t, *l.Next, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l2)
			if productIDs(l2.Products) != "1" || l2.Next != nil || l2.Prev == nil || *l2.Prev != "/products?active=true&per_page=3&sort=-name" {
				t.Errorf("page 2: got [%s] prev %v next %v", productIDs(l2.Products), l2.Prev, l2.Next)
			}
		}
		// Every entry carries every field.
		raw := a.get(t, "/products?per_page=1", testutil.HJSON).Object(t)
		entry := raw["products"].([]any)[0].(map[string]any)
		for _, k := range []string{"id", "sku", "name", "unit_price", "currency", "active", "version", "created_at", "updated_at"} {
			if _, ok := entry[k]; !ok {
				t.Errorf("a List entry %v lacks %q", entry, k)
			}
		}
		if raw["total_is_lower_bound"] != false {
			t.Errorf("total_is_lower_bound %v, want false", raw["total_is_lower_bound"])
		}

		// Values the List does not know: 400, in the representation asked for.
		for _, c := range []struct{ query, msg string }{
			{"active=yes", "active must be true or false"},
			{"active=1", "active must be true or false"},
			{"active=all", "active must be true or false"},
			{"sort=price", "sort must be one of sku, -sku, name, -name, -created, created"},
			{"sort=customer", "sort must be one of"},
			{"sort=-updated", "sort must be one of"},
			{"sort=sku,name", "sort must be one of"},
		} {
			target := "/products?" + c.query
			var e errorJSON
			a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t).JSON(t, &e)
			if e.Error != c.msg && !strings.HasPrefix(e.Error, c.msg) {
				t.Errorf("GET %s: error %q, want %q", target, e.Error, c.msg)
			}
			a.get(t, target, testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error").WantContains(t, quotedFirst(c.msg))
			a.get(t, target, testutil.HXTo("div#product-results")).WantStatus(t, http.StatusBadRequest).WantFragment(t, "error")
		}
	})
}

// TestProductListPage: the List page and its results fragment say what
// they list, sort by their column headers, keep the query in every link,
// and offer an inline edit and a delete on every row.
func TestProductListPage(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	listCatalogue(t, a)
	r := a.get(t, "/products?active=true&sort=-name", testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "products")
	r.WantContains(t, "<title>Products: active · Orders</title>", `<option value="true" selected>Active</option>`,
		`<input type="hidden" name="sort" value="-name">`, `aria-sort="descending"`, `href="/products/new"`,
		`id="product-row-6"`, `hx-get="/products/6/edit"`, `hx-delete="/products/6"`, `name="version" value="1"`,
		"Showing 1–4 of 4", `href="/products?active=true&amp;sort=name"`)
	r.WantLacks(t, `id="product-row-3"`, `id="product-row-5"`)
	if n := strings.Count(r.Body, "aria-sort="); n != 1 {
		t.Errorf("%s: %d aria-sort attributes, want one", r.What, n)
	}
	f := a.get(t, "/products?q=keyboard&active=true", testutil.HXTo("div#product-results")).WantStatus(t, http.StatusOK).WantFragment(t, "product-results")
	f.WantContains(t, "<title>Products: search “keyboard”, active · Orders</title>", `hx-get="/products?active=true&amp;q=keyboard"`,
		`hx-trigger="products-changed"`, "best matches first").WantLacks(t, `id="search"`, `<h1>`)
	wantNoNotice(t, f)
	a.get(t, "/products?q=zzz", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "No products match “zzz”", `href="/products/new"`)
	a.get(t, "/products?active=false&q=kbd", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "No products match “kbd” that are inactive")
	a.get(t, "/products", testutil.HXTo("main#main")).WantStatus(t, http.StatusOK).WantFragment(t, "products").
		WantContains(t, `id="search"`, `id="product-results"`, "<title>Products · Orders</title>")
	a.get(t, "/products/new", testutil.HXTo("main#main")).WantStatus(t, http.StatusOK).WantContains(t, "<title>New product · Orders</title>")
	a.get(t, "/products/2/edit", testutil.HXTo("main#main")).WantStatus(t, http.StatusOK).WantContains(t, "<title>Edit product 2 · Orders</title>", `value="KBD-87"`)
	for _, p := range []string{"/products/new", "/products/2/edit"} {
		a.get(t, p, testutil.HPage).WantStatus(t, http.StatusOK).WantHeader(t, "Cache-Control", noStore)
	}
}

// TestProductChangesNeverChangeOrders: an order's item keeps
// its own SKU, name and price; changing, deactivating or deleting the
// product it was sold as changes no order, not even its version, and the
// order is still found by that SKU.
func TestProductChangesNeverChangeOrders(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		p := a.createProduct(t, product("KBD-60", "Compact keyboard", "49.00"))
		o := a.create(t, map[string]any{"customer": "Ada Lovelace", "items": []any{
			map[string]any{"sku": "KBD-60", "name": "Compact keyboard", "quantity": 2, "unit_price": "49.00"}}})
		before := a.get(t, path(o.ID), testutil.HJSON).WantStatus(t, http.StatusOK).Body
		same := func(after string) {
			t.Helper()
			if got := a.get(t, path(o.ID), testutil.HJSON).WantStatus(t, http.StatusOK).Body; got != before {
				t.Errorf("order %d after %s:\n%s\nwant it as it was:\n%s", o.ID, after, got, before)
			}
			l := a.list(t, "/orders?q=kbd-60")
			if l.Total != 1 || len(l.Orders) != 1 || l.Orders[0].ID != o.ID {
				t.Errorf("q=kbd-60 after %s: %+v, want order %d", after, l, o.ID)
			}
		}
		a.do(t, http.MethodPut, productPath(p.ID), testutil.JSON(map[string]any{"name": "Keyboard 60%", "unit_price": "59.00", "currency": "EUR", "version": 1}), testutil.HJSON).
			WantStatus(t, http.StatusOK)
		same("a change of the product's name, price and currency")
		a.do(t, http.MethodPut, productPath(p.ID), testutil.Form("sku", "KBD-60-V2", "active", "false"), testutil.HJSON).WantStatus(t, http.StatusOK)
		same("a change of the product's SKU and deactivating it")
		a.do(t, http.MethodPost, productPath(p.ID), testutil.Form("_method", "DELETE", "version", "3"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		same("deleting the product")
		// A product of the order's SKU is a new product; the order stays.
		a.createProduct(t, product("KBD-60", "A new keyboard", "10.00"))
		same("a new product with the order's SKU")
		if n, err := a.store.CountOrders(t.Context()); err != nil || n != 1 {
			t.Errorf("%d orders (%v), want 1", n, err)
		}
	})
}

// TestProductPickerOptions: the order forms' product picker, an htmx
// request with picker set, gets the options of its listbox alone: one per
// matching active product, carrying the SKU, name and unit price that
// choosing it fills in; the same URL still answers the List's page and
// JSON to anyone else.
func TestProductPickerOptions(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		a.createProduct(t, product("MUG-01", "Enamel mug", "12.50"))
		off := product("MUG-09", "Chipped mug", "3.00")
		off["active"] = false
		a.createProduct(t, off)
		const q = "/products?q=mug&active=true&per_page=10&picker=1"
		r := a.get(t, q, testutil.HXTo("div#items-0-name-products")).WantStatus(t, http.StatusOK)
		r.WantContains(t, `role="option"`, `data-sku="MUG-01"`, `data-name="Enamel mug"`, `data-unit_price="12.50"`, `data-total="1"`)
		r.WantLacks(t, "MUG-09", "<table", `id="product-results"`)
		a.get(t, q, testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "products")
		var l struct {
			Products []productJSON `json:"products"`
		}
		a.get(t, q, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l)
		if len(l.Products) != 1 || l.Products[0].SKU != "MUG-01" {
			t.Errorf("JSON of the picker's query: %+v, want MUG-01 alone", l.Products)
		}
	})
}
