package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"orders/testutil"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// writeReq is one unsafe request the cross-origin tests try.
type writeReq struct {
	name, method, path, ctype string
	body                      []byte
}

func writeRequests(id string) []writeReq {
	mpCT, mp := multipartOf("customer", "Evil")
	mpDelCT, mpDel := multipartOf("_method", "DELETE")
	return []writeReq{
		{"create JSON", http.MethodPost, "/orders", ctJSON, jsonOf(map[string]any{"customer": "Evil"})},
		{"create form", http.MethodPost, "/orders", ctForm, formOf("customer", "Evil")},
		{"create multipart", http.MethodPost, "/orders", mpCT, mp},
		{"create text/plain (a no-preflight CORS type)", http.MethodPost, "/orders", "text/plain", []byte(`{"customer":"Evil"}`)},
		{"update JSON", http.MethodPut, "/orders/" + id, ctJSON, jsonOf(map[string]any{"customer": "Evil"})},
		{"update form", http.MethodPut, "/orders/" + id, ctForm, formOf("customer", "Evil", "version", "1")},
		{"update via _method=PUT", http.MethodPost, "/orders/" + id, ctForm, formOf("_method", "PUT", "customer", "Evil")},
		{"delete via _method=DELETE", http.MethodPost, "/orders/" + id, ctForm, formOf("_method", "DELETE")},
		{"delete via multipart _method=DELETE", http.MethodPost, "/orders/" + id, mpDelCT, mpDel},
		{"delete", http.MethodDelete, "/orders/" + id, "", nil},
		{"delete with ?version=1", http.MethodDelete, "/orders/" + id + "?version=1", "", nil},
	}
}

// productWriteRequests are the unsafe requests of product id (
// the same rules as orders).
func productWriteRequests(id string) []writeReq {
	mpCT, mp := multipartOf("sku", "EVIL-1", "name", "Evil", "unit_price", "1")
	evil := map[string]any{"sku": "EVIL-2", "name": "Evil", "unit_price": "1"}
	return []writeReq{
		{"create product JSON", http.MethodPost, "/products", ctJSON, jsonOf(evil)},
		{"create product form", http.MethodPost, "/products", ctForm, formOf("sku", "EVIL-3", "name", "Evil", "unit_price", "1")},
		{"create product multipart", http.MethodPost, "/products", mpCT, mp},
		{"create product text/plain", http.MethodPost, "/products", "text/plain", jsonOf(evil)},
		{"update product JSON", http.MethodPut, "/products/" + id, ctJSON, jsonOf(map[string]any{"name": "Evil", "active": false})},
		{"update product form", http.MethodPut, "/products/" + id, ctForm, formOf("unit_price", "0.01", "version", "1")},
		{"update product via _method=PUT", http.MethodPost, "/products/" + id, ctForm, formOf("_method", "PUT", "sku", "EVIL-4")},
		{"delete product via _method=DELETE", http.MethodPost, "/products/" + id, ctForm, formOf("_method", "DELETE", "version", "1")},
		{"delete product", http.MethodDelete, "/products/" + id, "", nil},
		{"delete product with ?version=1", http.MethodDelete, "/products/" + id + "?version=1", "", nil},
	}
}

// strangers are the headers a browser sends with a request from another
// site (app.Test's host is example.com).
var strangers = []testutil.H{
	{"Sec-Fetch-Site": "cross-site"},
	{"Sec-Fetch-Site": "same-site"},
	{"Origin": "http://evil.example"},
	{"Origin": "null"},
	{"Origin": "https://example.com"},                                  // another scheme
	{"Origin": "http://example.com:8080"},                              // another port
	{"Origin": "http://example.com.evil.example"},                      // a look-alike
	{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}, // the Origin still tells
	{"Origin": "http://example.com", "Sec-Fetch-Site": "cross-site"},   // so does Sec-Fetch-Site
	{"Sec-Fetch-Site": "cross-site", "Referer": "http://example.com/orders"},
}

// TestCrossOrigin: unsafe requests from another origin are 403 and change
// nothing; the same origin and clients that are not browsers pass.
func TestCrossOrigin(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	app := inProcess(t, rdb)
	send(t, app, http.MethodPost, "/orders", ctJSON, jsonOf(map[string]any{"customer": "Mine"}), testutil.HJSON).WantStatus(t, 201)
	send(t, app, http.MethodPost, "/products", ctJSON, jsonOf(map[string]any{"sku": "MINE-1", "name": "Mine", "unit_price": "2"}), testutil.HJSON).WantStatus(t, 201)
	before := mr.Dump()

	tried := 0
	writes := append(writeRequests("1"), productWriteRequests("1")...)
	for _, s := range strangers {
		for _, w := range writes {
			for _, rep := range []struct {
				name string
				h    testutil.H
				json bool
			}{{"json", testutil.HJSON, true}, {"page", testutil.HPage, false}, {"htmx", testutil.HHX, false}} {
				what := fmt.Sprintf("%s from %v (%s)", w.name, s, rep.name)
				r := send(t, app, w.method, w.path, w.ctype, w.body, rep.h.With(s))
				tried++
				if r.Status != http.StatusForbidden {
					t.Errorf("%s: got %d, want 403; body %s", what, r.Status, testutil.Snippet(r.Body))
					continue
				}
				checkMessage(t, what, r, rep.json, "cross-origin")
				if after := mr.Dump(); after != before {
					t.Fatalf("%s: answered 403 but Redis changed; now it holds:\n%s", what, tail(after, 30))
				}
			}
		}
	}
	// Reading from anywhere is fine.
	send(t, app, http.MethodGet, "/orders/1", "", nil, testutil.HJSON.With(testutil.H{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})).WantStatus(t, 200)

	// The same origin, and programs that send neither header, pass.
	passed := 0
	for _, own := range []testutil.H{
		{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "same-origin"},
		{"Origin": "http://example.com"},
		{}, // curl
	} {
		var o orderJSON
		send(t, app, http.MethodPost, "/orders", ctJSON, jsonOf(map[string]any{"customer": "Own"}), testutil.HJSON.With(own)).WantStatus(t, 201).JSON(t, &o)
		p := fmt.Sprintf("/orders/%d", o.ID)
		send(t, app, http.MethodPut, p, ctForm, formOf("customer", "Own 2", "version", "1"), testutil.HJSON.With(own)).WantStatus(t, 200)
		send(t, app, http.MethodPost, p, ctForm, formOf("_method", "PUT", "notes", "x"), testutil.HPage.With(own)).WantStatus(t, 303)
		send(t, app, http.MethodDelete, p, "", nil, testutil.HJSON.With(own)).WantStatus(t, 204)
		var pr productJSON
		send(t, app, http.MethodPost, "/products", ctForm, formOf("sku", fmt.Sprintf("OWN-%d", passed), "name", "Own", "unit_price", "1"),
			testutil.HJSON.With(own)).WantStatus(t, 201).JSON(t, &pr)
		pp := fmt.Sprintf("/products/%d", pr.ID)
		send(t, app, http.MethodPut, pp, ctJSON, jsonOf(map[string]any{"name": "Own 2", "version": 1}), testutil.HJSON.With(own)).WantStatus(t, 200)
		send(t, app, http.MethodPost, pp, ctForm, formOf("_method", "DELETE", "version", "2"), testutil.HPage.With(own)).WantStatus(t, 303)
		passed += 7
	}
	t.Logf("%d cross-origin writes refused with 403 (%d origins × %d requests of orders and products × 3 representations), Redis unchanged; %d same-origin or header-less writes passed",
		tried, len(strangers), len(writes), passed)
}

// TestStrangerOverHTTP runs the built binary with an account: a stranger
// without a session or token gets 401 (429 once its address has guessed
// tokens ten times; a page goes to the sign-in form); with a session, a
// request from another site is still 403 (a browser sends its cookies
// with a cross-site form's post too, and SameSite=Lax lets top-level
// ones through).
func TestStrangerOverHTTP(t *testing.T) {
	// The wrong tokens come from an address of their own (named by the
	// trusted proxy the test plays), so that the throttle they bring on
	// leaves the test's own requests alone.
	app := startApp(t, "", "ORDERS_ADMIN=desk:s3cret-long-enough", "TRUSTED_PROXIES=127.0.0.1")
	signedIn := mustCall(t, app.base, http.MethodPost, "/session", ctForm, formOf("name", "desk", "password", "s3cret-long-enough"), testutil.HPage).
		WantStatus(t, http.StatusSeeOther)
	var session string
	for _, c := range (&http.Response{Header: signedIn.Header}).Cookies() {
		if c.Name == "orders_session" {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatalf("signing in set no session cookie: %q", signedIn.Header.Values("Set-Cookie"))
	}
	auth := testutil.H{"Cookie": "orders_session=" + session}
	wrong := testutil.H{"Authorization": "Bearer a-guessed-token", "X-Forwarded-For": "192.0.2.66"}
	self := "http://" + app.base[len("http://"):]

	var o orderJSON
	mustCall(t, app.base, http.MethodPost, "/orders", ctJSON, jsonOf(map[string]any{"customer": "Mine"}), testutil.HJSON.With(auth)).WantStatus(t, 201).JSON(t, &o)
	mustCall(t, app.base, http.MethodPost, "/products", ctJSON, jsonOf(map[string]any{"sku": "MINE-1", "name": "Mine", "unit_price": "2"}), testutil.HJSON.With(auth)).WantStatus(t, 201)
	count := func() int64 {
		var l listJSON
		mustCall(t, app.base, http.MethodGet, "/orders", "", nil, testutil.HJSON.With(auth)).WantStatus(t, 200).JSON(t, &l)
		return l.Total
	}
	tried := 0
	for _, c := range []struct {
		name string
		h    testutil.H
		want int
	}{
		{"no credentials", testutil.H{}, 401},
		{"a wrong token", wrong, 401},
		{"no credentials, cross-site", testutil.H{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"credentials, from evil.example", auth.With(testutil.H{"Origin": "http://evil.example"}), 403},
		{"credentials, cross-site", auth.With(testutil.H{"Sec-Fetch-Site": "cross-site"}), 403},
		{"credentials, Origin null", auth.With(testutil.H{"Origin": "null"}), 403},
	} {
		for _, w := range append(writeRequests("1"), productWriteRequests("1")...) {
			what := fmt.Sprintf("%s with %s", w.name, c.name)
			r, err := call(app.base, w.method, w.path, w.ctype, w.body, testutil.HJSON.With(c.h))
			tried++
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if r.Status == http.StatusTooManyRequests && c.want == http.StatusUnauthorized && c.h["X-Forwarded-For"] != "" {
				continue // the wrong tokens' address has failed too often
			}
			if r.Status != c.want {
				t.Errorf("%s: got %d, want %d; body %s", what, r.Status, c.want, testutil.Snippet(r.Body))
				continue
			}
			if r.Status == http.StatusUnauthorized {
				if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") || len(r.Body) == 0 {
					t.Errorf("%s: 401 with WWW-Authenticate %q and body %s, want a challenge and a message", what, r.Header.Get("WWW-Authenticate"), testutil.Snippet(r.Body))
				}
				continue
			}
			checkMessage(t, what, r, true, "cross-origin")
		}
	}
	for _, path := range []string{"/orders", "/orders/1", "/orders/inquiry", "/orders/new", "/products", "/products/1", "/products/new", "/products/1/edit"} {
		mustCall(t, app.base, http.MethodGet, path, "", nil, testutil.HPage).WantStatus(t, http.StatusSeeOther).
			WantHeader(t, "Location", "/session/new?next="+url.QueryEscape(path))
	}
	var p productJSON
	mustCall(t, app.base, http.MethodGet, "/products/1", "", nil, testutil.HJSON.With(auth)).WantStatus(t, 200).JSON(t, &p)
	if p.Version != 1 || p.SKU != "MINE-1" || p.Name != "Mine" || !p.Active {
		t.Fatalf("after the strangers: product 1 is %+v; want MINE-1 unchanged at version 1", p)
	}
	var now orderJSON
	mustCall(t, app.base, http.MethodGet, "/orders/1", "", nil, testutil.HJSON.With(auth)).WantStatus(t, 200).JSON(t, &now)
	if n := count(); n != 1 || now.Version != 1 || now.Customer != "Mine" {
		t.Fatalf("after the strangers: %d orders, order 1 at version %d named %q; want 1 order unchanged", n, now.Version, now.Customer)
	}
	mustCall(t, app.base, http.MethodGet, "/healthz", "", nil, nil).WantStatus(t, 200)
	// The desk itself, from its own origin, over real HTTP.
	mustCall(t, app.base, http.MethodPost, "/orders", ctJSON, jsonOf(map[string]any{"customer": "Own"}),
		testutil.HJSON.With(auth).With(testutil.H{"Origin": self, "Sec-Fetch-Site": "same-origin"})).WantStatus(t, 201)
	mustCall(t, app.base, http.MethodPut, "/orders/1", ctForm, formOf("_method", "PUT", "customer", "Own"),
		testutil.HJSON.With(auth).With(testutil.H{"Origin": self})).WantStatus(t, 200)
	mustCall(t, app.base, http.MethodDelete, "/orders/1", "", nil, testutil.HJSON.With(auth)).WantStatus(t, 204)
	t.Logf("%d stranger writes over HTTP: 401 without a session or token, 403 from another site with one; the own origin (%s) passes", tried, self)
}
