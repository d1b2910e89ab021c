package routes

// The order forms and the order page (issue 9, defects 1, 3, 10, 12): what
// the server sends so that they work without JavaScript, and what it says
// about an order deleted elsewhere. The browser tests (browser/forms_test.go)
// drive the same through Chromium.

import (
	"net/http"
	"strings"
	"testing"
)

func TestFormsWithoutJavaScript(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Ada", "items": []any{item("Mug", 2, "12.50"), item("Pen", 10, "1.05")}})

		t.Run("Enter saves: the first submit button is the form's own", func(t *testing.T) {
			for _, p := range []string{"/orders/new", path(o.ID, "/edit")} {
				r := a.get(t, p, hPage).wantStatus(t, http.StatusOK)
				form := r.body[strings.Index(r.body, `<form id="order-edit"`):]
				first := form[strings.Index(form, "<button"):]
				first = first[:strings.Index(first, ">")+1]
				if !strings.Contains(first, `type="submit"`) || strings.Contains(first, "name=") || strings.Contains(first, "formaction") {
					t.Errorf("%s: the form's first button is %s; want the plain save button (Enter submits with it)", p, first)
				}
			}
		})

		t.Run("totals are in the HTML", func(t *testing.T) {
			r := a.get(t, path(o.ID, "/edit"), hPage).wantStatus(t, http.StatusOK)
			r.wantContains(t, `<output class="line-total">25.00</output>`, `<output class="line-total">10.50</output>`,
				`<output id="order-total" for="item-rows">35.50</output>`)
			// A row that is not valid yet shows no total, and so does the order.
			r = a.get(t, "/orders/new?items=&items%5B0%5D%5Bquantity%5D=2&items%5B0%5D%5Bunit_price%5D=1.5&items%5B1%5D%5Bquantity%5D=x", hPage)
			r.wantStatus(t, http.StatusOK).wantContains(t, `<output class="line-total">3.00</output>`,
				`<output class="line-total">–</output>`, `<output id="order-total" for="item-rows">–</output>`)
		})

		t.Run("Remove without JavaScript asks for the form without the row", func(t *testing.T) {
			r := a.get(t, path(o.ID, "/edit"), hPage).wantStatus(t, http.StatusOK)
			r.wantContains(t, `name="remove_row" value="0" formaction="/orders/`+itoa(o.ID)+`/edit" formmethod="get" formnovalidate`)
			r.wantLacks(t, "data-remove-row aria-label=\"Remove item row 1\" hidden")
			r = a.get(t, path(o.ID, "/edit?version=1&items=&items%5B0%5D%5Bname%5D=Mug&items%5B1%5D%5Bname%5D=Pen&remove_row=0"), hPage)
			r.wantStatus(t, http.StatusOK).wantContains(t, `name="items[1][name]" value="Pen"`).wantLacks(t, `value="Mug"`)
			// The last row removed leaves one blank row to type in.
			r = a.get(t, "/orders/new?items=&items%5B0%5D%5Bname%5D=Mug&remove_row=0", hPage)
			r.wantStatus(t, http.StatusOK).wantLacks(t, `value="Mug"`).wantContains(t, `name="items[1][name]" value=""`)
		})

		t.Run("Delete leads to a confirmation page", func(t *testing.T) {
			r := a.get(t, path(o.ID), hPage).wantStatus(t, http.StatusOK)
			r.wantContains(t, `<form method="get" action="/orders/`+itoa(o.ID)+`" hx-delete="/orders/`+itoa(o.ID)+`"`,
				`<input type="hidden" name="confirm" value="delete">`)
			r = a.get(t, path(o.ID, "?confirm=delete&version=1"), hPage).wantStatus(t, http.StatusOK).wantPage(t, "order-delete")
			r.wantContains(t, "Delete order "+itoa(o.ID)+"?", `name="_method" value="DELETE"`, `name="version" value="1"`)
			if et := r.header.Get("ETag"); !strings.HasSuffix(et, `-page-delete"`) {
				t.Errorf("confirmation page ETag %q, want one of its own (…-page-delete)", et)
			}
			a.get(t, path(o.ID, "?confirm=delete"), hHX).wantStatus(t, http.StatusOK).wantFragment(t, "order-delete")
			var got orderJSON
			a.get(t, path(o.ID, "?confirm=delete"), hJSON).wantStatus(t, http.StatusOK).json(t, &got)
			if got.ID != o.ID || a.count(t) != 1 {
				t.Errorf("GET ?confirm=delete as JSON: order %d, %d stored; want the order, nothing deleted", got.ID, a.count(t))
			}
			// The list's Delete goes the same way.
			a.get(t, "/orders", hPage).wantStatus(t, http.StatusOK).wantContains(t,
				`<form method="get" action="/orders/`+itoa(o.ID)+`" hx-delete="/orders/`+itoa(o.ID)+`"`)
		})

		t.Run("forms are kept out of caches", func(t *testing.T) {
			for _, p := range []string{"/orders/new", path(o.ID, "/edit")} {
				a.get(t, p, hPage).wantStatus(t, http.StatusOK).wantHeader(t, "Cache-Control", "no-store")
			}
		})

		t.Run("a save replaces the edit form's history entry", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), form("notes", "x"), hxTo("main#main")).wantStatus(t, http.StatusOK)
			r.wantHeader(t, "HX-Replace-Url", path(o.ID)).wantHeader(t, "HX-Push-Url", "")
		})
	})
}

func TestDeletedOrderSaysSo(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Ada")
		id := itoa(o.ID)
		a.do(t, http.MethodDelete, path(o.ID), noBody, hJSON).wantStatus(t, http.StatusNoContent)
		const said = "was not found: it has been deleted, or it never existed"
		row := hxTo("tr#" + rowID(o.ID))
		for _, c := range []struct {
			what         string
			method, path string
			b            body
			h            H
			root         string
		}{
			{"page", http.MethodGet, path(o.ID), noBody, hPage, "error"},
			{"plain save", http.MethodPost, path(o.ID), form("_method", "PUT", "customer", "B"), hPage, "error"},
			{"htmx status change", http.MethodPut, path(o.ID), form("status", "confirmed"), hxTo("main#main"), "error"},
			{"htmx delete", http.MethodDelete, path(o.ID), noBody, hxTo("main#main"), "error"},
			{"row edit", http.MethodGet, path(o.ID, "/edit"), noBody, row, rowID(o.ID)},
			{"row cancel", http.MethodGet, path(o.ID), noBody, row, rowID(o.ID)},
			{"row save", http.MethodPut, path(o.ID), form("customer", "B"), row, rowID(o.ID)},
			{"row delete", http.MethodDelete, path(o.ID, "?version=1"), noBody, row, rowID(o.ID)},
		} {
			r := a.do(t, c.method, c.path, c.b, c.h).wantStatus(t, http.StatusNotFound)
			if c.h["HX-Request"] == "true" {
				r.wantFragment(t, c.root)
				if alert, _ := regionPartial(r.body, "notice-alert"); !strings.Contains(alert, "Order "+id+" "+said) {
					t.Errorf("%s: the alert region holds %q, want it to say order %s was deleted", c.what, alert, id)
				}
			} else {
				r.wantPage(t, c.root)
			}
			r.wantContains(t, `href="/orders"`)
			if c.root == "error" {
				r.wantContains(t, "Order "+id+" "+said)
			} else {
				r.wantContains(t, `class="gone"`, "Order "+id+" has been deleted, or it never existed.")
			}
		}
		var e errorJSON
		a.do(t, http.MethodPut, path(o.ID), jsonBody(map[string]any{"notes": "x"}), hJSON).wantStatus(t, http.StatusNotFound).json(t, &e)
		if !strings.Contains(e.Error, said) {
			t.Errorf("JSON error %q, want it to say the order was deleted or never existed", e.Error)
		}
	})
}
