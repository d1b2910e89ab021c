package routes

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

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
	return &members[T, In]{R: r, fields: fs, store: own, pages: own, newNav: newNav}
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

// member reads the id from the path and the stored record, for the member
// GETs. A record that is gone is answered by gone (gone.go): then it
// returns neither a record nor an error, but that answer.
func (m *members[T, In]) member(c *fiber.Ctx, rp repr) (*T, *response, error) {
	id, err := m.R.parseID(c)
	if err != nil {
		return nil, nil, err
	}
	rec, err := m.store.get(c.UserContext(), id)
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

// pageAfterWrite is the view of a record's page after a write: with its
// timeline, which the write has just added to.
func (m *members[T, In]) pageAfterWrite(c *fiber.Ctx, rec *T) (*view, error) {
	v := m.showView(rec)
	id, _ := m.pages.ident(rec)
	h, err := m.timeline(c, id)
	if err != nil {
		return nil, err
	}
	v.History = h
	return v, nil
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
	rec, gone, err := m.member(c, rp)
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
		// (with it, hx-confirm asks): docs/api.md.
		out.Partial, part = m.R.Partial("delete"), "delete"
		out.View.Title = "Delete " + m.R.Name + " " + strconv.FormatInt(id, 10) + "?"
	}
	if part == "" && rp != reprJSON {
		// The page shows the latest history: a note (which changes no
		// version) changes the page, and its ETag.
		h, err := m.timeline(c, id)
		if err != nil {
			return nil, err
		}
		out.View.History = h
		part = "h" + h.Head()
		out.ETag = m.R.etag(id, version, rp, part)
		out.NotModified = m.R.notModifiedAt(c, id, version, h.Head())
		return out, nil
	}
	out.ETag = m.R.etag(id, version, rp, part)
	out.NotModified = m.R.notModified(c, id, version)
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
		if page, err = m.pageAfterWrite(c, rec); err != nil {
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
			if row {
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
	page := m.showView(rec)
	if rp == reprFragment && !row {
		if page, err = m.pageAfterWrite(c, rec); err != nil {
			return nil, err
		}
	}
	out := &response{Partial: m.R.Partial("show"), View: page,
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
	out := &response{Status: fiber.StatusNoContent, Notice: successNotice(m.R.Named(id) + " deleted."),
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
