package routes

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"orders/testutil"
)

// TestIssue8Findings holds one case per finding 4–9 of issue 8 that lives
// in the HTTP layer (the embedded store's, 1, 7 and 8, are in
// store/embedded_test.go; the Cluster's, 2 and 3, in store/write_test.go
// and e2e). Each case failed on the code the issue was filed against.
func TestIssue8Findings(t *testing.T) {
	newApp := func(t *testing.T) (*testApp, testutil.Target) {
		tg := testutil.Miniredis(t)
		return newTestApp(t, "miniredis", testutil.NewStore(t, tg)), tg
	}
	ctx := context.Background()

	t.Run("4 a panic answers 500 with a request id and the process keeps serving", func(t *testing.T) {
		a, _ := newApp(t)
		a.app.Get("/boom", func(*fiber.Ctx) error { panic("boom") })
		r := a.get(t, "/boom", hJSON).wantStatus(t, http.StatusInternalServerError)
		if id := r.object(t)["request_id"]; id == "" || id == nil || strings.Contains(r.body, "boom") {
			t.Errorf("500 body %s: want a request id and no internals", r.body)
		}
		a.get(t, "/boom", hPage).wantStatus(t, http.StatusInternalServerError).wantContains(t, r.header.Get("X-Request-Id")[:8])
		a.createNamed(t, "Still Serving")
	})

	t.Run("4 a damaged order hash is skipped, never a panic", func(t *testing.T) {
		a, tg := newApp(t)
		a.createNamed(t, "Whole Order")
		// A version and fewer than five fields: decodeOrder used to make a
		// slice of negative capacity.
		if err := tg.Client.HSet(ctx, "o:{2}", "v", "3", "c", "Broken").Err(); err != nil {
			t.Fatal(err)
		}
		tg.Client.ZAdd(ctx, "ix:id", redis.Z{Score: 2, Member: "2"})
		a.get(t, path(2), hJSON).wantStatus(t, http.StatusNotFound)
		a.do(t, http.MethodPut, path(2), jsonBody(map[string]any{"customer": "x"}), hJSON).wantStatus(t, http.StatusNotFound)
		r := a.get(t, "/orders", hJSON).wantStatus(t, http.StatusOK)
		if !strings.Contains(r.body, "Whole Order") || strings.Contains(r.body, "Broken") {
			t.Errorf("list with a damaged order: %s", snippet(r.body))
		}
	})

	t.Run("5 a compressed request body is refused before it is inflated", func(t *testing.T) {
		a, _ := newApp(t)
		var bomb bytes.Buffer
		zw := gzip.NewWriter(&bomb)
		zw.Write(bytes.Repeat([]byte(" "), 64<<20)) // 64 MiB of spaces in about 64 KiB
		zw.Close()
		for _, enc := range []string{"gzip", "deflate", "br", "GZIP"} {
			start := time.Now()
			a.do(t, http.MethodPost, "/orders", body{"application/json", bomb.Bytes()}, hJSON.with(H{"Content-Encoding": enc})).
				wantStatus(t, http.StatusUnsupportedMediaType)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Content-Encoding %s: answered after %v: was the body inflated?", enc, d)
			}
		}
		if n := a.count(t); n != 0 {
			t.Errorf("%d orders after refused compressed bodies, want 0", n)
		}
	})

	t.Run("6 a Host the server does not answer to gets 421 (DNS rebinding)", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Rebind Target")
		evil := H{"Host": "r.evil.test:3000", "Origin": "http://r.evil.test:3000", "Sec-Fetch-Site": "same-origin"}
		a.do(t, http.MethodDelete, "http://r.evil.test:3000"+path(o.ID), noBody, hJSON.with(evil)).wantStatus(t, http.StatusMisdirectedRequest)
		a.do(t, http.MethodGet, "http://r.evil.test:3000"+path(o.ID), noBody, hJSON.with(evil)).wantStatus(t, http.StatusMisdirectedRequest)
		a.fetch(t, o.ID)
		for _, host := range []string{"127.0.0.1:3000", "localhost:3000", "[::1]:3000", "10.1.2.3", "example.com"} {
			a.do(t, http.MethodGet, "http://"+host+path(o.ID), noBody, hJSON).wantStatus(t, http.StatusOK)
		}
	})

	t.Run("9 invisible-only text is empty, bidi overrides are refused, text is NFC", func(t *testing.T) {
		a, _ := newApp(t)
		for _, c := range []struct{ customer, field string }{
			{"\u200b", "customer"}, {"\ufeff\u200d \u2060", "customer"}, {"Ada \u202eecalevoL", "customer"}, {"Ada\u2066x\u2069", "customer"},
		} {
			r := a.do(t, http.MethodPost, "/orders", jsonBody(map[string]any{"customer": c.customer}), hJSON).wantStatus(t, http.StatusUnprocessableEntity)
			if !strings.Contains(r.body, `"`+c.field+`"`) {
				t.Errorf("customer %q: body %s, want an error for %s", c.customer, r.body, c.field)
			}
		}
		a.do(t, http.MethodPost, "/orders", jsonBody(map[string]any{"customer": "Ada", "items": []any{item("\u200b", 1, "1.00")}}), hJSON).
			wantStatus(t, http.StatusUnprocessableEntity).wantContains(t, "items[0][name]")
		composed := a.createNamed(t, "Zo\u00e9 Martin")
		decomposed := a.createNamed(t, "Zoe\u0301 Martin")
		if composed.Customer != decomposed.Customer {
			t.Errorf("composed and decomposed Zoé stored as %q and %q, want one NFC form", composed.Customer, decomposed.Customer)
		}
		for _, q := range []string{"zo%C3%A9", "zoe%CC%81"} {
			var l struct{ Total int64 }
			a.get(t, "/orders?q="+q, hJSON).wantStatus(t, http.StatusOK).json(t, &l)
			if l.Total != 2 {
				t.Errorf("search %s: total %d, want both orders", q, l.Total)
			}
		}
	})

	t.Run("9 two Content-Length headers are refused", func(t *testing.T) {
		a, _ := newApp(t)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go a.app.Listener(ln)
		defer a.app.Shutdown()
		for _, lens := range [][2]string{{"22", "5"}, {"5", "22"}, {"22", "22"}} {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(3 * time.Second))
			io.WriteString(conn, "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n"+
				"Content-Length: "+lens[0]+"\r\nContent-Length: "+lens[1]+"\r\n\r\n{\"customer\":\"Smuggle\"}")
			line, _ := io.ReadAll(io.LimitReader(conn, 40))
			conn.Close()
			if !strings.HasPrefix(string(line), "HTTP/1.1 400") {
				t.Errorf("Content-Length %s and %s: got %q, want 400", lens[0], lens[1], line)
			}
		}
		if n := a.count(t); n != 0 {
			t.Errorf("%d orders after smuggling attempts, want 0", n)
		}
	})

	t.Run("9 a page far past the end has no next link and leads back to the last page", func(t *testing.T) {
		a, _ := newApp(t)
		for range 3 {
			a.createNamed(t, "Pager")
		}
		for _, page := range []string{"999", "4611686018427387904", "92233720368547758"} {
			var l struct {
				Orders     []any
				Total      int64
				Prev, Next *string
			}
			a.get(t, "/orders?per_page=100&page="+page, hJSON).wantStatus(t, http.StatusOK).json(t, &l)
			if len(l.Orders) != 0 || l.Next != nil || l.Total != 3 || l.Prev == nil || *l.Prev != "/orders?per_page=100" {
				t.Errorf("page %s: %d orders, total %d, prev %v, next %v; want none, 3, the first page, none", page, len(l.Orders), l.Total, deref(l.Prev), deref(l.Next))
			}
		}
	})

	t.Run("9 a notice shows once: cleared on its path, never answered by a 304", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Notice")
		cookie := H{"Cookie": "notice=Order+1+saved."}
		r := a.get(t, path(o.ID), hPage.with(cookie).with(H{"If-None-Match": `"o1v1-page"`})).wantStatus(t, http.StatusOK).wantContains(t, "Order 1 saved.")
		sc := r.header.Get("Set-Cookie")
		if !strings.Contains(sc, "notice=") || !strings.Contains(strings.ToLower(sc), "path=/") || !strings.Contains(strings.ToLower(sc), "max-age=0") && !strings.Contains(strings.ToLower(sc), "expires=") {
			t.Errorf("clearing the notice cookie: Set-Cookie %q, want it expired with Path=/", sc)
		}
		if r.header.Get("ETag") != "" {
			t.Errorf("a page carrying a notice has ETag %q: a cache would replay the notice", r.header.Get("ETag"))
		}
	})

	t.Run("9 a 304 carries the Cache-Control of its 200", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Cached")
		ok := a.get(t, path(o.ID), hJSON).wantStatus(t, http.StatusOK)
		nm := a.get(t, path(o.ID), hJSON.with(H{"If-None-Match": ok.header.Get("ETag")})).wantStatus(t, http.StatusNotModified)
		for _, h := range []string{"Cache-Control", "ETag", "Vary"} {
			if nm.header.Get(h) != ok.header.Get(h) {
				t.Errorf("304 %s %q, 200 %q: want the same", h, nm.header.Get(h), ok.header.Get(h))
			}
		}
	})

	t.Run("9 PUT of an order without items answers items [] and a no-op PUT keeps the version", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.create(t, map[string]any{"customer": "No Items"})
		for _, put := range []map[string]any{{}, {"customer": "No Items"}, {"customer": "Renamed"}} {
			r := a.do(t, http.MethodPut, path(o.ID), jsonBody(put), hJSON).wantStatus(t, http.StatusOK)
			if !strings.Contains(r.body, `"items":[]`) {
				t.Errorf("PUT %v: body %s, want \"items\":[]", put, r.body)
			}
		}
		if got := a.fetch(t, o.ID); got.Version != 2 {
			t.Errorf("after two no-op PUTs and one change: version %d, want 2", got.Version)
		}
	})

	t.Run("9 DELETE with an empty version is refused, not unchecked", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Keep Me")
		for _, q := range []string{"?version=", "?version=abc", "?version=0"} {
			a.do(t, http.MethodDelete, path(o.ID)+q, noBody, hJSON).wantStatus(t, http.StatusBadRequest)
		}
		a.fetch(t, o.ID)
	})

	t.Run("9 _method is read from the form body only, never the query", func(t *testing.T) {
		a, _ := newApp(t)
		o := a.createNamed(t, "Not Deleted")
		r := a.do(t, http.MethodPost, path(o.ID)+"?_method=DELETE", form("customer", "x"), hJSON)
		if r.status == http.StatusNoContent || r.status == http.StatusSeeOther {
			t.Errorf("POST %s?_method=DELETE: %d, want the POST refused (405)", path(o.ID), r.status)
		}
		a.fetch(t, o.ID)
		a.do(t, http.MethodPost, path(o.ID), form("_method", "DELETE"), hJSON).wantStatus(t, http.StatusNoContent)
	})
}

func deref(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}
