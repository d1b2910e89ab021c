package routes

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// Accounts the tests make: each password is the name followed by this.
const passwordTail = "-correct-horse"

func passwordOf(name string) string { return name + passwordTail }

// addAccount makes the account name with role (the first one must be an
// admin) and the password passwordOf(name).
func addAccount(t testing.TB, st *redisstore.Store, name string, role store.Role) *store.User {
	t.Helper()
	display, r, pw := strings.ToUpper(name[:1])+name[1:]+" Example", string(role), passwordOf(name)
	u, err := st.CreateUser(context.Background(), store.UserInput{Name: &name, DisplayName: &display, Role: &r, Password: &pw})
	if err != nil {
		t.Fatalf("making the account %s (%s): %v", name, role, err)
	}
	return u
}

// peopleApp is an application over a fresh miniredis with the admin
// account "admin" (so protected mode is over).
func peopleApp(t testing.TB, more ...func(*Config)) *testApp {
	t.Helper()
	tg := testutil.Miniredis(t)
	st := testutil.NewStore(t, tg)
	addAccount(t, st, "admin", store.RoleAdmin)
	return newTestApp(t, tg.Name, st, more...)
}

// signInForm is the body of the sign-in form.
func signInBody(name, password, next string) testutil.Body {
	if next == "" {
		return testutil.Form("name", name, "password", password)
	}
	return testutil.Form("name", name, "password", password, "next", next)
}

// sessionOf is the session secret a sign-in's answer set, or "".
func sessionOf(r *testutil.Resp) string {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == sessionCookie && !cleared(c) && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

// signIn signs in as name (with passwordOf(name)) through the plain form
// and returns the session secret.
func (a *testApp) signIn(t testing.TB, name string) string {
	t.Helper()
	r := a.do(t, http.MethodPost, sessionPath, signInBody(name, passwordOf(name), ""), testutil.HPage).WantStatus(t, http.StatusSeeOther)
	s := sessionOf(r)
	if s == "" {
		t.Fatalf("%s: no %s cookie set (Set-Cookie %q)", r.What, sessionCookie, r.Header.Values("Set-Cookie"))
	}
	return s
}

// as is h with the session cookie secret.
func as(secret string, h testutil.H) testutil.H {
	return h.With(testutil.H{"Cookie": sessionCookie + "=" + secret})
}

// bearer is h with the token secret.
func bearer(secret string, h testutil.H) testutil.H {
	return h.With(testutil.H{"Authorization": "Bearer " + secret})
}

// wantSignInRedirect checks a page sent to the sign-in form, to come back
// to next.
func wantSignInRedirect(t testing.TB, r *testutil.Resp, next string) {
	t.Helper()
	r.WantStatus(t, http.StatusSeeOther)
	want := signInPath
	if next != "" {
		want += "?next=" + url.QueryEscape(next)
	}
	r.WantHeader(t, "Location", want)
}

// wantUnsigned checks the 401 of a program or of htmx without a person.
func wantUnsigned(t *testing.T, r *testutil.Resp) {
	t.Helper()
	r.WantStatus(t, http.StatusUnauthorized)
	if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("%s: WWW-Authenticate %q, want Bearer", r.What, got)
	}
	wantSecurityHeaders(t, r.What, r.Header)
}

func TestProtectedModeOpensTheDeskUntilTheFirstAccountIsMade(t *testing.T) {
	tg := testutil.Miniredis(t)
	st := testutil.NewStore(t, tg)
	a := newTestApp(t, tg.Name, st)
	const banner = "This desk is open to anyone."
	for _, path := range []string{"/orders", "/orders/new", "/customers", "/products", signInPath} {
		a.get(t, path, testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, banner, `<aside class="open-desk" aria-label="Open desk">`).
			WantLacks(t, ">Sign out<")
	}
	// Everyone acts as anonymous with every right: a write through the API
	// needs nothing, and history names anonymous.
	o := a.createNamed(t, "Open desk")
	h := a.get(t, orderResource.HistoryPath(o.ID), testutil.HJSON).WantStatus(t, http.StatusOK).Object(t)
	if e := h["entries"].([]any)[0].(map[string]any); e["actor"] != "anonymous" || e["via"] != "api" {
		t.Errorf("history in protected mode: actor %v via %v, want anonymous via api", e["actor"], e["via"])
	}
	// The sign-in form says why nobody can sign in.
	a.get(t, signInPath, testutil.HPage).WantContains(t, "No account exists yet")
	if f := a.get(t, signInPath, testutil.HJSON).WantStatus(t, http.StatusOK).Object(t); f["open"] != true || f["signed_in"] != false {
		t.Errorf("GET %s as JSON in protected mode: %v, want open and not signed in", signInPath, f)
	}

	// The first account closes the desk at once, on every path but the
	// open ones.
	addAccount(t, st, "admin", store.RoleAdmin)
	wantSignInRedirect(t, a.get(t, "/orders", testutil.HPage), "/orders")
	wantUnsigned(t, a.get(t, "/orders", testutil.HJSON))
	a.get(t, signInPath, testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, banner, "No account exists yet")
	s := a.signIn(t, "admin")
	a.get(t, "/orders", as(s, testutil.HPage)).WantStatus(t, http.StatusOK).WantLacks(t, banner)
	if f := a.get(t, signInPath, as(s, testutil.HJSON)).WantStatus(t, http.StatusOK).Object(t); f["open"] != false || f["signed_in"] != true {
		t.Errorf("GET %s as JSON signed in: %v, want not open and signed in", signInPath, f)
	}
}

// TestAccountsTheStoreForgotLeaveTheDeskClosed: when the accounts an
// instance has seen are gone (Redis wiped or restored from before them),
// the desk does not fall back to protected mode: pages still go to the
// sign-in form and JSON gets 401, until an account is made again.
func TestAccountsTheStoreForgotLeaveTheDeskClosed(t *testing.T) {
	tg := testutil.Miniredis(t)
	st := testutil.NewStore(t, tg)
	a := newTestApp(t, tg.Name, st)
	addAccount(t, st, "admin", store.RoleAdmin)
	wantSignInRedirect(t, a.get(t, "/orders", testutil.HPage), "/orders")
	if err := tg.Client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if has, err := st.HasUsers(context.Background()); err != nil || has {
		t.Fatalf("after the wipe HasUsers = %v, %v; want false", has, err)
	}
	wantSignInRedirect(t, a.get(t, "/orders", testutil.HPage), "/orders")
	wantUnsigned(t, a.get(t, "/orders", testutil.HJSON))
	a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Nobody"}), testutil.HJSON).WantStatus(t, http.StatusUnauthorized)
	a.get(t, "/orders", testutil.HPage).WantLacks(t, "This desk is open to anyone.")
	// An account made again (orders user add) signs in as before.
	addAccount(t, st, "admin", store.RoleAdmin)
	s := a.signIn(t, "admin")
	a.get(t, "/orders", as(s, testutil.HPage)).WantStatus(t, http.StatusOK)
}

func TestWithoutAPersonEachRepresentationIsSentToSignIn(t *testing.T) {
	a := peopleApp(t)
	// A page: 303 to the form, which leads back to the page.
	wantSignInRedirect(t, a.get(t, "/orders?q=ada&sort=-created", testutil.HPage), "/orders?q=ada&sort=-created")
	wantSignInRedirect(t, a.get(t, "/customers/7", testutil.HRestore), "/customers/7")
	// A plain form sent without a session: to the form, back to the page it
	// was on.
	r := a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Nobody"),
		testutil.HPage.With(testutil.H{"Referer": "http://" + testutil.Host + "/orders/new"}))
	wantSignInRedirect(t, r, "/orders/new")
	// htmx: 401 with HX-Redirect (htmx 4 follows it before any swap), back
	// to the page the browser shows.
	for _, h := range []testutil.H{testutil.HHX, testutil.HHXFull, testutil.HXTo("tr#order-row-1")} {
		r := a.do(t, http.MethodPut, "/orders/1", testutil.Form("customer", "x", "version", "1"),
			h.With(testutil.H{"HX-Current-URL": "http://" + testutil.Host + "/orders/1?tab=history"}))
		wantUnsigned(t, r)
		r.WantHeader(t, "HX-Redirect", signInPath+"?next="+url.QueryEscape("/orders/1?tab=history"))
	}
	// JSON: 401 with WWW-Authenticate: Bearer and the error as JSON.
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r := a.do(t, m, "/orders", testutil.JSON(map[string]any{"customer": "x"}), testutil.HJSON)
		wantUnsigned(t, r)
		if e := r.Object(t); !strings.Contains(e["error"].(string), "sign in") {
			t.Errorf("%s: error %q, want it to say to sign in", r.What, e["error"])
		}
	}
	// Nothing was written.
	var page struct{ Total int64 }
	a.get(t, "/orders", as(a.signIn(t, "admin"), testutil.HJSON)).WantStatus(t, http.StatusOK).JSON(t, &page)
	if page.Total != 0 {
		t.Errorf("after writes without a person: %d orders, want 0", page.Total)
	}
	// Open to everyone: the health checks, static files, the sign-in form,
	// and /session itself.
	for _, c := range []struct {
		method, path string
		b            testutil.Body
		want         int
	}{
		{http.MethodGet, "/healthz", testutil.NoBody, http.StatusOK},
		{http.MethodGet, "/readyz", testutil.NoBody, http.StatusOK},
		{http.MethodGet, "/favicon.ico", testutil.NoBody, http.StatusMovedPermanently},
		{http.MethodGet, "/public/favicon.svg", testutil.NoBody, http.StatusOK},
		{http.MethodGet, signInPath, testutil.NoBody, http.StatusOK},
		{http.MethodPost, sessionPath, signInBody("admin", "wrong-password", ""), http.StatusUnprocessableEntity},
		{http.MethodPost, sessionPath, testutil.Form("_method", "DELETE"), http.StatusSeeOther},
	} {
		a.do(t, c.method, c.path, c.b, testutil.HPage).WantStatus(t, c.want)
	}
	// The event streams are not open.
	a.get(t, "/orders/events", testutil.H{"Accept": "text/event-stream"}).WantStatus(t, http.StatusUnauthorized)
}

func TestSignIn(t *testing.T) {
	a := peopleApp(t)
	clerk := addAccount(t, a.store, "clerk", store.RoleClerk)
	// A plain form: 303 to next, a new session in the cookie.
	r := a.do(t, http.MethodPost, sessionPath, signInBody("clerk", passwordOf("clerk"), "/customers?q=x"), testutil.HPage).
		WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", "/customers?q=x")
	s := sessionOf(r)
	c := cookieNamed(r, sessionCookie)
	if s == "" || c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
		t.Fatalf("%s: session cookie %+v, want a value, HttpOnly, SameSite=Lax, Path=/, and not Secure over http", r.What, c)
	}
	// The session is the person's: the header names them, links their own
	// page and offers Sign out (a plain form that works without JavaScript).
	p := a.get(t, "/orders", as(s, testutil.HPage)).WantStatus(t, http.StatusOK)
	p.WantContains(t, `href="/users/`+itoa(clerk.ID)+`"`, "Clerk Example", `name="_method" value="DELETE"`, ">Sign out</button>").WantLacks(t, "This desk is open")

	// JSON: 201 with the account (never a password).
	j := a.do(t, http.MethodPost, sessionPath, testutil.JSON(map[string]any{"name": "clerk", "password": passwordOf("clerk")}), testutil.HJSON).
		WantStatus(t, http.StatusCreated)
	if u := j.Object(t); u["name"] != "clerk" || u["role"] != "clerk" || strings.Contains(j.Body, "password") || sessionOf(j) == "" {
		t.Errorf("%s: %s, want the clerk's account, no password, and a session cookie", j.What, j.Body)
	}
	// htmx: a full load of next (the header changes).
	a.do(t, http.MethodPost, sessionPath, signInBody("clerk", passwordOf("clerk"), "/products"), testutil.HXTo("main#main")).
		WantStatus(t, http.StatusOK).WantHeader(t, "HX-Redirect", "/products")

	// Every sign-in is a new session; the one the browser had ends.
	again := a.do(t, http.MethodPost, sessionPath, signInBody("clerk", passwordOf("clerk"), ""), as(s, testutil.HPage)).
		WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", "/orders")
	if s2 := sessionOf(again); s2 == "" || s2 == s {
		t.Errorf("signing in again: session %q, want a new one (had %q)", s2, s)
	}
	wantSignInRedirect(t, a.get(t, "/orders", as(s, testutil.HPage)), "/orders")
}

func TestAFailedSignInSaysWrongNameOrPasswordWhateverWasWrong(t *testing.T) {
	// Each case from an address of its own, under the throttle's limit.
	a := peopleApp(t, func(c *Config) { c.TrustedProxies = []string{"0.0.0.0"} })
	addAccount(t, a.store, "clerk", store.RoleClerk)
	disabled := addAccount(t, a.store, "gone", store.RoleClerk)
	yes := true
	if _, err := a.store.UpdateUser(context.Background(), disabled.ID, store.UserInput{Disabled: &yes}, 0, ""); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ what, name, password string }{
		{"a wrong password", "clerk", "not-the-password"},
		{"a name nobody has", "nobody", passwordOf("clerk")},
		{"the name in capitals", "CLERK", passwordOf("clerk") + "x"},
		{"a disabled account's right password", "gone", passwordOf("gone")},
		{"a name past the limit", strings.Repeat("n", 300), "whatever-it-is"},
		{"a password past the limit", "clerk", strings.Repeat("p", 5000)},
	} {
		t.Run(c.what, func(t *testing.T) {
			from := testutil.H{"X-Forwarded-For": "192.0.2." + itoa(int64(i+1))}
			r := a.do(t, http.MethodPost, sessionPath, signInBody(c.name, c.password, "/products"), testutil.HPage.With(from)).
				WantStatus(t, http.StatusUnprocessableEntity).WantPage(t, "session-new").WantContains(t, "Wrong name or password.", `value="/products"`)
			r.WantLacks(t, c.password)
			if sessionOf(r) != "" {
				t.Errorf("%s: a session cookie was set", r.What)
			}
			a.do(t, http.MethodPost, sessionPath, signInBody(c.name, c.password, ""), testutil.HXTo("main#main").With(from)).
				WantStatus(t, http.StatusUnprocessableEntity).WantFragment(t, "session-new").WantContains(t, "Wrong name or password.")
			j := a.do(t, http.MethodPost, sessionPath, testutil.JSON(map[string]any{"name": c.name, "password": c.password}), testutil.HJSON.With(from)).
				WantStatus(t, http.StatusUnprocessableEntity)
			if e := j.Object(t); e["error"] != msgWrongSignIn {
				t.Errorf("%s: error %v, want %q", j.What, e["error"], msgWrongSignIn)
			}
		})
	}
	// An empty field is no attempt: it is refused and counts nothing.
	for range 12 {
		a.do(t, http.MethodPost, sessionPath, signInBody("clerk", "", ""), testutil.HPage).
			WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "Enter your name and password.")
	}
	a.signIn(t, "clerk")
}

func TestSignInLeadsOnlyToALocalPath(t *testing.T) {
	a := peopleApp(t)
	for _, c := range []struct{ next, want string }{
		{"/orders/5?tab=history#notes", "/orders/5?tab=history#notes"},
		{"/customers", "/customers"},
		{"", "/orders"},
		{"//evil.example/orders", "/orders"},
		{"/\\evil.example", "/orders"},
		{"\\\\evil.example", "/orders"},
		{"https://evil.example/", "/orders"},
		{"http:/evil.example", "/orders"},
		{"javascript:alert(1)", "/orders"},
		{"orders", "/orders"},
		{"/\t/evil.example", "/orders"},
		{"/%0d%0aSet-Cookie:x=1", "/%0d%0aSet-Cookie:x=1"},
		{"/session/new", "/orders"},
		{"/session", "/orders"},
		{"/" + strings.Repeat("a", maxNext), "/orders"},
	} {
		r := a.do(t, http.MethodPost, sessionPath, signInBody("admin", passwordOf("admin"), c.next), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		if got := r.Header.Get("Location"); got != c.want {
			t.Errorf("next %q: Location %q, want %q", c.next, got, c.want)
		}
		// The form keeps only a local next.
		f := a.get(t, signInPath+"?next="+url.QueryEscape(c.next), testutil.HPage).WantStatus(t, http.StatusOK)
		if c.want == "/orders" && c.next != "" && strings.Contains(f.Body, `name="next"`) {
			t.Errorf("GET %s: the form keeps the next %q", signInPath, c.next)
		}
	}
}

func TestSignOutEndsTheSessionOnTheServer(t *testing.T) {
	a := peopleApp(t)
	for _, c := range []struct {
		name string
		send func(s string) *testutil.Resp
		want int
	}{
		{"a plain form (_method=DELETE)", func(s string) *testutil.Resp {
			return a.do(t, http.MethodPost, sessionPath, testutil.Form("_method", "DELETE"), as(s, testutil.HPage))
		}, http.StatusSeeOther},
		{"htmx", func(s string) *testutil.Resp {
			return a.do(t, http.MethodDelete, sessionPath, testutil.NoBody, as(s, testutil.HHX))
		}, http.StatusOK},
		{"JSON", func(s string) *testutil.Resp {
			return a.do(t, http.MethodDelete, sessionPath, testutil.NoBody, as(s, testutil.HJSON))
		}, http.StatusNoContent},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := a.signIn(t, "admin")
			other := a.signIn(t, "admin")
			r := c.send(s).WantStatus(t, c.want)
			switch c.want {
			case http.StatusSeeOther:
				r.WantHeader(t, "Location", signInPath)
			case http.StatusOK:
				r.WantHeader(t, "HX-Redirect", signInPath)
			}
			if !cleared(cookieNamed(r, sessionCookie)) {
				t.Errorf("%s: session cookie %+v, want it cleared", r.What, cookieNamed(r, sessionCookie))
			}
			// The old cookie, kept or replayed, is worth nothing now.
			wantSignInRedirect(t, a.get(t, "/orders", as(s, testutil.HPage)), "/orders")
			wantUnsigned(t, a.get(t, "/orders", as(s, testutil.HJSON)))
			// The person's other session is another browser's: it stays.
			a.get(t, "/orders", as(other, testutil.HPage)).WantStatus(t, http.StatusOK)
		})
	}
	// The form after a sign-out says so, once.
	s := a.signIn(t, "admin")
	r := a.do(t, http.MethodPost, sessionPath, testutil.Form("_method", "DELETE"), as(s, testutil.HPage))
	flash := cookieNamed(r, flashCookie)
	if flash == nil {
		t.Fatalf("%s: no notice", r.What)
	}
	a.get(t, signInPath, testutil.HPage.With(testutil.H{"Cookie": flashCookie + "=" + flash.Value})).WantContains(t, "You are signed out.")
}

func TestASessionFromACookieTheStoreDoesNotKnowIsCleared(t *testing.T) {
	a := peopleApp(t)
	r := a.get(t, "/orders", as("forged-session-secret", testutil.HPage))
	wantSignInRedirect(t, r, "/orders")
	if !cleared(cookieNamed(r, sessionCookie)) {
		t.Errorf("%s: session cookie %+v, want it cleared", r.What, cookieNamed(r, sessionCookie))
	}
	wantSignInRedirect(t, a.get(t, "/orders", as(strings.Repeat("x", 1000), testutil.HPage)), "/orders")
}

func TestSessionCookieIsSecureOnlyOverHTTPSFromATrustedProxy(t *testing.T) {
	// app.Test's requests come from 0.0.0.0.
	behind := peopleApp(t, func(c *Config) { c.TrustedProxies = []string{"0.0.0.0"} })
	direct := peopleApp(t, func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/8"} })
	for _, c := range []struct {
		name  string
		a     *testApp
		proto string
		want  bool
	}{
		{"a trusted proxy that says https", behind, "https", true},
		{"a trusted proxy that says http", behind, "http", false},
		{"a trusted proxy that says nothing", behind, "", false},
		{"an untrusted client that says https", direct, "https", false},
	} {
		h := testutil.HPage
		if c.proto != "" {
			h = h.With(testutil.H{"X-Forwarded-Proto": c.proto})
		}
		r := c.a.do(t, http.MethodPost, sessionPath, signInBody("admin", passwordOf("admin"), ""), h).WantStatus(t, http.StatusSeeOther)
		ck := cookieNamed(r, sessionCookie)
		if ck == nil || ck.Secure != c.want || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode {
			t.Errorf("%s: session cookie %+v, want Secure %v, HttpOnly, SameSite=Lax", c.name, ck, c.want)
		}
		// Signing out clears it with the same flags.
		out := c.a.do(t, http.MethodDelete, sessionPath, testutil.NoBody, as(ck.Value, h.With(testutil.HJSON)))
		if cl := cookieNamed(out, sessionCookie); cl == nil || cl.Secure != c.want {
			t.Errorf("%s: cleared cookie %+v, want Secure %v", c.name, cl, c.want)
		}
	}
}

func TestTwoInstancesShareSessions(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			one := newTestApp(t, tg.Name, testutil.NewStore(t, tg))
			two := newTestApp(t, tg.Name, redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster}))
			addAccount(t, one.store, "admin", store.RoleAdmin)
			s := one.signIn(t, "admin")
			two.get(t, "/orders", as(s, testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, "Admin Example")
			two.do(t, http.MethodDelete, sessionPath, testutil.NoBody, as(s, testutil.HJSON)).WantStatus(t, http.StatusNoContent)
			wantUnsigned(t, one.get(t, "/orders", as(s, testutil.HJSON)))
		})
	}
}

func TestAPasswordChangeEndsThePersonsOtherSessions(t *testing.T) {
	a := peopleApp(t)
	clerk := addAccount(t, a.store, "clerk", store.RoleClerk)
	here, there := a.signIn(t, "clerk"), a.signIn(t, "clerk")
	admin := a.signIn(t, "admin")
	pw := "a-brand-new-password"
	if _, err := a.store.UpdateUser(context.Background(), clerk.ID, store.UserInput{Password: &pw}, 0, here); err != nil {
		t.Fatal(err)
	}
	a.get(t, "/orders", as(here, testutil.HPage)).WantStatus(t, http.StatusOK)
	wantSignInRedirect(t, a.get(t, "/orders", as(there, testutil.HPage)), "/orders")
	a.get(t, "/orders", as(admin, testutil.HPage)).WantStatus(t, http.StatusOK)
	// The old password no longer signs in; the new one does.
	a.do(t, http.MethodPost, sessionPath, signInBody("clerk", passwordOf("clerk"), ""), testutil.HPage).WantStatus(t, http.StatusUnprocessableEntity)
	a.do(t, http.MethodPost, sessionPath, signInBody("clerk", pw, ""), testutil.HPage).WantStatus(t, http.StatusSeeOther)
	// Disabling the account ends every session of it, the one kept too.
	yes := true
	if _, err := a.store.UpdateUser(context.Background(), clerk.ID, store.UserInput{Disabled: &yes}, 0, ""); err != nil {
		t.Fatal(err)
	}
	wantSignInRedirect(t, a.get(t, "/orders", as(here, testutil.HPage)), "/orders")
}

func TestTokens(t *testing.T) {
	a := peopleApp(t, func(c *Config) { c.TrustedProxies = []string{"0.0.0.0"} })
	manager := addAccount(t, a.store, "manager", store.RoleManager)
	ctx := context.Background()
	_, full, err := a.store.CreateToken(ctx, manager.ID, "stock-sync", store.RoleManager)
	if err != nil {
		t.Fatal(err)
	}
	tok, low, err := a.store.CreateToken(ctx, manager.ID, "reader", store.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	from := func(addr string) testutil.H { return testutil.HJSON.With(testutil.H{"X-Forwarded-For": addr}) }
	// A token signs a program in as its person, with the lower of the two
	// roles, and history names it.
	o := a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "By token"}), bearer(full, from("192.0.2.1"))).
		WantStatus(t, http.StatusCreated).Object(t)
	id := int64(o["id"].(float64))
	h := a.get(t, orderResource.HistoryPath(id), bearer(low, from("192.0.2.1"))).WantStatus(t, http.StatusOK).Object(t)
	if e := h["entries"].([]any)[0].(map[string]any); e["actor"] != "manager" || e["via"] != "token:stock-sync" {
		t.Errorf("history of a write by token: actor %v via %v, want manager via token:stock-sync", e["actor"], e["via"])
	}
	if p := personFor(t, a.store, bearer(low, from("192.0.2.1"))); p.Role != store.RoleViewer || p.Token == nil || p.Token.ID != tok.ID {
		t.Errorf("a viewer token of a manager: role %q, token %+v; want viewer and the token", p.Role, p.Token)
	}
	// A revoked token fails at once.
	if err := a.store.RevokeToken(ctx, manager.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	wantUnsigned(t, a.get(t, "/orders", bearer(low, from("192.0.2.1"))))
	// Guessing tokens meets the sign-in throttle of the address: after 10
	// failures, 429 with Retry-After. A good token still works from there:
	// it cannot have been guessed.
	for i := range 9 {
		wantUnsigned(t, a.get(t, "/orders", bearer("guess-"+itoa(int64(i)), from("192.0.2.1"))))
	}
	r := a.get(t, "/orders", bearer("guess-10", from("192.0.2.1"))).WantStatus(t, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 429 without Retry-After", r.What)
	}
	a.get(t, "/orders", bearer(full, from("192.0.2.1"))).WantStatus(t, http.StatusOK)
	wantUnsigned(t, a.get(t, "/orders", bearer("guess", from("192.0.2.2"))))
	// The same address's sign-in form is throttled too.
	a.do(t, http.MethodPost, sessionPath, signInBody("manager", passwordOf("manager"), ""), from("192.0.2.1")).
		WantStatus(t, http.StatusTooManyRequests)
}

// personFor is who a request with h acts as: what identify makes of its
// credential (nil for no one).
func personFor(t testing.TB, st store.Service, h testutil.H) *person {
	t.Helper()
	hs := &handlers{store: st}
	app := fiber.New()
	var got *person
	app.Get("/", func(c *fiber.Ctx) error {
		p, _, err := hs.identify(c.UserContext(), c)
		got = p
		return err
	})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if _, err := app.Test(req, -1); err != nil {
		t.Fatal(err)
	}
	return got
}

// cleared reports whether c tells the browser to forget its cookie.
func cleared(c *http.Cookie) bool {
	return c != nil && c.Value == "" && (c.MaxAge < 0 || !c.Expires.IsZero() && c.Expires.Before(time.Now()))
}

// cookieNamed is the cookie name that r sets, or nil.
func cookieNamed(r *testutil.Resp, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestSessionsEndAfter12HoursUnusedOr7DaysInAll(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			clock := newSettableClock()
			st := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster, Now: clock.Now})
			addAccount(t, st, "admin", store.RoleAdmin)
			a := newTestApp(t, tg.Name, st)
			// Each use renews the idle time: used every 11 hours, a session
			// lives on, until 7 days after the sign-in.
			s, idle := a.signIn(t, "admin"), a.signIn(t, "admin")
			for used := 11 * time.Hour; used < store.SessionAbsolute; used += 11 * time.Hour {
				clock.Advance(11 * time.Hour)
				a.get(t, "/orders", as(s, testutil.HJSON)).WantStatus(t, http.StatusOK)
			}
			// The other, unused for more than 12 hours, ended long ago.
			wantUnsigned(t, a.get(t, "/orders", as(idle, testutil.HJSON)))
			clock.Advance(store.SessionAbsolute - (store.SessionAbsolute/(11*time.Hour))*11*time.Hour + time.Second)
			wantSignInRedirect(t, a.get(t, "/orders", as(s, testutil.HPage)), "/orders")
			// Unused: 12 hours is the end.
			fresh := a.signIn(t, "admin")
			clock.Advance(store.SessionIdle - time.Minute)
			a.get(t, "/orders", as(fresh, testutil.HJSON)).WantStatus(t, http.StatusOK)
			clock.Advance(store.SessionIdle + time.Second)
			wantUnsigned(t, a.get(t, "/orders", as(fresh, testutil.HJSON)))
		})
	}
}

func TestTheRequestLogNamesThePerson(t *testing.T) {
	logs := &syncBuffer{}
	a := peopleApp(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	clerk := addAccount(t, a.store, "clerk", store.RoleClerk)
	_, token, err := a.store.CreateToken(context.Background(), clerk.ID, "till", store.RoleClerk)
	if err != nil {
		t.Fatal(err)
	}
	s := a.signIn(t, "admin")
	for _, c := range []struct {
		h    testutil.H
		want string
	}{
		{as(s, testutil.HPage), "admin"},
		{bearer(token, testutil.HJSON), "clerk"},
		{testutil.HJSON, "anonymous"},
	} {
		r := a.get(t, "/orders", c.h)
		id := r.Header.Get("X-Request-Id")
		found := false
		for _, l := range strings.Split(logs.String(), "\n") {
			var line struct {
				Msg       string `json:"msg"`
				RequestID string `json:"request_id"`
				Person    string `json:"person"`
			}
			if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "request" && line.RequestID == id {
				found = true
				if line.Person != c.want {
					t.Errorf("%s: the request's log line names %q, want %q", r.What, line.Person, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no request log line with its id %s", r.What, id)
		}
	}
}

func TestWhateverASignInSendsItIsNeverA500(t *testing.T) {
	a := peopleApp(t, func(c *Config) { c.TrustedProxies = []string{"0.0.0.0"} })
	for i, b := range []testutil.Body{
		testutil.Raw("application/json", `{"name": 5, "password": true}`),
		testutil.Raw("application/json", `{"name": "admin", "password": "x"`),
		testutil.Raw("application/json", `[]`),
		testutil.Raw("text/plain", "name=admin"),
		testutil.Raw("multipart/form-data; boundary=x", "--x\r\nbroken"),
		testutil.Form("name", "ad\x00min", "password", "\xff\xfe-not-utf8-at-all"),
		testutil.Form("name", "Admin", "password", passwordOf("admin"), "next", "/\x00"),
		testutil.Form("name", " admin ", "password", passwordOf("admin"), "next", "/orders?q=%ZZ"),
		testutil.Form("name", strings.Repeat("é", 3000), "password", strings.Repeat("p", 300)),
		testutil.Form("name", "admin", "password", passwordOf("admin"), "_method", "PUT"),
		testutil.Form("name", "admin", "password", passwordOf("admin"), "_method", "PATCH"),
	} {
		for _, h := range []testutil.H{testutil.HPage, testutil.HHX, testutil.HJSON} {
			r := a.do(t, http.MethodPost, sessionPath, b, h.With(testutil.H{"X-Forwarded-For": "198.51.100." + itoa(int64(i+1))}))
			if r.Status >= 500 {
				t.Errorf("%s (body %q): %d, want no 5xx", r.What, testutil.Snippet(string(b.Data)), r.Status)
			}
		}
	}
	for _, next := range []string{"%", "/\x7f", strings.Repeat("/a", 600)} {
		if r := a.get(t, signInPath+"?next="+url.QueryEscape(next), testutil.HPage); r.Status != http.StatusOK {
			t.Errorf("%s: %d, want the form", r.What, r.Status)
		}
	}
}
