package routes

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// orderHandlers serves the order resource (spec: eight endpoints).
type orderHandlers struct {
	*handlers
}

// HX-Target ids the server knows (docs/api.md):
//   - order-results: the table and pager of List, or the list of Inquiry;
//     GET /orders and /orders/inquiry answer with that part only.
//   - order-row-<id>: one row of the List table; GET /orders/<id> answers
//     with the row, GET /orders/<id>/edit with the row's inline form, PUT
//     with the row again (or its form with errors), DELETE with 200, no
//     content for the row (it removes itself), the notice out of band and
//     HX-Trigger orders-changed, so the results fetch their page again.
const targetResults = "order-results"

// resultsChanged is the event that makes #order-results fetch its page
// again (its hx-trigger): sent with HX-Trigger after a row's delete.
const resultsChanged = "orders-changed"

func rowTarget(id int64) string { return "order-row-" + strconv.FormatInt(id, 10) }

// orderID reads the :id path parameter; a malformed id is not found.
func orderID(c *fiber.Ctx) (int64, error) {
	raw := c.Params("id")
	id, ok := store.ParseID(raw)
	if !ok {
		return 0, store.Errorf(store.ENOTFOUND, "there is no order %q", raw)
	}
	return id, nil
}

// member reads what every member handler starts with: the representation
// asked for (406 first, before any work) and the order id from the path.
func member(c *fiber.Ctx) (repr, int64, error) {
	r, err := negotiate(c)
	if err != nil {
		return r, 0, err
	}
	id, err := orderID(c)
	return r, id, err
}

// memberOrder is member and the stored order, for the member GETs. An order
// that is gone has been answered when it returns neither (gone.go).
func (o *orderHandlers) memberOrder(c *fiber.Ctx) (repr, *store.Order, error) {
	r, id, err := member(c)
	if err != nil {
		return r, nil, err
	}
	ord, err := o.store.Get(c.UserContext(), id)
	if err != nil {
		return r, nil, o.gone(c, r, id, err)
	}
	return r, ord, nil
}

func (o *orderHandlers) list(c *fiber.Ctx) error    { return o.collection(c, false) }
func (o *orderHandlers) inquiry(c *fiber.Ctx) error { return o.collection(c, true) }

func (o *orderHandlers) collection(c *fiber.Ctx, inquiry bool) error {
	r, err := negotiate(c)
	if err != nil {
		return err
	}
	q, err := parseQuery(c)
	if err != nil {
		return err
	}
	q.Items = inquiry
	path := "/orders"
	if inquiry {
		path = "/orders/inquiry"
	}
	page := store.Page{Page: q.Page, PerPage: q.PerPage, Orders: []store.Order{}}
	if !emptyRange(q) {
		if page, err = o.store.List(c.UserContext(), q); err != nil {
			return err
		}
	}
	l := newListView(path, inquiry, q, strings.TrimSpace(c.Query("sort")) != "", page)
	if r == reprJSON {
		var entries any = page.Orders
		if !inquiry {
			s := make([]store.Summary, len(page.Orders))
			for i := range page.Orders {
				s[i] = page.Orders[i].Summary()
			}
			entries = s
		}
		return sendJSON(c, fiber.StatusOK, listJSON{entries, page.Page, page.PerPage, page.Total,
			page.TotalIsLowerBound, nullable(l.Prev), nullable(l.Next)})
	}
	v := &view{Title: l.Title(), Nav: "orders", List: l}
	partial := "partials/orders/list"
	if inquiry {
		v.Nav, partial = "inquiry", "partials/orders/inquiry"
	}
	if r == reprFragment && hxTarget(c) == targetResults {
		partial += "_results"
		l.ResultsOnly = true
	}
	return renderAs(c, r, fiber.StatusOK, partial, v, nil)
}

// listJSON is the List and Inquiry JSON (CONTRACT §4).
type listJSON struct {
	Orders  any   `json:"orders"`
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

// ETags name the order's version and the representation; any ETag of the
// current version satisfies If-Match and If-None-Match.
func etag(o *store.Order, r repr, part string) string {
	kind := [...]string{"page", "fragment", "json"}[r]
	if part != "" {
		kind += "-" + part
	}
	return `"o` + strconv.FormatInt(o.ID, 10) + "v" + strconv.FormatInt(o.Version, 10) + "-" + kind + `"`
}

// etagVersions returns the versions of order id named in an If-Match or
// If-None-Match header, and whether it was "*".
func etagVersions(header string, id int64) (versions []int64, any bool) {
	prefix := "o" + strconv.FormatInt(id, 10) + "v"
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

func (o *orderHandlers) show(c *fiber.Ctx) error {
	r, ord, err := o.memberOrder(c)
	if err != nil || ord == nil {
		return err
	}
	id := ord.ID
	partial, part := "partials/orders/show", ""
	title := orderTitle(ord)
	if r == reprFragment && hxTarget(c) == rowTarget(id) {
		partial, part = "partials/orders/row", "row"
	} else if c.Query("confirm") == "delete" && r != reprJSON {
		// The confirmation a Delete button leads to without JavaScript
		// (with it, hx-confirm asks): docs/api.md.
		partial, part = "partials/orders/delete", "delete"
		title = "Delete order " + strconv.FormatInt(id, 10) + "?"
	}
	c.Set(fiber.HeaderCacheControl, "no-cache") // on the 304 as on the 200
	if r == reprPage && c.Cookies(flashCookie) != "" {
		// This page carries a one-time notice: neither a 304 nor an ETag,
		// so the notice is neither lost nor replayed from a cache.
		return renderAs(c, r, fiber.StatusOK, partial, &view{Title: title, Nav: "orders", Order: ord}, ord)
	}
	c.Set(fiber.HeaderETag, etag(ord, r, part))
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" {
		versions, star := etagVersions(inm, id)
		for _, v := range versions {
			star = star || v == ord.Version
		}
		if star {
			return c.SendStatus(fiber.StatusNotModified)
		}
	}
	return renderAs(c, r, fiber.StatusOK, partial, &view{Title: title, Nav: "orders", Order: ord}, ord)
}

func orderTitle(o *store.Order) string {
	return "Order " + strconv.FormatInt(o.ID, 10) + " · " + o.Customer
}

func (o *orderHandlers) newForm(c *fiber.Ctx) error {
	r, err := negotiate(c)
	if err != nil {
		return err
	}
	if r == reprJSON {
		// The creation form for programs: the fields and their defaults.
		return sendJSON(c, fiber.StatusOK, fiber.Map{
			"customer": "", "email": "", "status": store.Pending, "currency": "USD", "notes": "",
			"items": []store.Item{}, "statuses": []store.Status{store.Pending},
		})
	}
	f := newOrderForm(nil)
	prefillFromQuery(c, f)
	formNoStore(c)
	return renderAs(c, r, fiber.StatusOK, "partials/orders/form", &view{Title: "New order", Nav: "new", Form: f}, nil)
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

func (o *orderHandlers) create(c *fiber.Ctx) error {
	r, err := negotiate(c)
	if err != nil {
		return err
	}
	in, err := decodeInput(c)
	if err != nil {
		return err
	}
	var ord *store.Order
	if key := c.Get("Idempotency-Key"); key != "" {
		// A retry with the same key and body answers the first request's
		// order (CONTRACT §8): safe after a 503 or a lost connection.
		if !store.ValidIdempotencyKey(key) {
			return badRequest("Idempotency-Key must be 1 to %d visible ASCII characters", store.MaxIdempotencyKey)
		}
		c.Vary("Idempotency-Key")
		ord, err = o.store.CreateOnce(c.UserContext(), key, fingerprint(c), in)
	} else {
		ord, err = o.store.Create(c.UserContext(), in)
	}
	if err != nil {
		if fields := invalidFields(err); fields != nil && r != reprJSON {
			f := newOrderForm(nil)
			f.fill(in)
			f.Errors = fields
			v := &view{Title: "New order", Nav: "new", Form: f}
			if msg := fields["status"]; msg != "" {
				// The new form has no status field to mark: say it in the notice.
				v.Notice = errorNotice("Status: " + msg + ".")
			}
			if msg := fields["idempotency_key"]; msg != "" {
				v.Notice = errorNotice("Idempotency-Key " + msg + ".")
			}
			return renderAs(c, r, fiber.StatusUnprocessableEntity, "partials/orders/form", v, nil)
		}
		return err
	}
	loc := "/orders/" + strconv.FormatInt(ord.ID, 10)
	notice := successNotice("Order " + strconv.FormatInt(ord.ID, 10) + " created.")
	switch r {
	case reprJSON:
		c.Location(loc)
		return sendJSON(c, fiber.StatusCreated, ord)
	case reprFragment:
		c.Set("HX-Push-Url", loc)
		return renderAs(c, r, fiber.StatusCreated, "partials/orders/show",
			&view{Title: orderTitle(ord), Nav: "orders", Order: ord, Notice: notice}, nil)
	}
	setFlash(c, notice)
	return c.Redirect(loc, fiber.StatusSeeOther)
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

func (o *orderHandlers) editForm(c *fiber.Ctx) error {
	r, ord, err := o.memberOrder(c)
	if err != nil || ord == nil {
		return err
	}
	id := ord.ID
	if r == reprJSON {
		// The update form for programs: the order and what may change.
		return sendJSON(c, fiber.StatusOK, fiber.Map{
			"order": ord, "statuses": append([]store.Status{ord.Status}, ord.Status.Next()...),
			"items_editable": ord.Status.ItemsEditable(),
		})
	}
	f := newOrderForm(ord)
	prefillFromQuery(c, f)
	partial := "partials/orders/form"
	if r == reprFragment && hxTarget(c) == rowTarget(id) {
		partial = "partials/orders/row_edit"
	}
	formNoStore(c)
	return renderAs(c, r, fiber.StatusOK, partial, &view{Title: "Edit order " + strconv.FormatInt(id, 10), Nav: "orders", Order: ord, Form: f}, nil)
}

// ifMatch reads If-Match for order id: 0 when absent or "*", -1 when it
// names no version of this order (it can never match).
func ifMatch(c *fiber.Ctx, id int64) int64 {
	h := c.Get(fiber.HeaderIfMatch)
	if h == "" {
		return 0
	}
	versions, star := etagVersions(h, id)
	if star {
		return 0
	}
	if len(versions) == 0 {
		return -1
	}
	return versions[0]
}

func (o *orderHandlers) update(c *fiber.Ctx) error {
	r, id, err := member(c)
	if err != nil {
		return err
	}
	in, err := decodeInput(c)
	if err != nil {
		return err
	}
	row := r == reprFragment && hxTarget(c) == rowTarget(id)
	ord, err := o.store.Update(c.UserContext(), id, in, ifMatch(c, id))
	if err != nil {
		se, ok := err.(*store.Error)
		if !ok || r == reprJSON || (se.Code != store.EINVALID && se.Code != store.ECONFLICT) {
			return o.gone(c, r, id, err)
		}
		// The form again, with what the person typed and the reason.
		cur := se.CurrentOrder()
		f := newOrderForm(cur)
		f.fill(in)
		v := &view{Title: "Edit order " + strconv.FormatInt(id, 10), Nav: "orders", Order: cur, Form: f}
		status := fiber.StatusUnprocessableEntity
		if se.Code == store.EINVALID {
			f.Errors = se.Fields
		} else {
			status = fiber.StatusConflict
			f.Conflict = newConflict(cur, in, row)
			// Saving again keeps mine, deliberately: the diff above the
			// form lists what that replaces.
			f.Version = cur.Version
			v.Notice = warningNotice("Order " + strconv.FormatInt(id, 10) + " was changed by someone else while you edited it. Nothing of yours is saved yet: compare and choose below.")
		}
		if se.Code == store.EINVALID && row {
			// The row has no summary of its own: the alert region says it
			// (and replaces any earlier notice).
			v.Notice = errorNotice("Order " + strconv.FormatInt(id, 10) + " was not saved: please correct the marked fields.")
		}
		partial := "partials/orders/form"
		if row {
			partial = "partials/orders/row_edit"
		}
		return renderAs(c, r, status, partial, v, nil)
	}
	loc := "/orders/" + strconv.FormatInt(id, 10)
	notice := successNotice("Order " + strconv.FormatInt(id, 10) + " saved.")
	switch {
	case r == reprJSON:
		c.Set(fiber.HeaderETag, etag(ord, r, ""))
		return sendJSON(c, fiber.StatusOK, ord)
	case row:
		return renderAs(c, r, fiber.StatusOK, "partials/orders/row", &view{Order: ord, Notice: notice}, nil)
	case r == reprFragment:
		// Replaced, not pushed: the edit form's history entry becomes the
		// order, so Back leads to the page before the edit, never into
		// the form with stale values.
		c.Set("HX-Replace-Url", loc)
		return renderAs(c, r, fiber.StatusOK, "partials/orders/show",
			&view{Title: orderTitle(ord), Nav: "orders", Order: ord, Notice: notice}, nil)
	}
	setFlash(c, notice)
	return c.Redirect(loc, fiber.StatusSeeOther)
}

func (o *orderHandlers) delete(c *fiber.Ctx) error {
	r, id, err := member(c)
	if err != nil {
		return err
	}
	// A delete may carry the version the person saw: in a body (a plain
	// form's _method=DELETE, or JSON) or in the query (htmx sends none).
	var version int64
	if len(c.Request().Body()) > 0 {
		in, err := decodeInput(c)
		if err != nil {
			return err
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
			return err
		}
		version = n
	}
	if err := o.store.Delete(c.UserContext(), id, ifMatch(c, id), version); err != nil {
		return o.gone(c, r, id, err)
	}
	notice := successNotice("Order " + strconv.FormatInt(id, 10) + " deleted.")
	switch {
	case r == reprJSON:
		return c.SendStatus(fiber.StatusNoContent)
	case r == reprFragment && hxTarget(c) == rowTarget(id):
		// The row removes itself; only the notice travels. The List's
		// results then fetch themselves again (their hx-trigger), so the
		// count and the page are right after the delete (issue 9 #8).
		c.Set("HX-Trigger", `{"`+resultsChanged+`": {"target": "#`+targetResults+`"}}`)
		return renderAs(c, r, fiber.StatusOK, "partials/notice", &view{Notice: notice}, nil)
	case r == reprFragment:
		// From the order's own page: there is nothing left to show there.
		setFlash(c, notice)
		c.Set("HX-Location", "/orders")
		return c.Status(fiber.StatusOK).Send(nil)
	}
	setFlash(c, notice)
	return c.Redirect("/orders", fiber.StatusSeeOther)
}
