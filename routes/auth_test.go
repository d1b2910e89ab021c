package routes

import (
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"orders/testutil"
)

func TestBasicAuth(t *testing.T) {
	tg := testutil.Miniredis(t)
	app, err := New(Config{Store: testutil.NewStore(t, tg), Views: os.DirFS(".."), Public: os.DirFS("../public"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AuthUser: "desk", AuthPassword: "s3cret:x"})
	if err != nil {
		t.Fatal(err)
	}
	basic := func(up string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(up)) }
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/orders", "", http.StatusUnauthorized},
		{"/orders", basic("desk:wrong"), http.StatusUnauthorized},
		{"/orders", basic("desk:s3cret"), http.StatusUnauthorized},
		{"/orders", basic("desk:s3cret:xx"), http.StatusUnauthorized},
		{"/orders", "Bearer abc", http.StatusUnauthorized},
		{"/orders", "Basic !!!", http.StatusUnauthorized},
		{"/orders", basic("desk:s3cret:x"), http.StatusOK},
		{"/public/css/app.css", "", http.StatusUnauthorized},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("GET %s with Authorization %q: got %d, want %d", c.path, c.auth, resp.StatusCode, c.want)
		}
		if c.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s: 401 without WWW-Authenticate", c.path)
		}
	}
}

// TestOriginBehindProxy: a proxy that ends TLS says so in X-Forwarded-Proto,
// and a same-origin browser write through it passes; without it, an https
// Origin does not match the http the app sees.
func TestOriginBehindProxy(t *testing.T) {
	tg := testutil.Miniredis(t)
	app, err := New(Config{Store: testutil.NewStore(t, tg), Views: os.DirFS(".."), Public: os.DirFS("../public"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		origin, proto string
		want          int
	}{
		{"https://orders.example", "https", http.StatusCreated},
		{"https://orders.example", "", http.StatusForbidden},
		{"http://orders.example", "", http.StatusCreated},
		{"https://evil.example", "https", http.StatusForbidden},
		{"null", "", http.StatusForbidden},
	} {
		req := httptest.NewRequest("POST", "http://orders.example/orders", strings.NewReader(`{"customer":"Proxy"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Origin", c.origin)
		if c.proto != "" {
			req.Header.Set("X-Forwarded-Proto", c.proto)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("POST with Origin %q, X-Forwarded-Proto %q: got %d, want %d", c.origin, c.proto, resp.StatusCode, c.want)
		}
	}
}
