package routes

// Writes: create, update and delete in each
// representation, forms, method override, money, conditional requests and
// the notice that follows a plain form post.

import (
	"net/http"
	"net/url"
	"orders/testutil"
	"reflect"
	"strings"
	"testing"
)

func TestCreate(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		t.Run("json", func(t *testing.T) {
			r := a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{
				"customer": "  Ada  ", "email": "ada@example.com", "currency": "eur", "notes": "line 1\nline 2",
				"items": []any{map[string]any{"sku": "A-1", "name": "Gear", "quantity": 2, "unit_price": "4.25"}},
			}), testutil.HJSON).WantStatus(t, http.StatusCreated).WantNegotiated(t)
			var o orderJSON
			r.JSON(t, &o)
			r.WantHeader(t, "Location", path(o.ID))
			want := orderJSON{ID: o.ID, Customer: "Ada", Email: "ada@example.com", Status: "pending", Currency: "EUR",
				Notes: "line 1\nline 2", ItemCount: 1, Total: "8.50", Version: 1}
			got := o
			got.Items, got.CreatedAt, got.UpdatedAt = nil, "", ""
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %+v, want %+v", r.What, got, want)
			}
			if len(o.Items) != 1 || o.Items[0] != (itemJSON{"A-1", "Gear", 2, "4.25", "8.50"}) {
				t.Errorf("%s: got items %+v, want one A-1 Gear 2 × 4.25 = 8.50", r.What, o.Items)
			}
			if o.CreatedAt == "" || !strings.HasSuffix(o.CreatedAt, "Z") || o.CreatedAt != o.UpdatedAt {
				t.Errorf("%s: got created_at %q updated_at %q, want equal RFC 3339 UTC times", r.What, o.CreatedAt, o.UpdatedAt)
			}
			if back := a.fetch(t, o.ID); back.Customer != "Ada" || back.Total != "8.50" {
				t.Errorf("GET after create: got %+v, want the created order", back)
			}
		})
		t.Run("htmx", func(t *testing.T) {
			r := a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Htmx Co", "items[0][name]", "Box",
				"items[0][quantity]", "1", "items[0][unit_price]", "2"), testutil.HXTo("main#main"))
			r.WantStatus(t, http.StatusCreated).WantNegotiated(t).WantFragment(t, "order").WantContains(t, "Htmx Co", "created")
			loc := r.Header.Get("HX-Push-Url")
			if !strings.HasPrefix(loc, "/orders/") {
				t.Fatalf("%s: got HX-Push-Url %q, want /orders/<id>", r.What, loc)
			}
			a.get(t, loc, testutil.HJSON).WantStatus(t, http.StatusOK).WantContains(t, `"customer":"Htmx Co"`)
		})
		for _, enc := range []struct {
			name string
			body func(kv ...string) testutil.Body
		}{{"urlencoded", testutil.Form}, {"multipart", testutil.Multipart}} {
			t.Run("plain "+enc.name, func(t *testing.T) {
				before := a.count(t)
				r := a.do(t, http.MethodPost, "/orders", enc.body("customer", "Plain "+enc.name, "email", "",
					"items[0][sku]", "", "items[0][name]", "Thing", "items[0][quantity]", "3", "items[0][unit_price]", "1.10",
					"items", ""), testutil.HPage)
				r.WantStatus(t, http.StatusSeeOther)
				loc := r.Header.Get("Location")
				if !strings.HasPrefix(loc, "/orders/") || loc == "/orders/new" {
					t.Fatalf("%s: got Location %q, want /orders/<id>", r.What, loc)
				}
				if got := a.count(t); got != before+1 {
					t.Errorf("%s: %d orders after, want %d", r.What, got, before+1)
				}
				var o orderJSON
				a.get(t, loc, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &o)
				if o.Customer != "Plain "+enc.name || o.ItemCount != 1 || o.Total != "3.30" {
					t.Errorf("GET %s: got %+v, want the %s order with one item, total 3.30", loc, o, enc.name)
				}
			})
		}
	})
}

// TestFlashNotice: after the 303 of a plain form, the next page shows the
// notice once, in the live region.
func TestFlashNotice(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		r := a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Flash"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		loc := r.Header.Get("Location")
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: r.Header}).Cookies() {
			if c.Name == flashCookie {
				cookie = c
			}
		}
		if cookie == nil {
			t.Fatalf("%s: no %s cookie in %q", r.What, flashCookie, r.Header.Values("Set-Cookie"))
		}
		if !cookie.HttpOnly {
			t.Errorf("%s: flash cookie %v is not HttpOnly", r.What, cookie)
		}
		id := strings.TrimPrefix(loc, "/orders/")
		page := a.get(t, loc, testutil.HPage.With(testutil.H{"Cookie": cookie.Name + "=" + cookie.Value})).WantStatus(t, http.StatusOK)
		notice := page.Body[strings.Index(page.Body, `id="notice"`):]
		notice = notice[:strings.Index(notice, "</div>")]
		if want := "Order " + id + " created."; !strings.Contains(notice, want) {
			t.Errorf("%s: #notice is %q, want it to hold %q", page.What, notice, want)
		}
		cleared := false
		for _, c := range (&http.Response{Header: page.Header}).Cookies() {
			cleared = cleared || (c.Name == flashCookie && (c.MaxAge < 0 || c.Value == ""))
		}
		if !cleared {
			t.Errorf("%s: the flash cookie is not cleared (Set-Cookie %q)", page.What, page.Header.Values("Set-Cookie"))
		}
		// Without the cookie there is no notice.
		a.get(t, loc, testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, `aria-live="polite"></div>`)

		// Update and delete leave their notices the same way.
		r = a.do(t, http.MethodPost, loc, testutil.Form("_method", "PUT", "notes", "n"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		if !strings.Contains(r.Header.Get("Set-Cookie"), "saved") {
			t.Errorf("%s: got Set-Cookie %q, want a saved notice", r.What, r.Header.Get("Set-Cookie"))
		}
		r = a.do(t, http.MethodPost, loc, testutil.Form("_method", "DELETE"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		if !strings.Contains(r.Header.Get("Set-Cookie"), "deleted") {
			t.Errorf("%s: got Set-Cookie %q, want a deleted notice", r.What, r.Header.Get("Set-Cookie"))
		}
	})
}

func TestUpdate(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Upd", "email": "u@example.com", "notes": "keep me",
			"items": []any{item("One", 1, "1.00"), item("Two", 2, "2.00")}})

		t.Run("json", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "Upd JSON", "version": 1}), testutil.HJSON)
			r.WantStatus(t, http.StatusOK).WantNegotiated(t)
			var got orderJSON
			r.JSON(t, &got)
			if got.Customer != "Upd JSON" || got.Version != 2 || got.ItemCount != 2 || got.Notes != "keep me" || got.Email != "u@example.com" {
				t.Errorf("%s: got %+v, want customer changed, version 2, the rest kept", r.What, got)
			}
			if et := r.Header.Get("ETag"); !strings.Contains(et, "v2") {
				t.Errorf("%s: got ETag %q, want one for version 2", r.What, et)
			}
		})
		t.Run("htmx", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Upd HX", "version", "2"), testutil.HXTo("main#main"))
			r.WantStatus(t, http.StatusOK).WantNegotiated(t).WantFragment(t, "order").WantContains(t, "Upd HX", "saved")
			r.WantHeader(t, "HX-Replace-Url", path(o.ID)) // replaced: Back skips the edit form
		})
		t.Run("plain", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Upd Plain", "version", "3"), testutil.HPage)
			r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", path(o.ID))
		})
		t.Run("only customer keeps the rest", func(t *testing.T) {
			got := a.fetch(t, o.ID)
			if got.Customer != "Upd Plain" || got.Version != 4 || got.ItemCount != 2 || got.Total != "5.00" ||
				got.Notes != "keep me" || got.Email != "u@example.com" || got.Status != "pending" {
				t.Errorf("after three PUTs of customer only: got %+v, want customer Upd Plain, version 4, items, notes, email kept", got)
			}
		})
		t.Run("empty items key clears", func(t *testing.T) {
			a.do(t, http.MethodPut, path(o.ID), testutil.Form("items", ""), testutil.HJSON).WantStatus(t, http.StatusOK)
			if got := a.fetch(t, o.ID); got.ItemCount != 0 || len(got.Items) != 0 || got.Total != "0.00" || got.Customer != "Upd Plain" {
				t.Errorf("after PUT items=: got %+v, want no items, total 0.00, customer kept", got)
			}
		})
		t.Run("json items [] clears", func(t *testing.T) {
			a.update(t, o.ID, map[string]any{"items": []any{item("Back", 1, "9.99")}})
			if got := a.fetch(t, o.ID); got.ItemCount != 1 {
				t.Fatalf("after PUT of one item: got %+v, want one item", got)
			}
			got := a.update(t, o.ID, map[string]any{"items": []any{}})
			if got.ItemCount != 0 || len(got.Items) != 0 || got.Total != "0.00" {
				t.Errorf("after PUT items []: got %+v, want no items", got)
			}
			if back := a.fetch(t, o.ID); back.ItemCount != 0 || len(back.Items) != 0 {
				t.Errorf("GET after PUT items []: got %+v, want no items", back)
			}
		})
		t.Run("json null items keeps", func(t *testing.T) {
			a.update(t, o.ID, map[string]any{"items": []any{item("Kept", 1, "1.00")}})
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(`{"notes": "x"}`), testutil.HJSON).WantStatus(t, http.StatusOK)
			if got := a.fetch(t, o.ID); got.ItemCount != 1 || got.Items[0].Name != "Kept" {
				t.Errorf("after PUT without items: got %+v, want the item kept", got)
			}
		})
		t.Run("status transitions", func(t *testing.T) {
			p := a.create(t, map[string]any{"customer": "Flow", "items": []any{item("X", 1, "1")}})
			for _, s := range []string{"confirmed", "confirmed", "shipped", "delivered"} {
				if got := a.update(t, p.ID, map[string]any{"status": s}); got.Status != s {
					t.Fatalf("PUT status %s: got %s", s, got.Status)
				}
			}
			var e errorJSON
			a.do(t, http.MethodPut, path(p.ID), testutil.JSON(map[string]any{"status": "pending"}), testutil.HJSON).
				WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if !strings.Contains(e.Errors["status"], "cannot change status from delivered to pending") {
				t.Errorf("PUT delivered→pending: got errors %v, want status: cannot change status from delivered to pending", e.Errors)
			}
			a.do(t, http.MethodPut, path(p.ID), testutil.JSON(map[string]any{"items": []any{}}), testutil.HJSON).
				WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if e.Errors["items"] == "" {
				t.Errorf("PUT items of a delivered order: got errors %v, want an items error", e.Errors)
			}
			// Customer, email and notes still change.
			a.update(t, p.ID, map[string]any{"customer": "Flow 2", "notes": "late note"})

			// The Edit form of a delivered order shows the items, not inputs.
			r := a.get(t, path(p.ID, "/edit"), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "order-form")
			r.WantContains(t, "Items cannot change once an order is delivered", "X").WantLacks(t, `name="items"`, `name="items[0][name]"`)
			if in := testutil.Tag(r.Body, "currency"); !strings.Contains(in, "readonly") {
				t.Errorf("%s: got currency input %s, want it readonly", r.What, in)
			}
			// Items sent anyway: the message is shown in the form.
			cur := a.fetch(t, p.ID)
			r = a.do(t, http.MethodPut, path(p.ID), testutil.Form("version", itoa(cur.Version), "items[0][name]", "New",
				"items[0][quantity]", "1", "items[0][unit_price]", "1"), testutil.HXTo("main#main"))
			r.WantStatus(t, http.StatusUnprocessableEntity).WantFragment(t, "order-form")
			r.WantContains(t, `id="items-err"`, "cannot change once an order is delivered")
		})
	})
}

func TestDelete(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		t.Run("htmx row", func(t *testing.T) {
			o := a.createNamed(t, "Del Row")
			r := a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HXTo("tr#"+rowID(o.ID)))
			r.WantStatus(t, http.StatusOK).WantNegotiated(t).WantLacks(t, "<tr", "<html")
			r.WantContains(t, `hx-target="#notice"`, "Order "+itoa(o.ID)+" deleted.")
			a.wantGone(t, o.ID)
		})
		t.Run("htmx page", func(t *testing.T) {
			o := a.createNamed(t, "Del Page")
			r := a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HXTo("main#main")).WantStatus(t, http.StatusOK).WantNegotiated(t)
			loc := r.Header.Get("HX-Location") + r.Header.Get("HX-Redirect")
			if !strings.Contains(loc, "/orders") || strings.Contains(loc, path(o.ID)) {
				t.Errorf("%s: got HX-Location %q HX-Redirect %q, want a redirect to /orders", r.What, r.Header.Get("HX-Location"), r.Header.Get("HX-Redirect"))
			}
			if r.Body != "" {
				t.Errorf("%s: got body %q, want none", r.What, testutil.Snippet(r.Body))
			}
			a.wantGone(t, o.ID)
		})
		t.Run("plain", func(t *testing.T) {
			o := a.createNamed(t, "Del Plain")
			a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HPage).WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", "/orders")
			a.wantGone(t, o.ID)
		})
		t.Run("412 carries the items", func(t *testing.T) {
			o := a.create(t, map[string]any{"customer": "Del 412", "items": []any{item("Mug", 1, "2.00")}})
			r := a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HJSON.With(testutil.H{"If-Match": `"o` + itoa(o.ID) + `v9-json"`})).
				WantStatus(t, http.StatusPreconditionFailed)
			cur, _ := r.Object(t)["current"].(map[string]any)
			if items, _ := cur["items"].([]any); len(items) != 1 {
				t.Errorf("%s: got current %v, want the stored order with its 1 item", r.What, cur)
			}
		})
		t.Run("not in list", func(t *testing.T) {
			o := a.createNamed(t, "Zzz Unique Del")
			a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
			m := a.get(t, "/orders?q=zzz", testutil.HJSON).WantStatus(t, http.StatusOK).Object(t)
			if m["total"] != float64(0) {
				t.Errorf("search for a deleted order: got %v, want total 0", m)
			}
		})
	})
}

func TestMethodOverride(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for _, enc := range []struct {
			name string
			body func(kv ...string) testutil.Body
		}{{"urlencoded", testutil.Form}, {"multipart", testutil.Multipart}} {
			t.Run(enc.name, func(t *testing.T) {
				o := a.createNamed(t, "Override")
				r := a.do(t, http.MethodPost, path(o.ID), enc.body("_method", "PUT", "customer", "Overridden "+enc.name, "version", "1"), testutil.HPage)
				r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", path(o.ID))
				if got := a.fetch(t, o.ID); got.Customer != "Overridden "+enc.name || got.Version != 2 || got.ItemCount != 1 {
					t.Errorf("%s: got %+v, want customer changed, version 2, item kept", r.What, got)
				}
				// Lower case works too.
				a.do(t, http.MethodPost, path(o.ID), enc.body("_method", "put", "notes", "lc"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
				r = a.do(t, http.MethodPost, path(o.ID), enc.body("_method", "DELETE"), testutil.HPage)
				r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", "/orders")
				a.wantGone(t, o.ID)
			})
		}
		t.Run("not on GET", func(t *testing.T) {
			o := a.createNamed(t, "Override GET")
			a.get(t, path(o.ID, "?_method=DELETE"), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "order")
			a.get(t, path(o.ID, "?_method=PUT&customer=x"), testutil.HJSON).WantStatus(t, http.StatusOK)
			if got := a.fetch(t, o.ID); got.Customer != "Override GET" || got.Version != 1 {
				t.Errorf("after GET with _method: got %+v, want it unchanged", got)
			}
		})
	})
}

func TestFormItems(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for _, enc := range []struct {
			name string
			body func(kv ...string) testutil.Body
		}{{"urlencoded", testutil.Form}, {"multipart", testutil.Multipart}} {
			t.Run(enc.name, func(t *testing.T) {
				// Keys out of order, with gaps, a two-digit N, and blank rows.
				r := a.do(t, http.MethodPost, "/orders", enc.body(
					"customer", "Gaps",
					"items[10][name]", "Ten", "items[10][quantity]", "10", "items[10][unit_price]", "0.10",
					"items[5][name]", "Five", "items[5][quantity]", "5", "items[5][unit_price]", "0.05",
					"items[0][name]", "Zero", "items[0][quantity]", "1", "items[0][unit_price]", "1",
					"items[7][sku]", "", "items[7][name]", "  ", "items[7][quantity]", "", "items[7][unit_price]", "",
					"items[9][name]", "Nine", "items[9][quantity]", "9", "items[9][unit_price]", "0.09",
					"items[11][sku]", "", "items[11][name]", "",
				), testutil.HJSON).WantStatus(t, http.StatusCreated)
				var o orderJSON
				r.JSON(t, &o)
				var names []string
				for _, it := range o.Items {
					names = append(names, it.Name)
				}
				if got, want := strings.Join(names, ","), "Zero,Five,Nine,Ten"; got != want {
					t.Errorf("%s: got items %s, want %s (N order, blank rows ignored)", r.What, got, want)
				}
				if o.Total != "3.06" {
					t.Errorf("%s: got total %s, want 3.06", r.What, o.Total)
				}
			})
		}
		t.Run("error keys use the N sent", func(t *testing.T) {
			var e errorJSON
			a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Keys",
				"items[0][name]", "Fine", "items[0][quantity]", "1", "items[0][unit_price]", "1",
				"items[5][name]", "", "items[5][quantity]", "2", "items[5][unit_price]", "1",
				"items[12][name]", "Bad", "items[12][quantity]", "0", "items[12][unit_price]", "1.001",
			), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			for _, k := range []string{"items[5][name]", "items[12][quantity]", "items[12][unit_price]"} {
				if e.Errors[k] == "" {
					t.Errorf("got errors %v, want one for %s", e.Errors, k)
				}
			}
			for k := range e.Errors {
				if strings.HasPrefix(k, "items[0]") || strings.HasPrefix(k, "items[1]") || strings.HasPrefix(k, "items[2]") {
					t.Errorf("got error key %s, want keys by the N sent (5 and 12)", k)
				}
			}
		})
		t.Run("malformed item keys", func(t *testing.T) {
			for _, k := range []string{"items[x][name]", "items[0][colour]", "items[0]", "items[-1][name]", "items[99999][name]"} {
				a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Bad key", k, "v"), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			}
		})
		t.Run("add row without javascript", func(t *testing.T) {
			// The "Add item row" button GETs the form with its own fields.
			q := url.Values{"customer": {"Typed"}, "items[0][name]": {"First"}, "add_row": {"1"}}
			r := a.get(t, "/orders/new?"+q.Encode(), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "order-form")
			r.WantContains(t, `value="Typed"`, `value="First"`, `id="items-1-name"`, `id="items-2-name"`)
		})
	})
}

func TestMoney(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Cents", "items": []any{item("Dime", 3, "0.10")}})
		if len(o.Items) != 1 || o.Items[0].LineTotal != "0.30" || o.Items[0].UnitPrice != "0.10" || o.Total != "0.30" {
			t.Errorf("3 × 0.10: got %+v, want unit_price 0.10, line_total 0.30, total 0.30", o)
		}
		// JSON numbers are read as text, never as floats.
		o = a.create(t, map[string]any{"customer": "Numbers", "items": []any{
			item("A", 3, jsonNumber("0.1")), item("B", 1, jsonNumber("19.99")), item("C", 1000000, "1000000.00")}})
		if o.Items[0].LineTotal != "0.30" || o.Items[1].UnitPrice != "19.99" || o.Total != "1000000000020.29" {
			t.Errorf("numbers: got %+v, want 0.30, 19.99 and total 1000000000020.29", o)
		}
		// A form gives the same.
		var f orderJSON
		a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Form cents", "items[0][name]", "Dime",
			"items[0][quantity]", "3", "items[0][unit_price]", "0.10"), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &f)
		if f.Total != "0.30" {
			t.Errorf("form 3 × 0.10: got total %s, want 0.30", f.Total)
		}
		for _, bad := range []struct {
			price, qty any
			key        string
		}{
			{"19.999", 1, "items[0][unit_price]"},
			{jsonNumber("19.999"), 1, "items[0][unit_price]"},
			{"-1.00", 1, "items[0][unit_price]"},
			{"1e2", 1, "items[0][unit_price]"},
			{"1000000.01", 1, "items[0][unit_price]"},
			{"1,00", 1, "items[0][unit_price]"},
			{"", 1, "items[0][unit_price]"},
			{"1.00", 0, "items[0][quantity]"},
			{"1.00", 1000001, "items[0][quantity]"},
			{"1.00", "1.5", "items[0][quantity]"},
		} {
			var e errorJSON
			r := a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Bad money",
				"items": []any{item("X", bad.qty, bad.price)}}), testutil.HJSON)
			r.WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if e.Errors[bad.key] == "" {
				t.Errorf("price %v quantity %v: got errors %v, want one for %s", bad.price, bad.qty, e.Errors, bad.key)
			}
		}
	})
}

// jsonNumber is a JSON number literal inside a request body.
type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// TestConditional covers If-Match on writes and the version in the body.
func TestConditional(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Cond")
		jsonTag := a.get(t, path(o.ID), testutil.HJSON).Header.Get("ETag")

		t.Run("if-match current json etag", func(t *testing.T) {
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(`{"notes":"a"}`), testutil.HJSON.With(testutil.H{"If-Match": jsonTag})).WantStatus(t, http.StatusOK)
		})
		t.Run("if-match any representation of the current version", func(t *testing.T) {
			page2 := a.get(t, path(o.ID), testutil.HPage).Header.Get("ETag")
			a.do(t, http.MethodPut, path(o.ID), testutil.Form("notes", "b"), testutil.HHX.With(testutil.H{"If-Match": page2})).WantStatus(t, http.StatusOK)
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(`{"notes":"c"}`), testutil.HJSON.With(testutil.H{"If-Match": "*"})).WantStatus(t, http.StatusOK)
			row := a.get(t, path(o.ID), testutil.HXTo("tr#"+rowID(o.ID))).Header.Get("ETag")
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(`{"notes":"d"}`), testutil.HJSON.With(testutil.H{"If-Match": `"x", ` + row})).WantStatus(t, http.StatusOK)
		})
		t.Run("version in the body", func(t *testing.T) {
			cur := a.fetch(t, o.ID)
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"notes": "e", "version": cur.Version}), testutil.HJSON).WantStatus(t, http.StatusOK)
			r := a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "Lost", "version": cur.Version}), testutil.HJSON)
			r.WantStatus(t, http.StatusConflict).WantNegotiated(t)
			var e errorJSON
			r.JSON(t, &e)
			if e.Current == nil || e.Current.Version != cur.Version+1 || e.Current.Notes != "e" || e.Current.Customer != "Cond" || e.Current.ItemCount != 1 {
				t.Errorf("%s: got current %+v, want the stored order at version %d", r.What, e.Current, cur.Version+1)
			}
			if e.Error == "" || e.RequestID == "" {
				t.Errorf("%s: got %+v, want error and request_id", r.What, e)
			}
			if got := a.fetch(t, o.ID); got.Customer != "Cond" {
				t.Errorf("after a 409: got customer %q, want Cond", got.Customer)
			}
		})
		t.Run("stale form shows the conflict", func(t *testing.T) {
			cur := a.fetch(t, o.ID)
			a.update(t, o.ID, map[string]any{"customer": "Theirs", "email": "theirs@example.com"})
			for _, m := range []struct {
				name string
				h    testutil.H
				page bool
			}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
				r := a.do(t, http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "customer", "Mine", "version", itoa(cur.Version)), m.h)
				r.WantStatus(t, http.StatusConflict).WantNegotiated(t)
				if m.page {
					r.WantPage(t, "order-form")
				} else {
					r.WantFragment(t, "order-form")
				}
				r.WantContains(t, `class="conflict"`, "Theirs", "theirs@example.com", "version "+itoa(cur.Version+1),
					`name="version" value="`+itoa(cur.Version+1)+`"`, `value="Mine"`, "changed by someone else")
			}
			if got := a.fetch(t, o.ID); got.Customer != "Theirs" {
				t.Errorf("after 409s: got customer %q, want Theirs", got.Customer)
			}
		})
	})
}
