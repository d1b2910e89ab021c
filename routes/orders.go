package routes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// orderHandlers serves the order resource (spec: eight endpoints). Each
// handler returns a *response; respond writes it (response.go). The
// HX-Target ids the server knows (docs/api.md) are the resource's:
//   - order-results (ResultsID): the table and pager of List, or the list
//     of Inquiry; GET /orders and /orders/inquiry answer with that part only.
//   - order-row-<id> (RowID): one row of the List table; GET /orders/<id>
//     answers with the row, GET /orders/<id>/edit with the row's inline
//     form, PUT with the row again (or its form with errors), DELETE with
//     200, no content for the row (it removes itself), the notice out of
//     band and HX-Trigger orders-changed (ChangedEvent), so the results
//     fetch their page again.
type orderHandlers struct {
	*handlers
	R *resource
}

// memberOrder reads the order id from the path and the stored order, for
// the member GETs. An order that is gone is answered by gone (gone.go):
// then it returns neither an order nor an error, but that answer.
func (o *orderHandlers) memberOrder(c *fiber.Ctx, rp repr) (*store.Order, *response, error) {
	id, err := o.R.parseID(c)
	if err != nil {
		return nil, nil, err
	}
	ord, err := o.store.Get(c.UserContext(), id)
	if err != nil {
		out, err := gone(c, rp, o.R, id, err)
		return nil, out, err
	}
	return ord, nil, nil
}

func (o *orderHandlers) list(c *fiber.Ctx, rp repr) (*response, error) {
	return o.collection(c, rp, false)
}

func (o *orderHandlers) inquiry(c *fiber.Ctx, rp repr) (*response, error) {
	return o.collection(c, rp, true)
}

func (o *orderHandlers) collection(c *fiber.Ctx, rp repr, inquiry bool) (*response, error) {
	q, err := parseQuery(c)
	if err != nil {
		return nil, err
	}
	q.Items = inquiry
	path, name, nav := o.R.Path(), "list", o.R.Plural
	if inquiry {
		path, name, nav = o.R.ViewPath("inquiry"), "inquiry", "inquiry"
	}
	page := store.Page{Page: q.Page, PerPage: q.PerPage, Orders: []store.Order{}}
	if !emptyRange(q) {
		if page, err = o.store.List(c.UserContext(), q); err != nil {
			return nil, err
		}
	}
	var entries any = page.Orders
	if !inquiry {
		s := make([]store.Summary, len(page.Orders))
		for i := range page.Orders {
			s[i] = page.Orders[i].Summary()
		}
		entries = s
	}
	params := map[string]string{}
	if q.Status != "" {
		params["status"] = string(q.Status)
	}
	if !q.From.IsZero() {
		params["from"] = q.From.Format(dateLayout)
	}
	if !q.To.IsZero() {
		params["to"] = q.To.Format(dateLayout)
	}
	l := newListView(o.R, orderListing, path, q.Q, params, q.Sort, strings.TrimSpace(c.Query("sort")) != "",
		listResult{Rows: page.Orders, N: len(page.Orders), Page: page.Page, PerPage: page.PerPage,
			Total: page.Total, TotalIsLowerBound: page.TotalIsLowerBound, MatchOrder: page.MatchOrder})
	l.Inquiry, l.EmptyRange = inquiry, emptyRange(q)
	return o.R.listResponse(c, rp, name, nav, l, entries), nil
}

// listResponse is the answer of a resource's List (or another view of its
// collection): the page, the results alone for an htmx swap of the
// results, or JSON (the entries and where the page lies).
func (r *resource) listResponse(c *fiber.Ctx, rp repr, name, nav string, l *listView, entries any) *response {
	partial := r.Partial(name)
	if target(c, rp) == r.ResultsID() {
		partial = r.Partial(name + "_results")
		l.ResultsOnly = true
	}
	return &response{Partial: partial, View: &view{Title: l.Title(), Nav: nav, List: l},
		JSON: listJSON{r, entries, pageJSON{l.Page.Page, l.Page.PerPage, l.Page.Total,
			l.Page.TotalIsLowerBound, nullable(l.Prev), nullable(l.Next)}}}
}

// listJSON is the List and Inquiry JSON (CONTRACT §4): the entries under
// the resource's plural ({"orders": [...]}), then the page.
type listJSON struct {
	r       *resource
	entries any
	page    pageJSON
}

// MarshalJSON writes the entries first, named by the resource, then the page.
func (l listJSON) MarshalJSON() ([]byte, error) {
	entries, err := json.Marshal(l.entries)
	if err != nil {
		return nil, err
	}
	page, err := json.Marshal(l.page)
	if err != nil {
		return nil, err
	}
	b := append([]byte(`{"`+l.r.Plural+`":`), entries...)
	return append(append(b, ','), page[1:]...), nil
}

// pageJSON is where a list's page lies in its results.
type pageJSON struct {
	Page    int   `json:"page"`
	PerPage int   `json:"per_page"`
	Total   int64 `json:"total"`
	// TotalIsLowerBound: a search of several terms stopped early and there
	// are at least Total matches.
	TotalIsLowerBound bool `json:"total_is_lower_bound"`
	Prev              any  `json:"prev"`
	Next              any  `json:"next"`
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (o *orderHandlers) show(c *fiber.Ctx, rp repr) (*response, error) {
	ord, gone, err := o.memberOrder(c, rp)
	if ord == nil {
		return gone, err
	}
	out := &response{Partial: o.R.Partial("show"), View: &view{Title: orderTitle(ord), Nav: o.R.Plural, Order: ord}, JSON: ord}
	part := ""
	if o.R.isRow(c, rp, ord.ID) {
		out.Partial, part = o.R.Partial("row"), "row"
	} else if c.Query("confirm") == "delete" && rp != reprJSON {
		// The confirmation a Delete button leads to without JavaScript
		// (with it, hx-confirm asks): docs/api.md.
		out.Partial, part = o.R.Partial("delete"), "delete"
		out.View.Title = "Delete " + o.R.Name + " " + strconv.FormatInt(ord.ID, 10) + "?"
	}
	out.ETag = o.R.etag(ord.ID, ord.Version, rp, part)
	out.NotModified = o.R.notModified(c, ord.ID, ord.Version)
	return out, nil
}

// OrderPage is the data an order's page renders with: for bench/floor,
// which renders partials/orders/show in the layout without the app.
func OrderPage(o *store.Order) any {
	return &view{R: orderResource, Title: orderTitle(o), Nav: orderResource.Plural, Order: o}
}

func orderTitle(o *store.Order) string {
	return "Order " + strconv.FormatInt(o.ID, 10) + " · " + o.Customer
}

func (o *orderHandlers) newForm(c *fiber.Ctx, rp repr) (*response, error) {
	f := newOrderForm(nil)
	prefillFromQuery(c, f)
	return &response{Partial: o.R.Partial("form"), CacheControl: noStore,
		View: &view{Title: "New order", Nav: "new", Form: f},
		// The creation form for programs: the fields and their defaults.
		JSON: fiber.Map{
			"customer": "", "email": "", "status": store.Pending, "currency": "USD", "notes": "",
			"items": []store.Item{}, "statuses": []store.Status{store.Pending},
		}}, nil
}

// prefillFromQuery fills a form from its own fields sent as a GET: the
// no-JavaScript way to ask for one more item row (the "Add item row" button).
func prefillFromQuery(c *fiber.Ctx, f *orderForm) {
	args := c.Request().URI().QueryArgs()
	if args.Len() == 0 {
		return
	}
	var kv [][2]string
	args.VisitAll(func(k, v []byte) { kv = append(kv, [2]string{string(k), string(v)}) })
	in, err := decodeForm(kv)
	if err != nil {
		return
	}
	f.fill(in)
	if c.Query("add_row") != "" {
		f.addBlankRows(1)
	}
	// A row's Remove button, without JavaScript: the form without that row.
	if n, err := strconv.Atoi(c.Query("remove_row")); err == nil {
		f.removeRow(n)
	}
}

func (o *orderHandlers) create(c *fiber.Ctx, rp repr) (*response, error) {
	in, err := decodeInput(c)
	if err != nil {
		return nil, err
	}
	var ord *store.Order
	if key := c.Get("Idempotency-Key"); key != "" {
		// A retry with the same key and body answers the first request's
		// order (CONTRACT §8): safe after a 503 or a lost connection.
		if !store.ValidIdempotencyKey(key) {
			return nil, badRequest("Idempotency-Key must be 1 to %d visible ASCII characters", store.MaxIdempotencyKey)
		}
		c.Vary("Idempotency-Key")
		ord, err = o.store.CreateOnce(c.UserContext(), key, fingerprint(c), in)
	} else {
		ord, err = o.store.Create(c.UserContext(), in)
	}
	if err != nil {
		fields := invalidFields(err)
		if fields == nil {
			return nil, err
		}
		f := newOrderForm(nil)
		f.fill(in)
		f.Errors = fields
		out := &response{Status: fiber.StatusUnprocessableEntity, Partial: o.R.Partial("form"),
			View: &view{Title: "New order", Nav: "new", Form: f}, Err: err}
		if msg := fields["status"]; msg != "" {
			// The new form has no status field to mark: say it in the notice.
			out.Notice = errorNotice("Status: " + msg + ".")
		}
		if msg := fields["idempotency_key"]; msg != "" {
			out.Notice = errorNotice("Idempotency-Key " + msg + ".")
		}
		return out, nil
	}
	loc := o.R.MemberPath(ord.ID)
	return &response{Status: fiber.StatusCreated, Partial: o.R.Partial("show"),
		View: &view{Title: orderTitle(ord), Nav: o.R.Plural, Order: ord}, JSON: ord,
		Notice:   successNotice(o.R.Named(ord.ID) + " created."),
		Location: loc, PushURL: loc, Redirect: loc}, nil
}

// fingerprint identifies a request body for Idempotency-Key: the same key
// with another body is refused.
func fingerprint(c *fiber.Ctx) string {
	h := sha256.New()
	h.Write([]byte(mediaType(c.Get(fiber.HeaderContentType))))
	h.Write([]byte{0})
	h.Write(c.Request().Body()) // raw: never inflated
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func invalidFields(err error) map[string]string {
	if e, ok := err.(*store.Error); ok && e.Code == store.EINVALID {
		return e.Fields
	}
	return nil
}

func (o *orderHandlers) editForm(c *fiber.Ctx, rp repr) (*response, error) {
	ord, gone, err := o.memberOrder(c, rp)
	if ord == nil {
		return gone, err
	}
	f := newOrderForm(ord)
	prefillFromQuery(c, f)
	out := &response{Partial: o.R.Partial("form"), CacheControl: noStore,
		View: &view{Title: "Edit " + o.R.Name + " " + strconv.FormatInt(ord.ID, 10), Nav: o.R.Plural, Order: ord, Form: f},
		// The update form for programs: the order and what may change.
		JSON: fiber.Map{
			"order": ord, "statuses": append([]store.Status{ord.Status}, ord.Status.Next()...),
			"items_editable": ord.Status.ItemsEditable(),
		}}
	if o.R.isRow(c, rp, ord.ID) {
		out.Partial = o.R.Partial("row_edit")
	}
	return out, nil
}

func (o *orderHandlers) update(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := o.R.parseID(c)
	if err != nil {
		return nil, err
	}
	in, err := decodeInput(c)
	if err != nil {
		return nil, err
	}
	row := o.R.isRow(c, rp, id)
	ord, err := o.store.Update(c.UserContext(), id, in, o.R.ifMatch(c, id))
	if err != nil {
		se, ok := err.(*store.Error)
		if !ok || (se.Code != store.EINVALID && se.Code != store.ECONFLICT) {
			return gone(c, rp, o.R, id, err)
		}
		// The form again, with what the person typed and the reason; JSON
		// answers the error.
		cur := se.CurrentOrder()
		f := newOrderForm(cur)
		f.fill(in)
		out := &response{Status: fiber.StatusUnprocessableEntity, Partial: o.R.Partial("form"), Err: err,
			View: &view{Title: "Edit " + o.R.Name + " " + strconv.FormatInt(id, 10), Nav: o.R.Plural, Order: cur, Form: f}}
		if row {
			out.Partial = o.R.Partial("row_edit")
		}
		if se.Code == store.EINVALID {
			f.Errors = se.Fields
			if row {
				// The row has no summary of its own: the alert region says it
				// (and replaces any earlier notice).
				out.Notice = errorNotice(o.R.Named(id) + " was not saved: please correct the marked fields.")
			}
			return out, nil
		}
		out.Status = fiber.StatusConflict
		f.Conflict = newConflict(cur, in, row)
		// Saving again keeps mine, deliberately: the diff above the form
		// lists what that replaces.
		f.Version = cur.Version
		out.Notice = warningNotice(o.R.Named(id) + " was changed by someone else while you edited it. Nothing of yours is saved yet: compare and choose below.")
		return out, nil
	}
	loc := o.R.MemberPath(id)
	out := &response{Partial: o.R.Partial("show"), View: &view{Title: orderTitle(ord), Nav: o.R.Plural, Order: ord},
		JSON: ord, Notice: successNotice(o.R.Named(id) + " saved."), Redirect: loc,
		// Replaced, not pushed: the edit form's history entry becomes the
		// order, so Back leads to the page before the edit, never into the
		// form with stale values.
		ReplaceURL: loc}
	switch {
	case rp == reprJSON:
		out.ETag = o.R.etag(ord.ID, ord.Version, rp, "")
	case row:
		out.Partial, out.View, out.ReplaceURL = o.R.Partial("row"), &view{Order: ord}, ""
	}
	return out, nil
}

func (o *orderHandlers) delete(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := o.R.parseID(c)
	if err != nil {
		return nil, err
	}
	// A delete may carry the version the person saw: in a body (a plain
	// form's _method=DELETE, or JSON) or in the query (htmx sends none).
	var version int64
	if len(c.Request().Body()) > 0 {
		in, err := decodeInput(c)
		if err != nil {
			return nil, err
		}
		if in.Version != nil {
			version = *in.Version
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
	if err := o.store.Delete(c.UserContext(), id, o.R.ifMatch(c, id), version); err != nil {
		return gone(c, rp, o.R, id, err)
	}
	// 204 in JSON; HTML answers 200 (respond): htmx swaps nothing on a 204.
	out := &response{Status: fiber.StatusNoContent, Notice: successNotice(o.R.Named(id) + " deleted."),
		Redirect: o.R.Path(),
		// From the order's own page: there is nothing left to show there.
		HXLocation: o.R.Path()}
	if o.R.isRow(c, rp, id) {
		// The row removes itself; only the notice travels. The List's
		// results then fetch themselves again (their hx-trigger), so the
		// count and the page are right after the delete (issue 9 #8).
		out.HXLocation, out.Partial, out.Trigger = "", partialNotice, o.R.changedTrigger()
	}
	return out, nil
}
