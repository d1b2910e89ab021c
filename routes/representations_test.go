package routes

// Every GET URI in its three representations, the HX-Target
// narrowing, ETags, and the headers every response carries.

import (
	"net/http"
	"orders/testutil"
	"strings"
	"testing"
)

// getURIs are the GET URIs of the order resource for order id, each with
// the id of its partial's root element and a check of its JSON shape.
func getURIs(o orderJSON) []struct {
	name, path, root string
	wantJSON         func(t *testing.T, r *testutil.Resp)
} {
	return []struct {
		name, path, root string
		wantJSON         func(t *testing.T, r *testutil.Resp)
	}{
		{"list", "/orders", "orders", func(t *testing.T, r *testutil.Resp) { wantListJSON(t, r, false, 1) }},
		{"new", "/orders/new", "order-form", func(t *testing.T, r *testutil.Resp) {
			m := r.Object(t)
			for _, k := range []string{"customer", "email", "status", "currency", "notes", "items", "statuses"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s: JSON has keys %v, want %q among them", r.What, keys(m), k)
				}
			}
			if m["status"] != "pending" || m["currency"] != "USD" {
				t.Errorf("%s: got status %v currency %v, want the defaults pending USD", r.What, m["status"], m["currency"])
			}
		}},
		{"show", path(o.ID), "order", func(t *testing.T, r *testutil.Resp) {
			var got orderJSON
			r.JSON(t, &got)
			if got.ID != o.ID || got.Customer != o.Customer || got.Version != 1 || len(got.Items) != 1 || got.Total != "3.00" {
				t.Errorf("%s: got %+v, want order %d of %q, version 1, one item, total 3.00", r.What, got, o.ID, o.Customer)
			}
		}},
		{"edit", path(o.ID, "/edit"), "order-form", func(t *testing.T, r *testutil.Resp) {
			var got struct {
				Order         orderJSON `json:"order"`
				Statuses      []string  `json:"statuses"`
				ItemsEditable *bool     `json:"items_editable"`
			}
			r.JSON(t, &got)
			if got.Order.ID != o.ID || strings.Join(got.Statuses, ",") != "pending,confirmed,cancelled" ||
				got.ItemsEditable == nil || !*got.ItemsEditable {
				t.Errorf("%s: got %+v, want order %d, statuses pending,confirmed,cancelled, items_editable true", r.What, got, o.ID)
			}
		}},
		{"inquiry", "/orders/inquiry", "inquiry", func(t *testing.T, r *testutil.Resp) { wantListJSON(t, r, true, 1) }},
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// wantListJSON checks the List and Inquiry JSON shape.
func wantListJSON(t *testing.T, r *testutil.Resp, inquiry bool, total int) map[string]any {
	t.Helper()
	m := r.Object(t)
	for _, k := range []string{"orders", "page", "per_page", "total", "prev", "next"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: JSON has keys %v, want %q among them", r.What, keys(m), k)
		}
	}
	if m["total"] != float64(total) {
		t.Errorf("%s: got total %v, want %d", r.What, m["total"], total)
	}
	orders, _ := m["orders"].([]any)
	for _, e := range orders {
		entry := e.(map[string]any)
		for _, k := range []string{"id", "customer", "status", "item_count", "total", "version"} {
			if _, ok := entry[k]; !ok {
				t.Errorf("%s: entry %v lacks %q", r.What, entry, k)
			}
		}
		items, has := entry["items"]
		if inquiry && !has {
			t.Errorf("%s: Inquiry entry %v has no items, want them", r.What, entry)
		}
		if !inquiry && has {
			t.Errorf("%s: List entry has items %v, want none (item_count and total only)", r.What, items)
		}
		if inquiry && has && len(items.([]any)) != int(entry["item_count"].(float64)) {
			t.Errorf("%s: Inquiry entry has %d items, item_count %v", r.What, len(items.([]any)), entry["item_count"])
		}
	}
	return m
}

func TestRepresentations(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Ada Lovelace")
		for _, u := range getURIs(o) {
			t.Run(u.name, func(t *testing.T) {
				modes := []struct {
					name  string
					h     testutil.H
					check func(t *testing.T, r *testutil.Resp)
				}{
					{"page", testutil.HPage, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
					{"no headers", testutil.H{}, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
					{"fragment", testutil.HHX, func(t *testing.T, r *testutil.Resp) { r.WantFragment(t, u.root) }},
					{"json", testutil.HJSON, u.wantJSON},
					{"json over html", testutil.H{"Accept": "text/html;q=0.5, application/json"}, u.wantJSON},
					{"json with htmx headers", testutil.HHX.With(testutil.HJSON), u.wantJSON},
					{"history restore", testutil.HRestore, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
					{"htmx full", testutil.HHXFull, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
				}
				for _, m := range modes {
					t.Run(m.name, func(t *testing.T) {
						r := a.get(t, u.path, m.h).WantStatus(t, http.StatusOK).WantNegotiated(t)
						m.check(t, r)
					})
				}
			})
		}
	})
}

// TestNegotiation follows the rules of docs/api.md §1.1: Accept by quality,
// then specificity, then order; wildcards give HTML, application/* JSON.
func TestNegotiation(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Negotiation")
		for _, c := range []struct {
			accept string
			want   string // "html", "json" or "406"
		}{
			{"", "html"},
			{"*/*", "html"},
			{"text/*", "html"},
			{"text/html", "html"},
			{"application/json", "json"},
			{"application/*", "json"},
			{"application/json, text/html", "json"},
			{"text/html, application/json", "html"},
			{"text/html;q=0.9, application/json", "json"},
			{"application/json;q=0.5, text/html", "html"},
			{"application/json;q=0.5, */*", "html"}, // */* (q=1) matches text/html
			{"text/html;q=0, */*", "json"},          // HTML refused by name
			{"text/html;q=0.5, */*", "json"},        // JSON at q=1 through */*
			{"application/json, */*", "json"},       // named beats the wildcard
			{"*/*", "html"},
			{"text/plain", "406"}, // text/csv is the collection's export (export_test.go)
			{"image/png", "406"},
			{"text/html;q=0, application/json;q=0", "406"},
		} {
			for _, p := range []string{"/orders", path(o.ID), "/orders/999"} {
				r := a.get(t, p, testutil.H{"Accept": c.accept}).WantNegotiated(t)
				ct := r.Header.Get("Content-Type")
				var ok bool
				switch c.want {
				case "html":
					ok = strings.HasPrefix(ct, "text/html") && r.Status != http.StatusNotAcceptable
				case "json":
					ok = strings.HasPrefix(ct, "application/json")
				case "406":
					ok = r.Status == http.StatusNotAcceptable && strings.HasPrefix(ct, "text/plain")
				}
				if !ok {
					t.Errorf("%s: got %d %q, want %s", r.What, r.Status, ct, c.want)
				}
			}
		}
	})
}

func TestHead(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Head")
		for _, p := range []string{"/orders", "/orders/new", path(o.ID), path(o.ID, "/edit"), "/orders/inquiry"} {
			for _, h := range []testutil.H{testutil.HPage, testutil.HJSON} {
				r := a.do(t, http.MethodHead, p, testutil.NoBody, h).WantStatus(t, http.StatusOK).WantNegotiated(t)
				if r.Body != "" {
					t.Errorf("%s: got a body of %d bytes, want none", r.What, len(r.Body))
				}
			}
		}
		a.do(t, http.MethodHead, "/orders/999", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNotFound)
	})
}

func TestPageLayout(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		r := a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK)
		r.WantContains(t, `href="/orders"`, `href="/orders/inquiry"`, `href="/orders/new"`,
			`role="status"`, `aria-live="polite"`, `src="/public/js/htmx.min.`, `rel="icon"`)
		// No inline script or style (strict CSP).
		r.WantLacks(t, "<script>", "<style", " style=", " hx-on", "onclick=")
		csp := r.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: got Content-Security-Policy %q, want script-src 'self' and no unsafe-inline", r.What, csp)
		}
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: got X-Content-Type-Options %q, want nosniff", r.What, got)
		}
	})
}

// TestHXTarget covers the targets the server knows (routes/orders.go).
func TestHXTarget(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Grace Hopper", "email": "grace@example.com",
			"items": []any{item("Compiler", 1, "10.00")}})
		row := "tr#" + rowID(o.ID)
		rowStart := `<tr id="` + rowID(o.ID) + `"`

		t.Run("list results", func(t *testing.T) {
			for _, p := range []string{"/orders", "/orders/inquiry"} {
				r := a.get(t, p+"?q=gr", testutil.HXTo("div#order-results")).WantStatus(t, http.StatusOK).WantNegotiated(t)
				r.WantFragment(t, "order-results").WantLacks(t, `id="search"`, `<h1>`).WantContains(t, "Grace Hopper")
				// The results div, after the document title htmx applies (#7).
				body := strings.TrimSpace(r.Body)
				if title, rest, ok := strings.Cut(body, "</title>"); ok && strings.HasPrefix(title, "<title>") {
					body = strings.TrimSpace(rest)
				}
				if !strings.HasPrefix(body, `<div id="order-results"`) {
					t.Errorf("%s: want the body to be the results div; got:\n%s", r.What, testutil.Snippet(r.Body))
				}
			}
		})
		t.Run("list whole", func(t *testing.T) {
			// Another target (or none) gets the whole partial.
			a.get(t, "/orders", testutil.HXTo("main#main")).WantStatus(t, http.StatusOK).
				WantFragment(t, "orders").WantContains(t, `id="search"`, `id="order-results"`)
		})
		t.Run("show row", func(t *testing.T) {
			r := a.get(t, path(o.ID), testutil.HXTo(row)).WantStatus(t, http.StatusOK).WantNegotiated(t)
			if !strings.HasPrefix(strings.TrimSpace(r.Body), rowStart+` data-live="row"`) {
				t.Errorf("%s: want the body to start with %s data-live=\"row\"; got:\n%s", r.What, rowStart, testutil.Snippet(r.Body))
			}
			r.WantLacks(t, `id="order"`, "<html").WantContains(t, "Grace Hopper", "10.00")
			// Another order's row target is not this order's row.
			a.get(t, path(o.ID), testutil.HXTo("tr#order-row-999")).WantStatus(t, http.StatusOK).WantFragment(t, "order")
		})
		t.Run("edit row", func(t *testing.T) {
			r := a.get(t, path(o.ID, "/edit"), testutil.HXTo(row)).WantStatus(t, http.StatusOK).WantNegotiated(t)
			if !strings.HasPrefix(strings.TrimSpace(r.Body), rowStart+` class="editing" data-live="form"`) {
				t.Errorf("%s: want the row form starting with %s class=\"editing\" data-live=\"form\"; got:\n%s", r.What, rowStart, testutil.Snippet(r.Body))
			}
			r.WantLacks(t, `id="order-form"`).WantContains(t, `class="row-form"`, `name="version" value="1"`,
				`value="Grace Hopper"`, `hx-put="/orders/`)
		})
		t.Run("put row", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Grace B. Hopper", "email", "grace@example.com", "status", "pending", "version", "1"), testutil.HXTo(row))
			r.WantStatus(t, http.StatusOK).WantNegotiated(t)
			if !strings.HasPrefix(strings.TrimSpace(r.Body), rowStart+` data-live="row"`) {
				t.Errorf("%s: want the updated row; got:\n%s", r.What, testutil.Snippet(r.Body))
			}
			r.WantContains(t, "Grace B. Hopper", `hx-target="#notice"`, "saved").WantLacks(t, "row-form")
		})
		t.Run("put row invalid", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Grace", "email", "not an address", "version", "2"), testutil.HXTo(row))
			r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
			if !strings.HasPrefix(strings.TrimSpace(r.Body), rowStart+` class="editing" data-live="form"`) {
				t.Errorf("%s: want the row form; got:\n%s", r.What, testutil.Snippet(r.Body))
			}
			r.WantFieldError(t, "row-"+itoa(o.ID)+"-email", "must be one email address", "not an address")
			r.WantContains(t, `value="Grace"`, `name="version" value="2"`)
			if got := a.fetch(t, o.ID); got.Customer != "Grace B. Hopper" || got.Version != 2 {
				t.Errorf("after a 422 got customer %q version %d, want the stored Grace B. Hopper version 2", got.Customer, got.Version)
			}
		})
		t.Run("put row conflict", func(t *testing.T) {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Stale Edit", "version", "1"), testutil.HXTo(row))
			r.WantStatus(t, http.StatusConflict).WantNegotiated(t)
			if !strings.HasPrefix(strings.TrimSpace(r.Body), rowStart+` class="editing" data-live="form"`) {
				t.Errorf("%s: want the row form; got:\n%s", r.What, testutil.Snippet(r.Body))
			}
			// The stored values in the notice, the stored version in the form
			// (so saving again overwrites), the typed value kept.
			r.WantContains(t, `class="conflict"`, "now version 2", "Grace B. Hopper", `name="version" value="2"`, `value="Stale Edit"`)
			if got := a.fetch(t, o.ID); got.Customer != "Grace B. Hopper" {
				t.Errorf("after a 409 got customer %q, want the stored Grace B. Hopper", got.Customer)
			}
		})
	})
}

func TestETag(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Etta")
		tags := map[string]string{}
		for _, m := range []struct {
			name string
			h    testutil.H
		}{{"page", testutil.HPage}, {"fragment", testutil.HHX}, {"json", testutil.HJSON}, {"row", testutil.HXTo("tr#" + rowID(o.ID))}} {
			r := a.get(t, path(o.ID), m.h).WantStatus(t, http.StatusOK)
			tags[m.name] = r.Header.Get("ETag")
			if tags[m.name] == "" {
				t.Fatalf("%s: no ETag", r.What)
			}
			for other, tg := range tags {
				if other != m.name && tg == tags[m.name] {
					t.Errorf("%s and %s share ETag %s; want one per representation", other, m.name, tg)
				}
			}
			// Its own ETag gives 304, and so does any ETag of this version.
			for _, tg := range []string{tags[m.name], tags["page"], `W/` + tags[m.name], `"x", ` + tags[m.name], "*"} {
				r := a.get(t, path(o.ID), m.h.With(testutil.H{"If-None-Match": tg}))
				r.WantStatus(t, http.StatusNotModified)
				if r.Body != "" {
					t.Errorf("%s: 304 with body %q, want none", r.What, r.Body)
				}
			}
		}
		// A different ETag, or another order's, gives the representation.
		for _, tg := range []string{`"o` + itoa(o.ID) + `v2-json"`, `"o` + itoa(o.ID+1) + `v1-json"`, `"nonsense"`} {
			a.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"If-None-Match": tg})).WantStatus(t, http.StatusOK)
		}
		// After a change the old ETag no longer matches.
		a.update(t, o.ID, map[string]any{"notes": "changed"})
		r := a.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"If-None-Match": tags["json"]})).WantStatus(t, http.StatusOK)
		if r.Header.Get("ETag") == tags["json"] {
			t.Errorf("%s: ETag %s did not change with the version", r.What, tags["json"])
		}
	})
}

func TestHealthAndStatic(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		a.get(t, "/healthz", testutil.H{}).WantStatus(t, http.StatusOK)
		a.get(t, "/readyz", testutil.H{}).WantStatus(t, http.StatusOK)
		r := a.get(t, "/public/js/htmx.min.js", testutil.H{}).WantStatus(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
			t.Errorf("%s: got Content-Type %q, want JavaScript", r.What, ct)
		}
		if len(r.Body) < 10000 {
			t.Errorf("%s: got %d bytes, want the htmx library", r.What, len(r.Body))
		}
		for _, p := range []string{"/public/js/app.js", "/public/css/app.css", "/public/favicon.svg"} {
			a.get(t, p, testutil.H{}).WantStatus(t, http.StatusOK)
		}
		a.get(t, "/public/nope.js", testutil.H{}).WantStatus(t, http.StatusNotFound)
		a.get(t, "/", testutil.HPage).WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", "/orders")
	})
}
