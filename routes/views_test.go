package routes

// What only saved views promise: a view is its maker's (others do not
// see a private one, and only its owner or an admin changes it), sharing
// takes a manager, the query is one its List accepts, and the Lists show
// their person's views with a Save view form and lead back to their last
// query. What every resource promises runs over views too, through its
// Example.

import (
	"net/http"
	"net/url"
	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
	"strings"
	"testing"
)

func init() {
	noteAdders["views"] = (*redisstore.Store).AddViewNote
	ownedRecords["views"] = true
}

// viewsApp is an application on one test target with signed-in people:
// two clerks (ann and bob), a viewer, a manager and an admin, each by name.
type viewsApp struct {
	*testApp
	session map[string]string
}

func newViewsApp(t *testing.T, a *testApp) *viewsApp {
	t.Helper()
	v := &viewsApp{testApp: a, session: map[string]string{}}
	for _, p := range []struct {
		name string
		role store.Role
	}{{"admin", store.RoleAdmin}, {"ann", store.RoleClerk}, {"bob", store.RoleClerk}, {"vic", store.RoleViewer}, {"max", store.RoleManager}} {
		addAccount(t, a.store, p.name, p.role)
		v.session[p.name] = a.signIn(t, p.name)
	}
	return v
}

// as is h signed in as the person named.
func (v *viewsApp) as(name string, h testutil.H) testutil.H { return as(v.session[name], h) }

// viewJSON is the JSON of one view.
type viewJSON struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Resource string `json:"resource"`
	Query    string `json:"query"`
	Owner    string `json:"owner"`
	Shared   bool   `json:"shared"`
	Version  int64  `json:"version"`
}

// makeView creates a view as the person named, through JSON.
func (v *viewsApp) makeView(t *testing.T, who string, body map[string]any) viewJSON {
	t.Helper()
	var got viewJSON
	v.do(t, http.MethodPost, "/views", testutil.JSON(body), v.as(who, testutil.HJSON)).WantStatus(t, http.StatusCreated).JSON(t, &got)
	return got
}

// seen are the names of the views the person named sees in /views.
func (v *viewsApp) seen(t *testing.T, who string) []string {
	t.Helper()
	var page struct {
		Views []viewJSON `json:"views"`
	}
	v.get(t, "/views?per_page=100", v.as(who, testutil.HJSON)).WantStatus(t, http.StatusOK).JSON(t, &page)
	var names []string
	for _, x := range page.Views {
		names = append(names, x.Name)
	}
	return names
}

// storedViews are every view in the store, by id (an admin's reads see
// them all).
func storedViews(t *testing.T, st *redisstore.Store, ids ...int64) map[int64]store.View {
	t.Helper()
	out := map[int64]store.View{}
	for _, id := range ids {
		if v, err := st.GetView(t.Context(), id); err == nil {
			out[id] = *v
		}
	}
	return out
}

func TestViewsAreTheirMakersAndSharedOnesEveryones(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		mine := v.makeView(t, "ann", map[string]any{"name": "Ann's pending", "resource": "orders", "query": "status=pending"})
		if mine.Owner != "ann" || mine.Shared {
			t.Fatalf("ann's view: owner %q shared %v, want ann's own, not shared", mine.Owner, mine.Shared)
		}
		shared := v.makeView(t, "max", map[string]any{"name": "Team shipped", "resource": "orders", "query": "status=shipped", "shared": true})
		if !shared.Shared || shared.Owner != "max" {
			t.Fatalf("max's shared view: %+v", shared)
		}
		if got := v.seen(t, "ann"); strings.Join(got, "|") != "Ann's pending|Team shipped" {
			t.Errorf("ann sees %q, want her own and the shared one", got)
		}
		if got := v.seen(t, "bob"); strings.Join(got, "|") != "Team shipped" {
			t.Errorf("bob sees %q, want only the shared one", got)
		}
		before := storedViews(t, a.store, mine.ID, shared.ID)
		// Another clerk's private view does not exist for bob, in every
		// representation; its history neither.
		for _, h := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX} {
			v.get(t, viewResource.MemberPath(mine.ID), v.as("bob", h)).WantStatus(t, http.StatusNotFound)
			v.get(t, viewResource.HistoryPath(mine.ID), v.as("bob", h)).WantStatus(t, http.StatusNotFound)
		}
		v.get(t, "/orders", v.as("bob", testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, "Team shipped").WantLacks(t, "Ann&#39;s pending")
		v.get(t, "/orders", v.as("ann", testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, "Team shipped", "Ann&#39;s pending")
		// Nobody but the owner (or an admin) changes, deletes or notes a
		// view, shared or not.
		for _, id := range []int64{mine.ID, shared.ID} {
			for _, who := range []string{"bob", "vic"} {
				v.do(t, http.MethodPut, viewResource.MemberPath(id), testutil.JSON(map[string]any{"name": "Mine now"}), v.as(who, testutil.HJSON)).
					WantStatus(t, http.StatusForbidden)
				v.do(t, http.MethodPost, viewResource.MemberPath(id), testutil.Form("_method", "PUT", "name", "Mine now"), v.as(who, testutil.HPage)).
					WantStatus(t, http.StatusForbidden)
				v.do(t, http.MethodDelete, viewResource.MemberPath(id), testutil.NoBody, v.as(who, testutil.HJSON)).WantStatus(t, http.StatusForbidden)
				v.do(t, http.MethodPost, viewResource.HistoryPath(id), testutil.JSON(map[string]any{"note": "x"}), v.as(who, testutil.HJSON)).
					WantStatus(t, http.StatusForbidden)
			}
		}
		// The shared view's Edit form is not offered to bob either.
		v.get(t, viewResource.EditPath(shared.ID), v.as("bob", testutil.HPage)).WantStatus(t, http.StatusForbidden)
		v.get(t, viewResource.MemberPath(shared.ID), v.as("bob", testutil.HPage)).WantStatus(t, http.StatusOK).
			WantLacks(t, `href="`+viewResource.EditPath(shared.ID)+`"`, `class="note-form"`, `hx-delete=`)
		v.get(t, viewResource.MemberPath(shared.ID), v.as("max", testutil.HPage)).WantStatus(t, http.StatusOK).
			WantContains(t, `href="`+viewResource.EditPath(shared.ID)+`"`, `class="note-form"`, `hx-delete=`)
		if after := storedViews(t, a.store, mine.ID, shared.ID); !equalViews(after, before) {
			t.Errorf("refused writes changed the views: %+v, were %+v", after, before)
		}
		// The owner and an admin may.
		v.do(t, http.MethodPut, viewResource.MemberPath(mine.ID), testutil.JSON(map[string]any{"name": "Ann's open"}), v.as("ann", testutil.HJSON)).
			WantStatus(t, http.StatusOK)
		var changed viewJSON
		v.do(t, http.MethodPut, viewResource.MemberPath(mine.ID), testutil.JSON(map[string]any{"name": "Tidied"}), v.as("admin", testutil.HJSON)).
			WantStatus(t, http.StatusOK).JSON(t, &changed)
		if changed.Owner != "ann" {
			t.Errorf("an admin's change made the view %q's, want it to stay ann's", changed.Owner)
		}
		v.do(t, http.MethodDelete, viewResource.MemberPath(shared.ID), testutil.NoBody, v.as("max", testutil.HJSON)).WantStatus(t, http.StatusNoContent)
	})
}

func equalViews(a, b map[int64]store.View) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		if y, ok := b[k]; !ok || x != y {
			return false
		}
	}
	return true
}

func TestTheOwnerIsWhoMadeTheViewNeverWhatTheRequestSays(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		r := v.do(t, http.MethodPost, "/views", testutil.JSON(map[string]any{"name": "Sneaky", "resource": "orders", "owner": "bob"}),
			v.as("ann", testutil.HJSON))
		if r.Status == http.StatusCreated {
			var got viewJSON
			r.JSON(t, &got)
			if got.Owner != "ann" {
				t.Fatalf("%s: owner %q, want ann, who made it", r.What, got.Owner)
			}
		} else {
			r.WantStatus(t, http.StatusBadRequest)
		}
		got := v.makeView(t, "ann", map[string]any{"name": "Plain", "resource": "products"})
		r = v.do(t, http.MethodPut, viewResource.MemberPath(got.ID), testutil.JSON(map[string]any{"owner": "bob", "version": got.Version}), v.as("ann", testutil.HJSON))
		if cur, _ := a.store.GetView(t.Context(), got.ID); cur == nil || cur.Owner != "ann" {
			t.Fatalf("%s (%d): the view is now %+v, want it still ann's", r.What, r.Status, cur)
		}
	})
}

func TestMakingAViewSharedTakesAManager(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		for _, who := range []string{"vic", "ann"} {
			v.do(t, http.MethodPost, "/views", testutil.JSON(map[string]any{"name": "Everyone's", "resource": "orders", "shared": true}),
				v.as(who, testutil.HJSON)).WantStatus(t, http.StatusForbidden).WantContains(t, "manager")
			v.do(t, http.MethodPost, "/views", testutil.Form("name", "Everyone's", "resource", "orders", "shared", "true"),
				v.as(who, testutil.HPage)).WantStatus(t, http.StatusForbidden)
		}
		if got := v.seen(t, "admin"); len(got) != 0 {
			t.Fatalf("refused shared views were written: %q", got)
		}
		// A viewer keeps private views; the clerk's own cannot become shared.
		v.makeView(t, "vic", map[string]any{"name": "Vic's", "resource": "customers", "query": "q=ada"})
		own := v.makeView(t, "ann", map[string]any{"name": "Ann's", "resource": "orders"})
		v.do(t, http.MethodPut, viewResource.MemberPath(own.ID), testutil.JSON(map[string]any{"shared": true, "version": own.Version}),
			v.as("ann", testutil.HJSON)).WantStatus(t, http.StatusForbidden)
		if got := v.seen(t, "bob"); len(got) != 0 {
			t.Errorf("bob sees %q, want no view shared", got)
		}
		// The List's Save view offers the shared box to managers only.
		v.get(t, "/orders", v.as("ann", testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, `id="save-view"`).WantLacks(t, `id="save-view-shared"`)
		v.get(t, "/orders", v.as("max", testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, `id="save-view-shared"`)
		v.makeView(t, "max", map[string]any{"name": "Shared by max", "resource": "orders", "shared": true})
		if got := v.seen(t, "bob"); len(got) != 1 {
			t.Errorf("bob sees %q, want the manager's shared view", got)
		}
	})
}

func TestABadViewIs422InEveryRepresentationAndWritesNothing(t *testing.T) {
	long := strings.Repeat("q=a&", 501)
	cases := []struct {
		name, field, msg string
		body             map[string]any
	}{
		{"no name", "name", "required", map[string]any{"name": "", "resource": "orders"}},
		{"blank name", "name", "required", map[string]any{"name": "   ", "resource": "orders"}},
		{"long name", "name", "100", map[string]any{"name": strings.Repeat("n", 101), "resource": "orders"}},
		{"unknown List", "resource", "orders, products, customers", map[string]any{"name": "x", "resource": "invoices"}},
		{"no List", "resource", "required", map[string]any{"name": "x"}},
		{"query too long", "query", "2000", map[string]any{"name": "x", "resource": "orders", "query": long}},
		{"leading ?", "query", "without its leading ?", map[string]any{"name": "x", "resource": "orders", "query": "?status=pending"}},
		{"a key the List does not take", "query", "active", map[string]any{"name": "x", "resource": "orders", "query": "active=true"}},
		{"junk", "query", "URL query", map[string]any{"name": "x", "resource": "orders", "query": "q=%zz"}},
		{"a fragment", "query", "URL query", map[string]any{"name": "x", "resource": "orders", "query": "q=a#top"}},
		{"a key twice", "query", "more than once", map[string]any{"name": "x", "resource": "customers", "query": "q=a&q=b"}},
		{"a line break", "query", "URL query", map[string]any{"name": "x", "resource": "orders", "query": "q=a\nb"}},
	}
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := v.do(t, http.MethodPost, "/views", testutil.JSON(c.body), v.as("ann", testutil.HJSON)).WantStatus(t, http.StatusUnprocessableEntity)
				var e errorJSON
				r.JSON(t, &e)
				if !strings.Contains(e.Errors[c.field], c.msg) {
					t.Errorf("%s: errors %v, want %s to say %q", r.What, e.Errors, c.field, c.msg)
				}
				var kv []string
				for k, x := range c.body {
					kv = append(kv, k, x.(string))
				}
				for _, h := range []testutil.H{testutil.HPage, testutil.HHX} {
					r := v.do(t, http.MethodPost, "/views", testutil.Form(kv...), v.as("ann", h)).WantStatus(t, http.StatusUnprocessableEntity)
					r.WantContains(t, "The view was not saved")
					r.WantFieldError(t, c.field, c.msg, "")
				}
			})
		}
		if got := v.seen(t, "ann"); len(got) != 0 {
			t.Errorf("bad views were written: %q", got)
		}
		// A good view changed badly keeps its values.
		good := v.makeView(t, "ann", map[string]any{"name": "Good", "resource": "orders", "query": "status=pending"})
		v.do(t, http.MethodPut, viewResource.MemberPath(good.ID), testutil.JSON(map[string]any{"query": "?x", "version": good.Version}),
			v.as("ann", testutil.HJSON)).WantStatus(t, http.StatusUnprocessableEntity)
		if cur, _ := a.store.GetView(t.Context(), good.ID); cur.Query != "status=pending" || cur.Version != good.Version {
			t.Errorf("a refused change left %+v, want the view as it was", cur)
		}
	})
}

func TestAViewsQueryIsKeptInOneOrder(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		got := v.makeView(t, "ann", map[string]any{"name": "Sorted", "resource": "orders", "query": "sort=-total&status=pending&q=&from=2025-01-01"})
		if got.Query != "from=2025-01-01&sort=-total&status=pending" {
			t.Errorf("query stored as %q, want its keys sorted and the empty one left out", got.Query)
		}
	})
}

func TestTheListShowsItsViewsAndSaveViewKeepsTheQuery(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		v.makeView(t, "ann", map[string]any{"name": "Pending", "resource": "orders", "query": "status=pending"})
		v.makeView(t, "ann", map[string]any{"name": "Some products", "resource": "products", "query": "active=true"})
		r := v.get(t, "/orders?status=shipped&sort=-total", v.as("ann", testutil.HPage)).WantStatus(t, http.StatusOK)
		r.WantContains(t, `id="saved-views"`, `<a href="/orders?status=pending">Pending</a>`, `id="save-view"`,
			`name="query" value="sort=-total&amp;status=shipped"`, `name="resource" value="orders"`).WantLacks(t, "Some products")
		if strings.Index(r.Body, `id="saved-views"`) > strings.Index(r.Body, `<table`) && strings.Contains(r.Body, "<table") {
			t.Errorf("%s: the saved views come after the table, want them above it", r.What)
		}
		v.get(t, "/products", v.as("ann", testutil.HPage)).WantContains(t, `<a href="/products?active=true">Some products</a>`)
		v.get(t, "/customers", v.as("ann", testutil.HPage)).WantContains(t, `id="save-view"`, "No saved views yet")
		// A search that swaps the results brings the form's query along.
		v.get(t, "/orders?status=cancelled", v.as("ann", testutil.HXTo("div#order-results"))).WantStatus(t, http.StatusOK).
			WantContains(t, `hx-target="#saved-views"`, `name="query" value="status=cancelled"`)
		// Without JavaScript, Save view is a plain POST that leads back to
		// the List with the query kept, where the view now shows.
		r = v.do(t, http.MethodPost, "/views", testutil.Form("name", "Big shipped", "resource", "orders", "query", "sort=-total&status=shipped", "back", "1"),
			v.as("ann", testutil.HPage)).WantStatus(t, http.StatusSeeOther)
		if loc := r.Header.Get("Location"); loc != "/orders?sort=-total&status=shipped" {
			t.Fatalf("%s: Location %q, want the List with the saved query", r.What, loc)
		}
		v.get(t, "/orders?sort=-total&status=shipped", v.as("ann", testutil.HPage)).
			WantContains(t, `<a href="/orders?sort=-total&amp;status=shipped" aria-current="true">Big shipped</a>`)
		// JSON Lists carry no views: a program's page is the orders.
		v.get(t, "/orders", v.as("ann", testutil.HJSON)).WantLacks(t, "saved")
	})
}

func TestTheNavigationLeadsBackToTheLastQuery(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.createNamed(t, "Ada")
		v := newViewsApp(t, a)
		r := v.get(t, "/orders?status=pending&sort=-total&page=2&bogus=1", v.as("ann", testutil.HPage)).WantStatus(t, http.StatusOK)
		c := cookieNamed(r, lastQueryCookie("orders"))
		if c == nil || c.Value != url.QueryEscape("sort=-total&status=pending") && c.Value != "sort=-total&status=pending" {
			t.Fatalf("%s: cookie %v, want the query kept without its page and unknown keys", r.What, c)
		}
		// The page that set it already leads back to it.
		r.WantContains(t, `href="/orders?sort=-total&amp;status=pending" aria-current="page"`)
		with := func(cookie string) testutil.H {
			return testutil.HPage.With(testutil.H{"Cookie": sessionCookie + "=" + v.session["ann"] + "; " + cookie})
		}
		kept := lastQueryCookie("orders") + "=" + c.Value
		v.get(t, "/products", with(kept)).WantContains(t, `<a href="/orders?sort=-total&amp;status=pending">Orders</a>`, `<a href="/products"`)
		v.get(t, path(o.ID), with(kept)).WantContains(t, `<a href="/orders?sort=-total&amp;status=pending">← All orders</a>`)
		// A cookie the server did not write is checked as a view's query.
		for _, bad := range []string{"active=true", "%3Fstatus%3Dpending", strings.Repeat("q", 2100)} {
			v.get(t, "/products", with(lastQueryCookie("orders")+"="+bad)).WantContains(t, `<a href="/orders">Orders</a>`)
		}
		// The whole List again forgets the query.
		r = v.get(t, "/orders", with(kept)).WantStatus(t, http.StatusOK)
		if c := cookieNamed(r, lastQueryCookie("orders")); !cleared(c) {
			t.Errorf("%s: cookie %v, want it cleared", r.What, c)
		}
		r.WantContains(t, `<a href="/orders" aria-current="page">Orders</a>`)
	})
}

func TestTheNewViewFormTakesItsListAndQueryFromItsAddress(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		v := newViewsApp(t, a)
		v.get(t, "/views/new?resource=products&query=active%3Dtrue", v.as("ann", testutil.HPage)).WantStatus(t, http.StatusOK).
			WantContains(t, `<option value="products" selected>`, `value="active=true"`).WantLacks(t, `id="shared"`)
		v.get(t, "/views/new", v.as("max", testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, `id="shared"`)
	})
}
