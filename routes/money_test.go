package routes

import (
	"net/http"
	"strings"
	"testing"

	"orders/testutil"
)

// An amount with more decimals than its currency has, and a currency that
// does not exist, are 422 beside the field on a form and in the JSON
// errors, for orders and products; nothing is written.
func TestMoneyThatDoesNotFitItsCurrencyIs422(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for _, tt := range []struct {
			currency, price, field, msg string
		}{
			{"JPY", "350.5", "items[0][unit_price]", "with no decimals in JPY"},
			{"BHD", "1.2345", "items[0][unit_price]", "at most three decimals in BHD"},
			{"USD", "1.234", "items[0][unit_price]", "at most two decimals"},
			{"XYZ", "1.00", "currency", "ISO 4217 code of a currency in use"},
		} {
			r := a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Ada", "currency", tt.currency,
				"items[0][name]", "Lamp", "items[0][quantity]", "1", "items[0][unit_price]", tt.price), testutil.HPage)
			r.WantStatus(t, http.StatusUnprocessableEntity)
			if tt.field == "currency" {
				r.WantFieldError(t, "currency", tt.msg, tt.currency)
			} else {
				r.WantFieldError(t, "items-0-unit_price", tt.msg, tt.price)
			}
			var e errorJSON
			a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada", "currency": tt.currency,
				"items": []any{item("Lamp", 1, tt.price)}}), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if !strings.Contains(e.Errors[tt.field], tt.msg) {
				t.Errorf("JSON order in %s at %s: errors %v, want %s: …%s…", tt.currency, tt.price, e.Errors, tt.field, tt.msg)
			}
			pf := "unit_price"
			if tt.field == "currency" {
				pf = "currency"
			}
			e = errorJSON{}
			a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": "LAMP", "name": "Lamp",
				"currency": tt.currency, "unit_price": tt.price}), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if !strings.Contains(e.Errors[pf], tt.msg) {
				t.Errorf("JSON product in %s at %s: errors %v, want %s: …%s…", tt.currency, tt.price, e.Errors, pf, tt.msg)
			}
			r = a.do(t, http.MethodPost, "/products", testutil.Form("sku", "LAMP", "name", "Lamp", "currency", tt.currency,
				"unit_price", tt.price), testutil.HPage).WantStatus(t, http.StatusUnprocessableEntity)
			r.WantFieldError(t, pf, tt.msg, "")
		}
		if n := a.count(t); n != 0 {
			t.Errorf("%d orders written by refused requests, want none", n)
		}
		if n := a.productCount(t); n != 0 {
			t.Errorf("%d products written by refused requests, want none", n)
		}
	})
}

// Amounts are shown in their currency's decimals, pages group the digits,
// JSON keeps plain decimal strings.
func TestAmountsShowInTheirCurrencyGrouped(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		jpy := a.create(t, map[string]any{"customer": "Ada", "currency": "JPY", "items": []any{item("Tea", 100, "350")}})
		if jpy.Total != "35000" || jpy.Items[0].UnitPrice != "350" {
			t.Errorf("JPY order JSON: total %q unit price %q, want 35000 and 350", jpy.Total, jpy.Items[0].UnitPrice)
		}
		bhd := a.create(t, map[string]any{"customer": "Bea", "currency": "BHD", "items": []any{item("Oud", 1000, "1.234")}})
		if bhd.Total != "1234.000" || bhd.Items[0].UnitPrice != "1.234" {
			t.Errorf("BHD order JSON: total %q unit price %q, want 1234.000 and 1.234", bhd.Total, bhd.Items[0].UnitPrice)
		}
		usd := a.create(t, map[string]any{"customer": "Cy", "items": []any{item("Desk", 3, "4115.00")}})
		a.get(t, path(jpy.ID), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, ">350</td>", ">35,000</td>", "35,000 JPY").WantLacks(t, ">350.00<", "35,000.00")
		a.get(t, path(bhd.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, ">1.234</td>", "1,234.000 BHD")
		a.get(t, path(usd.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, ">4,115.00</td>", "12,345.00 USD")
		a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "12,345.00 <small", "35,000 <small", "1,234.000 <small")
		a.get(t, path(usd.ID, "/edit"), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `value="4115.00"`, `<output id="order-total" for="item-rows">12,345.00</output>`)
		a.get(t, path(jpy.ID, "/edit"), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `value="350"`, `data-money-digits="0"`, `<output class="line-total">35,000</output>`)
		a.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusOK).WantContains(t, `"total":"12345.00"`, `"total":"35000"`, `"total":"1234.000"`)
		p := a.createProduct(t, map[string]any{"sku": "OUD", "name": "Oud", "currency": "BHD", "unit_price": "1234.5"})
		if p.UnitPrice != "1234.500" {
			t.Errorf("BHD product JSON: unit price %q, want 1234.500", p.UnitPrice)
		}
		a.get(t, productPath(p.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "1,234.500 BHD")
	})
}

// A draft may be saved without items, but confirming it is 422 with a
// clear message, on a form and in JSON, and the order stays a draft.
func TestConfirmingAnOrderWithoutItemsIs422(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		draft := a.create(t, map[string]any{"customer": "Ada"})
		if draft.Status != "pending" || draft.ItemCount != 0 {
			t.Fatalf("draft: %+v, want pending without items", draft)
		}
		const msg = "cannot be confirmed without items"
		var e errorJSON
		a.do(t, http.MethodPut, path(draft.ID), testutil.JSON(map[string]any{"status": "confirmed"}), testutil.HJSON).
			WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
		if !strings.Contains(e.Errors["status"], msg) {
			t.Errorf("JSON confirm of a draft without items: errors %v, want status: …%s…", e.Errors, msg)
		}
		// The edit form, and the Read page's status button (a plain form).
		r := a.do(t, http.MethodPost, path(draft.ID), testutil.Form("_method", "PUT", "version", "1", "status", "confirmed"), testutil.HPage)
		r.WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, msg)
		a.do(t, http.MethodPost, path(draft.ID), testutil.Form("_method", "PUT", "version", "1", "customer", "Ada", "currency", "USD",
			"status", "confirmed", "items", ""), testutil.HPage).WantStatus(t, http.StatusUnprocessableEntity).WantFieldError(t, "status", msg, "")
		// An inline row edit (htmx).
		a.do(t, http.MethodPut, path(draft.ID), testutil.Form("version", "1", "status", "confirmed"), testutil.HXTo("tr#"+rowID(draft.ID))).
			WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, msg)
		if o := a.fetch(t, draft.ID); o.Status != "pending" || o.Version != 1 {
			t.Errorf("after the refused confirms: %s version %d, want pending version 1", o.Status, o.Version)
		}
		// With an item it goes ahead; taking the item away again is refused.
		o := a.update(t, draft.ID, map[string]any{"items": []any{item("Lamp", 1, "45.00")}, "status": "confirmed"})
		if o.Status != "confirmed" {
			t.Fatalf("confirm with an item: %s", o.Status)
		}
		e = errorJSON{}
		a.do(t, http.MethodPut, path(draft.ID), testutil.JSON(map[string]any{"items": []any{}}), testutil.HJSON).
			WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
		if !strings.Contains(e.Errors["items"], "needs at least one item") {
			t.Errorf("emptying a confirmed order: errors %v, want items: …needs at least one item…", e.Errors)
		}
	})
}
