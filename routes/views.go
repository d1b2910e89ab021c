package routes

// The saved views: named queries of the orders', products' and customers'
// Lists, each a person's own or shared with everyone. A person sees their
// own views and the shared ones; only the owner (or an admin) changes or
// deletes one; making one shared takes a manager. The List pages show
// their person's views above the table with a Save view form, and the
// navigation leads back to the query a person last listed.

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// viewResource is the saved views. Everyone who may read a List may keep
// views of it: the rights let every role in, and the view's own rules
// (its owner, sharing) are checked per record (viewMember).
var viewResource = &resource{Name: "view", Plural: "views", Title: "View", ETagPrefix: "v", Feed: store.ViewEvents, Listing: viewListing,
	Rights: rights{Read: store.RoleViewer, Create: store.RoleViewer, Update: store.RoleViewer, Delete: store.RoleViewer, Note: store.RoleViewer},
	Nav: []navEntry{{Key: "views", Label: "Views",
		Description: "Saved views: named searches of the orders, products and customers, a person's own or shared."}},
	describe: func(rec any) string {
		v := rec.(*store.View)
		return "Saved view " + v.Name + " of the " + v.Resource + " List."
	},
	Example: example{
		Create: func(n int) map[string]any {
			return map[string]any{"name": "View " + strconv.Itoa(n), "resource": "orders", "query": "status=pending&q=v" + strconv.Itoa(n)}
		},
		Change: "name",
	},
}

func init() {
	viewResource.serve = func(h *handlers) resourceHandlers {
		m := newMembers[store.View, store.ViewInput](viewResource, viewFields, viewResource.Plural, viewMember{h.store})
		hs := m.handlers(listViews(h.store), nil)
		hs.Edit = ownViewOnly(h.store, hs.Edit)
		hs.Create = backToList(hs.Create)
		return hs
	}
}

// viewFields are a view's fields as requests send them. The owner is
// none of them: the server sets it.
var viewFields = fields[store.ViewInput]{
	{Name: "name", Label: "Name", Max: store.MaxViewName, UI: control{Required: true},
		text: func(in *store.ViewInput) **string { return &in.Name }},
	{Name: "resource", Label: "List", UI: control{Tag: "select"},
		text: func(in *store.ViewInput) **string { return &in.Resource }},
	{Name: "query", Label: "Query (as in the List's address, after the ?)", History: "Query", Max: store.MaxViewQuery,
		UI:   control{Optional: true, Autocomplete: "off"},
		text: func(in *store.ViewInput) **string { return &in.Query }},
	{Name: "shared", Label: "Shared: everyone sees it", History: "Shared", Kind: kindBool, UI: control{Type: "checkbox"},
		flag: func(in *store.ViewInput) **bool { return &in.Shared }},
	{Name: "version", Kind: kindVersion, version: func(in *store.ViewInput) **int64 { return &in.Version }},
}

// viewListing is the views' List: by List, then by name.
var viewListing = &listing{
	Title:      "Saved views",
	Sorts:      []store.Sort{"name"},
	Columns:    map[string]store.Sort{},
	Words:      func(store.Sort) string { return "by list and name" },
	SearchHint: "name or view number",
	Params:     []string{"resource"},
	Describe: func(p map[string]string) ([]string, string) {
		if r := p["resource"]; r != "" {
			return []string{"of " + r}, " of the " + r + " List"
		}
		return nil, ""
	},
}

// viewMember is the view's recordStore and memberPages. It keeps the
// views' rules: a person reads their own views and the shared ones
// (another's private view is not found), changes and deletes only their
// own (an admin anyone's), and only a manager makes a view shared.
type viewMember struct{ s store.Views }

// mayChange reports whether p may change or delete v.
func mayChange(p *person, v *store.View) bool {
	return p.can(store.RoleAdmin) || v.Owner == p.Name
}

// maySee reports whether p may read v.
func maySee(p *person, v *store.View) bool { return v.Shared || mayChange(p, v) }

func viewForbidden(what string) error {
	return store.Errorf(store.EFORBIDDEN, "you may not %s", what)
}

// shareForbidden refuses making a view shared to a person below manager.
func shareForbidden(p *person) error {
	return viewForbidden("share views: that takes the manager role, and yours is " + roleName(p.Role))
}

func (m viewMember) get(ctx context.Context, id int64) (*store.View, error) {
	v, err := m.s.GetView(ctx, id)
	if err != nil {
		return nil, err
	}
	if !maySee(personFrom(ctx), v) {
		return nil, store.Errorf(store.ENOTFOUND, "view %d not found", id)
	}
	return v, nil
}

// owned reads view id for a change by the context's person: 403 when it
// is someone else's.
func (m viewMember) owned(ctx context.Context, id int64) (*store.View, error) {
	v, err := m.s.GetView(ctx, id)
	if err != nil {
		return nil, err
	}
	if !mayChange(personFrom(ctx), v) {
		return nil, viewForbidden("change or delete someone else's view")
	}
	return v, nil
}

func (m viewMember) create(ctx context.Context, in store.ViewInput) (*store.View, error) {
	p := personFrom(ctx)
	in.Owner = p.Name
	if in.Shared != nil && *in.Shared && !p.can(store.RoleManager) {
		return nil, shareForbidden(p)
	}
	if in.Resource != nil {
		if r := listed(strings.ToLower(strings.TrimSpace(*in.Resource))); r != nil && !r.permits(p, actRead, 0) {
			return nil, r.forbidden(p, actRead)
		}
	}
	return m.s.CreateView(ctx, in)
}

func (m viewMember) update(ctx context.Context, id int64, in store.ViewInput, ifMatch int64) (*store.View, error) {
	cur, err := m.owned(ctx, id)
	if err != nil {
		return nil, err
	}
	if p := personFrom(ctx); in.Shared != nil && *in.Shared && !cur.Shared && !p.can(store.RoleManager) {
		return nil, shareForbidden(p)
	}
	in.Owner = ""
	return m.s.UpdateView(ctx, id, in, ifMatch)
}

func (m viewMember) remove(ctx context.Context, id, ifMatch, version int64) error {
	if _, err := m.owned(ctx, id); err != nil {
		return err
	}
	return m.s.DeleteView(ctx, id, ifMatch, version)
}

func (m viewMember) history(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	// A deleted view's owner is no longer known: its history is an
	// admin's to read.
	if _, err := m.get(ctx, id); err != nil && !(store.ErrorCode(err) == store.ENOTFOUND && personFrom(ctx).can(store.RoleAdmin)) {
		return store.HistoryPage{}, err
	}
	return m.s.ViewHistory(ctx, id, cursor, perPage)
}

func (m viewMember) note(ctx context.Context, id int64, text string) (*store.HistoryEntry, error) {
	if _, err := m.owned(ctx, id); err != nil {
		return nil, err
	}
	return m.s.AddViewNote(ctx, id, text)
}

func (viewMember) ident(v *store.View) (int64, int64) { return v.ID, v.Version }
func (viewMember) title(v *store.View) string {
	return "View " + strconv.Itoa(int(v.ID)) + " · " + v.Name
}
func (viewMember) form(cur *store.View) memberForm[store.ViewInput] {
	return newViewForm(cur)
}
func (viewMember) inVersion(in *store.ViewInput) *int64 { return in.Version }

func (viewMember) newJSON() any {
	return fiber.Map{"name": "", "resource": store.ViewResources[0], "query": "", "shared": false}
}

func (viewMember) editJSON(v *store.View) any { return fiber.Map{"view": v} }

func (viewMember) conflict(cur *store.View, in store.ViewInput, row bool) *conflictView {
	return fieldConflict(viewResource, viewFields, viewInput(cur), in, cur.ID, cur.Version, row)
}

// ownViewOnly answers the Edit form of someone else's view with 403: it
// is a form its person may not send.
func ownViewOnly(s store.Views, next handler) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		if id, ok := store.ParseID(c.Params("id")); ok {
			v, err := s.GetView(c.UserContext(), id)
			p := personOf(c)
			if err == nil && maySee(p, v) && !mayChange(p, v) {
				return nil, viewForbidden("change or delete someone else's view")
			}
		}
		return next(c, rp)
	}
}

// backToList sends a plain form's create from a List's Save view form
// (back=1) back to that List with the view's query, where the new view is
// shown among the others; other creates answer as every create does.
func backToList(next handler) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		out, err := next(c, rp)
		if err != nil || out.Status != fiber.StatusCreated || c.FormValue("back") == "" {
			return out, err
		}
		if v, ok := out.JSON.(*store.View); ok && rp != reprJSON {
			out.Redirect, out.PushURL = v.Link(), v.Link()
			out.HXLocation = v.Link()
		}
		return out, nil
	}
}

// listViews is GET /views: the views the person sees (their own and the
// shared ones), by List and name, as every List answers; ?resource=
// keeps those of one List.
func listViews(s store.Views) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		paging, err := parsePaging(c)
		if err != nil {
			return nil, err
		}
		if sort := strings.TrimSpace(c.Query("sort")); sort != "" && !validSort(viewListing.Sorts, store.Sort(sort)) {
			return nil, badRequest("sort must be one of %s", sortNames(viewListing.Sorts))
		}
		res := strings.TrimSpace(c.Query("resource"))
		if res != "" && !slices.Contains(store.ViewResources, res) {
			return nil, badRequest("resource must be one of %s", strings.Join(store.ViewResources, ", "))
		}
		page, err := s.ListViews(c.UserContext(), store.ViewQuery{Owner: personOf(c).Name, Resource: res,
			Q: paging.Q, Page: paging.Page, PerPage: paging.PerPage})
		if err != nil {
			return nil, err
		}
		params := map[string]string{}
		if res != "" {
			params["resource"] = res
		}
		l := newListView(viewResource, viewListing, viewResource.Path(), paging.Q, params, viewListing.Sorts[0],
			strings.TrimSpace(c.Query("sort")) != "",
			listResult{Rows: page.Views, N: len(page.Views), Page: page.Page, PerPage: page.PerPage, Total: page.Total})
		return viewResource.listResponse(c, rp, "list", viewResource.Plural, l, page.Views), nil
	}
}

// viewForm is the view's New and Edit form: the List is a choice of the
// Lists a view may name.
type viewForm struct {
	*recordForm[store.ViewInput]
}

func newViewForm(v *store.View) *viewForm {
	if v == nil {
		return &viewForm{newRecordForm(viewResource, viewFields, store.ViewInput{}, 0, 0, viewMember{}.inVersion)}
	}
	return &viewForm{newRecordForm(viewResource, viewFields, viewInput(v), v.ID, v.Version, viewMember{}.inVersion)}
}

// prefill takes a New form's List and query from its address
// (/views/new?resource=orders&query=status%3Dpending), so a link can open
// the form filled for a List's current query.
func (f *viewForm) prefill(c *fiber.Ctx) {
	f.recordForm.prefill(c)
	if !f.New {
		return
	}
	if r := c.Query("resource"); r != "" {
		f.values.Resource = &r
	}
	if q := c.Query("query"); q != "" {
		f.values.Query = &q
	}
}

// Field is the view of a field of the form.
func (f *viewForm) Field(name string) fieldView { return f.shown(f.recordForm.Field(name)) }

// RowField is the view of a field of a List row's inline form.
func (f *viewForm) RowField(name string) fieldView { return f.shown(f.recordForm.RowField(name)) }

func (f *viewForm) shown(v fieldView) fieldView {
	if v.Name == "resource" {
		for _, r := range store.ViewResources {
			v.Options = append(v.Options, option{Value: r, Label: strings.ToUpper(r[:1]) + r[1:], Selected: r == v.Value})
		}
	}
	return v
}

// viewInput is a stored view as the request that would set every one of
// its fields.
func viewInput(v *store.View) store.ViewInput {
	text := func(s string) *string { return &s }
	shared := v.Shared
	return store.ViewInput{Name: text(v.Name), Resource: text(v.Resource), Query: text(v.Query), Shared: &shared}
}

// CanShare reports whether the page's person may make views shared.
func (v *view) CanShare() bool { return v.whoOrNone().can(store.RoleManager) }

// listed is the registered resource whose List a view may name ("orders"),
// or nil.
func listed(plural string) *resource {
	if !slices.Contains(store.ViewResources, plural) {
		return nil
	}
	for _, r := range resources {
		if r.Plural == plural {
			return r
		}
	}
	return nil
}

// savedViews is what a List page shows above its table: the views of it
// its person sees, and what its Save view form sends.
type savedViews struct {
	Views []store.View
	// Resource and Query are the List and its current query (what Save
	// view keeps); Path is the views' collection.
	Resource, Query, Path string
	// More says there are more views than shown: the views' own List has
	// them all.
	More     bool
	CanShare bool
}

// savedViewsShown is how many views a List page shows.
const savedViewsShown = 20

// keptQuery is the query of a List request as a view keeps it: only the
// List's own keys, without the page, sorted; "" when it has none.
func keptQuery(c *fiber.Ctx, plural string) string {
	vals := url.Values{}
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) {
		key := string(k)
		if key != "page" && len(v) > 0 && slices.Contains(store.ViewKeys[plural], key) {
			vals.Set(key, string(v))
		}
	})
	q := vals.Encode()
	if len(q) > store.MaxViewQuery {
		return ""
	}
	return q
}

// listSaved fills a List page's saved views and keeps its query as the
// person's last (a cookie per List, which the navigation reads). Only the
// List itself does, as a page or a fragment of the page or its results:
// not another view of the collection (the Inquiry), not a picker's
// options, not a program's JSON, not a List no view names.
func listSaved(c *fiber.Ctx, rp repr, r *resource, name string, l *listView) {
	if rp == reprJSON || name != "list" || listed(r.Plural) == nil || c.Query("picker") != "" {
		return
	}
	if tg := target(c, rp); rp == reprFragment && tg != r.ResultsID() && tg != mainID {
		return
	}
	q := keptQuery(c, r.Plural)
	cookie := lastQueryCookie(r.Plural)
	if q != c.Cookies(cookie) {
		ck := &fiber.Cookie{Name: cookie, Value: q, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
			Secure: c.Protocol() == "https", Expires: time.Now().Add(lastQueryAge)}
		if q == "" {
			ck.Expires, ck.MaxAge = time.Unix(0, 0), -1
		}
		c.Cookie(ck)
	}
	c.Locals(cookie, &q)
	s, _ := c.Locals(viewsStoreLocal).(store.Views)
	if s == nil {
		return
	}
	p := personOf(c)
	page, err := s.ListViews(c.UserContext(), store.ViewQuery{Owner: p.Name, Resource: r.Plural, PerPage: savedViewsShown})
	if err != nil {
		return // the List is shown without its views rather than not at all
	}
	l.Saved = &savedViews{Views: page.Views, Resource: r.Plural, Query: q, Path: viewResource.Path(),
		More: page.Total > int64(len(page.Views)), CanShare: p.can(store.RoleManager)}
}

// viewsStoreLocal holds the request's store of views (set before the
// routes run), for the List pages' saved views.
const viewsStoreLocal = "views-store"

// MayChangeView reports whether the page's person may change or delete
// view rec (the controls its page and row offer).
func (v *view) MayChangeView(rec *store.View) bool { return mayChange(v.whoOrNone(), rec) }

// viewPage is a saved view's page as its timeline sees it: the note form
// only for those who may change the view.
type viewPage struct {
	*view
	owner bool
}

// Can is what the page's person may do, notes only on a view they may
// change.
func (p viewPage) Can() can {
	c := p.view.Can()
	c.Note = c.Note && p.owner
	return c
}

// OfView is the page of view rec as its timeline sees it.
func (v *view) OfView(rec *store.View) viewPage { return viewPage{v, v.MayChangeView(rec)} }
