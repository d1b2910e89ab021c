package routes

// The customer resource: the people and companies orders are for. Its
// description, its fields, its List's sorts, its form and its store
// functions; everything else is the resource machinery every resource
// shares (resource.go, list.go, render.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// customerResource is the customer collection.
var customerResource = &resource{Name: "customer", Plural: "customers", Title: "Customer", ETagPrefix: "c", Feed: store.CustomerEvents, Listing: customerListing,
	Exports: map[string]csvExport{"": {}}, Rights: recordRights, Restores: true,
	Nav: []navEntry{{Key: "customers", Label: "Customers",
		Description: "The customers: the people and companies orders are for, with their contact details and addresses."}},
	describe: func(rec any) string {
		c := rec.(*store.Customer)
		s := "Customer " + c.Name
		if c.Company != "" {
			s += " (" + c.Company + ")"
		}
		return s + "."
	},
	Example: example{
		Create: func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("Customer %d", n), "email": fmt.Sprintf("c%d@example.com", n)}
		},
		Change: "name",
	},
}

func init() {
	customerResource.serve = func(h *handlers) resourceHandlers {
		return customerMembers(h.store).handlers(listCustomers(h.store), nil)
	}
}

// customerFields are a customer's fields as requests send them; the
// address's are members of the JSON object address.
var customerFields = fields[store.CustomerInput]{
	{Name: "name", Label: "Name", Max: store.MaxCustomerName, UI: control{Required: true},
		text: func(in *store.CustomerInput) **string { return &in.Name }},
	{Name: "email", Label: "Email", Max: store.MaxEmail, UI: control{Type: "email", Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Email }},
	{Name: "phone", Label: "Phone", Max: store.MaxPhone, UI: control{Type: "tel", Optional: true, Size: 20},
		text: func(in *store.CustomerInput) **string { return &in.Phone }},
	{Name: "company", Label: "Company", Max: store.MaxCustomerCompany, UI: control{Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Company }},
	{Name: "address.line1", Label: "Address line 1", Max: store.MaxAddressLine, UI: control{Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Address.Line1 }},
	{Name: "address.line2", Label: "Address line 2", Max: store.MaxAddressLine, UI: control{Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Address.Line2 }},
	{Name: "address.city", Label: "City", Max: store.MaxCity, UI: control{Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Address.City }},
	{Name: "address.region", Label: "Region", Max: store.MaxRegion, UI: control{Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Address.Region }},
	{Name: "address.postal_code", Label: "Postal code", Max: store.MaxPostalCode, UI: control{Optional: true, Size: 10},
		text: func(in *store.CustomerInput) **string { return &in.Address.PostalCode }},
	{Name: "address.country", Label: "Country (ISO code, like DE)", History: "Country", Max: 2, Fold: true,
		UI:   control{Optional: true, Size: 3, Pattern: "[A-Za-z]{2}"},
		text: func(in *store.CustomerInput) **string { return &in.Address.Country }},
	{Name: "notes", Label: "Notes", Max: store.MaxNotes, UI: control{Tag: "textarea", Rows: 3, Optional: true},
		text: func(in *store.CustomerInput) **string { return &in.Notes }},
	{Name: "version", Kind: kindVersion, version: func(in *store.CustomerInput) **int64 { return &in.Version }},
}

// customerListing is the customer List: by name unless asked otherwise.
var customerListing = &listing{
	Title:   "Customers",
	Sorts:   store.CustomerSorts,
	Columns: map[string]store.Sort{"name": "name", "created": "-created", "last_order": "-last_order"},
	Words: func(s store.Sort) string {
		switch s {
		case "name":
			return "by name, A to Z"
		case "-name":
			return "by name, Z to A"
		case "created":
			return "oldest first"
		case "-last_order":
			return "by last order, newest first"
		}
		return "newest first"
	},
	SearchHint: "name, company, email, phone or customer number",
	Describe:   func(map[string]string) ([]string, string) { return nil, "" },
}

// customerMembers are the customer's member routes.
func customerMembers(s store.Customers) *members[store.Customer, store.CustomerInput] {
	return newMembers[store.Customer, store.CustomerInput](customerResource, customerFields, customerResource.Plural, customerMember{s})
}

// customerMember is the customer's recordStore and memberPages.
type customerMember struct{ s store.Customers }

func (m customerMember) get(ctx context.Context, id int64) (*store.Customer, error) {
	return m.s.GetCustomer(ctx, id)
}

// derived names what the customer's representations show of its orders
// (the count, the last order, the totals, the page of orders): a hash of
// them, so that an order linked, changed or unlinked changes the
// customer's ETags though not its version.
func (customerMember) derived(cu *store.Customer) string {
	b, _ := json.Marshal([]any{cu.OrderCount, cu.LastOrderAt, cu.Totals, cu.Orders})
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}

// shown reads the customer with the page of its orders, newest first,
// that ordersPage names: its page lists them, ordersPerPage at a time.
func (m customerMember) shown(c *fiber.Ctx, id int64) (*store.Customer, error) {
	page, err := ordersPage(c)
	if err != nil {
		return nil, err
	}
	cu, err := m.s.GetCustomer(c.UserContext(), id)
	if err != nil {
		return nil, err
	}
	got, err := m.s.CustomerOrders(c.UserContext(), id, page, ordersPerPage)
	if err != nil {
		return nil, err
	}
	p := &store.CustomerOrderPage{Orders: make([]store.OrderSummary, len(got.Orders)), Page: page,
		PerPage: ordersPerPage, Total: got.Total}
	for i := range got.Orders {
		p.Orders[i] = got.Orders[i].Summary()
	}
	at := func(n int64) *string {
		u := customerResource.MemberPath(id)
		if n > 1 {
			u += "?" + ordersPageParam + "=" + strconv.FormatInt(n, 10)
		}
		return &u
	}
	last := (got.Total + ordersPerPage - 1) / ordersPerPage
	if page > 1 && last > 0 {
		p.Prev = at(min(int64(page)-1, last))
	}
	if int64(page) < last {
		p.Next = at(int64(page) + 1)
	}
	cu.Orders = p
	return cu, nil
}

// ordersPageParam is the query parameter that names the page of a
// customer's orders its page shows (from 1; absent: the first).
const ordersPageParam = "orders_page"

// ordersPerPage is how many of a customer's orders its page lists at once.
const ordersPerPage = 10

// ordersPage reads ordersPageParam: a whole number from 1, or absent.
func ordersPage(c *fiber.Ctx) (int, error) {
	raw := strings.TrimSpace(c.Query(ordersPageParam))
	if raw == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, badRequest("%s must be a whole number from 1", ordersPageParam)
	}
	return min(n, 1<<30), nil
}

func (m customerMember) create(ctx context.Context, in store.CustomerInput) (*store.Customer, error) {
	return m.s.CreateCustomer(ctx, in)
}

func (m customerMember) update(ctx context.Context, id int64, in store.CustomerInput, ifMatch int64) (*store.Customer, error) {
	return m.s.UpdateCustomer(ctx, id, in, ifMatch)
}

func (m customerMember) remove(ctx context.Context, id, ifMatch, version int64) error {
	return m.s.DeleteCustomer(ctx, id, ifMatch, version)
}

func (m customerMember) restore(ctx context.Context, id int64) (*store.Customer, error) {
	return m.s.RestoreCustomer(ctx, id)
}

func (m customerMember) history(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return m.s.CustomerHistory(ctx, id, cursor, perPage)
}

func (m customerMember) note(ctx context.Context, id int64, text string) (*store.HistoryEntry, error) {
	return m.s.AddCustomerNote(ctx, id, text)
}

func (customerMember) ident(c *store.Customer) (int64, int64) { return c.ID, c.Version }
func (customerMember) title(c *store.Customer) string {
	return "Customer " + strconv.FormatInt(c.ID, 10) + " · " + c.Name
}
func (customerMember) form(cur *store.Customer) memberForm[store.CustomerInput] {
	return newCustomerForm(cur)
}
func (customerMember) inVersion(in *store.CustomerInput) *int64 { return in.Version }

func (customerMember) newJSON() any {
	return fiber.Map{"name": "", "email": "", "phone": "", "company": "", "notes": "",
		"address": fiber.Map{"line1": "", "line2": "", "city": "", "region": "", "postal_code": "", "country": ""}}
}

func (customerMember) editJSON(c *store.Customer) any { return fiber.Map{"customer": c} }

func (customerMember) conflict(cur *store.Customer, in store.CustomerInput, row bool) *conflictView {
	return fieldConflict(customerResource, customerFields, customerInput(cur), in, cur.ID, cur.Version, row)
}

// listCustomers is GET /customers: the List, its results alone for an
// htmx swap, or JSON ({"customers": [...], page...}); the customer picker
// of the order forms asks it for ?q=…&per_page=10&picker=1 and gets the
// options of its listbox.
func listCustomers(s store.Customers) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		paging, err := parsePaging(c)
		if err != nil {
			return nil, err
		}
		q := store.CustomerQuery{Q: paging.Q, Page: paging.Page, PerPage: paging.PerPage,
			Sort: store.Sort(strings.ToLower(strings.TrimSpace(c.Query("sort"))))}
		if q.Sort == "" {
			q.Sort = store.CustomerSorts[0]
		}
		if !validSort(customerListing.Sorts, q.Sort) {
			return nil, badRequest("sort must be one of %s", sortNames(customerListing.Sorts))
		}
		page, err := s.ListCustomers(c.UserContext(), q)
		if err != nil {
			return nil, err
		}
		l := newListView(customerResource, customerListing, customerResource.Path(), q.Q, map[string]string{}, q.Sort,
			strings.TrimSpace(c.Query("sort")) != "",
			listResult{Rows: page.Customers, N: len(page.Customers), Page: page.Page, PerPage: page.PerPage,
				Total: page.Total, TotalIsLowerBound: page.TotalIsLowerBound, MatchOrder: page.MatchOrder})
		out := customerResource.listResponse(c, rp, "list", customerResource.Plural, l, page.Customers)
		if rp == reprFragment && c.Query("picker") != "" {
			// The order forms' customer picker asks for its options alone.
			out.Partial = customerResource.Partial("picker")
		}
		return out, nil
	}
}

// newCustomerForm is the customer's New and Edit form, and its List row's
// inline form.
func newCustomerForm(c *store.Customer) *recordForm[store.CustomerInput] {
	if c == nil {
		return newRecordForm(customerResource, customerFields, store.CustomerInput{}, 0, 0, customerMember{}.inVersion)
	}
	return newRecordForm(customerResource, customerFields, customerInput(c), c.ID, c.Version, customerMember{}.inVersion)
}

// customerInput is a stored customer as the request that would set every
// one of its fields.
func customerInput(c *store.Customer) store.CustomerInput {
	text := func(s string) *string { return &s }
	a := c.Address
	return store.CustomerInput{Name: text(c.Name), Email: text(c.Email), Phone: text(c.Phone), Company: text(c.Company),
		Notes: text(c.Notes), Address: store.AddressInput{Line1: text(a.Line1), Line2: text(a.Line2), City: text(a.City),
			Region: text(a.Region), PostalCode: text(a.PostalCode), Country: text(a.Country)}}
}
