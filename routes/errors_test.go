package routes

// Error statuses, each in the representation asked for.

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

func TestBadRequest(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Bad Body")
		for _, c := range []struct{ name, body, want string }{
			{"truncated", `{"customer":`, "not valid JSON"},
			{"not an object", `["customer"]`, "JSON object"},
			{"empty", ``, "JSON object"},
			{"two objects", `{"customer":"a"} {"customer":"b"}`, "one JSON object"},
			{"customer a number", `{"customer": 5}`, "customer"},
			{"items a string", `{"customer":"x","items":"many"}`, "items"},
			{"item not an object", `{"customer":"x","items":[1]}`, ""},
			{"quantity a bool", `{"customer":"x","items":[{"name":"a","quantity":true,"unit_price":"1"}]}`, "items[0][quantity]"},
			{"price an object", `{"customer":"x","items":[{"name":"a","quantity":1,"unit_price":{}}]}`, "items[0][unit_price]"},
			{"version a string", `{"customer":"x","version":"1"}`, "version"},
			{"version zero", `{"customer":"x","version":0}`, "version"},
			{"trailing garbage", `{"customer":"x"}}`, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := a.count(t)
				for _, m := range []struct{ method, path string }{{http.MethodPost, "/orders"}, {http.MethodPut, path(o.ID)}} {
					r := a.do(t, m.method, m.path, testutil.JSON(c.body), testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t)
					var e errorJSON
					r.JSON(t, &e)
					if e.Error == "" || !strings.Contains(e.Error, c.want) || e.RequestID == "" {
						t.Errorf("%s %s: got %+v, want an error naming %q and a request_id", r.What, c.body, e, c.want)
					}
				}
				if got := a.count(t); got != before {
					t.Errorf("%d orders after a 400, want %d", got, before)
				}
			})
		}
		t.Run("html", func(t *testing.T) {
			a.do(t, http.MethodPost, "/orders", testutil.JSON(`{`), testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error")
			a.do(t, http.MethodPost, "/orders", testutil.JSON(`{`), testutil.HHX).WantStatus(t, http.StatusBadRequest).WantFragment(t, "error")
		})
		t.Run("form version", func(t *testing.T) {
			a.do(t, http.MethodPut, path(o.ID), testutil.Form("version", "abc"), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
		})
		if got := a.fetch(t, o.ID); got.Version != 1 {
			t.Errorf("after 400s: got version %d, want 1", got.Version)
		}
	})
}

func TestNotFound(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		a.createNamed(t, "Exists")
		for _, p := range []string{
			"/orders/999", "/orders/999/edit", "/orders/abc", "/orders/0", "/orders/01", "/orders/-1", "/orders/1.0",
			"/orders/1234567890123456789", "/orders/99999999999999999999999", "/orders/abc/edit", "/orders/0/edit",
			"/orders/1/nope", "/nope",
		} {
			t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
				var e errorJSON
				a.get(t, p, testutil.HJSON).WantStatus(t, http.StatusNotFound).WantNegotiated(t).JSON(t, &e)
				if e.Error == "" {
					t.Errorf("GET %s JSON: got %+v, want an error message", p, e)
				}
				a.get(t, p, testutil.HPage).WantStatus(t, http.StatusNotFound).WantNegotiated(t).WantPage(t, "error").WantContains(t, "Not found")
				a.get(t, p, testutil.HHX).WantStatus(t, http.StatusNotFound).WantNegotiated(t).WantFragment(t, "error")
			})
		}
		// The 18-digit maximum is a well-formed id: not found, but no error.
		a.get(t, "/orders/999999999999999999", testutil.HJSON).WantStatus(t, http.StatusNotFound)
		for _, m := range []string{http.MethodPut, http.MethodDelete} {
			for _, p := range []string{"/orders/999", "/orders/0", "/orders/01", "/orders/1234567890123456789"} {
				a.do(t, m, p, testutil.JSON(`{"customer":"x"}`), testutil.HJSON).WantStatus(t, http.StatusNotFound)
			}
		}
		a.do(t, http.MethodPost, "/orders/999", testutil.Form("_method", "PUT", "customer", "x"), testutil.HPage).WantStatus(t, http.StatusNotFound)
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after 404s, want 1", n)
		}
	})
}

func TestMethodNotAllowed(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Allow")
		for _, c := range []struct {
			method, path string
			b            testutil.Body
			allow        []string
		}{
			{http.MethodPut, "/orders/new", testutil.JSON(`{}`), []string{"GET"}},
			{http.MethodDelete, "/orders/new", testutil.NoBody, []string{"GET"}},
			{http.MethodDelete, "/orders", testutil.NoBody, []string{"GET", "POST"}},
			{http.MethodPut, "/orders", testutil.JSON(`{}`), []string{"GET", "POST"}},
			{http.MethodPost, path(o.ID), testutil.JSON(`{"customer":"x"}`), []string{"GET", "PUT", "DELETE"}},
			{http.MethodPost, path(o.ID), testutil.Form("customer", "x"), []string{"GET", "PUT", "DELETE"}},
			{http.MethodPost, path(o.ID, "/edit"), testutil.Form("customer", "x"), []string{"GET"}},
			{http.MethodPut, "/orders/inquiry", testutil.JSON(`{}`), []string{"GET"}},
			{http.MethodPost, "/healthz", testutil.NoBody, []string{"GET"}},
		} {
			for _, h := range []testutil.H{testutil.HJSON, testutil.HPage} {
				r := a.do(t, c.method, c.path, c.b, h).WantStatus(t, http.StatusMethodNotAllowed)
				allow := r.Header.Get("Allow")
				for _, m := range c.allow {
					if !strings.Contains(allow, m) {
						t.Errorf("%s: got Allow %q, want it to hold %s", r.What, allow, m)
					}
				}
				if c.method != http.MethodDelete && strings.Contains(allow, c.method) {
					t.Errorf("%s: got Allow %q, which holds the refused %s", r.What, allow, c.method)
				}
			}
		}
		if got := a.fetch(t, o.ID); got.Customer != "Allow" || got.Version != 1 {
			t.Errorf("after 405s: got %+v, want it unchanged", got)
		}
	})
}

func TestNotAcceptable(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Accept")
		for _, p := range []string{"/orders", "/orders/new", path(o.ID), path(o.ID, "/edit"), "/orders/inquiry", "/orders/999"} {
			for _, acc := range []string{"image/png", "text/plain", "application/xml"} {
				r := a.get(t, p, testutil.H{"Accept": acc}).WantStatus(t, http.StatusNotAcceptable).WantNegotiated(t)
				r.WantLacks(t, "<html")
			}
		}
		// Writes negotiate too, and change nothing when refused.
		before := a.count(t)
		a.do(t, http.MethodPost, "/orders", testutil.JSON(`{"customer":"x"}`), testutil.H{"Accept": "image/png"}).WantStatus(t, http.StatusNotAcceptable)
		a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.H{"Accept": "image/png"}).WantStatus(t, http.StatusNotAcceptable)
		if got := a.count(t); got != before {
			t.Errorf("%d orders after 406s, want %d", got, before)
		}
	})
}

func TestUnsupportedMediaType(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Media")
		for _, b := range []testutil.Body{testutil.Raw("text/plain", "customer=x"), testutil.Raw("application/xml", "<order/>"), {Data: []byte(`{"customer":"x"}`)}} {
			r := a.do(t, http.MethodPost, "/orders", b, testutil.HJSON).WantStatus(t, http.StatusUnsupportedMediaType).WantNegotiated(t)
			var e errorJSON
			r.JSON(t, &e)
			if !strings.Contains(e.Error, "application/json") {
				t.Errorf("%s: got error %q, want it to name the accepted types", r.What, e.Error)
			}
			a.do(t, http.MethodPut, path(o.ID), b, testutil.HJSON).WantStatus(t, http.StatusUnsupportedMediaType)
		}
		a.do(t, http.MethodPost, "/orders", testutil.Raw("text/plain", "x"), testutil.HPage).WantStatus(t, http.StatusUnsupportedMediaType).WantPage(t, "error")
		// Parameters and case do not matter.
		a.do(t, http.MethodPost, "/orders", testutil.Raw("Application/JSON; charset=utf-8", `{"customer":"Case"}`), testutil.HJSON).WantStatus(t, http.StatusCreated)
		if n := a.count(t); n != 2 {
			t.Errorf("%d orders after 415s, want 2", n)
		}
	})
}

func TestTooLarge(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Large")
		big := `{"customer":"Big","notes":"` + strings.Repeat("x", MaxBody) + `"}`
		for _, c := range []struct {
			method, path string
			b            testutil.Body
		}{
			{http.MethodPost, "/orders", testutil.JSON(big)},
			{http.MethodPost, "/orders", testutil.Form("customer", "Big", "notes", strings.Repeat("x", MaxBody))},
			{http.MethodPost, "/orders", testutil.Multipart("customer", "Big", "notes", strings.Repeat("x", MaxBody))},
			{http.MethodPut, path(o.ID), testutil.JSON(big)},
			{http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "notes", strings.Repeat("x", MaxBody))},
		} {
			for _, h := range []testutil.H{testutil.HJSON, testutil.HPage} {
				r := a.do(t, c.method, c.path, c.b, h).WantStatus(t, http.StatusRequestEntityTooLarge).WantNegotiated(t)
				if h["Accept"] == testutil.HJSON["Accept"] {
					var e errorJSON
					r.JSON(t, &e)
				}
			}
		}
		// Just under the limit is read (and then judged on its values).
		under := `{"customer":"Big","notes":"` + strings.Repeat("x", MaxBody-40) + `"}`
		a.do(t, http.MethodPost, "/orders", testutil.JSON(under), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity)
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after 413s, want 1", n)
		}
		if got := a.fetch(t, o.ID); got.Version != 1 {
			t.Errorf("after 413s: got version %d, want 1", got.Version)
		}
	})
}

func TestCrossOrigin(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Origin")
		for _, h := range []testutil.H{
			{"Origin": "http://evil.example"},
			{"Origin": "null"},
			{"Origin": "https://example.com"}, // another scheme is another origin
			{"Sec-Fetch-Site": "cross-site"},
			{"Sec-Fetch-Site": "same-site"},
			{"Sec-Fetch-Site": "cross-site", "Origin": "http://example.com"},
		} {
			for _, c := range []struct {
				method, path string
				b            testutil.Body
			}{
				{http.MethodPost, "/orders", testutil.Form("customer", "Evil")},
				{http.MethodPost, "/orders", testutil.JSON(`{"customer":"Evil"}`)},
				{http.MethodPut, path(o.ID), testutil.Form("customer", "Evil")},
				{http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "customer", "Evil")},
				{http.MethodPost, path(o.ID), testutil.Form("_method", "DELETE")},
				{http.MethodDelete, path(o.ID), testutil.NoBody},
			} {
				for _, rep := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX} {
					a.do(t, c.method, c.path, c.b, rep.With(h)).WantStatus(t, http.StatusForbidden).WantNegotiated(t)
				}
			}
		}
		if got := a.fetch(t, o.ID); got.Customer != "Origin" || got.Version != 1 {
			t.Errorf("after 403s: got %+v, want it unchanged", got)
		}
		if n := a.count(t); n != 1 {
			t.Errorf("%d orders after 403s, want 1", n)
		}
		// Reads from anywhere are fine; writes from the same origin pass.
		a.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})).WantStatus(t, http.StatusOK)
		same := testutil.H{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"}
		a.do(t, http.MethodPost, "/orders", testutil.JSON(`{"customer":"Same"}`), testutil.HJSON.With(same)).WantStatus(t, http.StatusCreated)
		a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Same"), testutil.HJSON.With(same)).WantStatus(t, http.StatusOK)
		a.do(t, http.MethodPost, "/orders", testutil.JSON(`{"customer":"None"}`), testutil.HJSON.With(testutil.H{"Sec-Fetch-Site": "none"})).WantStatus(t, http.StatusCreated)
		a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HJSON.With(testutil.H{"Origin": "http://example.com"})).WantStatus(t, http.StatusNoContent)
	})
}

func TestUnprocessable(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		t.Run("json", func(t *testing.T) {
			r := a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{
				"customer": " ", "email": "a@b@c", "status": "shipped", "currency": "dollars", "notes": strings.Repeat("n", 2001),
				"items": []any{item("Fine", 1, "1"), map[string]any{"sku": "bad sku!", "name": "", "quantity": 0, "unit_price": "x"}},
			}), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
			var e errorJSON
			r.JSON(t, &e)
			for _, k := range []string{"customer", "email", "status", "currency", "notes",
				"items[1][sku]", "items[1][name]", "items[1][quantity]", "items[1][unit_price]"} {
				if e.Errors[k] == "" {
					t.Errorf("%s: got errors %v, want one for %s", r.What, e.Errors, k)
				}
			}
			if len(e.Errors) != 9 {
				t.Errorf("%s: got %d errors %v, want 9 (none for items[0])", r.What, len(e.Errors), e.Errors)
			}
			if e.Error == "" || e.RequestID == "" {
				t.Errorf("%s: got %+v, want error and request_id", r.What, e)
			}
			// A missing customer is required too; too many items is one error.
			var e2 errorJSON
			many := make([]any, store.MaxItems+1)
			for i := range many {
				many[i] = item("x", 1, "1")
			}
			a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"items": many}), testutil.HJSON).
				WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e2)
			if e2.Errors["customer"] == "" || e2.Errors["items"] == "" {
				t.Errorf("no customer and 101 items: got errors %v, want customer and items", e2.Errors)
			}
		})
		t.Run("create form", func(t *testing.T) {
			b := testutil.Form("customer", "", "email", "bad@", "currency", "US",
				"items[5][name]", "Typed name", "items[5][quantity]", "abc", "items[5][unit_price]", "19.999")
			for _, m := range []struct {
				name string
				h    testutil.H
				page bool
			}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
				t.Run(m.name, func(t *testing.T) {
					r := a.do(t, http.MethodPost, "/orders", b, m.h).WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
					if m.page {
						r.WantPage(t, "order-form").WantContains(t, "please correct the marked fields")
					} else {
						r.WantFragment(t, "order-form")
					}
					r.WantFieldError(t, "customer", "is required", "")
					r.WantFieldError(t, "email", "one email address", "bad@")
					r.WantFieldError(t, "currency", "three-letter", "US")
					r.WantFieldError(t, "items-5-quantity", "whole number", "abc")
					r.WantFieldError(t, "items-5-unit_price", "two decimals", "19.999")
					r.WantContains(t, `name="items[5][name]"`, `value="Typed name"`, `id="items-6-name"`)
					r.WantLacks(t, `id="items-5-name-err"`, `id="items-0-name"`)
				})
			}
			if n := a.count(t); n != 0 {
				t.Errorf("%d orders after 422s, want 0", n)
			}
		})
		t.Run("edit form", func(t *testing.T) {
			o := a.createNamed(t, "Edit 422")
			r := a.do(t, http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "version", "1", "customer", "Still typed",
				"notes", "typed notes", "status", "delivered"), testutil.HPage)
			r.WantStatus(t, http.StatusUnprocessableEntity).WantPage(t, "order-form")
			if in := testutil.Tag(r.Body, "customer"); !strings.Contains(in, `value="Still typed"`) {
				t.Errorf("%s: got input %s, want the typed customer kept", r.What, in)
			}
			r.WantContains(t, `id="status-err"`, "cannot change status from pending to delivered", ">typed notes</textarea>")
			if got := a.fetch(t, o.ID); got.Customer != "Edit 422" || got.Version != 1 {
				t.Errorf("after a 422: got %+v, want it unchanged", got)
			}
		})
	})
}

// hungRedis accepts connections and never answers.
func hungRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestRedisDown: a dead or hung Redis gives 503 with Retry-After within two
// seconds, with the client options main.go uses.
func TestRedisDown(t *testing.T) {
	testutil.Long(t)
	redis.SetLogger(quietRedis{}) // its dial errors are expected here
	for _, c := range []struct{ name, addr string }{{"refused", "127.0.0.1:1"}, {"hung", hungRedis(t)}} {
		t.Run(c.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: c.addr, DialTimeout: 500 * time.Millisecond,
				ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolTimeout: time.Second,
				ContextTimeoutEnabled: true, MaxRetries: 1})
			t.Cleanup(func() { rdb.Close() })
			a := newTestApp(t, c.name, redisstore.New(rdb, redisstore.Options{}))
			for _, req := range []struct {
				method, path string
				b            testutil.Body
				h            testutil.H
			}{
				{http.MethodGet, "/orders", testutil.NoBody, testutil.HJSON},
				{http.MethodPut, "/orders/1", testutil.Form("customer", "x", "version", "1"), testutil.HHX},
				{http.MethodGet, "/readyz", testutil.NoBody, testutil.H{}},
			} {
				start := time.Now()
				r := a.do(t, req.method, req.path, req.b, req.h).WantStatus(t, http.StatusServiceUnavailable)
				d := time.Since(start)
				if d > 2*time.Second {
					t.Errorf("%s: took %v, want under 2s", r.What, d)
				}
				t.Logf("%s: 503 after %v", r.What, d.Round(time.Millisecond))
				if r.Header.Get("Retry-After") == "" {
					t.Errorf("%s: no Retry-After", r.What)
				}
				r.WantLacks(t, c.addr, "dial tcp", "i/o timeout")
			}
			a.get(t, "/healthz", testutil.H{}).WantStatus(t, http.StatusOK)
		})
	}
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
