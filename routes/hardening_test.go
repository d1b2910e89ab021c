package routes

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"orders/testutil"
)

// TestHTTPHardening: what the HTTP layer does with requests and records
// that could hurt it (a panic, a damaged record, a compressed body, a
// foreign Host, forwarded headers from anyone, smuggling framing, odd
// pages, notices, versions, _method, invisible text). Each write that must
// be refused is checked against the store: the order is as it was, and no
// order was added.
func TestHTTPHardening(t *testing.T) {
	newApp := func(t *testing.T) (*testApp, testutil.Target) {
		tg := testutil.Miniredis(t)
		return newTestApp(t, "miniredis", testutil.NewStore(t, tg)), tg
	}
	ctx := context.Background()

	t.Run("4 a panic answers 500 with a request id, logs its stack, and the process keeps serving", func(t *testing.T) {
		var logs testutil.SyncBuffer
		a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)),
			func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
		app := a.app
		app.Get("/boom", func(c *fiber.Ctx) error {
			// What a handler set before it panicked must not reach the 500.
			c.Set(fiber.HeaderETag, `"o1v1-json"`)
			c.Set("HX-Push-Url", "/orders/1")
			c.Cookie(&fiber.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1})
			c.WriteString("half a body")
			panic("boom in a handler")
		})
		app.Get("/boom-in-error-handler", func(c *fiber.Ctx) error { return panicsInErrorsAs{} })

		r := a.get(t, "/boom", testutil.HJSON).WantStatus(t, http.StatusInternalServerError)
		id := r.Header.Get("X-Request-Id")
		if got := r.Object(t)["request_id"]; id == "" || got != id || strings.Contains(r.Body, "boom") || strings.Contains(r.Body, "half") {
			t.Errorf("500 body %s, X-Request-Id %q: want the request id in the body and no internals", r.Body, id)
		}
		for _, h := range []string{"ETag", "HX-Push-Url", "Set-Cookie"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("500 after a panic carries %s %q set by the handler before it panicked, want none", h, v)
			}
		}
		if l := logs.String(); !strings.Contains(l, "boom in a handler") || !strings.Contains(l, "request_id="+id) ||
			!strings.Contains(l, "goroutine") || !strings.Contains(l, "hardening_test.go") {
			t.Errorf("log after a panic:\n%s\nwant the panic value, the request id %s and the stack", l, id)
		}
		p := a.get(t, "/boom", testutil.HPage).WantStatus(t, http.StatusInternalServerError)
		p.WantPage(t, "error").WantContains(t, p.Header.Get("X-Request-Id")).WantLacks(t, "boom")
		e := a.get(t, "/boom-in-error-handler", testutil.HJSON).WantStatus(t, http.StatusInternalServerError)
		if eid := e.Header.Get("X-Request-Id"); eid == "" || !strings.Contains(e.Body, eid) {
			t.Errorf("a panic in the error handler: body %q, want a 500 naming request id %q", e.Body, eid)
		}
		a.createNamed(t, "Still Serving")
		a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "Still Serving")
	})

	t.Run("4 a damaged order hash is skipped, never a panic", func(t *testing.T) {
		a, tg := newApp(t)
		a.createNamed(t, "Whole Order")
		// A version and fewer than five fields: decodeOrder must not make a
		// slice of negative capacity.
		if err := tg.Client.HSet(ctx, "o:{2}", "v", "3", "c", "Broken").Err(); err != nil {
			t.Fatal(err)
		}
		tg.Client.ZAdd(ctx, "ix:{id}:pending", redis.Z{Score: 2, Member: "2"})
		a.get(t, path(2), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		a.do(t, http.MethodPut, path(2), testutil.JSON(map[string]any{"customer": "x"}), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		r := a.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusOK)
		if !strings.Contains(r.Body, "Whole Order") || strings.Contains(r.Body, "Broken") {
			t.Errorf("list with a damaged order: %s", testutil.Snippet(r.Body))
		}
	})

	t.Run("5 a compressed request body is refused with 415 and never inflated", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Untouched")
		// 64 MiB of JSON whitespace around a valid object, in about 64 KiB.
		// Inflated, it would be a 413 (over 1 MiB) or, small enough, a write.
		var bomb bytes.Buffer
		zw := gzip.NewWriter(&bomb)
		fmt.Fprintf(zw, `{"customer":"Bomb"}`)
		zw.Write(bytes.Repeat([]byte(" "), 64<<20))
		zw.Close()
		send := func(method, target string, encodings ...string) *http.Response {
			req := httptest.NewRequest(method, target, bytes.NewReader(bomb.Bytes()))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			for _, e := range encodings {
				req.Header.Add("Content-Encoding", e) // one header line each
			}
			res, err := a.app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		for _, c := range []struct {
			method, target string
			encodings      []string
		}{
			{"POST", "/orders", []string{"gzip"}},
			{"POST", "/orders", []string{"deflate"}},
			{"POST", "/orders", []string{"br"}},
			{"POST", "/orders", []string{"GZIP"}},
			{"POST", "/orders", []string{"identity, gzip"}},
			// Fiber's c.Body() reads the last line, c.Get the first.
			{"POST", "/orders", []string{"identity", "gzip"}},
			{"PUT", path(o.ID), []string{"identity", "gzip"}},
			{"DELETE", path(o.ID), []string{"identity", "gzip"}},
		} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res := send(c.method, c.target, c.encodings...)
			runtime.ReadMemStats(&after)
			if res.StatusCode != http.StatusUnsupportedMediaType {
				t.Errorf("%s %s with Content-Encoding %q: got %d, want 415", c.method, c.target, c.encodings, res.StatusCode)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("%s %s with Content-Encoding %q: %d MiB allocated, want far less than the 64 MiB the body inflates to",
					c.method, c.target, c.encodings, grew>>20)
			}
		}
		if got := a.fetch(t, o.ID); got.Version != o.Version || got.Customer != o.Customer {
			t.Errorf("order after refused compressed writes: %+v, want it as it was (%+v)", got, o)
		}
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after refused compressed bodies, want 1", n)
		}
		// identity is no encoding at all.
		a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Plain"}), testutil.HJSON.With(testutil.H{"Content-Encoding": "identity"})).
			WantStatus(t, http.StatusCreated)
	})

	t.Run("6 a Host the server does not answer to gets 421 before any work (DNS rebinding)", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Rebind Target")
		// The reproduction: a rebinding page's own name, Origin and
		// Sec-Fetch-Site all agree with each other.
		evil := testutil.H{"Origin": "http://r.evil.test:3000", "Sec-Fetch-Site": "same-origin"}
		for _, m := range []string{http.MethodDelete, http.MethodGet} {
			r := a.do(t, m, "http://r.evil.test:3000"+path(o.ID), testutil.NoBody, testutil.HJSON.With(evil)).WantStatus(t, http.StatusMisdirectedRequest)
			if strings.Contains(r.Body, "Rebind Target") || r.Object(t)["request_id"] == nil {
				t.Errorf("%s under a foreign host: body %s, want an error with a request id and no order", m, r.Body)
			}
		}
		a.do(t, http.MethodPut, "http://r.evil.test:3000"+path(o.ID), testutil.JSON(map[string]any{"customer": "Stolen"}), testutil.HJSON.With(evil)).
			WantStatus(t, http.StatusMisdirectedRequest)
		a.do(t, http.MethodPost, "http://r.evil.test/orders", testutil.JSON(map[string]any{"customer": "Planted"}), testutil.HJSON).
			WantStatus(t, http.StatusMisdirectedRequest)
		a.get(t, "http://r.evil.test/orders", testutil.HPage).WantStatus(t, http.StatusMisdirectedRequest).WantPage(t, "error")
		if got := a.fetch(t, o.ID); got.Version != o.Version || got.Customer != o.Customer {
			t.Errorf("order after requests under a foreign host: %+v, want it as it was", got)
		}
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after a write under a foreign host, want 1", n)
		}
		// IP literals, localhost and the configured names pass, in any case
		// and with a trailing dot; probes use IP literals and localhost.
		for _, host := range []string{"127.0.0.1:3000", "localhost:3000", "LOCALHOST", "app.localhost:3000", "[::1]:3000", "10.1.2.3", "example.com", "Example.COM.:3000"} {
			a.do(t, http.MethodGet, "http://"+host+path(o.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusOK)
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			a.get(t, "http://127.0.0.1:3000"+p, testutil.H{}).WantStatus(t, http.StatusOK)
			a.get(t, "http://localhost"+p, testutil.H{}).WantStatus(t, http.StatusOK)
		}
		// A same-origin write under an allowed name still passes: the
		// origin check compares Origin with the Host that passed.
		a.do(t, http.MethodPut, "http://localhost:3000"+path(o.ID), testutil.JSON(map[string]any{"customer": "Renamed Here"}),
			testutil.HJSON.With(testutil.H{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-origin"})).WantStatus(t, http.StatusOK)

		// No names configured (the default): IP literals and localhost only.
		d := newTestApp(t, "miniredis", a.store, func(c *Config) { c.AllowedHosts = nil })
		d.get(t, "http://example.com"+path(o.ID), testutil.HJSON).WantStatus(t, http.StatusMisdirectedRequest)
		d.get(t, "http://127.0.0.1:3000"+path(o.ID), testutil.HJSON).WantStatus(t, http.StatusOK)
		d.get(t, "http://localhost:3000"+path(o.ID), testutil.HJSON).WantStatus(t, http.StatusOK)

		// A name that could never match is refused at start, not ignored.
		for _, c := range []Config{{AllowedHosts: []string{"orders.example:3000"}}, {AllowedHosts: []string{"https://orders.example"}},
			{TrustedProxies: []string{"proxy.internal"}}, {TrustedProxies: []string{"10.0.0.0/33"}}} {
			c.Store, c.Files = a.store, testutil.Files(t)
			if _, err := New(c); err == nil {
				t.Errorf("New with hosts %q, proxies %q: no error, want one", c.AllowedHosts, c.TrustedProxies)
			}
		}
	})

	t.Run("9 X-Forwarded-* from a client that is not a trusted proxy change nothing", func(t *testing.T) {
		a, _ := newApp(t) // no trusted proxies
		o := a.createNamed(t, "Forwarded")
		for _, c := range []struct {
			name string
			h    testutil.H
		}{
			// The host the origin check compares with stays the Host header.
			{"X-Forwarded-Host", testutil.H{"X-Forwarded-Host": "r.evil.test", "Origin": "http://r.evil.test", "Sec-Fetch-Site": "same-origin"}},
			// The scheme stays http.
			{"X-Forwarded-Proto", testutil.H{"X-Forwarded-Proto": "https", "Origin": "https://example.com", "Sec-Fetch-Site": "same-origin"}},
		} {
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "Forged"}), testutil.HJSON.With(c.h)).
				WantStatus(t, http.StatusForbidden)
			a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Forged"}), testutil.HJSON.With(c.h)).
				WantStatus(t, http.StatusForbidden)
			// Nor does it make the app answer to another host.
			a.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"X-Forwarded-Host": "r.evil.test"})).WantStatus(t, http.StatusOK)
		}
		if got := a.fetch(t, o.ID); got.Version != o.Version || got.Customer != o.Customer {
			t.Errorf("order after forged X-Forwarded-* writes: %+v, want it as it was", got)
		}
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after forged X-Forwarded-* writes, want 1", n)
		}
		// From a trusted proxy (app.Test's requests come from 0.0.0.0) the
		// same headers count, and the forwarded host is checked too.
		p := newTestApp(t, "miniredis", a.store, func(c *Config) { c.TrustedProxies = []string{"0.0.0.0"} })
		p.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "Through TLS"}),
			testutil.HJSON.With(testutil.H{"X-Forwarded-Proto": "https", "Origin": "https://example.com", "Sec-Fetch-Site": "same-origin"})).WantStatus(t, http.StatusOK)
		p.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"X-Forwarded-Host": "r.evil.test"})).WantStatus(t, http.StatusMisdirectedRequest)
	})

	t.Run("9 two Content-Length headers, or Content-Length with Transfer-Encoding, are 400 and end the connection", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Victim")
		addr := testutil.Serve(t, a.app)
		const post = "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
		// A request hidden where one reader sees a body and the other the
		// next request: it must never run.
		smuggled := "DELETE " + path(o.ID) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n"
		obj := `{"customer":"Smuggle"}`
		for _, c := range []struct{ name, headers, body string }{
			{"lengths 22 then 5", "Content-Length: 22\r\nContent-Length: 5\r\n", obj},
			{"lengths 5 then 22", "Content-Length: 5\r\nContent-Length: 22\r\n", obj},
			{"the same length twice", "Content-Length: 22\r\nContent-Length: 22\r\n", obj},
			{"a body length then 0, a request behind", fmt.Sprintf("Content-Length: %d\r\nContent-Length: 0\r\n", len(smuggled)), smuggled},
			{"Transfer-Encoding and Content-Length, a request behind", fmt.Sprintf("Transfer-Encoding: chunked\r\nContent-Length: %d\r\n", 5+len(smuggled)), "0\r\n\r\n" + smuggled},
			{"Content-Length and Transfer-Encoding", fmt.Sprintf("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n", len(obj)), obj},
			{"a transfer coding other than chunked", "Transfer-Encoding: gzip, chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(obj), obj)},
		} {
			got := exchange(t, addr, post+c.headers+"\r\n"+c.body)
			if !strings.HasPrefix(got, "HTTP/1.1 400") || strings.Count(got, "HTTP/1.1 ") != 1 {
				t.Errorf("%s: got %q, want one 400 and the connection closed", c.name, testutil.Snippet(got))
			}
		}
		if got := a.fetch(t, o.ID); got.Version != o.Version {
			t.Errorf("order after smuggling attempts: %+v, want it as it was", got)
		}
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after smuggling attempts, want 1", n)
		}
		// One length, or chunked alone, is a request like any other.
		if got := exchange(t, addr, post+"Connection: close\r\nContent-Length: 22\r\n\r\n"+obj); !strings.HasPrefix(got, "HTTP/1.1 201") {
			t.Errorf("one Content-Length: got %q, want 201", testutil.Snippet(got))
		}
		if got := exchange(t, addr, post+"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"+fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(obj), obj)); !strings.HasPrefix(got, "HTTP/1.1 201") {
			t.Errorf("chunked: got %q, want 201", testutil.Snippet(got))
		}
	})

	t.Run("9 a page far past the end has no next link and leads back to the last page", func(t *testing.T) {
		a, _ := newApp(t)
		for range 3 {
			a.createNamed(t, "Pager")
		}
		// The second overflows page × per_page in int64; the third just fits.
		for _, page := range []string{"2", "999", "4611686018427387904", "92233720368547758", "99999999999999999999"} {
			var l struct {
				Orders     []any
				Total      int64
				Prev, Next *string
			}
			a.get(t, "/orders?per_page=100&page="+page, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l)
			if len(l.Orders) != 0 || l.Next != nil || l.Total != 3 || l.Prev == nil || *l.Prev != "/orders?per_page=100" {
				t.Errorf("page %s: %d orders, total %d, prev %v, next %v; want none, 3, the first page, none", page, len(l.Orders), l.Total, deref(l.Prev), deref(l.Next))
			}
			a.get(t, "/orders?per_page=100&page="+page, testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, `rel="next"`)
		}
		// The last real page has no next either; the one before it has.
		var l struct{ Next *string }
		a.get(t, "/orders?per_page=2&page=2", testutil.HJSON).JSON(t, &l)
		if l.Next != nil {
			t.Errorf("last page: next %v, want none", deref(l.Next))
		}
		a.get(t, "/orders?per_page=2&page=1", testutil.HJSON).JSON(t, &l)
		if l.Next == nil || *l.Next != "/orders?page=2&per_page=2" {
			t.Errorf("first of two pages: next %v, want /orders?page=2&per_page=2", deref(l.Next))
		}
	})

	t.Run("9 a notice shows once: cleared on its path, never stored, never answered by a 304", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Notice")
		cookie := testutil.H{"Cookie": "notice=Order+1+saved."}
		for _, target := range []string{path(o.ID), "/orders"} {
			// The If-None-Match names the current version: without the
			// notice this would be a 304 replaying a cached page.
			r := a.get(t, target, testutil.HPage.With(cookie).With(testutil.H{"If-None-Match": `"o1v1-page"`})).
				WantStatus(t, http.StatusOK).WantContains(t, "Order 1 saved.")
			sc := strings.ToLower(r.Header.Get("Set-Cookie"))
			if !strings.HasPrefix(sc, "notice=;") || !strings.Contains(sc, "path=/") || !strings.Contains(sc, "max-age=0") && !strings.Contains(sc, "expires=thu, 01 jan 1970") {
				t.Errorf("GET %s: clearing the notice cookie with Set-Cookie %q, want it expired with Path=/ (the Path it was set with)", target, sc)
			}
			if et := r.Header.Get("ETag"); et != "" {
				t.Errorf("GET %s: a page carrying a notice has ETag %q: a cache would replay the notice", target, et)
			}
			if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("GET %s: a page carrying a notice has Cache-Control %q, want no-store", target, cc)
			}
		}
		// Without the cookie the page is cacheable again, and has no notice.
		r := a.get(t, path(o.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, "Order 1 saved.")
		a.get(t, path(o.ID), testutil.HPage.With(testutil.H{"If-None-Match": r.Header.Get("ETag")})).WantStatus(t, http.StatusNotModified)
	})

	t.Run("9 a 304 carries the Cache-Control, ETag and Vary of its 200", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Cached")
		for _, h := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX, testutil.HXTo("tr#" + rowID(o.ID))} {
			ok := a.get(t, path(o.ID), h).WantStatus(t, http.StatusOK)
			nm := a.get(t, path(o.ID), h.With(testutil.H{"If-None-Match": ok.Header.Get("ETag")})).WantStatus(t, http.StatusNotModified)
			for _, k := range []string{"Cache-Control", "ETag", "Vary"} {
				if nm.Header.Get(k) != ok.Header.Get(k) || ok.Header.Get(k) == "" {
					t.Errorf("%s: 304 %s %q, 200 %q: want the same, and set", ok.What, k, nm.Header.Get(k), ok.Header.Get(k))
				}
			}
		}
	})

	t.Run("9 PUT of an order without items answers items [] and a no-op PUT keeps the version", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.create(t, map[string]any{"customer": "No Items"})
		for _, put := range []map[string]any{{}, {"customer": "No Items"}, {"customer": "Renamed"}} {
			r := a.do(t, http.MethodPut, path(o.ID), testutil.JSON(put), testutil.HJSON).WantStatus(t, http.StatusOK)
			if !strings.Contains(r.Body, `"items":[]`) {
				t.Errorf("PUT %v: body %s, want \"items\":[]", put, r.Body)
			}
		}
		if got := a.fetch(t, o.ID); got.Version != 2 {
			t.Errorf("after two no-op PUTs and one change: version %d, want 2", got.Version)
		}
		if r := a.get(t, path(o.ID), testutil.HJSON); !strings.Contains(r.Body, `"items":[]`) {
			t.Errorf("GET after the PUTs: body %s, want \"items\":[]", r.Body)
		}
	})

	t.Run("9 DELETE with an empty or malformed version is 400 like a PUT's, and deletes nothing", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Keep Me")
		put := a.do(t, http.MethodPut, path(o.ID), testutil.Form("version", "abc", "customer", "x"), testutil.HJSON)
		if put.Status != http.StatusBadRequest {
			t.Fatalf("PUT with version abc: %d, want 400 (what DELETE is held to)", put.Status)
		}
		for _, q := range []string{"?version=", "?version", "?version=abc", "?version=0", "?version=-1", "?version=1.5", "?version=%20"} {
			r := a.do(t, http.MethodDelete, path(o.ID)+q, testutil.NoBody, testutil.HJSON).WantStatus(t, put.Status)
			if msg, _ := r.Object(t)["error"].(string); !strings.Contains(msg, "version") {
				t.Errorf("DELETE %s: error %q, want it to name the version", q, msg)
			}
			a.do(t, http.MethodDelete, path(o.ID)+q, testutil.NoBody, testutil.HXTo("tr#"+rowID(o.ID))).WantStatus(t, put.Status)
		}
		a.do(t, http.MethodPost, path(o.ID), testutil.Form("_method", "DELETE", "version", ""), testutil.HJSON).WantStatus(t, put.Status)
		if got := a.fetch(t, o.ID); got.Version != o.Version {
			t.Errorf("order after refused deletes: %+v, want it as it was", got)
		}
		a.do(t, http.MethodDelete, path(o.ID)+"?version=1", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
	})

	t.Run("9 _method is read from the form body only, never the query", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Not Deleted")
		for _, c := range []struct {
			name string
			b    testutil.Body
		}{
			{"urlencoded", testutil.Form("customer", "x")},
			{"multipart", testutil.Multipart("customer", "x")},
		} {
			for _, m := range []string{"DELETE", "PUT"} {
				r := a.do(t, http.MethodPost, path(o.ID)+"?_method="+m, c.b, testutil.HJSON)
				if r.Status != http.StatusMethodNotAllowed {
					t.Errorf("%s POST %s?_method=%s: %d, want 405 (a POST on a member)", c.name, path(o.ID), m, r.Status)
				}
			}
		}
		if got := a.fetch(t, o.ID); got.Version != o.Version || got.Customer != o.Customer {
			t.Errorf("order after POSTs with _method in the query: %+v, want it as it was", got)
		}
		a.do(t, http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "customer", "Renamed"), testutil.HJSON).WantStatus(t, http.StatusOK)
		a.do(t, http.MethodPost, path(o.ID), testutil.Multipart("_method", "DELETE"), testutil.HJSON).WantStatus(t, http.StatusNoContent)
		a.wantGone(t, o.ID)
	})

	t.Run("9 invisible-only text is empty, bidi controls are refused, text is NFC", func(t *testing.T) {
		a, _ := newApp(t)
		const bidiMsg = "bidirectional"
		for _, c := range []struct {
			name  string
			order map[string]any
			key   string
			msg   string
		}{
			{"zero-width space", map[string]any{"customer": "\u200b"}, "customer", "is required"},
			{"BOM, joiners, word joiner, marks", map[string]any{"customer": "\ufeff\u200d \u2060\u200e\u200f"}, "customer", "is required"},
			{"right-to-left override", map[string]any{"customer": "Ada \u202eecalevoL"}, "customer", bidiMsg},
			{"embedding", map[string]any{"customer": "Ada \u202a x \u202c"}, "customer", bidiMsg},
			{"isolate", map[string]any{"customer": "Ada\u2066x\u2069"}, "customer", bidiMsg},
			{"override in email", map[string]any{"customer": "Ada", "email": "ada\u202e@example.com"}, "email", bidiMsg},
			{"override in notes", map[string]any{"customer": "Ada", "notes": "ring \u202ethe bell"}, "notes", bidiMsg},
			{"invisible item name", map[string]any{"customer": "Ada", "items": []any{item("\u200b\u200c", 1, "1.00")}}, "items[0][name]", "is required"},
			{"override in item name", map[string]any{"customer": "Ada", "items": []any{item("Cable \u202e", 1, "1.00")}}, "items[0][name]", bidiMsg},
			{"override in sku", map[string]any{"customer": "Ada", "items": []any{map[string]any{"sku": "KBD\u2067", "name": "Keyboard", "quantity": 1, "unit_price": "1.00"}}}, "items[0][sku]", bidiMsg},
		} {
			var e struct{ Errors map[string]string }
			a.do(t, http.MethodPost, "/orders", testutil.JSON(c.order), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if !strings.Contains(e.Errors[c.key], c.msg) {
				t.Errorf("%s: errors %v, want %s: %q", c.name, e.Errors, c.key, c.msg)
			}
		}
		if n := a.count(t); n != 0 {
			t.Errorf("%d orders after refused text, want 0", n)
		}
		// A PUT is held to the same rules, and changes nothing when refused.
		o := a.createNamed(t, "Ada")
		a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "\u2060"}), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity)
		a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "A\u202eda"), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity)
		if got := a.fetch(t, o.ID); got.Version != o.Version || got.Customer != "Ada" {
			t.Errorf("order after refused PUTs: %+v, want it as it was", got)
		}
		// Optional fields of nothing but invisible characters are empty.
		blank := a.create(t, map[string]any{"customer": "Blank", "notes": "\u200b\n\ufeff", "email": "\u200b",
			"items": []any{map[string]any{"sku": "\u200b", "name": "Cable", "quantity": 1, "unit_price": "1.00"}}})
		if blank.Notes != "" || blank.Email != "" || blank.Items[0].SKU != "" {
			t.Errorf("invisible-only notes, email, sku stored as %q, %q, %q; want all empty", blank.Notes, blank.Email, blank.Items[0].SKU)
		}
		// Composed and decomposed "Zoé" are one name, stored as NFC, and
		// either spelling finds both.
		composed := a.create(t, map[string]any{"customer": "Zo\u00e9 Martin", "notes": "caf\u00e9", "items": []any{item("Cr\u00e8me", 1, "1.00")}})
		decomposed := a.create(t, map[string]any{"customer": "Zoe\u0301 Martin", "notes": "cafe\u0301", "items": []any{item("Cre\u0300me", 1, "1.00")}})
		if composed.Customer != "Zo\u00e9 Martin" || decomposed.Customer != composed.Customer ||
			decomposed.Notes != composed.Notes || decomposed.Items[0].Name != composed.Items[0].Name {
			t.Errorf("composed and decomposed stored as %q/%q/%q and %q/%q/%q, want one NFC form",
				composed.Customer, composed.Notes, composed.Items[0].Name, decomposed.Customer, decomposed.Notes, decomposed.Items[0].Name)
		}
		for _, q := range []string{"zo%C3%A9", "zoe%CC%81"} {
			var l struct{ Total int64 }
			a.get(t, "/orders?q="+q, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &l)
			if l.Total != 2 {
				t.Errorf("search %s: total %d, want both orders", q, l.Total)
			}
		}
	})
}

// panicsInErrorsAs is an error whose As method panics: the error handler's
// errors.As calls it, so the error handler itself panics.
type panicsInErrorsAs struct{}

func (panicsInErrorsAs) Error() string { return "an error that panics when inspected" }
func (panicsInErrorsAs) As(any) bool   { panic("boom in the error handler") }

// exchange writes raw bytes on a new connection and returns everything the
// server answers until it closes the connection (or 3 s pass: a connection
// kept open reads as what came before).
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(conn)
	return string(got)
}

func deref(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}
