package routes

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"orders/testutil"
)

func TestBasicAuth(t *testing.T) {
	tg := testutil.Miniredis(t)
	app := newTestApp(t, tg.Name, testutil.NewStore(t, tg), func(c *Config) { c.AuthUser, c.AuthPassword = "desk", "s3cret:x" }).app
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
// and a same-origin browser write through it passes when the proxy is
// trusted; without the header, an https Origin does not match the http the
// app sees. From a client that is not a trusted proxy, X-Forwarded-* mean
// nothing: they can neither make a write pass nor change the
// host the app checks.
func TestOriginBehindProxy(t *testing.T) {
	newApp := func(trusted []string) *fiber.App {
		return newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)), func(c *Config) {
			c.AllowedHosts, c.TrustedProxies = []string{"orders.example"}, trusted
		}).app
	}
	// app.Test's requests come from 0.0.0.0.
	behindProxy, direct := newApp([]string{"0.0.0.0"}), newApp(nil)
	for _, c := range []struct {
		app           *fiber.App
		name          string
		origin, proto string
		forwardedHost string
		want          int
	}{
		{behindProxy, "trusted proxy", "https://orders.example", "https", "", http.StatusCreated},
		{behindProxy, "trusted proxy", "https://orders.example", "", "", http.StatusForbidden},
		{behindProxy, "trusted proxy", "http://orders.example", "", "", http.StatusCreated},
		{behindProxy, "trusted proxy", "https://evil.example", "https", "", http.StatusForbidden},
		{behindProxy, "trusted proxy", "null", "", "", http.StatusForbidden},
		{behindProxy, "trusted proxy", "https://evil.example", "https", "evil.example", http.StatusMisdirectedRequest},
		{direct, "untrusted client", "https://orders.example", "https", "", http.StatusForbidden},
		{direct, "untrusted client", "http://orders.example", "", "", http.StatusCreated},
		{direct, "untrusted client", "http://evil.example", "", "evil.example", http.StatusForbidden},
	} {
		req := httptest.NewRequest("POST", "http://orders.example/orders", strings.NewReader(`{"customer":"Proxy"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Origin", c.origin)
		if c.proto != "" {
			req.Header.Set("X-Forwarded-Proto", c.proto)
		}
		if c.forwardedHost != "" {
			req.Header.Set("X-Forwarded-Host", c.forwardedHost)
		}
		resp, err := c.app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("%s: POST with Origin %q, X-Forwarded-Proto %q, X-Forwarded-Host %q: got %d, want %d",
				c.name, c.origin, c.proto, c.forwardedHost, resp.StatusCode, c.want)
		}
	}
}
