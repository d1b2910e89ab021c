package browser_test

// What a person sees of the rights: the open desk until the first account,
// and then each role's pages, which offer only what the role may do, even
// as live updates redraw them; and a refusal, when one is met, says what
// the action takes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"orders/store"
)

// jsModes names the two ways every test here runs, JavaScript on and off.
var jsModes = []struct {
	name string
	on   bool
}{{"javascript on", true}, {"javascript off", false}}

// person is an account a test made and signs in as.
type person struct {
	*store.User
	password string
}

// makePerson stores an account of role named name.
func makePerson(t *testing.T, e *env, name string, role store.Role) person {
	t.Helper()
	r, pw, display := string(role), name+"-correct-horse", strings.ToUpper(name[:1])+name[1:]
	u, err := e.store.CreateUser(context.Background(), store.UserInput{Name: &name, DisplayName: &display, Role: &r, Password: &pw})
	if err != nil {
		t.Fatalf("making %s (%s): %v", name, role, err)
	}
	return person{u, pw}
}

// signIn signs p in over HTTP and gives the tab the session; it returns
// the session secret.
func (e *env) signIn(t *testing.T, p person) string {
	t.Helper()
	s := signInOver(t, e.base, p.Name, p.password)
	setSession(t, e, s)
	return s
}

// count is how many elements match sel.
func (e *env) count(t *testing.T, sel string) int {
	t.Helper()
	return run(t, e, "counting "+sel, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
}

// none fails the test for each selector something on the page matches:
// controls the page's person may not use.
func (e *env) none(t *testing.T, what string, sels ...string) {
	t.Helper()
	for _, sel := range sels {
		if n := e.count(t, sel); n > 0 {
			html := e.jsString(t, fmt.Sprintf(`document.querySelector(%q).outerHTML`, sel))
			t.Errorf("%s: %d of %s, want none: %s", what, n, sel, oneLine(html, 200))
		}
	}
}

// some fails the test for each selector nothing on the page matches.
func (e *env) some(t *testing.T, what string, sels ...string) {
	t.Helper()
	for _, sel := range sels {
		if e.count(t, sel) == 0 {
			t.Errorf("%s: no %s, want one", what, sel)
		}
	}
}

// loadStatus is the HTTP status of the document the tab shows.
func (e *env) loadStatus(t *testing.T) int {
	t.Helper()
	return run(t, e, "reading the page's status", chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
}

// quiet waits until whatever a key pressed has had time to start (a
// request, a navigation) and the tab's document has loaded and sends
// nothing.
func (e *env) quiet(t *testing.T) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	e.waitUntil(t, "the page is quiet", `document.readyState === "complete" && !document.querySelector(".htmx-request")`)
}

// Controls of the orders' pages, by what they do rather than their words.
const (
	newOrderButton = `a[href="/orders/new"]`
	// A row's Edit: the inline edit (hx-get) or, without JavaScript, the
	// Edit form.
	rowEdit   = `a[href$="/edit"]`
	rowDelete = `form[hx-delete] button`
	noteForm  = `form.note-form`
	statusBtn = `.transitions form`
)

// TestOpenDeskUntilAnAccount: while no account exists the List says the
// desk is open to anyone and offers every control (New, Edit, Delete).
// Once an account is made (by the store, or on the Users page in the open
// desk) the next load of the List goes to the sign-in form, and signing in
// leads back to the List, without the banner; an order page seen in the
// open desk, loaded again, has no banner either.
func TestOpenDeskUntilAnAccount(t *testing.T) {
	for _, mode := range jsModes {
		for _, how := range []string{"store", "users page"} {
			t.Run(mode.name+", made on the "+how, func(t *testing.T) {
				e := start(t, mode.on)
				o := e.seed(t, "Ada Lovelace")[0]
				row := fmt.Sprintf("#order-row-%d", o.ID)
				e.do(t, "open the List", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(row)))
				e.waitText(t, ".open-desk", "This desk is open to anyone.")
				e.some(t, "the open desk's List", newOrderButton, row+" "+rowEdit, row+" "+rowDelete)
				orderPage := fmt.Sprintf("/orders/%d", o.ID)
				e.do(t, "open the order", chromedp.Navigate(e.base+orderPage), chromedp.WaitVisible(css("#order")))
				e.waitText(t, ".open-desk", "This desk is open to anyone.")

				name, pw := "root", "root-correct-horse"
				if how == "store" {
					r := string(store.RoleAdmin)
					if _, err := e.store.CreateUser(context.Background(), store.UserInput{Name: &name, Role: &r, Password: &pw}); err != nil {
						t.Fatal(err)
					}
				} else {
					e.do(t, "the New user form", chromedp.Navigate(e.base+"/users/new"), chromedp.WaitVisible(css("#user-form form")))
					if got := run(t, e, "the role offered", chromedp.Value(css("#user-form select[name=role]"))); got != string(store.RoleAdmin) {
						t.Errorf("the first account's form offers role %q, want admin", got)
					}
					e.do(t, "create the first account",
						chromedp.SendKeys(css("#user-form input[name=name]"), name),
						chromedp.SendKeys(css("#user-form input[name=password]"), pw),
						chromedp.Click(css("#user-form button[type=submit]")),
						chromedp.WaitNotPresent(css("#user-form")))
					if users, _ := e.store.HasUsers(context.Background()); !users {
						t.Fatalf("the Users page made no account: the page shows %q", oneLine(e.jsString(t, `document.querySelector("main").textContent`), 200))
					}
				}

				e.do(t, "the List again", chromedp.Navigate(e.base+"/orders"))
				if got, want := e.path(t), "/session/new?next="+url.QueryEscape("/orders"); got != want {
					t.Fatalf("the List once an account exists: at %s, want %s", got, want)
				}
				e.none(t, "the sign-in form once an account exists", ".open-desk", ".open-note", row)
				e.do(t, "sign in",
					chromedp.SendKeys(css("#session-name"), name),
					chromedp.SendKeys(css("#session-password"), pw),
					chromedp.Click(css("#session-form button[type=submit]")),
					chromedp.WaitVisible(css(row)))
				if got := e.path(t); got != "/orders" {
					t.Errorf("signed in: at %s, want back at /orders", got)
				}
				e.none(t, "the List signed in", ".open-desk")
				e.some(t, "an admin's List", "header .person-name", newOrderButton, row+" "+rowEdit, row+" "+rowDelete)
				// The order page the browser keeps from the open desk is not
				// shown again: it says the desk is open and names no one.
				e.do(t, "the order again", chromedp.Navigate(e.base+orderPage), chromedp.WaitVisible(css("#order")))
				e.none(t, "the order page signed in", ".open-desk")
				e.some(t, "the order page signed in", "header .person-name")
			})
		}
	}
}

// asAdmin sends a JSON request with the admin's session, as another
// browser or a program would, and fails the test unless it answers want.
func asAdmin(t *testing.T, base, session, method, path string, body any, want int) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Cookie", sessionCookie+"="+session)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("%s %s as the admin: %s, want %d", method, path, res.Status, want)
	}
}

// TestViewerLiveListOffersNoEditing: a viewer's List follows what an admin
// does in another browser (an inline edit) and over HTTP (a new order):
// the changed row and the new one show, drawn for the viewer, with no
// Edit, no Delete and no inline edit; the page has no New button, and
// the shortcuts that edit (e, n) do nothing. The viewer's order page, too,
// follows the admin's change and offers no Edit, Delete, status buttons or
// note form.
func TestViewerLiveListOffersNoEditing(t *testing.T) {
	a, v := startLive(t)
	admin, viewer := makePerson(t, a, "root", store.RoleAdmin), makePerson(t, a, "vera", store.RoleViewer)
	adminSession := a.signIn(t, admin)
	v.signIn(t, viewer)
	orders := a.seed(t, "Ada Lovelace", "Grace Hopper")
	x := orders[0]
	row := fmt.Sprintf("#order-row-%d", x.ID)

	a.openLive(t, "/orders")
	v.openLive(t, "/orders")
	v.none(t, "the viewer's List", newOrderButton, rowEdit, rowDelete, "[data-rows] [hx-get], [data-rows] form")

	// The admin's inline edit draws the row for the admin first.
	a.do(t, "the admin edits in place", chromedp.Click(css(row+" a[hx-get]")), chromedp.WaitVisible(css(fmt.Sprintf("#row-%d-customer", x.ID))),
		chromedp.SetValue(css(fmt.Sprintf("#row-%d-customer", x.ID)), "Ada King"),
		chromedp.Click(css(row+" .row-buttons button[type=submit]")))
	a.waitText(t, "#notice", fmt.Sprintf("Order %d saved.", x.ID))
	v.waitText(t, row, "Ada King")
	asAdmin(t, a.base, adminSession, http.MethodPost, "/orders", map[string]any{"customer": "Katherine Johnson"}, http.StatusCreated)
	v.waitText(t, "[data-live-news]", "1 new order")
	v.do(t, "show the new order", chromedp.Click(css("[data-live-show]")))
	v.waitText(t, "[data-results]", "Katherine Johnson")
	if n := v.count(t, "[data-rows] > tr"); n != 3 {
		t.Errorf("the viewer's List shows %d rows, want 3", n)
	}
	v.none(t, "the viewer's List after the live changes", newOrderButton, rowEdit, rowDelete, "[data-rows] [hx-get], [data-rows] form")

	// The keys that edit: j marks a row, e and n do nothing.
	v.do(t, "j, e and n", press("j"), press("e"), press("n"))
	v.quiet(t)
	if got := v.path(t); got != "/orders" {
		t.Errorf("after e and n the viewer is at %s, want still at /orders", got)
	}
	v.none(t, "the viewer's List after e", "tr.editing", "[data-rows] input")

	// The order page: the admin confirms the order, the viewer's page shows it.
	a.openLive(t, fmt.Sprintf("/orders/%d", x.ID))
	v.openLive(t, fmt.Sprintf("/orders/%d", x.ID))
	v.none(t, "the viewer's order page", "#order "+rowEdit, "#order "+rowDelete, "#order "+noteForm, "#order "+statusBtn)
	a.do(t, "the admin confirms the order", chromedp.Click(css(".transitions form:first-of-type button")), chromedp.WaitVisible(css("#order .status-confirmed")))
	v.waitJS(t, "the viewer's page shows the confirmed order", `!!document.querySelector("#order .status-confirmed")`)
	v.waitText(t, "#order", "Ada King")
	v.none(t, "the viewer's order page after the live change", "#order "+rowEdit, "#order "+rowDelete, "#order "+noteForm, "#order "+statusBtn)
	v.do(t, "e on the order page", press("e"))
	v.quiet(t)
	if got, want := v.path(t), fmt.Sprintf("/orders/%d", x.ID); got != want {
		t.Errorf("after e the viewer is at %s, want still at %s", got, want)
	}
}

// Controls of the products' pages.
const (
	newProductButton = `a[href="/products/new"]`
	productEdit      = `a[href^="/products/"][href$="/edit"]`
)

// TestClerkSeesNoProductEditing: a clerk's product List and product page
// offer no New product, no Edit (nor inline edit) and no Delete, but the
// note form and the New order button, which a clerk may use. With
// JavaScript on, the keys that edit do nothing on products: e neither
// opens an inline edit nor leaves the page, and n opens the New order
// form, which a clerk may send (never a form that then answers 403).
func TestClerkSeesNoProductEditing(t *testing.T) {
	for _, mode := range jsModes {
		t.Run(mode.name, func(t *testing.T) {
			e := start(t, mode.on)
			makePerson(t, e, "root", store.RoleAdmin)
			e.signIn(t, makePerson(t, e, "clara", store.RoleClerk))
			c := seedCatalogue(t, e.store)
			mugRow, mugPage := productRow(c.mug), fmt.Sprintf("/products/%d", c.mug.ID)

			e.do(t, "open the products", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(mugRow)))
			e.none(t, "a clerk's products", newProductButton, productEdit, "#products "+rowDelete, "[data-rows] [hx-get], [data-rows] form")
			e.some(t, "a clerk's products", newOrderButton, "header .person-name")
			if mode.on {
				e.do(t, "j, e", press("j"), press("e"))
				e.quiet(t)
				if got := e.path(t); got != "/products" {
					t.Errorf("after e on the products the clerk is at %s, want still at /products", got)
				}
				e.none(t, "a clerk's products after e", "tr.editing", "[data-rows] input")
				e.do(t, "n", press("n"))
				e.quiet(t)
				if got := e.path(t); got != "/orders/new" {
					t.Errorf("after n on the products the clerk is at %s, want the New order form at /orders/new", got)
				}
				if status := e.loadStatus(t); status != http.StatusOK {
					t.Errorf("the page n opened answered %d, want 200", status)
				}
				e.some(t, "the page n opened", "#order-form form")
			}

			e.do(t, "open a product", chromedp.Navigate(e.base+mugPage), chromedp.WaitVisible(css("#product")))
			e.none(t, "a clerk's product page", "#product "+productEdit, "#product "+rowDelete)
			e.some(t, "a clerk's product page", "#product "+noteForm)
			if mode.on {
				e.do(t, "e on the product page", press("e"))
				e.quiet(t)
				if got := e.path(t); got != mugPage {
					t.Errorf("after e on a product the clerk is at %s, want still at %s", got, mugPage)
				}
			}
		})
	}
}

// setRole gives p's account role, as an admin would elsewhere.
func setRole(t *testing.T, e *env, p person, role store.Role) {
	t.Helper()
	r := string(role)
	if _, err := e.store.UpdateUser(context.Background(), p.ID, store.UserInput{Role: &r}, 0, ""); err != nil {
		t.Fatalf("making %s a %s: %v", p.Name, role, err)
	}
}

// wantForbiddenPage checks that the tab shows the 403 page, in the site's
// layout (the navigation, the person's name), saying msg (what the action
// takes) and leading back to the resource's list at back.
func (e *env) wantForbiddenPage(t *testing.T, what, msg, back string) {
	t.Helper()
	if status := e.loadStatus(t); status != http.StatusForbidden {
		t.Errorf("%s: the page answered %d, want 403", what, status)
	}
	if got := e.text(t, "main h1"); got != "Not allowed" {
		t.Errorf("%s: the heading says %q, want Not allowed", what, got)
	}
	if got := strings.Join(strings.Fields(e.text(t, "main")), " "); !strings.Contains(strings.ToLower(got), msg) {
		t.Errorf("%s: the page says %q, want %q", what, got, msg)
	}
	e.some(t, what, `header.site nav a[href="/orders"]`, "header .person-name", fmt.Sprintf(`main a[href=%q]`, back))
}

// TestForbiddenSaysWhatItTakes: a clerk who opens a product's New or Edit
// form by its address gets the 403 page, in the site's layout, saying
// which role it takes. A manager demoted to clerk while their pages are
// open meets the same refusal from what those pages still offer: the
// List's Delete (with JavaScript, the refusal shows in the page's alert
// region and the row stays; without, the 403 page), and, with JavaScript,
// a product page's Edit. Loaded again, the pages offer what a clerk may do.
func TestForbiddenSaysWhatItTakes(t *testing.T) {
	for _, mode := range jsModes {
		t.Run(mode.name, func(t *testing.T) {
			e := start(t, mode.on)
			e.failedLoads = []string{"403"}
			ctx := context.Background()
			makePerson(t, e, "root", store.RoleAdmin)
			clara, mona := makePerson(t, e, "clara", store.RoleClerk), makePerson(t, e, "mona", store.RoleManager)
			c := seedCatalogue(t, e.store)
			o := e.seed(t, "Ada Lovelace")[0]
			row, orderPage := fmt.Sprintf("#order-row-%d", o.ID), fmt.Sprintf("/orders/%d", o.ID)

			e.signIn(t, clara)
			e.do(t, "the New product form by its address", chromedp.Navigate(e.base+"/products/new"), chromedp.WaitVisible(css("main h1")))
			e.wantForbiddenPage(t, "a clerk's New product form", "you may not create products: that takes the manager role, and yours is clerk", "/products")
			e.none(t, "a clerk's New product form", "main form")
			edit := fmt.Sprintf("/products/%d/edit", c.mug.ID)
			e.do(t, "a product's Edit form by its address", chromedp.Navigate(e.base+edit), chromedp.WaitVisible(css("main h1")))
			e.wantForbiddenPage(t, "a clerk's Edit product form", "you may not change products: that takes the manager role, and yours is clerk", "/products")
			e.none(t, "a clerk's Edit product form", "main form")

			// A manager's List, and then the manager is a clerk.
			e.signIn(t, mona)
			e.do(t, "a manager's List", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(row+" "+rowDelete)))
			setRole(t, e, mona, store.RoleClerk)
			deleteTakes := "you may not delete orders: that takes the manager role, and yours is clerk"
			if mode.on {
				e.do(t, "Delete on the stale List", chromedp.Click(css(row+" "+rowDelete)))
				e.waitText(t, "#notice-alert", sentenceOf(deleteTakes))
				if got := e.path(t); got != "/orders" {
					t.Errorf("after the refused Delete the page is at %s, want still at /orders", got)
				}
				e.some(t, "the List after the refused Delete", row)
				e.mu.Lock()
				asked := strings.Join(e.dialogs, "; ")
				e.mu.Unlock()
				if !strings.Contains(asked, fmt.Sprintf("Delete order %d", o.ID)) {
					t.Errorf("the Delete asked %q, want its confirmation", asked)
				}
			} else {
				e.do(t, "Delete on the stale List", chromedp.Click(css(row+" "+rowDelete)))
				e.waitPath(t, "confirm=delete")
				e.waitUntil(t, "the confirmation has loaded", `document.readyState === "complete"`)
				e.wantForbiddenPage(t, "the stale List's Delete", deleteTakes, "/orders")
			}
			if _, err := e.store.GetOrder(ctx, o.ID); err != nil {
				t.Errorf("the refused Delete removed the order: %v", err)
			}

			// Loaded again, the pages are drawn for a clerk.
			e.do(t, "the List again", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(row)))
			e.none(t, "the demoted person's List", row+" "+rowDelete)
			e.some(t, "the demoted person's List", row+" "+rowEdit)

			if mode.on {
				// A manager's product page, and then the manager is a clerk.
				setRole(t, e, mona, store.RoleManager)
				e.do(t, "a manager's product page", chromedp.Navigate(e.base+fmt.Sprintf("/products/%d", c.mug.ID)),
					chromedp.WaitVisible(css("#product "+productEdit)))
				setRole(t, e, mona, store.RoleClerk)
				e.do(t, "Edit on the stale product page", chromedp.Click(css("#product "+productEdit)))
				changeTakes := "you may not change products: that takes the manager role, and yours is clerk"
				e.waitText(t, "#notice-alert", sentenceOf(changeTakes))
				e.waitText(t, "main", sentenceOf(changeTakes))
				e.none(t, "the stale product page's Edit", "main form")
				if p, _ := storedProduct(t, e.store, c.mug.ID); p.Version != c.mug.Version {
					t.Errorf("the product is at version %d after a refused Edit, want %d", p.Version, c.mug.Version)
				}
			}

			// The order page, cached by the browser from when the person was
			// a manager, is not reused for the clerk.
			setRole(t, e, mona, store.RoleManager)
			e.do(t, "a manager's order page", chromedp.Navigate(e.base+orderPage), chromedp.WaitVisible(css("#order "+rowDelete)))
			setRole(t, e, mona, store.RoleClerk)
			e.do(t, "the order page again", chromedp.Navigate(e.base+orderPage), chromedp.WaitVisible(css("#order")))
			e.none(t, "the demoted person's order page", "#order .page-head "+rowDelete)
			e.some(t, "the demoted person's order page", "#order "+rowEdit, "#order "+noteForm)
		})
	}
}

// sentenceOf is msg as a notice says it: a capital first, a full stop last.
func sentenceOf(msg string) string { return strings.ToUpper(msg[:1]) + msg[1:] + "." }

// TestAPageIsDrawnForWhoeverSignedIn: two people of one role take turns
// at one browser; the order page the first was shown is not shown to the
// second as current: its header names the second.
func TestAPageIsDrawnForWhoeverSignedIn(t *testing.T) {
	for _, mode := range jsModes {
		t.Run(mode.name, func(t *testing.T) {
			e := start(t, mode.on)
			first, second := makePerson(t, e, "root", store.RoleAdmin), makePerson(t, e, "boss", store.RoleAdmin)
			page := fmt.Sprintf("/orders/%d", e.seed(t, "Ada Lovelace")[0].ID)
			for _, p := range []person{first, second} {
				e.signIn(t, p)
				e.do(t, "the order page", chromedp.Navigate(e.base+page), chromedp.WaitVisible(css("#order")))
				if got := strings.Join(strings.Fields(e.text(t, "header .person-name")), " "); got != "Signed in as "+p.DisplayName {
					t.Errorf("signed in as %s, the header says %q, want %q", p.Name, got, "Signed in as "+p.DisplayName)
				}
			}
		})
	}
}
