package routes

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"orders/store"
	"orders/testutil"
)

// wantRights is the rights table as people rely on it: the least role of
// each action on each resource. It is written out here, not read from
// the registrations, so a change of the code's table fails the test.
var wantRights = map[string]map[action]store.Role{
	"orders":    {actRead: store.RoleViewer, actCreate: store.RoleClerk, actUpdate: store.RoleClerk, actDelete: store.RoleManager, actNote: store.RoleClerk},
	"customers": {actRead: store.RoleViewer, actCreate: store.RoleClerk, actUpdate: store.RoleClerk, actDelete: store.RoleManager, actNote: store.RoleClerk},
	"products":  {actRead: store.RoleViewer, actCreate: store.RoleManager, actUpdate: store.RoleManager, actDelete: store.RoleManager, actNote: store.RoleClerk},
	"users":     {actRead: store.RoleAdmin, actCreate: store.RoleAdmin, actUpdate: store.RoleAdmin, actDelete: store.RoleAdmin, actNote: store.RoleAdmin},
	// Everyone keeps views of the Lists they read; a view is its maker's
	// (ownedRecords): views_test.go checks another person's.
	"views": {actRead: store.RoleViewer, actCreate: store.RoleViewer, actUpdate: store.RoleViewer, actDelete: store.RoleViewer, actNote: store.RoleViewer},
}

// ownedRecords are the resources whose members are their makers' alone:
// the rights cases write to a member the acting person made.
var ownedRecords = map[string]bool{}

// rightsApp is an application with one signed-in person of each role
// (the admin first: the first account must be one), by role.
type rightsApp struct {
	*testApp
	session map[store.Role]string
	user    map[store.Role]*store.User
}

func newRightsApp(t *testing.T) *rightsApp {
	t.Helper()
	tg := testutil.Miniredis(t)
	a := &rightsApp{testApp: newTestApp(t, tg.Name, testutil.NewStore(t, tg)),
		session: map[store.Role]string{}, user: map[store.Role]*store.User{}}
	for _, role := range []store.Role{store.RoleAdmin, store.RoleViewer, store.RoleClerk, store.RoleManager} {
		a.user[role] = addAccount(t, a.store, string(role), role)
		a.session[role] = a.signIn(t, string(role))
	}
	return a
}

// as is h signed in as the person of role.
func (a *rightsApp) as(role store.Role, h testutil.H) testutil.H { return as(a.session[role], h) }

// seeded makes member n of s as the admin (as role, when the
// resource's members are their makers'), and returns it.
func (a *rightsApp) seeded(t *testing.T, s *suiteResource, n int, role store.Role) memberJSON {
	t.Helper()
	if !ownedRecords[s.R.Plural] {
		role = store.RoleAdmin
	}
	r := a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(s.body(n)), a.as(role, testutil.HJSON)).WantStatus(t, http.StatusCreated)
	var m memberJSON
	r.JSON(t, &m)
	return m
}

// state is what a write may change of member id: its version (0: gone),
// its history's length and the number of members.
type state struct {
	version int64
	history int
	count   int64
}

func (a *rightsApp) state(t *testing.T, s *suiteResource, id int64) state {
	t.Helper()
	admin := a.as(store.RoleAdmin, testutil.HJSON)
	var st state
	obj := a.get(t, s.R.Path()+"?per_page=1", admin).WantStatus(t, http.StatusOK).Object(t)
	st.count = int64(obj["total"].(float64))
	if r := a.get(t, s.R.MemberPath(id), admin); r.Status == http.StatusOK {
		var m memberJSON
		r.JSON(t, &m)
		st.version = m.Version
	}
	var h historyJSON
	if r := a.get(t, s.R.HistoryPath(id)+"?per_page=100", admin); r.Status == http.StatusOK {
		r.JSON(t, &h)
		st.history = len(h.Entries)
	}
	return st
}

// representation is how a person's browser or program sends a write.
type representation struct {
	name string
	h    testutil.H
}

var rightsReprs = []representation{
	{"page", testutil.HPage},
	{"htmx", testutil.HXTo("main#main")},
	{"json", testutil.HJSON},
}

// write is one request of a rights case: what it asks, and what it
// answers when allowed.
type write struct {
	name   string
	action action
	// send makes the request in representation rp on member m.
	send func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (method, target string, b testutil.Body, h testutil.H)
	// ok is the status of the allowed request per representation; a
	// representation it does not name has no such request.
	ok map[string]int
}

var rightsWrites = []write{
	{"new form", actCreate, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		return http.MethodGet, s.R.NewPath(), testutil.NoBody, rp.h
	}, map[string]int{"page": 200, "htmx": 200, "json": 200}},
	{"create", actCreate, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		if rp.name == "json" {
			return http.MethodPost, s.R.Path(), testutil.JSON(s.body(n)), rp.h
		}
		return http.MethodPost, s.R.Path(), testutil.Form(s.formBody(n)...), rp.h
	}, map[string]int{"page": 303, "htmx": 201, "json": 201}},
	{"edit form", actUpdate, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		return http.MethodGet, s.R.EditPath(m.ID), testutil.NoBody, rp.h
	}, map[string]int{"page": 200, "htmx": 200, "json": 200}},
	{"update", actUpdate, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		v := strconv.FormatInt(m.Version, 10)
		switch rp.name {
		case "json":
			return http.MethodPut, s.R.MemberPath(m.ID), testutil.JSON(map[string]any{s.field: "Changed " + strconv.Itoa(n), "version": m.Version}), rp.h
		case "page":
			return http.MethodPost, s.R.MemberPath(m.ID), testutil.Form("_method", "PUT", s.field, "Changed "+strconv.Itoa(n), "version", v), rp.h
		}
		return http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Changed "+strconv.Itoa(n), "version", v), rp.h
	}, map[string]int{"page": 303, "htmx": 200, "json": 200}},
	{"inline row", actUpdate, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		return http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Inline "+strconv.Itoa(n), "version", strconv.FormatInt(m.Version, 10)), s.row(m.ID)
	}, map[string]int{"htmx": 200}},
	{"note", actNote, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		if rp.name == "json" {
			return http.MethodPost, s.R.HistoryPath(m.ID), testutil.JSON(map[string]any{"note": "A note"}), rp.h
		}
		h := rp.h
		if rp.name == "htmx" {
			h = testutil.HXTo("section#" + s.R.HistoryID())
		}
		return http.MethodPost, s.R.HistoryPath(m.ID), testutil.Form("note", "A note"), h
	}, map[string]int{"page": 303, "htmx": 201, "json": 201}},
	{"delete confirmation", actDelete, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		return http.MethodGet, s.R.MemberPath(m.ID) + "?confirm=delete", testutil.NoBody, rp.h
	}, map[string]int{"page": 200, "htmx": 200}},
	{"delete", actDelete, func(a *rightsApp, s *suiteResource, rp representation, m memberJSON, n int) (string, string, testutil.Body, testutil.H) {
		v := strconv.FormatInt(m.Version, 10)
		if rp.name == "page" {
			return http.MethodPost, s.R.MemberPath(m.ID), testutil.Form("_method", "DELETE", "version", v), rp.h
		}
		return http.MethodDelete, s.R.MemberPath(m.ID) + "?version=" + v, testutil.NoBody, rp.h
	}, map[string]int{"page": 303, "htmx": 200, "json": 204}},
}

// TestEveryRoleAgainstEveryWriteOfEveryResource walks the registrations:
// for every resource, every role and every write (its New and Edit forms,
// create, update, the inline row, a note, the delete confirmation,
// delete) in each representation (a plain form, htmx, JSON), the write
// succeeds when the rights table allows it, and otherwise is 403 in the
// representation asked for, saying the role it takes, having changed
// nothing.
func TestEveryRoleAgainstEveryWriteOfEveryResource(t *testing.T) {
	a := newRightsApp(t)
	n := 100
	for _, s := range resourceSuites() {
		want, ok := wantRights[s.R.Plural]
		if !ok {
			t.Fatalf("resource %s has no row in the rights table the tests check", s.R.Plural)
		}
		for _, act := range actions {
			if got := s.R.Rights.least(act); got != want[act] {
				t.Errorf("%s: %s takes %s, want %s", s.R.Plural, act, got, want[act])
			}
		}
		for _, role := range store.Roles {
			for _, rp := range rightsReprs {
				for _, w := range rightsWrites {
					if _, ok := w.ok[rp.name]; !ok {
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/%s/%s", s.R.Plural, role, rp.name, w.name), func(t *testing.T) {
						n++
						m := a.seeded(t, s, n, role)
						n++
						before := a.state(t, s, m.ID)
						method, target, body, h := w.send(a, s, rp, m, n)
						r := a.do(t, method, target, body, a.as(role, h))
						if role.AtLeast(want[w.action]) {
							if code := w.ok[rp.name]; r.Status != code {
								t.Fatalf("%s as a %s: got %d, want %d (the rights allow it); body:\n%s", r.What, role, r.Status, code, testutil.Snippet(r.Body))
							}
							return
						}
						wantForbidden(t, r, rp.name, want[w.action])
						if after := a.state(t, s, m.ID); after != before {
							t.Errorf("%s as a %s: refused, yet the %s changed: %+v, was %+v", r.What, role, s.R.Name, after, before)
						}
					})
				}
			}
		}
	}
}

// wantForbidden checks a 403 in the representation asked for, saying the
// role the request takes.
func wantForbidden(t *testing.T, r *testutil.Resp, rp string, takes store.Role) {
	t.Helper()
	r.WantStatus(t, http.StatusForbidden)
	say := "that takes the " + string(takes) + " role"
	switch rp {
	case "json":
		var e errorJSON
		r.JSON(t, &e)
		if !strings.Contains(e.Error, say) {
			t.Errorf("%s: error %q, want it to say %q", r.What, e.Error, say)
		}
	case "page":
		r.WantPage(t, "error").WantContains(t, say)
	default:
		// The alert region says it; the fragment is no page.
		r.WantLacks(t, "<!doctype").WantContains(t, `hx-target="#notice-alert"`, "notice-error", say)
	}
}

// TestReadsNeedTheirRight: a viewer reads orders, products and customers
// (every representation, the history, the Inquiry and the live stream)
// but not the accounts' List or another person's account.
func TestReadsNeedTheirRight(t *testing.T) {
	a := newRightsApp(t)
	for _, s := range resourceSuites() {
		m := a.seeded(t, s, 1, store.RoleViewer)
		targets := []string{s.R.Path(), s.R.MemberPath(m.ID), s.R.HistoryPath(m.ID)}
		for _, target := range targets {
			for _, rp := range rightsReprs {
				r := a.get(t, target, a.as(store.RoleViewer, rp.h))
				if wantRights[s.R.Plural][actRead] == store.RoleViewer {
					r.WantStatus(t, http.StatusOK)
				} else {
					wantForbidden(t, r, rp.name, wantRights[s.R.Plural][actRead])
				}
			}
		}
	}
	a.get(t, "/orders/inquiry", a.as(store.RoleViewer, testutil.HPage)).WantStatus(t, http.StatusOK)
	a.get(t, userResource.EventsPath(), a.as(store.RoleClerk, testutil.H{"Accept": "text/event-stream"})).WantStatus(t, http.StatusForbidden)
}

// TestPagesShowOnlyPermittedControls: a viewer's List and order page
// offer no Edit, Delete, inline edit, status change, note form or New
// (button or shortcut); a clerk's product pages offer no editing and no
// Delete, and no Delete of orders; the rows live updates fetch follow the
// same rights; a manager sees it all.
func TestPagesShowOnlyPermittedControls(t *testing.T) {
	a := newRightsApp(t)
	order := a.seeded(t, resourceSuites()[0], 1, store.RoleAdmin)
	var product memberJSON
	a.do(t, http.MethodPost, "/products", testutil.JSON(productResource.Example.Create(1)), a.as(store.RoleAdmin, testutil.HJSON)).
		WantStatus(t, http.StatusCreated).JSON(t, &product)
	edit := func(r *resource, id int64) string { return `href="` + r.EditPath(id) + `"` }
	del := func(r *resource, id int64) string { return `hx-delete="` + r.MemberPath(id) + `"` }
	newOrder := `href="` + orderResource.NewPath() + `"`
	noteForm := `class="note-form"`

	viewer := func(h testutil.H) testutil.H { return a.as(store.RoleViewer, h) }
	a.get(t, "/orders", viewer(testutil.HPage)).WantStatus(t, http.StatusOK).
		WantContains(t, `id="`+orderResource.RowID(order.ID)+`"`).
		WantLacks(t, edit(orderResource, order.ID), del(orderResource, order.ID), newOrder, `data-shortcut="n"`, "data-shortcut-edit", ">Edit<", ">Delete<")
	a.get(t, "/orders", viewer(testutil.HXTo("div#"+orderResource.ResultsID()))).WantStatus(t, http.StatusOK).
		WantLacks(t, edit(orderResource, order.ID), del(orderResource, order.ID))
	a.get(t, orderResource.MemberPath(order.ID), viewer(testutil.HPage)).WantStatus(t, http.StatusOK).
		WantContains(t, `id="`+orderResource.HistoryID()+`"`).
		WantLacks(t, edit(orderResource, order.ID), del(orderResource, order.ID), noteForm, `name="status"`, newOrder, ">Edit<", ">Delete<")
	// The row and page live updates fetch.
	a.get(t, orderResource.MemberPath(order.ID), viewer(testutil.HXTo("tr#"+orderResource.RowID(order.ID)))).WantStatus(t, http.StatusOK).
		WantFragment(t, orderResource.RowID(order.ID)).WantLacks(t, edit(orderResource, order.ID), del(orderResource, order.ID))
	for _, path := range []string{"/products", "/customers", productResource.MemberPath(product.ID)} {
		a.get(t, path, viewer(testutil.HPage)).WantStatus(t, http.StatusOK).WantLacks(t, ">Edit<", ">Delete<", "New product", "New customer", noteForm)
	}

	clerk := func(h testutil.H) testutil.H { return a.as(store.RoleClerk, h) }
	a.get(t, productResource.MemberPath(product.ID), clerk(testutil.HPage)).WantStatus(t, http.StatusOK).
		WantContains(t, noteForm).WantLacks(t, edit(productResource, product.ID), del(productResource, product.ID), ">Edit<", ">Delete<")
	a.get(t, "/products", clerk(testutil.HPage)).WantStatus(t, http.StatusOK).
		WantLacks(t, edit(productResource, product.ID), del(productResource, product.ID), "New product", "data-shortcut-edit")
	a.get(t, productResource.MemberPath(product.ID), clerk(testutil.HXTo("tr#"+productResource.RowID(product.ID)))).WantStatus(t, http.StatusOK).
		WantLacks(t, edit(productResource, product.ID), del(productResource, product.ID))
	a.get(t, orderResource.MemberPath(order.ID), clerk(testutil.HPage)).WantStatus(t, http.StatusOK).
		WantContains(t, edit(orderResource, order.ID), noteForm, `name="status"`, newOrder, `data-shortcut="n"`).
		WantLacks(t, del(orderResource, order.ID), ">Delete<")
	a.get(t, "/orders", clerk(testutil.HPage)).WantContains(t, edit(orderResource, order.ID), "data-shortcut-edit").WantLacks(t, del(orderResource, order.ID))

	manager := func(h testutil.H) testutil.H { return a.as(store.RoleManager, h) }
	a.get(t, productResource.MemberPath(product.ID), manager(testutil.HPage)).WantStatus(t, http.StatusOK).
		WantContains(t, edit(productResource, product.ID), del(productResource, product.ID), noteForm)
	a.get(t, "/orders", manager(testutil.HPage)).WantContains(t, edit(orderResource, order.ID), del(orderResource, order.ID), newOrder)
	a.get(t, "/products", manager(testutil.HPage)).WantContains(t, "New product")
}

// TestACachedPageFollowsARoleChange: a page's ETag names the role it was
// drawn for, so a person whose role changed is not told their cached
// page (with controls they no longer have) is current.
func TestACachedPageFollowsARoleChange(t *testing.T) {
	a := newRightsApp(t)
	o := a.seeded(t, resourceSuites()[0], 1, store.RoleAdmin)
	page := orderResource.MemberPath(o.ID)
	r := a.get(t, page, a.as(store.RoleClerk, testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, `href="`+orderResource.EditPath(o.ID)+`"`)
	tag := r.Header.Get("ETag")
	a.get(t, page, a.as(store.RoleClerk, testutil.HPage.With(testutil.H{"If-None-Match": tag}))).WantStatus(t, http.StatusNotModified)
	clerk := a.user[store.RoleClerk]
	a.do(t, http.MethodPut, userResource.MemberPath(clerk.ID), testutil.JSON(map[string]any{"role": "viewer"}), a.as(store.RoleAdmin, testutil.HJSON)).
		WantStatus(t, http.StatusOK)
	a.get(t, page, a.as(store.RoleClerk, testutil.HPage.With(testutil.H{"If-None-Match": tag}))).WantStatus(t, http.StatusOK).
		WantLacks(t, `href="`+orderResource.EditPath(o.ID)+`"`)
}

// TestACompressedPageIsCurrentForItsRole: the tag of a compressed page
// ("…-rc-gzip", as every browser gets it) still names its role: sent back
// by the same role it is a 304, by another a 200.
func TestACompressedPageIsCurrentForItsRole(t *testing.T) {
	a := newRightsApp(t)
	o := a.seeded(t, resourceSuites()[0], 1, store.RoleAdmin)
	page := orderResource.MemberPath(o.ID)
	gzip := testutil.H{"Accept-Encoding": "gzip"}
	tag := a.get(t, page, a.as(store.RoleClerk, testutil.HPage.With(gzip))).WantStatus(t, http.StatusOK).Header.Get("ETag")
	if want := fmt.Sprintf(`-rc.%d.%d-gzip"`, a.user[store.RoleClerk].ID, a.user[store.RoleClerk].Version); !strings.HasSuffix(tag, want) {
		t.Fatalf("a clerk's compressed page has ETag %s, want it to end %s", tag, want)
	}
	a.get(t, page, a.as(store.RoleClerk, testutil.HPage.With(gzip).With(testutil.H{"If-None-Match": tag}))).WantStatus(t, http.StatusNotModified)
	a.get(t, page, a.as(store.RoleViewer, testutil.HPage.With(gzip).With(testutil.H{"If-None-Match": tag}))).WantStatus(t, http.StatusOK)
	a.get(t, page, a.as(store.RoleAdmin, testutil.HPage.With(gzip).With(testutil.H{"If-None-Match": tag}))).WantStatus(t, http.StatusOK)
}
