package browser_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"orders/store"
	"orders/store/redisstore"
)

// TestSignInAndOut: with an account, a person who opens the desk is sent to
// the sign-in form and, signed in, back to the page they asked for; a wrong
// password says "Wrong name or password." and keeps the name; the header
// names the person and links their own page; Sign out ends the session and
// the desk asks for a sign-in again. With JavaScript on and off. With it
// on, a session that ends while a page is open sends the next htmx request
// (a search) to the sign-in form, and back to the page.
func TestSignInAndOut(t *testing.T) {
	for _, js := range []bool{true, false} {
		name := "javascript off"
		if js {
			name = "javascript on"
		}
		t.Run(name, func(t *testing.T) {
			e := start(t, js)
			e.failedLoads = []string{"401"} // htmx's request after the session ended
			o := e.seed(t, "Ada Lovelace")[0]
			ctx := context.Background()
			uname, display, role, pw := "ada", "Ada Admin", string(store.RoleAdmin), "ada-correct-horse"
			u, err := e.store.CreateUser(ctx, store.UserInput{Name: &uname, DisplayName: &display, Role: &role, Password: &pw})
			if err != nil {
				t.Fatal(err)
			}
			orderPath := "/orders/" + strconv.FormatInt(o.ID, 10)
			e.do(t, "open an order", chromedp.Navigate(e.base+orderPath), chromedp.WaitVisible(css("#session-form")))
			if got, want := e.path(t), "/session/new?next="+url.QueryEscape(orderPath); got != want {
				t.Fatalf("an order's page without a session: at %s, want %s", got, want)
			}
			if js {
				e.axe(t, axeSource(t), "the sign-in form")
			}
			e.do(t, "a wrong password",
				chromedp.SendKeys(css("#session-name"), uname),
				chromedp.SendKeys(css("#session-password"), "not-the-password"),
				chromedp.Click(css("#session-form button[type=submit]")),
				chromedp.WaitVisible(css("#session-error")))
			if got := e.text(t, "#session-error"); got != "Wrong name or password." {
				t.Errorf("after a wrong password: %q, want Wrong name or password.", got)
			}
			kept := run(t, e, "reading the name", chromedp.Value(css("#session-name")))
			if kept != uname {
				t.Errorf("after a wrong password the name field holds %q, want %q", kept, uname)
			}
			e.do(t, "the right password",
				chromedp.SendKeys(css("#session-password"), pw),
				chromedp.Click(css("#session-form button[type=submit]")),
				chromedp.WaitVisible(css("#order")))
			if got := e.path(t); got != orderPath {
				t.Errorf("signed in: at %s, want back at %s", got, orderPath)
			}
			if got := strings.Join(strings.Fields(e.text(t, "header .person-name")), " "); got != "Signed in as "+display {
				t.Errorf("the header says %q, want %q", got, "Signed in as "+display)
			}
			href := run(t, e, "reading the person's link", chromedp.AttributeValue(css("header .person-name"), "href")).Value
			if want := "/users/" + strconv.FormatInt(u.ID, 10); href != want {
				t.Errorf("the header links %q, want the person's own page %s", href, want)
			}
			e.waitText(t, "#notice", "You are signed in as "+display+".")
			if js {
				e.axe(t, axeSource(t), "a signed-in person's order page")
				// The session ends elsewhere (a new password): the next
				// htmx request goes to the sign-in form, and back.
				newPw := "another-correct-horse"
				if _, err := e.store.UpdateUser(ctx, u.ID, store.UserInput{Password: &newPw}, 0, ""); err != nil {
					t.Fatal(err)
				}
				e.do(t, "search the orders", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#session-form")))
				e.do(t, "sign in again",
					chromedp.SendKeys(css("#session-name"), uname),
					chromedp.SendKeys(css("#session-password"), newPw),
					chromedp.Click(css("#session-form button[type=submit]")),
					chromedp.WaitVisible(css("input[name=q]")))
				if _, err := e.store.UpdateUser(ctx, u.ID, store.UserInput{Password: &pw}, 0, ""); err != nil {
					t.Fatal(err)
				}
				e.do(t, "type a search", chromedp.SendKeys(css("input[name=q]"), "Ada"), chromedp.WaitVisible(css("#session-form")))
				if got, want := e.path(t), "/session/new?next="+url.QueryEscape("/orders"); got != want {
					t.Errorf("an htmx request after the session ended: at %s, want %s", got, want)
				}
				e.do(t, "sign in once more",
					chromedp.SendKeys(css("#session-name"), uname),
					chromedp.SendKeys(css("#session-password"), pw),
					chromedp.Click(css("#session-form button[type=submit]")),
					chromedp.WaitVisible(css("header .person")))
			}
			e.do(t, "sign out", chromedp.Click(css("header .person button[type=submit]")), chromedp.WaitVisible(css("#session-form")))
			if got := e.path(t); got != "/session/new" {
				t.Errorf("signed out: at %s, want /session/new", got)
			}
			e.waitText(t, "#notice", "You are signed out.")
			e.do(t, "the order again", chromedp.Navigate(e.base+orderPath), chromedp.WaitVisible(css("#session-form")))
		})
	}
}

// axeSource is axe-core's script.
func axeSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// TestSignInHTMLValid: the sign-in form (and its refusal, as a page and as
// htmx's fragment) and a signed-in person's pages, whose header names them
// and offers Sign out, are valid HTML.
func TestSignInHTMLValid(t *testing.T) {
	java, jar := vnuJar(t)
	base, st := serve(t)
	ctx := context.Background()
	uname, display, role, pw := "ada", "Ada <Admin> & co", string(store.RoleAdmin), "ada-correct-horse"
	if _, err := st.CreateUser(ctx, store.UserInput{Name: &uname, DisplayName: &display, Role: &role, Password: &pw}); err != nil {
		t.Fatal(err)
	}
	o := seedOrder(t, st, "Ada Lovelace")
	d := &htmlDocs{t: t, base: base, dir: t.TempDir(), src: map[string]string{}}
	d.fetch("sign-in", hreq{method: "GET", path: "/session/new?next=%2Forders", want: 200})
	d.fetch("sign-in", hreq{method: "GET", path: "/session/new", fragment: true, want: 200})
	wrong := url.Values{"name": {uname}, "password": {"not-it"}, "next": {"/orders"}}
	d.fetch("sign-in-422", hreq{method: "POST", path: "/session", form: wrong, want: 422})
	d.fetch("sign-in-422", hreq{method: "POST", path: "/session", form: wrong, target: "main#main", want: 422})
	// Signed in: the session's cookie.
	req, err := http.NewRequest(http.MethodPost, base+"/session", strings.NewReader(url.Values{"name": {uname}, "password": {pw}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie string
	for _, c := range res.Cookies() {
		if c.Name == "orders_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	if cookie == "" {
		t.Fatalf("signing in: %s and no session cookie", res.Status)
	}
	d.fetch("signed-in-list", hreq{method: "GET", path: "/orders", cookie: cookie, want: 200})
	d.fetch("signed-in-order", hreq{method: "GET", path: "/orders/" + strconv.FormatInt(o.ID, 10), cookie: cookie, want: 200})
	d.fetch("signed-in-404", hreq{method: "GET", path: "/orders/99999", cookie: cookie, want: 404})
	d.fetch("signed-in-sign-in", hreq{method: "GET", path: "/session/new", cookie: cookie, want: 200})
	d.validate(java, jar)
}

// seedOrder stores one order for customer.
func seedOrder(t *testing.T, st *redisstore.Store, customer string) *store.Order {
	t.Helper()
	o, err := st.CreateOrder(context.Background(), store.OrderInput{Customer: &customer})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestSignInThrottleSaysWhenToTryAgain: after the failed sign-ins an address
// may make, a person who then types the right password stays on the form,
// which says that there were too many failed sign-ins and when to try
// again, keeps the name, and signs nobody in. With JavaScript on and off.
func TestSignInThrottleSaysWhenToTryAgain(t *testing.T) {
	for _, js := range []bool{true, false} {
		name := "javascript off"
		if js {
			name = "javascript on"
		}
		t.Run(name, func(t *testing.T) {
			e := start(t, js)
			ctx := context.Background()
			e.failedLoads = []string{"429"} // htmx's throttled sign-in
			uname, role, pw := "grace", string(store.RoleAdmin), "grace-correct-horse"
			if _, err := e.store.CreateUser(ctx, store.UserInput{Name: &uname, Role: &role, Password: &pw}); err != nil {
				t.Fatal(err)
			}
			// Someone at the same address has guessed as often as it may.
			for i := range store.DefaultLimitRules.SignInPerAddress {
				form := url.Values{"name": {uname}, "password": {"guess-" + strconv.Itoa(i)}}
				res, err := http.PostForm(e.base+"/session", form)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("guess %d: %s, want 422", i, res.Status)
				}
			}
			e.do(t, "the sign-in form", chromedp.Navigate(e.base+"/session/new?next=%2Forders"), chromedp.WaitVisible(css("#session-form")))
			e.do(t, "the right password, too late",
				chromedp.SendKeys(css("#session-name"), uname),
				chromedp.SendKeys(css("#session-password"), pw),
				chromedp.Click(css("#session-form button[type=submit]")),
				chromedp.WaitVisible(css("#session-error")))
			msg := e.text(t, "#session-error")
			if !strings.HasPrefix(msg, "Too many failed sign-ins from your address; try again in ") {
				t.Errorf("a throttled sign-in says %q, want that there were too many failed sign-ins and when to try again", msg)
			}
			if kept := run(t, e, "reading the name", chromedp.Value(css("#session-name"))); kept != uname {
				t.Errorf("a throttled sign-in keeps the name %q, want %q", kept, uname)
			}
			if got := e.path(t); !strings.HasPrefix(got, "/session") {
				t.Errorf("a throttled sign-in is at %s, want still at the form", got)
			}
			e.do(t, "the orders", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#session-form")))
		})
	}
}
