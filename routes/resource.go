package routes

// A resource as a value. Every resource has the same URIs and methods
// (collection, member, new, edit), so they are written once, here, and a
// resource only describes itself.
//
// What a resource provides:
//
//   - a description: a *resource with its Name ("order"), Plural ("orders"),
//     Title ("Order") and ETagPrefix ("o"). Everything else is derived from
//     these four, in this file only: the paths (/orders, /orders/new,
//     /orders/<id>, /orders/<id>/edit, /orders/<view>), the id of a path
//     (store.ParseID; anything else is a 404 that names the resource), the
//     ETags and their reading (If-Match, If-None-Match), the ids htmx
//     targets (order-results, order-row-<id>), the event that makes the
//     results fetch their page again (orders-changed), the edit form's id
//     (order-edit) and the names of its partials (partials/orders/<name>);
//   - its handlers, each a handler: it reads the request and returns a
//     *response that says what the outcome is (status, partial and view,
//     JSON body, where the outcome lives, the notice), never how it is
//     written (respond, in render.go);
//   - its templates under partials/<plural>/: at least show, form, list,
//     list_results, row, row_edit, row_gone, delete; they reach the
//     description as .R (view.R; listView.R, sortColumn.R, conflictView.R
//     and orderForm.R where a partial's data is not the view), so no path,
//     target id or event is spelled in them: {{.R.Path}},
//     {{.R.MemberPath .ID}}, {{.R.RowID .ID}}, #{{.R.ResultsID}},
//     {{.R.ChangedEvent}}. The layout's ids come from template funcs
//     ({{mainID}}, {{noticeID}}, {{alertID}}), the same for every resource;
//   - one registration in New: registerResource(app, desc, handlers);
//   - its Example, from which the shared test suites write to it.
//
// What it gets for free:
//
//   - the conventional routes, fixed paths before the member route, 405
//     with Allow on a known path (registerResource);
//   - the member routes' handlers: New, Create, Show, Edit, Update and
//     Delete, with the same ETags, locking, notices and answers (members,
//     below);
//   - content negotiation before any work (406), and one responder for
//     every outcome (respond): the full page (layout, flash notice), the
//     htmx fragment (bare layout, both notice regions, the document title
//     of a page-sized swap, HX-Push-Url / HX-Replace-Url / HX-Location /
//     HX-Trigger), JSON (charset, Location, errors through errorHandler),
//     the plain form's 303 with the notice as a flash cookie,
//     Cache-Control, ETag and 304;
//   - errors in the representation asked for (errorHandler, through the
//     same responder), and a member that is gone (gone.go): the row that
//     says so for an inline row (partials/<plural>/row_gone), a 404 that
//     names the resource elsewhere;
//   - app.js, which finds what it works on by data- attributes the
//     templates write, never by a resource's ids or a label's words: the
//     results ([data-results]) and their rows ([data-rows] > tr), a form's
//     item rows ([data-max-rows]) and their numbers ([data-row-number]),
//     the page a shortcut opens (a[data-shortcut]).

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// resource describes one resource: its names, from which every path, id,
// ETag and partial name of it is made.
type resource struct {
	// Name is the singular in lower case: "order". Element ids start with it.
	Name string
	// Plural names the collection: its path (/orders), its partials'
	// folder (partials/orders/) and its change event (orders-changed).
	Plural string
	// Title is the singular as a sentence starts with it: "Order 7 saved."
	Title string
	// ETagPrefix starts the ETags of its members: "o" in "o7v3-page".
	ETagPrefix string
	// Feed names its event stream in the store (store.OrderEvents).
	Feed string
	// Nav are its entries in the site's navigation, in order (links first,
	// then buttons, over every resource).
	Nav []navEntry
	// describe is the meta description of a record's page (rec is the
	// view's Record).
	describe func(rec any) string
	// Listing is its List's sorts, columns and filters.
	Listing *listing
	// serve makes its handlers: the members, its List and its views. Set
	// by the resource's file (its handlers refer to the resource).
	serve func(h *handlers) resourceHandlers
	// Example is what the shared test suites write to exercise it.
	Example example
	// Rights are the least role each action on it takes (below);
	// Own, when set, are the actions a person may take on their own
	// record whatever their role (their account).
	Rights rights
	// Restores says its deletes can be undone: its store restores a
	// record deleted within the undo window (restorer; newMembers checks).
	Restores bool
	Own      func(action) bool
	// Exports are the views of its collection served as CSV (export.go),
	// by view name: "" is the List.
	Exports map[string]csvExport
}

// example is a resource's valid values, from which the shared test suites
// make every request they send it: the suites walk the registration list,
// so a registered resource is tested without tests of its own.
type example struct {
	// Create is the JSON body of a valid create, another record for each n
	// (its unique values differ with n). Plain forms send the same values
	// as form pairs (items[0][name] for a row's field).
	Create func(n int) map[string]any
	// Change names a text field of the table with a limit (Max) that a
	// change may set to any other short text: the suites change it, make
	// it conflict and send it one character too long.
	Change string
}

// resources are the resources the application serves, the first the one
// "/" leads to: the one registration list. Routes, live-event streams,
// the navigation and the meta descriptions walk it.
var resources = []*resource{orderResource, productResource, customerResource, userResource, viewResource}

// navEntry is one entry of the site's navigation.
type navEntry struct {
	// Key is the view's Nav that marks the entry current.
	Key, Label string
	// View is the collection's view it leads to ("": the collection,
	// "new": the New form); Href is its path, which navEntries sets.
	View, Href string
	// Description is the meta description of the pages under it.
	Description string
	// Button draws it as a button after the links; Shortcut is its
	// keyboard shortcut (data-shortcut).
	Button   bool
	Shortcut string
	// r is the resource the entry belongs to: its rights say who sees it.
	r *resource
}

// navEntries is the navigation: every resource's entries, links first.
func navEntries() []navEntry {
	var links, buttons []navEntry
	for _, r := range resources {
		for _, e := range r.Nav {
			e.Href, e.r = r.Path(), r
			if e.View != "" {
				e.Href = r.ViewPath(e.View)
			}
			if e.Button {
				buttons = append(buttons, e)
			} else {
				links = append(links, e)
			}
		}
	}
	return append(links, buttons...)
}

// resourceOf is the resource whose paths path lies under (the first when
// none): an error page's way back.
func resourceOf(path string) *resource {
	for _, r := range resources {
		if path == r.Path() || strings.HasPrefix(path, r.Path()+"/") {
			return r
		}
	}
	return resources[0]
}

// Path is the collection's path: /orders.
func (r *resource) Path() string { return "/" + r.Plural }

// NewPath is the creation form's path: /orders/new.
func (r *resource) NewPath() string { return r.Path() + "/new" }

// ViewPath is the path of another view of the collection: /orders/inquiry.
func (r *resource) ViewPath(name string) string { return r.Path() + "/" + name }

// EventsPath is the collection's live updates: /orders/events.
func (r *resource) EventsPath() string { return r.Path() + "/events" }

// MemberPath is a member's path: /orders/7.
func (r *resource) MemberPath(id int64) string { return r.Path() + "/" + strconv.FormatInt(id, 10) }

// EditPath is a member's edit form: /orders/7/edit.
func (r *resource) EditPath(id int64) string { return r.MemberPath(id) + "/edit" }

// HistoryPath is a member's history: /orders/7/history.
func (r *resource) HistoryPath(id int64) string { return r.MemberPath(id) + "/history" }

// HistoryID is the id of the timeline on a member's page (a note's htmx
// answer replaces it).
func (r *resource) HistoryID() string { return r.Name + "-history" }

// ResultsID is the id of the element that holds the List's table and pager
// (or the Inquiry's list): an HX-Target the collection answers with that
// part only.
func (r *resource) ResultsID() string { return r.Name + "-results" }

// RowID is the id of a member's List row: an HX-Target the member answers
// with the row (GET, PUT), its inline form (GET edit) or nothing (DELETE).
func (r *resource) RowID(id int64) string { return r.Name + "-row-" + strconv.FormatInt(id, 10) }

// FormID is the id of the New and Edit form (a 409's "Save mine" submits it).
func (r *resource) FormID() string { return r.Name + "-edit" }

// ChangedEvent makes the results fetch their page again (their hx-trigger).
func (r *resource) ChangedEvent() string { return r.Plural + "-changed" }

// changedTrigger is the HX-Trigger that sends ChangedEvent to the results.
func (r *resource) changedTrigger() string {
	return `{"` + r.ChangedEvent() + `": {"target": "#` + r.ResultsID() + `"}}`
}

// Partial is the name of one of the resource's templates: partials/orders/row.
func (r *resource) Partial(name string) string { return "partials/" + r.Plural + "/" + name }

// Named is the resource and an id as a sentence says it: "Order 7".
func (r *resource) Named(id int64) string { return r.Title + " " + strconv.FormatInt(id, 10) }

// parseID reads the :id path parameter; a malformed id is not found.
func (r *resource) parseID(c *fiber.Ctx) (int64, error) {
	raw := c.Params("id")
	id, ok := store.ParseID(raw)
	if !ok {
		return 0, store.Errorf(store.ENOTFOUND, "there is no %s %q", r.Name, raw)
	}
	return id, nil
}

// target returns the id htmx swaps into, for a fragment ("" otherwise).
func target(c *fiber.Ctx, rp repr) string {
	if rp != reprFragment {
		return ""
	}
	return hxTarget(c)
}

// isRow reports whether the request is a fragment for member id's List row.
func (r *resource) isRow(c *fiber.Ctx, rp repr, id int64) bool {
	return target(c, rp) == r.RowID(id)
}

// etag names a member's version and the representation (part narrows it:
// "row", "delete"); any ETag of the current version satisfies If-Match and
// If-None-Match.
func (r *resource) etag(id, version int64, rp repr, part string) string {
	kind := [...]string{"page", "fragment", "json"}[rp]
	if part != "" {
		kind += "-" + part
	}
	return `"` + r.ETagPrefix + strconv.FormatInt(id, 10) + "v" + strconv.FormatInt(version, 10) + "-" + kind + `"`
}

// etagVersions returns the versions of member id named in an If-Match or
// If-None-Match header, and whether it was "*".
func (r *resource) etagVersions(header string, id int64) (versions []int64, any bool) {
	prefix := r.ETagPrefix + strconv.FormatInt(id, 10) + "v"
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			any = true
			continue
		}
		t = strings.TrimPrefix(t, "W/")
		t = strings.Trim(t, `"`)
		if !strings.HasPrefix(t, prefix) {
			continue
		}
		rest := t[len(prefix):]
		if i := strings.IndexByte(rest, '-'); i > 0 {
			rest = rest[:i]
		}
		if v, err := strconv.ParseInt(rest, 10, 64); err == nil {
			versions = append(versions, v)
		}
	}
	return versions, any
}

// notModified reports whether If-None-Match names the member's version.
func (r *resource) notModified(c *fiber.Ctx, id, version int64) bool {
	inm := c.Get(fiber.HeaderIfNoneMatch)
	if inm == "" {
		return false
	}
	versions, star := r.etagVersions(inm, id)
	for _, v := range versions {
		star = star || v == version
	}
	return star
}

// ifMatch reads If-Match for member id: 0 when absent or "*", -1 when it
// names no version of this member (it can never match).
func (r *resource) ifMatch(c *fiber.Ctx, id int64) int64 {
	h := c.Get(fiber.HeaderIfMatch)
	if h == "" {
		return 0
	}
	versions, star := r.etagVersions(h, id)
	if star {
		return 0
	}
	if len(versions) == 0 {
		return -1
	}
	return versions[0]
}

// handler serves one route of a resource in representation rp (negotiated
// before it runs): it returns what the outcome is, and respond writes it.
type handler func(c *fiber.Ctx, rp repr) (*response, error)

// resourceHandlers are the handlers of one resource, one for each of the
// conventional routes every resource has.
type resourceHandlers struct {
	List, New, Create, Show, Edit, Update, Delete handler
	// History and Note serve path/<id>/history: GET and POST (a note).
	History, Note handler
	// API is what the OpenAPI description says of the resource.
	API apiResource
	// Views are more representations of the collection, each at path/<name>.
	Views map[string]handler
	// Routes are more routes under a member (a person's tokens), each
	// with the action its rights are checked as.
	Routes []memberRoute
	// Collection are more routes under the collection's path (a product
	// import), each with the action its rights are checked as.
	Collection []memberRoute
	// log is where what happens after the answer began is logged (an
	// export that stops); New sets it.
	log *slog.Logger
}

// memberRoute is a route under a member's path: Method on path/<id>+Path.
type memberRoute struct {
	Method, Path string
	Action       action
	Handler      handler
}

// registerResource gives a resource its conventional routes: the collection
// (GET list, POST create), path/new, path/<view>, and the member path/:id
// (GET, PUT, DELETE) with path/:id/edit. Fixed paths come before the member
// route, whose id must look like a number, so "new" is never taken for an id;
// a known path with a wrong method gets 405 with Allow.
func registerResource(app fiber.Router, res *resource, hs resourceHandlers) {
	serve := func(a action, fn handler) fiber.Handler {
		return func(c *fiber.Ctx) error {
			rp, err := negotiate(c) // 406 before any work
			if err != nil {
				return err
			}
			// The person's rights before anything is read or written: a
			// refused request changes nothing. Undoing a delete (a PUT
			// with restore) takes the right to delete.
			need := a
			if a == actUpdate && res.Restores && c.Method() == fiber.MethodPut {
				if restore, _ := restoreAsked(c); restore {
					need = actDelete
				}
			}
			if err := res.allow(c, need); err != nil {
				return err
			}
			// Who changes records through this request, and how: the
			// history records it (actor; via: web for pages, api for
			// JSON, token:<name> for a token).
			p := personOf(c)
			c.SetUserContext(withPerson(store.WithActor(c.UserContext(), p.Name, p.via(rp == reprJSON)), p))
			out, err := fn(c, rp)
			if err != nil {
				return err
			}
			return respond(c, rp, res, out)
		}
	}
	path := res.Path()
	for view, ex := range res.Exports {
		list := hs.List
		if view != "" {
			list = hs.Views[view]
		}
		app.Get(res.exportPath(view), serveCSV(res, view, ex, list, hs.log))
	}
	// Accept: text/csv on the List or a view that has an export is that
	// export; any other Accept goes on to negotiate.
	csvOr := func(view string, h fiber.Handler) fiber.Handler {
		ex, ok := res.Exports[view]
		if !ok {
			return h
		}
		list := hs.List
		if view != "" {
			list = hs.Views[view]
		}
		csvh := serveCSV(res, view, ex, list, hs.log)
		return func(c *fiber.Ctx) error {
			if wantsCSV(c.Get(fiber.HeaderAccept)) {
				return csvh(c)
			}
			return h(c)
		}
	}
	for _, r := range hs.Collection {
		app.Add(r.Method, path+r.Path, serve(r.Action, r.Handler))
	}
	app.Get(path, csvOr("", serve(actRead, hs.List)))
	app.Post(path, serve(actCreate, hs.Create))
	app.Get(res.NewPath(), serve(actCreate, hs.New))
	for name, h := range hs.Views {
		app.Get(res.ViewPath(name), csvOr(name, serve(actRead, h)))
	}
	member := path + "/:id<int>"
	app.Get(member, serve(actRead, hs.Show))
	app.Put(member, serve(actUpdate, hs.Update))
	app.Delete(member, serve(actDelete, hs.Delete))
	app.Get(member+"/edit", serve(actUpdate, hs.Edit))
	if hs.History != nil {
		app.Get(member+"/history", serve(actRead, hs.History))
		app.Post(member+"/history", serve(actNote, hs.Note))
	}
	for _, r := range hs.Routes {
		app.Add(r.Method, member+r.Path, serve(r.Action, r.Handler))
	}
}

// notModifiedAt is notModified for a representation that also shows what
// changes without the member's version: its history, whose newest entry
// is head (a note changes it), or figures derived from other records (a
// customer's orders). An If-None-Match tag of the same version that
// carries every one of parts ("o7v3-page-h12": parts "h12") matches, in
// any representation and coding.
func (r *resource) notModifiedAt(c *fiber.Ctx, id, version int64, parts ...string) bool {
	inm := c.Get(fiber.HeaderIfNoneMatch)
	prefix := r.ETagPrefix + strconv.FormatInt(id, 10) + "v" + strconv.FormatInt(version, 10) + "-"
	for _, t := range strings.Split(inm, ",") {
		t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), `"`)
		if t == "*" {
			return true
		}
		rest, ok := strings.CutPrefix(t, prefix)
		if !ok {
			continue
		}
		has := strings.Split(rest, "-")
		if !slices.ContainsFunc(parts, func(p string) bool { return !slices.Contains(has, p) }) {
			return true
		}
	}
	return false
}

// Registered is a registered resource as code outside this package sees
// it: the browser tests walk the registration list through Resources.
type Registered struct {
	// Plural names the collection; Path and NewPath are the collection's
	// and its New form's paths.
	Plural, Path, NewPath string
	// MemberPath, EditPath and HistoryPath are a member's paths.
	MemberPath, EditPath, HistoryPath func(id int64) string
	// Example is the JSON body of a valid create, another record for each n.
	Example func(n int) map[string]any
}

// Resources are the registered resources, in the registration list's order.
func Resources() []Registered {
	out := make([]Registered, 0, len(resources))
	for _, r := range resources {
		out = append(out, Registered{Plural: r.Plural, Path: r.Path(), NewPath: r.NewPath(),
			MemberPath: r.MemberPath, EditPath: r.EditPath, HistoryPath: r.HistoryPath, Example: r.Example.Create})
	}
	return out
}

// members serves the member routes of one resource, the same URIs and
// methods for every resource: New,
// Create, Show, Edit, Update and Delete, in every representation, with
// the same ETags, locking, notices and answers for every resource. A
// resource gives it its record type T, its input type In, its field table,
// and one value that is both its recordStore and its memberPages; its List
// is a handler of its own (its query and filters differ), built on
// newListView.
type members[T, In any] struct {
	R      *resource
	fields fields[In]
	store  recordStore[T, In]
	pages  memberPages[T, In]
	// newNav is the navigation entry of the New form ("new": the header's
	// New order button; the resource's Plural when it has none).
	newNav string
}

// newMembers is the member routes of resource r over own, which serves as
// both its store and its pages.
func newMembers[T, In any, Own interface {
	recordStore[T, In]
	memberPages[T, In]
}](r *resource, fs fields[In], newNav string, own Own) *members[T, In] {
	if _, ok := any(own).(restorer[T]); ok != r.Restores {
		panic("resource " + r.Plural + ": Restores must say whether its store restores deleted records")
	}
	return &members[T, In]{R: r, fields: fs, store: own, pages: own, newNav: newNav}
}

// restorer is a recordStore whose deletes can be undone: restore brings
// back record id deleted within the undo window, as the store says.
type restorer[T any] interface {
	restore(ctx context.Context, id int64) (*T, error)
}

// recordStore is what members needs of the store for one resource.
type recordStore[T, In any] interface {
	get(ctx context.Context, id int64) (*T, error)
	create(ctx context.Context, in In) (*T, error)
	update(ctx context.Context, id int64, in In, ifMatch int64) (*T, error)
	remove(ctx context.Context, id, ifMatch, version int64) error
	// history reads a page of a record's history, newest
	// first, before the entry named by cursor; note adds a note to it.
	history(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error)
	note(ctx context.Context, id int64, text string) (*store.HistoryEntry, error)
}

// memberPages is what is a resource's own on its member pages and in its
// answers.
type memberPages[T, In any] interface {
	// ident returns a stored record's id and version.
	ident(*T) (id, version int64)
	// title is a record's page title: "Order 7 · Ada Lovelace".
	title(*T) string
	// form returns the New form (cur nil) or the Edit form of cur.
	form(cur *T) memberForm[In]
	// inVersion is the version a request's input carries (nil: none).
	inVersion(*In) *int64
	// newJSON and editJSON are the forms for programs: the fields and
	// their defaults, the record and what may change.
	newJSON() any
	editJSON(cur *T) any
	// conflict compares what the person sent with the stored record: a
	// 409's yours and theirs (conflict.go).
	conflict(cur *T, in In, row bool) *conflictView
}

// onceCreator is a recordStore whose creates may carry an Idempotency-Key
// (a retry answers the first request's record); fp identifies the request body.
type onceCreator[T, In any] interface {
	createOnce(ctx context.Context, key, fp string, in In) (*T, error)
}

// createNoticer is a resource whose create's 422 says in the alert region
// what the New form cannot mark (a field it has no control for).
type createNoticer interface {
	createNotice(errs map[string]string) *notice
}

// memberForm is a resource's New or Edit form (or its List row's inline
// form) as members fills it.
type memberForm[In any] interface {
	// fill shows what a request sent over the form's values.
	fill(In)
	setErrors(map[string]string)
	// setConflict shows a 409's comparison; the form now carries the
	// stored version, so saving it again keeps the person's values.
	setConflict(c *conflictView, version int64)
	// prefill reads the form's own fields sent as a GET (a no-JavaScript
	// button that shows the form again, changed).
	prefill(c *fiber.Ctx)
}

// handlers returns the resource's handlers, list among them.
func (m *members[T, In]) handlers(list handler, views map[string]handler) resourceHandlers {
	return resourceHandlers{List: list, New: m.newForm, Create: m.create, Show: m.show,
		Edit: m.editForm, Update: m.update, Delete: m.delete, Views: views,
		History: m.historyPage, Note: m.addNote,
		API: m.api(m.R.Listing, slices.Sorted(maps.Keys(views))...)}
}

// shownStore is a recordStore whose record page reads more than the
// record, chosen by the request's query (a customer's page of orders):
// Show reads through shown, which answers a bad query with its error.
type shownStore[T any] interface {
	shown(c *fiber.Ctx, id int64) (*T, error)
}

// derivedStore is a recordStore whose representations show figures
// derived from other records (a customer's order count, totals and page
// of orders), which change without the record's version: derived names
// their state, and ETags and 304s follow it.
type derivedStore[T any] interface {
	derived(rec *T) string
}

// member reads the id from the path and the stored record, for the member
// GETs. A record that is gone is answered by gone (gone.go): then it
// returns neither a record nor an error, but that answer.
func (m *members[T, In]) member(c *fiber.Ctx, rp repr) (*T, *response, error) {
	return m.memberBy(c, rp, func(id int64) (*T, error) { return m.store.get(c.UserContext(), id) })
}

// memberBy is member reading the record with get.
func (m *members[T, In]) memberBy(c *fiber.Ctx, rp repr, get func(id int64) (*T, error)) (*T, *response, error) {
	id, err := m.R.parseID(c)
	if err != nil {
		return nil, nil, err
	}
	rec, err := get(id)
	if err != nil {
		out, err := gone(c, rp, m.R, id, err)
		return nil, out, err
	}
	return rec, nil, nil
}

// showView is the view of a record's page.
func (m *members[T, In]) showView(rec *T) *view {
	return &view{Title: m.pages.title(rec), Nav: m.R.Plural, Record: rec}
}

// formView is the view of the New form (cur nil) or of cur's Edit form.
func (m *members[T, In]) formView(f memberForm[In], cur *T, id int64) *view {
	v := &view{Title: "New " + m.R.Name, Nav: m.newNav, Form: f}
	if cur != nil || id != 0 {
		v.Title, v.Nav = "Edit "+m.R.Name+" "+strconv.FormatInt(id, 10), m.R.Plural
	}
	if cur != nil {
		v.Record = cur // never a nil *T in the interface
	}
	return v
}

func (m *members[T, In]) show(c *fiber.Ctx, rp repr) (*response, error) {
	get := func(id int64) (*T, error) { return m.store.get(c.UserContext(), id) }
	if s, ok := m.store.(shownStore[T]); ok {
		get = func(id int64) (*T, error) { return s.shown(c, id) }
	}
	rec, gone, err := m.memberBy(c, rp, get)
	if rec == nil {
		return gone, err
	}
	id, version := m.pages.ident(rec)
	out := &response{Partial: m.R.Partial("show"), View: m.showView(rec), JSON: rec}
	part := ""
	if m.R.isRow(c, rp, id) {
		out.Partial, part = m.R.Partial("row"), "row"
	} else if c.Query("confirm") == "delete" && rp != reprJSON {
		// The confirmation a Delete button leads to without JavaScript
		// (with it, hx-confirm asks): docs/api.md. It is a delete's form,
		// for those who may delete.
		if err := m.R.allow(c, actDelete); err != nil {
			return nil, err
		}
		out.Partial, part = m.R.Partial("delete"), "delete"
		out.View.Title = "Delete " + m.R.Name + " " + strconv.FormatInt(id, 10) + "?"
	}
	var parts []string
	if part == "" && rp != reprJSON {
		// The page shows the latest history: a note (which changes no
		// version) changes the page, and its ETag.
		h, err := m.timeline(c, id)
		if err != nil {
			return nil, err
		}
		out.View.History = h
		parts = append(parts, "h"+h.Head())
	}
	if d, ok := m.store.(derivedStore[T]); ok {
		parts = append(parts, "d"+d.derived(rec))
	}
	if len(parts) == 0 {
		out.ETag = m.R.etag(id, version, rp, part)
		out.NotModified = m.R.notModified(c, id, version)
		return out, nil
	}
	tag := strings.Join(parts, "-")
	if part != "" {
		tag = part + "-" + tag
	}
	out.ETag = m.R.etag(id, version, rp, tag)
	out.NotModified = m.R.notModifiedAt(c, id, version, parts...)
	return out, nil
}

func (m *members[T, In]) newForm(c *fiber.Ctx, rp repr) (*response, error) {
	f := m.pages.form(nil)
	f.prefill(c)
	return &response{Partial: m.R.Partial("form"), CacheControl: noStore,
		View: m.formView(f, nil, 0), JSON: m.pages.newJSON()}, nil
}

func (m *members[T, In]) create(c *fiber.Ctx, rp repr) (*response, error) {
	in, err := decodeBody(c, m.fields)
	if err != nil {
		return nil, err
	}
	var rec *T
	once, canOnce := m.store.(onceCreator[T, In])
	if key := c.Get("Idempotency-Key"); key != "" && canOnce {
		// A retry with the same key and body answers the first request's
		// record: safe after a 503 or a lost connection.
		if !store.ValidIdempotencyKey(key) {
			return nil, badRequest("Idempotency-Key must be 1 to %d visible ASCII characters", store.MaxIdempotencyKey)
		}
		c.Vary("Idempotency-Key")
		rec, err = once.createOnce(c.UserContext(), key, fingerprint(c), in)
	} else {
		rec, err = m.store.create(c.UserContext(), in)
	}
	if err != nil {
		fields := invalidFields(err)
		if fields == nil {
			return nil, err
		}
		f := m.pages.form(nil)
		f.fill(in)
		f.setErrors(fields)
		out := &response{Status: fiber.StatusUnprocessableEntity, Partial: m.R.Partial("form"),
			View: m.formView(f, nil, 0), Err: err}
		if cn, ok := m.pages.(createNoticer); ok {
			out.Notice = cn.createNotice(fields)
		}
		return out, nil
	}
	id, _ := m.pages.ident(rec)
	loc := m.R.MemberPath(id)
	page := m.showView(rec)
	if rp == reprFragment {
		// The record's page with its timeline, which the write has just
		// added to.
		if page.History, err = m.timeline(c, id); err != nil {
			return nil, err
		}
	}
	return &response{Status: fiber.StatusCreated, Partial: m.R.Partial("show"),
		View: page, JSON: rec, Notice: successNotice(m.R.Named(id) + " created."),
		Location: loc, PushURL: loc, Redirect: loc}, nil
}

func (m *members[T, In]) editForm(c *fiber.Ctx, rp repr) (*response, error) {
	rec, gone, err := m.member(c, rp)
	if rec == nil {
		return gone, err
	}
	id, _ := m.pages.ident(rec)
	f := m.pages.form(rec)
	f.prefill(c)
	out := &response{Partial: m.R.Partial("form"), CacheControl: noStore,
		View: m.formView(f, rec, id), JSON: m.pages.editJSON(rec)}
	if m.R.isRow(c, rp, id) {
		out.Partial = m.R.Partial("row_edit")
	}
	return out, nil
}

func (m *members[T, In]) update(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := m.R.parseID(c)
	if err != nil {
		return nil, err
	}
	if restore, err := restoreAsked(c); err != nil || restore {
		if err != nil {
			return nil, err
		}
		return m.restore(c, rp, id)
	}
	in, err := decodeBody(c, m.fields)
	if err != nil {
		return nil, err
	}
	row := m.R.isRow(c, rp, id)
	rec, err := m.store.update(c.UserContext(), id, in, m.R.ifMatch(c, id))
	if err != nil {
		se, ok := err.(*store.Error)
		if !ok || (se.Code != store.EINVALID && se.Code != store.ECONFLICT) {
			return gone(c, rp, m.R, id, err)
		}
		// The form again, with what the person typed and the reason; JSON
		// answers the error.
		cur, _ := se.Current.(*T)
		f := m.pages.form(cur)
		f.fill(in)
		out := &response{Status: fiber.StatusUnprocessableEntity, Partial: m.R.Partial("form"), Err: err,
			View: m.formView(f, cur, id)}
		if row {
			out.Partial = m.R.Partial("row_edit")
		}
		if se.Code == store.EINVALID || cur == nil {
			f.setErrors(se.Fields)
			if len(se.Fields) == 0 {
				// A refusal of no one field (the last admin): the alert
				// region says why.
				out.Notice = errorNotice(m.R.Named(id) + " was not saved: " + se.Message + ".")
			} else if row {
				// The row has no summary of its own: the alert region says it
				// (and replaces any earlier notice).
				out.Notice = errorNotice(m.R.Named(id) + " was not saved: please correct the marked fields.")
			}
			return out, nil
		}
		out.Status = fiber.StatusConflict
		// Saving again keeps mine, deliberately: the diff above the form
		// lists what that replaces.
		_, version := m.pages.ident(cur)
		f.setConflict(m.pages.conflict(cur, in, row), version)
		out.Notice = warningNotice(m.R.Named(id) + " was changed by someone else while you edited it. Nothing of yours is saved yet: compare and choose below.")
		return out, nil
	}
	loc := m.R.MemberPath(id)
	out := &response{Partial: m.R.Partial("show"), View: m.showView(rec),
		JSON: rec, Notice: successNotice(m.R.Named(id) + " saved."), Redirect: loc,
		// Replaced, not pushed: the edit form's history entry becomes the
		// record, so Back leads to the page before the edit, never into the
		// form with stale values.
		ReplaceURL: loc}
	switch {
	case rp == reprJSON:
		_, version := m.pages.ident(rec)
		out.ETag = m.R.etag(id, version, rp, "")
	case row:
		out.Partial, out.View, out.ReplaceURL = m.R.Partial("row"), &view{Record: rec}, ""
	case rp == reprFragment:
		// The record's page with its timeline, which the write has just
		// added to. A plain form's write is redirected (303) instead.
		if out.View.History, err = m.timeline(c, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *members[T, In]) delete(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := m.R.parseID(c)
	if err != nil {
		return nil, err
	}
	// A delete may carry the version the person saw: in a body (a plain
	// form's _method=DELETE, or JSON) or in the query (htmx sends none).
	var version int64
	if len(c.Request().Body()) > 0 {
		in, err := decodeBody(c, m.fields)
		if err != nil {
			return nil, err
		}
		if v := m.pages.inVersion(&in); v != nil {
			version = *v
		}
	}
	if args := c.Request().URI().QueryArgs(); args.Has("version") && version == 0 {
		// Present means checked: an empty or malformed version is a 400,
		// never a delete without the check.
		n, err := parseVersion(string(args.Peek("version")))
		if err != nil {
			return nil, err
		}
		version = n
	}
	if err := m.store.remove(c.UserContext(), id, m.R.ifMatch(c, id), version); err != nil {
		return gone(c, rp, m.R, id, err)
	}
	// 204 in JSON; HTML answers 200 (respond): htmx swaps nothing on a 204.
	done := successNotice(m.R.Named(id) + " deleted.")
	if m.R.Restores {
		done.Undo = m.R.MemberPath(id)
	}
	out := &response{Status: fiber.StatusNoContent, Notice: done,
		Redirect: m.R.Path(),
		// From the record's own page: there is nothing left to show there.
		HXLocation: m.R.Path()}
	if m.R.isRow(c, rp, id) {
		// The row removes itself; only the notice travels. The List's
		// results then fetch themselves again (their hx-trigger), so the
		// count and the page are right after the delete.
		out.HXLocation, out.Partial, out.Trigger = "", partialNotice, m.R.changedTrigger()
	}
	return out, nil
}

// Who a request acts as (its person, set by authenticate) and what each
// role may do to each resource.
//
// Rights: what each role may do to each resource. Every resource declares
// the least role each action takes (its Rights); registerResource checks
// them before any handler runs, so a request without the right changes
// nothing and is answered 403 in the representation it asked for. The
// templates ask the same table through the view's Can, so a page shows
// only the controls its person may use.

// action is what a request does to a resource.
type action int

// The actions the rights name. The New form counts as a create and the
// Edit form as an update: a form the person may not send is not shown.
const (
	actRead action = iota
	actCreate
	actUpdate
	actDelete
	actNote
)

// actions are every action, in the rights table's order.
var actions = []action{actRead, actCreate, actUpdate, actDelete, actNote}

// String is the action as the rights table names it.
func (a action) String() string {
	return [...]string{"read", "create", "update", "delete", "note"}[a]
}

// verb is the action as a sentence says it: "you may not <verb> orders".
func (a action) verb() string {
	return [...]string{"read", "create", "change", "delete", "add notes to"}[a]
}

// rights is the least role each action on a resource takes.
type rights struct {
	Read, Create, Update, Delete, Note store.Role
}

// least is the least role action a takes.
func (r rights) least(a action) store.Role {
	return [...]store.Role{r.Read, r.Create, r.Update, r.Delete, r.Note}[a]
}

// recordRights are the rights of orders and customers: everyone reads,
// clerks create, change and add notes, managers delete.
var recordRights = rights{Read: store.RoleViewer, Create: store.RoleClerk, Update: store.RoleClerk,
	Delete: store.RoleManager, Note: store.RoleClerk}

// permits reports whether p may take action a on the resource, on member
// id (0: the collection). A resource with Own lets a person take those
// actions on their own record whatever their role.
func (r *resource) permits(p *person, a action, id int64) bool {
	if p.can(r.Rights.least(a)) {
		return true
	}
	return r.Own != nil && id != 0 && p.User != nil && p.User.ID == id && r.Own(a)
}

// forbidden is the 403 of p asking for action a on the resource: it says
// which role the action takes.
func (r *resource) forbidden(p *person, a action) error {
	return store.Errorf(store.EFORBIDDEN, "you may not %s %s: that takes the %s role, and yours is %s",
		a.verb(), r.Plural, r.Rights.least(a), roleName(p.Role))
}

// roleName is a role as a message says it ("none" for none).
func roleName(r store.Role) string {
	if !r.Valid() {
		return "none"
	}
	return string(r)
}

// allow checks that c's person may take action a on the resource, reading
// the member's id from the path when there is one: nil, or the 403.
func (r *resource) allow(c *fiber.Ctx, a action) error {
	var id int64
	if raw := c.Params("id"); raw != "" {
		id, _ = store.ParseID(raw)
	}
	p := personOf(c)
	if r.permits(p, a, id) {
		return nil
	}
	return r.forbidden(p, a)
}

// roleMark is a role in an HTML answer's ETag: its first letter ("n" for
// none).
func roleMark(r store.Role) string {
	if !r.Valid() {
		return "n"
	}
	return string(r)[:1]
}

// whoMark is the part of an HTML answer's ETag that names whom it was
// drawn for: "r" and the role's mark, then the account's id and version
// ("rc.7.2": the header names the person, and a change of the account, its
// display name or role, draws it anew); nothing in protected mode (every
// right, and the open desk's banner).
func whoMark(p *person) string {
	if p.Open {
		return ""
	}
	m := "r" + roleMark(p.Role)
	if p.User != nil {
		m += "." + strconv.FormatInt(p.User.ID, 10) + "." + strconv.FormatInt(p.User.Version, 10)
	}
	return m
}

// isWhoMark reports whether part of a tag is a mark whoMark gives.
func isWhoMark(part string) bool {
	role, _, _ := strings.Cut(part, ".")
	if role == "rn" {
		return true
	}
	for _, r := range store.Roles {
		if role == "r"+roleMark(r) {
			return true
		}
	}
	return false
}

// tagsDrawnFor reports whether a tag of the If-None-Match header inm was
// drawn for whom mark names (whoMark) in the zone zmark names (zoneMark):
// those marks among its parts, and no other, whatever coding follows them
// ("o7v3-page-h12-rc.7.2-z1a2b3c4d-gzip").
func tagsDrawnFor(inm, mark, zmark string) bool {
	for _, t := range strings.Split(inm, ",") {
		t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), `"`)
		got, gotZone := "", ""
		for _, part := range strings.Split(t, "-")[1:] {
			switch {
			case isWhoMark(part):
				got = part
			case isZoneMark(part):
				gotZone = part
			}
		}
		if got == mark && gotZone == zmark {
			return true
		}
	}
	return false
}

// need is a middleware that lets through only requests whose person may
// take action a on the resource (its live-event stream).
func (r *resource) need(a action) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := r.allow(c, a); err != nil {
			return err
		}
		return c.Next()
	}
}

// can is what a person may do to the resource a page shows: the
// templates' {{if .Can.Update}}.
type can struct {
	Read, Create, Update, Delete, Note bool
}

// canOf is what p may do to r, on member id (0: the collection).
func canOf(r *resource, p *person, id int64) can {
	if r == nil {
		return can{}
	}
	return can{Read: r.permits(p, actRead, id), Create: r.permits(p, actCreate, id),
		Update: r.permits(p, actUpdate, id), Delete: r.permits(p, actDelete, id),
		Note: r.permits(p, actNote, id)}
}

// Can is what the person the page is for may do to its resource, and to
// its record when it shows one.
func (v *view) Can() can {
	return canOf(v.R, v.whoOrNone(), recordID(v.Record))
}

// whoOrNone is the person the page is for, or no one (no rights but
// what everyone has).
func (v *view) whoOrNone() *person {
	if v.who == nil {
		return &person{}
	}
	return v.who
}

// CanCreate reports whether the page's person may create members of the
// resource whose Plural is plural (the navigation's New buttons).
func (v *view) CanCreate(plural string) bool {
	for _, r := range resources {
		if r.Plural == plural {
			return v.who != nil && r.permits(v.who, actCreate, 0)
		}
	}
	return false
}

// Nav is the site's navigation as the page's person sees it: the entries
// of what they may read, and the New buttons of what they may create.
func (v *view) NavEntries() []navEntry {
	p := v.whoOrNone()
	var out []navEntry
	for _, e := range navEntries() {
		a := actRead
		if e.View == "new" {
			a = actCreate
		}
		if e.r.permits(p, a, 0) {
			if e.View == "" {
				e.Href = v.lastPath(e.r)
			}
			out = append(out, e)
		}
	}
	return out
}

// The navigation leads back to the query a person last listed each
// List with (a cookie per List, which the List writes: listSaved).

// lastQueryCookie names the cookie that keeps the query a person last
// listed resource plural with.
func lastQueryCookie(plural string) string { return "last_" + plural }

// lastQueryAge is how long the navigation remembers a List's query.
const lastQueryAge = 30 * 24 * time.Hour

// lastQuery is the query the person last listed resource plural with
// (this request's when it lists it), checked as a view's query is: ""
// when none or not valid.
func lastQuery(c *fiber.Ctx, plural string) string {
	name := lastQueryCookie(plural)
	if q, ok := c.Locals(name).(*string); ok {
		return *q
	}
	raw := c.Cookies(name)
	if raw == "" || listed(plural) == nil {
		return ""
	}
	q, msg := store.CheckViewQuery(plural, raw)
	if msg != "" {
		return ""
	}
	return q
}

// lastQueries are the last queries of every List a view may name.
func lastQueries(c *fiber.Ctx) map[string]string {
	out := map[string]string{}
	for _, r := range store.ViewResources {
		if q := lastQuery(c, r); q != "" {
			out[r] = q
		}
	}
	return out
}

// lastPath is the collection path of r with the person's last query.
func (v *view) lastPath(r *resource) string {
	if q := v.last[r.Plural]; q != "" {
		return r.Path() + "?" + q
	}
	return r.Path()
}

// LastPath is the page's resource's List with the person's last query:
// the "← All orders" of a record's page.
func (v *view) LastPath() string {
	if v.R == nil {
		return "/"
	}
	return v.lastPath(v.R)
}

// Live reports whether the page follows its resource's live events: the
// resource has a feed and the person may read the whole collection.
func (v *view) Live() bool {
	return v.R != nil && v.R.Feed != "" && v.who != nil && v.R.permits(v.who, actRead, 0)
}

// IsAdmin reports whether the page's person has every right.
func (v *view) IsAdmin() bool { return v.who != nil && v.who.can(store.RoleAdmin) }

// IsSelf reports whether account id is the page's person's own.
func (v *view) IsSelf(id int64) bool {
	return v.who != nil && v.who.User != nil && v.who.User.ID == id
}

// recordID is the ID of a record a view shows (0: none).
func recordID(rec any) int64 {
	v := reflect.ValueOf(rec)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	if f := v.FieldByName("ID"); f.IsValid() && f.CanInt() {
		return f.Int()
	}
	return 0
}

// person is who a request acts as: a signed-in account, a program with one
// of its tokens, or, while no account exists (protected mode), anonymous
// with every right.
type person struct {
	// User is the account; nil for anonymous.
	User *store.User
	// Name is what history records as the actor: the account's name, or
	// "anonymous".
	Name string
	// Role is what the request may do: the account's role, or the lower of
	// it and its token's.
	Role store.Role
	// Token is the token the request came with; nil for none.
	Token *store.Token
	// Session is the session secret of a signed-in browser; "" for none.
	Session string
	// Open is true in protected mode (no account exists).
	Open bool
	// Addr is the client's address (behind a trusted proxy, the one it
	// names): a wrong current password counts toward its sign-in limit.
	Addr string
}

// personLocal holds the request's *person, set by the authentication
// middleware before any route runs.
const personLocal = "person"

// personOf is who c acts as. A request the authentication middleware did
// not see (none should reach a route) acts as no one: a viewer without a
// name, which may do nothing but read.
func personOf(c *fiber.Ctx) *person {
	if p, ok := c.Locals(personLocal).(*person); ok && p != nil {
		return p
	}
	return &person{Name: "anonymous", Role: store.RoleViewer}
}

// via is how c's changes are recorded: "token:<name>" for a token, else
// "api" for JSON and "web" for pages and fragments.
func (p *person) via(json bool) string {
	switch {
	case p.Token != nil:
		return "token:" + p.Token.Name
	case json:
		return "api"
	}
	return "web"
}

// can reports whether p has every right of min.
func (p *person) can(min store.Role) bool { return p.Role.AtLeast(min) }

// personKey holds the request's person in its context: what a store call
// of a resource (an account's change) needs to know of who asks.
type personKey struct{}

// withPerson is ctx carrying p.
func withPerson(ctx context.Context, p *person) context.Context {
	return context.WithValue(ctx, personKey{}, p)
}

// personFrom is the person ctx carries (withPerson): no one, who may only
// read, when none.
func personFrom(ctx context.Context) *person {
	if p, ok := ctx.Value(personKey{}).(*person); ok && p != nil {
		return p
	}
	return &person{Name: "anonymous", Role: store.RoleViewer}
}

// restoreAsked reports whether a PUT's body asks for a restore. Such a
// body holds nothing else (a form may also carry _method); a restore with
// another value, or beside fields, is a 400. A body that is not a form or
// JSON is left to decodeBody, which refuses it.
func restoreAsked(c *fiber.Ctx) (bool, error) {
	var keys []string
	var value string
	switch mediaType(c.Get(fiber.HeaderContentType)) {
	case fiber.MIMEApplicationJSON:
		var obj map[string]json.RawMessage
		if json.Unmarshal(c.Request().Body(), &obj) != nil {
			return false, nil // decodeBody says what is wrong with it
		}
		raw, ok := obj["restore"]
		if !ok {
			return false, nil
		}
		if string(raw) != "true" {
			return false, badRequest(`"restore" must be true: it brings back a deleted record`)
		}
		for k := range obj {
			keys = append(keys, k)
		}
		value = "1"
	case fiber.MIMEApplicationForm:
		c.Request().PostArgs().VisitAll(func(k, v []byte) {
			keys = append(keys, string(k))
			if string(k) == "restore" {
				value = string(v)
			}
		})
	case fiber.MIMEMultipartForm:
		form, err := c.MultipartForm()
		if err != nil {
			return false, nil
		}
		for k, vs := range form.Value {
			keys = append(keys, k)
			if k == "restore" && len(vs) > 0 {
				value = vs[0]
			}
		}
	default:
		return false, nil
	}
	if !slices.Contains(keys, "restore") {
		return false, nil
	}
	if value != "1" && value != "true" {
		return false, badRequest("restore must be 1 or true: it brings back a deleted record")
	}
	for _, k := range keys {
		if k != "restore" && k != "_method" {
			return false, badRequest("a restore takes no other fields (%s was sent): restore the record, then change it", k)
		}
	}
	return true, nil
}
