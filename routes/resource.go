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
//     written (response.go);
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
	"strconv"
	"strings"

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
var resources = []*resource{orderResource, productResource, customerResource}

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
}

// navEntries is the navigation: every resource's entries, links first.
func navEntries() []navEntry {
	var links, buttons []navEntry
	for _, r := range resources {
		for _, e := range r.Nav {
			e.Href = r.Path()
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
}

// registerResource gives a resource its conventional routes: the collection
// (GET list, POST create), path/new, path/<view>, and the member path/:id
// (GET, PUT, DELETE) with path/:id/edit. Fixed paths come before the member
// route, whose id must look like a number, so "new" is never taken for an id;
// a known path with a wrong method gets 405 with Allow.
func registerResource(app fiber.Router, res *resource, hs resourceHandlers) {
	serve := func(fn handler) fiber.Handler {
		return func(c *fiber.Ctx) error {
			rp, err := negotiate(c) // 406 before any work
			if err != nil {
				return err
			}
			// Who changes records through this request, and how: the
			// history records it (actor and via: web for pages, api for JSON).
			via := "web"
			if rp == reprJSON {
				via = "api"
			}
			c.SetUserContext(store.WithActor(c.UserContext(), actorName(c), via))
			out, err := fn(c, rp)
			if err != nil {
				return err
			}
			return respond(c, rp, res, out)
		}
	}
	path := res.Path()
	app.Get(path, serve(hs.List))
	app.Post(path, serve(hs.Create))
	app.Get(res.NewPath(), serve(hs.New))
	for name, h := range hs.Views {
		app.Get(res.ViewPath(name), serve(h))
	}
	member := path + "/:id<int>"
	app.Get(member, serve(hs.Show))
	app.Put(member, serve(hs.Update))
	app.Delete(member, serve(hs.Delete))
	app.Get(member+"/edit", serve(hs.Edit))
	if hs.History != nil {
		app.Get(member+"/history", serve(hs.History))
		app.Post(member+"/history", serve(hs.Note))
	}
}

// notModifiedAt is notModified for a representation that also shows the
// member's history, whose newest entry is head (a note changes it, not
// the version): an If-None-Match tag of the same version and the same
// history ("o7v3-page-h12", any representation and coding) matches.
func (r *resource) notModifiedAt(c *fiber.Ctx, id, version int64, head string) bool {
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
		for _, part := range strings.Split(rest, "-") {
			if part == "h"+head {
				return true
			}
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
