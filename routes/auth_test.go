package routes

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"orders/testutil"
)

func TestSignInAndOutFromAnotherOriginAreRefused(t *testing.T) {
	a := peopleApp(t)
	s := a.signIn(t, "admin")
	for _, h := range []testutil.H{{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}, {"Origin": "null"}} {
		// A page elsewhere cannot sign the browser in as its own account
		// (login CSRF) ...
		r := a.do(t, http.MethodPost, sessionPath, signInBody("admin", passwordOf("admin"), ""), testutil.HPage.With(h)).
			WantStatus(t, http.StatusForbidden)
		if sessionOf(r) != "" {
			t.Errorf("%s: a session cookie was set", r.What)
		}
		// ... nor sign it out.
		a.do(t, http.MethodPost, sessionPath, testutil.Form("_method", "DELETE"), as(s, testutil.HPage.With(h))).WantStatus(t, http.StatusForbidden)
		a.do(t, http.MethodDelete, sessionPath, testutil.NoBody, as(s, testutil.HHX.With(h))).WantStatus(t, http.StatusForbidden)
	}
	a.get(t, "/orders", as(s, testutil.HPage)).WantStatus(t, http.StatusOK)
	// From the desk's own pages both work.
	same := testutil.H{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + testutil.Host}
	a.do(t, http.MethodPost, sessionPath, signInBody("admin", passwordOf("admin"), ""), testutil.HPage.With(same)).WantStatus(t, http.StatusSeeOther)
	a.do(t, http.MethodPost, sessionPath, testutil.Form("_method", "DELETE"), as(s, testutil.HPage.With(same))).WantStatus(t, http.StatusSeeOther)
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
