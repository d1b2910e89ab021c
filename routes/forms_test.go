package routes

// The order forms and the order page: what
// the server sends so that they work without JavaScript, and what it says
// about an order deleted elsewhere. The browser tests (browser/forms_test.go)
// drive the same through Chromium.

import (
	"net/http"
	"orders/testutil"
	"strings"
	"testing"
)

func TestFormsWithoutJavaScript(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Ada", "items": []any{item("Mug", 2, "12.50"), item("Pen", 10, "1.05")}})

		t.Run("Enter saves: the first submit button is the form's own", func(t *testing.T) {
			for _, p := range []string{"/orders/new", path(o.ID, "/edit")} {
				r := a.get(t, p, testutil.HPage).WantStatus(t, http.StatusOK)
				form := r.Body[strings.Index(r.Body, `<form id="order-edit"`):]
				first := form[strings.Index(form, "<button"):]
				first = first[:strings.Index(first, ">")+1]
				if !strings.Contains(first, `type="submit"`) || strings.Contains(first, "name=") || strings.Contains(first, "formaction") {
					t.Errorf("%s: the form's first button is %s; want the plain save button (Enter submits with it)", p, first)
				}
			}
		})

		t.Run("totals are in the HTML", func(t *testing.T) {
			r := a.get(t, path(o.ID, "/edit"), testutil.HPage).WantStatus(t, http.StatusOK)
			r.WantContains(t, `<output class="line-total">25.00</output>`, `<output class="line-total">10.50</output>`,
				`<output id="order-total" for="item-rows">35.50</output>`)
			// A row that is not valid yet shows no total, and so does the order.
			r = a.get(t, "/orders/new?items=&items%5B0%5D%5Bquantity%5D=2&items%5B0%5D%5Bunit_price%5D=1.5&items%5B1%5D%5Bquantity%5D=x", testutil.HPage)
			r.WantStatus(t, http.StatusOK).WantContains(t, `<output class="line-total">3.00</output>`,
				`<output class="line-total">–</output>`, `<output id="order-total" for="item-rows">–</output>`)
		})

		t.Run("Remove without JavaScript asks for the form without the row", func(t *testing.T) {
			r := a.get(t, path(o.ID, "/edit"), testutil.HPage).WantStatus(t, http.StatusOK)
			r.WantContains(t, `name="remove_row" value="0" formaction="/orders/`+itoa(o.ID)+`/edit" formmethod="get" formnovalidate`)
			r.WantLacks(t, "data-remove-row aria-label=\"Remove item row 1\" hidden")
			r = a.get(t, path(o.ID, "/edit?version=1&items=&items%5B0%5D%5Bname%5D=Mug&items%5B1%5D%5Bname%5D=Pen&remove_row=0"), testutil.HPage)
			r.WantStatus(t, http.StatusOK).WantContains(t, `name="items[1][name]" value="Pen"`).WantLacks(t, `value="Mug"`)
			// The last row removed leaves one blank row to type in.
			r = a.get(t, "/orders/new?items=&items%5B0%5D%5Bname%5D=Mug&remove_row=0", testutil.HPage)
			r.WantStatus(t, http.StatusOK).WantLacks(t, `value="Mug"`).WantContains(t, `name="items[1][name]" value=""`)
		})

		t.Run("Delete leads to a confirmation page", func(t *testing.T) {
			r := a.get(t, path(o.ID), testutil.HPage).WantStatus(t, http.StatusOK)
			r.WantContains(t, `<form method="get" action="/orders/`+itoa(o.ID)+`" hx-delete="/orders/`+itoa(o.ID)+`"`,
				`<input type="hidden" name="confirm" value="delete">`)
			r = a.get(t, path(o.ID, "?confirm=delete&version=1"), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "order-delete")
			r.WantContains(t, "Delete order "+itoa(o.ID)+"?", `name="_method" value="DELETE"`, `name="version" value="1"`)
			if et := r.Header.Get("ETag"); !strings.HasSuffix(et, `-page-delete"`) {
				t.Errorf("confirmation page ETag %q, want one of its own (…-page-delete)", et)
			}
			a.get(t, path(o.ID, "?confirm=delete"), testutil.HHX).WantStatus(t, http.StatusOK).WantFragment(t, "order-delete")
			var got orderJSON
			a.get(t, path(o.ID, "?confirm=delete"), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &got)
			if got.ID != o.ID || a.count(t) != 1 {
				t.Errorf("GET ?confirm=delete as JSON: order %d, %d stored; want the order, nothing deleted", got.ID, a.count(t))
			}
			// The list's Delete goes the same way.
			a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t,
				`<form method="get" action="/orders/`+itoa(o.ID)+`" hx-delete="/orders/`+itoa(o.ID)+`"`)
		})

		t.Run("forms are kept out of caches", func(t *testing.T) {
			for _, p := range []string{"/orders/new", path(o.ID, "/edit")} {
				a.get(t, p, testutil.HPage).WantStatus(t, http.StatusOK).WantHeader(t, "Cache-Control", "no-store")
			}
		})

		t.Run("a save replaces the edit form's history entry", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("notes", "x"), testutil.HXTo("main#main")).WantStatus(t, http.StatusOK)
			r.WantHeader(t, "HX-Replace-Url", path(o.ID)).WantHeader(t, "HX-Push-Url", "")
		})
	})
}

func TestDeletedOrderSaysSo(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Ada")
		id := itoa(o.ID)
		a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		const said = "was not found: it has been deleted, or it never existed"
		row := testutil.HXTo("tr#" + rowID(o.ID))
		for _, c := range []struct {
			what         string
			method, path string
			b            testutil.Body
			h            testutil.H
			root         string
		}{
			{"page", http.MethodGet, path(o.ID), testutil.NoBody, testutil.HPage, "error"},
			{"plain save", http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "customer", "B"), testutil.HPage, "error"},
			{"htmx status change", http.MethodPut, path(o.ID), testutil.Form("status", "confirmed"), testutil.HXTo("main#main"), "error"},
			{"htmx delete", http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HXTo("main#main"), "error"},
			{"row edit", http.MethodGet, path(o.ID, "/edit"), testutil.NoBody, row, rowID(o.ID)},
			{"row cancel", http.MethodGet, path(o.ID), testutil.NoBody, row, rowID(o.ID)},
			{"row save", http.MethodPut, path(o.ID), testutil.Form("customer", "B"), row, rowID(o.ID)},
			{"row delete", http.MethodDelete, path(o.ID, "?version=1"), testutil.NoBody, row, rowID(o.ID)},
		} {
			r := a.do(t, c.method, c.path, c.b, c.h).WantStatus(t, http.StatusNotFound)
			if c.h["HX-Request"] == "true" {
				r.WantFragment(t, c.root)
				if alert, _ := regionPartial(r.Body, "notice-alert"); !strings.Contains(alert, "Order "+id+" "+said) {
					t.Errorf("%s: the alert region holds %q, want it to say order %s was deleted", c.what, alert, id)
				}
			} else {
				r.WantPage(t, c.root)
			}
			r.WantContains(t, `href="/orders"`)
			if c.root == "error" {
				r.WantContains(t, "Order "+id+" "+said)
			} else {
				r.WantContains(t, `class="gone"`, "Order "+id+" has been deleted, or it never existed.")
			}
		}
		var e errorJSON
		a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"notes": "x"}), testutil.HJSON).WantStatus(t, http.StatusNotFound).JSON(t, &e)
		if !strings.Contains(e.Error, said) {
			t.Errorf("JSON error %q, want it to say the order was deleted or never existed", e.Error)
		}
	})
}
