package routes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// orderResource is the order resource.
var orderResource = &resource{Name: "order", Plural: "orders", Title: "Order", ETagPrefix: "o", Feed: store.OrderEvents, Listing: orderListing,
	Exports: map[string]csvExport{"": {}, "inquiry": {Expand: "items", Also: " with their items"}}, Rights: recordRights, Restores: true,
	Nav: []navEntry{
		{Key: "orders", Label: "Orders", Description: "The order desk: find, sort, edit and follow every order."},
		{Key: "inquiry", Label: "Inquiry", View: "inquiry", Description: "Every order with its items; search by name, email, SKU or order number."},
		{Key: "new", Label: "New order", View: "new", Button: true, Shortcut: "n",
			Description: "Enter a new order: the customer, the items and their prices."},
	},
	describe: func(rec any) string {
		o := rec.(*store.Order)
		items := "items"
		if len(o.Items) == 1 {
			items = "item"
		}
		return fmt.Sprintf("Order %d for %s: %s, %d %s.", o.ID, o.Customer, o.Status, len(o.Items), items)
	},
	Example: example{
		Create: func(n int) map[string]any {
			return map[string]any{"customer": fmt.Sprintf("Customer %d", n),
				"items": []any{map[string]any{"name": "Widget", "quantity": 2, "unit_price": "1.50"}}}
		},
		Change: "customer",
	},
}

func init() {
	orderResource.serve = func(h *handlers) resourceHandlers {
		o := &orderHandlers{handlers: h, R: orderResource}
		return orderMembers(h.store).handlers(o.list, map[string]handler{"inquiry": o.inquiry})
	}
}

// orderIn is an order's create or update as a request sends it: the
// store's input, and the number each item row had in the request (N of
// items[N][field] in a form, the position in a JSON array). The store
// knows items by their position in Input.Items; requestErrors gives its
// messages back under the keys the request used, so each message lands
// beside the row the person filled in.
type orderIn struct {
	store.OrderInput
	// rowN[i] is the N of Items[i].
	rowN []int
}

// itemRow is one item row as a request sends it: the item and its N.
type itemRow struct {
	store.ItemInput
	n int
}

// requestErrors returns err with the store's item keys (items[i][field],
// i the item's position) written with the row's N instead.
func (in *orderIn) requestErrors(err error) error {
	se, ok := err.(*store.Error)
	if !ok || len(se.Fields) == 0 || len(in.rowN) == 0 {
		return err
	}
	out := *se
	out.Fields = make(map[string]string, len(se.Fields))
	for k, msg := range se.Fields {
		if rest, ok := strings.CutPrefix(k, "items["); ok {
			if i, sub, ok := strings.Cut(rest, "]["); ok {
				if n, err := strconv.Atoi(i); err == nil && n >= 0 && n < len(in.rowN) && strings.HasSuffix(sub, "]") {
					k = errKey("items", in.rowN[n], strings.TrimSuffix(sub, "]"))
				}
			}
		}
		out.Fields[k] = msg
	}
	return &out
}

// rows returns the item rows of in, each with its N.
func (in *orderIn) rows() []itemRow {
	out := make([]itemRow, len(in.Items))
	for i, it := range in.Items {
		out[i] = itemRow{it, i}
		if i < len(in.rowN) {
			out[i].n = in.rowN[i]
		}
	}
	return out
}

// orderFields are the fields of an order as requests send them, under one
// name in forms and JSON, in the order the forms show them. The limits are
// the store's.
var orderFields = fields[orderIn]{
	// Typing in the customer suggests customers; choosing one copies its
	// name and email and links the order to it (customer_id). Typing on
	// after that unlinks it: the text is the order's own.
	{Name: "customer", Label: "Customer", Max: store.MaxCustomer, UI: control{Required: true, FromProduct: "name", Suggest: customerResource},
		text: func(in *orderIn) **string { return &in.Customer }},
	{Name: "email", Label: "Email", Max: store.MaxEmail, UI: control{Type: "email", Optional: true, Class: "field-email", FromProduct: "email"},
		text: func(in *orderIn) **string { return &in.Email }},
	{Name: "customer_id", Label: "Customer number", Kind: kindNumber, UI: control{Pattern: "[0-9]*"}, // "": no customer
		text: func(in *orderIn) **string { return &in.CustomerID }},
	{Name: "status", Label: "Status", HistoryFirst: true, UI: control{Tag: "select", OwnSentence: true},
		text: func(in *orderIn) **string { return &in.Status }},
	{Name: "currency", Label: "Currency", Max: store.CurrencyLen,
		UI:   control{Required: true, Size: store.CurrencyLen + 1, Pattern: fmt.Sprintf("[A-Za-z]{%d}", store.CurrencyLen)},
		text: func(in *orderIn) **string { return &in.Currency }},
	{Name: "notes", Label: "Notes", Max: store.MaxNotes, UI: control{Tag: "textarea", Rows: 3, Optional: true},
		text: func(in *orderIn) **string { return &in.Notes }},
	{Name: "version", Kind: kindVersion, version: func(in *orderIn) **int64 { return &in.Version }},
	{Name: "items", Label: "Items", Kind: kindRows, rows: &rows[orderIn, itemRow]{
		fields: itemFields, Noun: "item", Limit: 10 * store.MaxItems,
		newRow: func(n int) itemRow { return itemRow{n: n} },
		set: func(in *orderIn, rs []itemRow) {
			in.Items, in.rowN, in.HasItems = nil, nil, rs != nil
			if rs == nil {
				return
			}
			in.Items, in.rowN = make([]store.ItemInput, len(rs)), make([]int, len(rs))
			for i, r := range rs {
				in.Items[i], in.rowN[i] = r.ItemInput, r.n
			}
		},
	}},
}

// itemFields are the fields of one item row.
var itemFields = fields[itemRow]{
	// Typing in the SKU or the name suggests products; choosing one copies
	// its SKU, name and unit price into the row (the order keeps copies).
	{Name: "sku", Label: "SKU", Max: store.MaxSKU, UI: control{Size: 8, FromProduct: "sku", Suggest: productResource},
		cell: func(it *itemRow) *string { return &it.SKU }},
	{Name: "name", Label: "Name", Max: store.MaxItemName, UI: control{FromProduct: "name", Suggest: productResource},
		cell: func(it *itemRow) *string { return &it.Name }},
	{Name: "quantity", Label: "Quantity", Kind: kindNumber, UI: control{InputMode: "numeric", Size: 5},
		cell: func(it *itemRow) *string { return &it.Quantity }},
	{Name: "unit_price", Label: "Unit price", Kind: kindMoney, UI: control{InputMode: "decimal", Size: 8, FromProduct: "unit_price"},
		cell: func(it *itemRow) *string { return &it.UnitPrice }},
}

// decodeForm reads an order's form fields: customer, email, status,
// currency, notes, version and items[N][field].
func decodeForm(kv [][2]string) (orderIn, error) {
	var in orderIn
	err := orderFields.fromForm(&in, kv)
	return in, err
}

// decodeJSON reads an order as a JSON object with the same field names as
// the form (items as an array of objects). Syntax errors and wrong types are 400; values are checked
// by the store.
func decodeJSON(body []byte) (orderIn, error) {
	var in orderIn
	obj, err := jsonObject(body)
	if err != nil {
		return in, err
	}
	err = orderFields.fromJSON(&in, obj, "")
	return in, err
}

// orderHandlers serves the order resource's eight endpoints (List, New,
// Create, Read, Edit, Update, Delete and Inquiry). Each
// handler returns a *response; respond writes it (render.go). The
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

// orderMembers are the order's member routes (resource.go) and what is the
// order's own in them: the Idempotency-Key of a create, the forms for
// programs with the statuses an order may move to, the 409's item diff.
func orderMembers(s store.Orders) *members[store.Order, orderIn] {
	return newMembers[store.Order, orderIn](orderResource, orderFields, "new", orderMember{s})
}

// orderMember is the order's recordStore and memberPages.
type orderMember struct{ s store.Orders }

func (m orderMember) get(ctx context.Context, id int64) (*store.Order, error) {
	return m.s.GetOrder(ctx, id)
}

// The store knows items by their position; the answers name them by the
// row numbers the request used (requestErrors).

func (m orderMember) create(ctx context.Context, in orderIn) (*store.Order, error) {
	o, err := m.s.CreateOrder(ctx, in.OrderInput)
	return o, in.requestErrors(err)
}

func (m orderMember) createOnce(ctx context.Context, key, fp string, in orderIn) (*store.Order, error) {
	o, err := m.s.CreateOrderOnce(ctx, key, fp, in.OrderInput)
	return o, in.requestErrors(err)
}

func (m orderMember) update(ctx context.Context, id int64, in orderIn, ifMatch int64) (*store.Order, error) {
	o, err := m.s.UpdateOrder(ctx, id, in.OrderInput, ifMatch)
	return o, in.requestErrors(err)
}

func (m orderMember) remove(ctx context.Context, id, ifMatch, version int64) error {
	return m.s.DeleteOrder(ctx, id, ifMatch, version)
}

func (m orderMember) restore(ctx context.Context, id int64) (*store.Order, error) {
	return m.s.RestoreOrder(ctx, id)
}

func (m orderMember) history(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return m.s.OrderHistory(ctx, id, cursor, perPage)
}

func (m orderMember) note(ctx context.Context, id int64, text string) (*store.HistoryEntry, error) {
	return m.s.AddOrderNote(ctx, id, text)
}

func (orderMember) ident(o *store.Order) (int64, int64)       { return o.ID, o.Version }
func (orderMember) title(o *store.Order) string               { return orderTitle(o) }
func (orderMember) form(cur *store.Order) memberForm[orderIn] { return newOrderForm(cur) }
func (orderMember) inVersion(in *orderIn) *int64              { return in.Version }

// newJSON is the creation form for programs: the fields and their defaults.
func (orderMember) newJSON() any {
	return fiber.Map{
		"customer": "", "customer_id": "", "email": "", "status": store.Pending, "currency": "USD", "notes": "",
		"items": []store.Item{}, "statuses": []store.Status{store.Pending},
	}
}

// editJSON is the update form for programs: the order and what may change.
func (orderMember) editJSON(o *store.Order) any {
	return fiber.Map{
		"order": o, "statuses": append([]store.Status{o.Status}, o.Status.Next()...),
		"items_editable": o.Status.ItemsEditable(),
	}
}

func (orderMember) conflict(cur *store.Order, in orderIn, row bool) *conflictView {
	return newConflict(cur, in.OrderInput, row)
}

func (orderMember) createNotice(fields map[string]string) *notice {
	if msg := fields["idempotency_key"]; msg != "" {
		return errorNotice("Idempotency-Key " + msg + ".")
	}
	if msg := fields["status"]; msg != "" {
		// The new form has no status field to mark: say it in the notice.
		return errorNotice("Status: " + msg + ".")
	}
	return nil
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
	page := store.OrderPage{Page: q.Page, PerPage: q.PerPage, Orders: []store.Order{}}
	if !emptyRange(q) {
		if page, err = o.store.ListOrders(c.UserContext(), q); err != nil {
			return nil, err
		}
	}
	var entries any = page.Orders
	if !inquiry {
		s := make([]store.OrderSummary, len(page.Orders))
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
			Total: page.Total, TotalIsLowerBound: page.TotalIsLowerBound, MatchOrder: page.MatchOrder,
			Sorted: q.Q != "" && !page.MatchOrder, SortTooBroad: page.SortTooBroad})
	l.Inquiry, l.EmptyRange = inquiry, emptyRange(q)
	return o.R.listResponse(c, rp, name, nav, l, entries), nil
}

// listResponse is the answer of a resource's List (or another view of its
// collection): the page, the results alone for an htmx swap of the
// results, or JSON (the entries and where the page lies).
func (r *resource) listResponse(c *fiber.Ctx, rp repr, name, nav string, l *listView, entries any) *response {
	listSaved(c, rp, r, name, l)
	partial := r.Partial(name)
	if target(c, rp) == r.ResultsID() {
		partial = r.Partial(name + "_results")
		l.ResultsOnly = true
	}
	return &response{Partial: partial, View: &view{Title: l.Title(), Nav: nav, List: l},
		JSON: listJSON{r, entries, pageJSON{l.Page.Page, l.Page.PerPage, l.Page.Total,
			l.Page.TotalIsLowerBound, nullable(l.Prev), nullable(l.Next)}}}
}

// listJSON is the List and Inquiry JSON: the entries under
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

// OrderPage is the data an order's page renders with: for bench/floor,
// which renders partials/orders/show in the layout without the app.
func OrderPage(o *store.Order) any {
	return &view{R: orderResource, Title: orderTitle(o), Nav: orderResource.Plural, Record: o}
}

func orderTitle(o *store.Order) string {
	return "Order " + strconv.FormatInt(o.ID, 10) + " · " + o.Customer
}

// prefillFromQuery fills a form from its own fields sent as a GET: the
// no-JavaScript way to ask for one more item row (the "Add item row" button).
func (f *orderForm) prefill(c *fiber.Ctx) {
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

// orderRow is what one row of the orders' List shows, worked out in Go
// before the template runs: the template reads plain fields, where a call
// of a method or a helper from a template costs a reflective call for
// every cell of every row.
type orderRow struct {
	ID, Version     int64
	RowID, Path     string
	EditPath        string
	Customer, Email string
	Status          store.Status
	StatusTitle     string
	ItemCount       int
	Total, Currency string
	// Created and Updated are written in the person's zone; the ISO
	// forms are the <time datetime> values, in UTC.
	Created, CreatedISO string
	Updated, UpdISO     string
	Update, Delete      bool
}

// newOrderRow is o's row as person p sees it in zone z, with the rights
// p has on it (may: the rights on the collection, when they are the same
// for every member; nil to ask for this one).
func newOrderRow(r *resource, p *person, z zoned, o *store.Order, may *can) *orderRow {
	if may == nil {
		c := canOf(r, p, o.ID)
		may = &c
	}
	path := r.MemberPath(o.ID)
	return &orderRow{ID: o.ID, Version: o.Version, RowID: r.RowID(o.ID), Path: path, EditPath: path + "/edit",
		Customer: o.Customer, Email: o.Email, Status: o.Status, StatusTitle: statusTitle(o.Status),
		ItemCount: o.ItemCount, Total: o.Total.Grouped(o.Currency), Currency: o.Currency,
		Created: z.Date(o.CreatedAt), CreatedISO: formatISODate(o.CreatedAt),
		Updated: z.Date(o.UpdatedAt), UpdISO: formatISODate(o.UpdatedAt),
		Update: may.Update, Delete: may.Delete}
}

// OrderRow is the List row of the order the view shows.
func (v *view) OrderRow() *orderRow {
	if v.orderRow != nil {
		return v.orderRow
	}
	o, ok := v.Record.(*store.Order)
	if !ok {
		return nil
	}
	return newOrderRow(v.R, v.whoOrNone(), v.zoned, o, nil)
}

// orderBody is what the body of an order's page shows
// (partials/orders/show_body): the order, and what the person may do.
type orderBody struct {
	R   *resource
	Can can
	O   *store.Order
	zoned
}

// DrawnOrderBody is the body of the order's page the view shows, drawn
// or from the render cache: kept under the rights and every value of the
// order.
func (v *view) DrawnOrderBody() (template.HTML, error) {
	o, ok := v.Record.(*store.Order)
	if !ok {
		return "", fmt.Errorf("the order's page shows a %T", v.Record)
	}
	b := orderBody{R: v.R, Can: v.Can(), O: o, zoned: v.zoned}
	return v.views.draw(v.R.Partial("show_body"), fmt.Appendf(nil, "%s\x00%v\x00%v", b.ZoneName(), b.Can, *o), &b)
}

// inquiryEntry is what one order of the Inquiry shows
// (partials/orders/inquiry_entry).
type inquiryEntry struct {
	R *resource
	O *store.Order
	zoned
}

// DrawnInquiryEntries are the orders of the Inquiry the view shows, each
// drawn or from the render cache: kept under every value of the order.
func (v *view) DrawnInquiryEntries() ([]template.HTML, error) {
	if v.List == nil {
		return nil, nil
	}
	orders, _ := v.List.Rows().([]store.Order)
	out := make([]template.HTML, len(orders))
	name := v.R.Partial("inquiry_entry")
	var key []byte
	for i := range orders {
		e := inquiryEntry{R: v.R, O: &orders[i], zoned: v.zoned}
		key = fmt.Appendf(key[:0], "%s\x00%v", e.ZoneName(), orders[i])
		h, err := v.views.draw(name, key, &e)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// DrawnOrderRows are the rows of the orders' List page the view shows,
// drawn: each from the render cache when a row with the same values was
// drawn before (partials/orders/row reads nothing but its orderRow, every
// value of which is in the key).
func (v *view) DrawnOrderRows() ([]template.HTML, error) {
	rows := v.OrderRows()
	out := make([]template.HTML, len(rows))
	var key []byte
	for i, r := range rows {
		key = fmt.Appendf(key[:0], "%v", *r.orderRow)
		h, err := v.views.draw(v.R.Partial("row"), key, r)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// OrderRows are the rows of the orders' List page the view shows, each
// the view of a single-row fragment with its row worked out: the
// person's rights are asked once for the page when no member has rights
// of its own.
func (v *view) OrderRows() []*view {
	if v.List == nil {
		return nil
	}
	orders, _ := v.List.Rows().([]store.Order)
	p := v.whoOrNone()
	var may *can
	if v.R.Own == nil {
		c := canOf(v.R, p, 0)
		may = &c
	}
	out := make([]*view, len(orders))
	for i := range orders {
		o := &orders[i]
		out[i] = &view{R: v.R, Record: o, who: v.who, zoned: v.zoned, orderRow: newOrderRow(v.R, p, v.zoned, o, may)}
	}
	return out
}
