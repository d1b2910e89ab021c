package routes

// The product resource, the catalogue that fills order items: what a
// second resource provides.
// Its description, its fields, its List's sorts and filters, its form
// and its store functions; everything else (the eight routes, the three
// representations, ETags, locking, notices, errors, the pager and the
// sort headers) is the resource machinery every resource shares
// (resource.go, list.go, render.go).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// productResource is the product catalogue.
var productResource = &resource{Name: "product", Plural: "products", Title: "Product", ETagPrefix: "p", Feed: store.ProductEvents, Listing: productListing, Restores: true,
	Exports: map[string]csvExport{"": {}},
	// The catalogue is the managers': clerks only read it and add notes.
	Rights: rights{Read: store.RoleViewer, Create: store.RoleManager, Update: store.RoleManager, Delete: store.RoleManager, Note: store.RoleClerk},
	Nav: []navEntry{{Key: "products", Label: "Products",
		Description: "The product catalogue: the SKUs, names and prices the order forms offer."}},
	describe: func(rec any) string {
		p := rec.(*store.Product)
		return fmt.Sprintf("Product %s: %s, %s %s.", p.SKU, p.Name, p.UnitPrice.Grouped(p.Currency), p.Currency)
	},
	Example: example{
		Create: func(n int) map[string]any {
			return map[string]any{"sku": fmt.Sprintf("SKU-%d", n), "name": fmt.Sprintf("Product %d", n), "unit_price": "1.50"}
		},
		Change: "name",
	},
}

func init() {
	productResource.serve = func(h *handlers) resourceHandlers {
		hs := productMembers(h.store).handlers(listProducts(h.store), nil)
		// A CSV body creates and changes products by SKU (import.go); the
		// page's import is /products/import.
		hs.Create = importProducts(h.store, hs.Create)
		hs.Collection = append(hs.Collection,
			memberRoute{Method: fiber.MethodGet, Path: "/import", Action: actUpdate, Handler: importPage},
			memberRoute{Method: fiber.MethodPost, Path: "/import", Action: actUpdate, Handler: importForm(h.store)})
		hs.API.More = describeImport
		return hs
	}
}

// productFields are a product's fields as requests send them.
var productFields = fields[store.ProductInput]{
	{Name: "sku", Label: "SKU", Max: store.MaxSKU, UI: control{Required: true, Size: 16, Pattern: `[A-Za-z0-9._\-]+`},
		text: func(in *store.ProductInput) **string { return &in.SKU }},
	{Name: "name", Label: "Name", Max: store.MaxItemName, UI: control{Required: true},
		text: func(in *store.ProductInput) **string { return &in.Name }},
	{Name: "unit_price", Label: "Unit price", Kind: kindMoney, UI: control{Required: true, InputMode: "decimal", Size: 10},
		text: func(in *store.ProductInput) **string { return &in.UnitPrice }},
	{Name: "currency", Label: "Currency", Max: store.CurrencyLen, Fold: true,
		UI:   control{Required: true, Size: store.CurrencyLen + 1, Pattern: fmt.Sprintf("[A-Za-z]{%d}", store.CurrencyLen)},
		text: func(in *store.ProductInput) **string { return &in.Currency }},
	{Name: "active", Label: "Active: offered in the order forms", History: "Active", Kind: kindBool, UI: control{Type: "checkbox"},
		flag: func(in *store.ProductInput) **bool { return &in.Active }},
	{Name: "version", Kind: kindVersion, version: func(in *store.ProductInput) **int64 { return &in.Version }},
}

// productListing is the product List: sorted by SKU unless asked
// otherwise, filtered by active ("true", "false", or empty for all).
var productListing = &listing{
	Title:   "Products",
	Sorts:   store.ProductSorts,
	Columns: map[string]store.Sort{"sku": "sku", "name": "name", "created": "-created"},
	Words: func(s store.Sort) string {
		asc, desc := "oldest first", "newest first"
		switch s.Field() {
		case "sku":
			asc, desc = "by SKU, A to Z", "by SKU, Z to A"
		case "name":
			asc, desc = "by name, A to Z", "by name, Z to A"
		}
		if s.Desc() {
			return desc
		}
		return asc
	},
	SearchHint: "SKU, name or product number",
	Params:     []string{"active"},
	Describe: func(p map[string]string) (title []string, empty string) {
		switch p["active"] {
		case "true":
			return []string{"active"}, " that are active"
		case "false":
			return []string{"inactive"}, " that are inactive"
		}
		return nil, ""
	},
}

// productMembers are the product's member routes.
func productMembers(s store.Products) *members[store.Product, store.ProductInput] {
	return newMembers[store.Product, store.ProductInput](productResource, productFields, productResource.Plural, productMember{s})
}

// productMember is the product's recordStore and memberPages.
type productMember struct{ s store.Products }

func (m productMember) get(ctx context.Context, id int64) (*store.Product, error) {
	return m.s.GetProduct(ctx, id)
}

func (m productMember) create(ctx context.Context, in store.ProductInput) (*store.Product, error) {
	return m.s.CreateProduct(ctx, in)
}

func (m productMember) update(ctx context.Context, id int64, in store.ProductInput, ifMatch int64) (*store.Product, error) {
	return m.s.UpdateProduct(ctx, id, in, ifMatch)
}

func (m productMember) remove(ctx context.Context, id, ifMatch, version int64) error {
	return m.s.DeleteProduct(ctx, id, ifMatch, version)
}

func (m productMember) restore(ctx context.Context, id int64) (*store.Product, error) {
	return m.s.RestoreProduct(ctx, id)
}

func (m productMember) history(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return m.s.ProductHistory(ctx, id, cursor, perPage)
}

func (m productMember) note(ctx context.Context, id int64, text string) (*store.HistoryEntry, error) {
	return m.s.AddProductNote(ctx, id, text)
}

func (productMember) ident(p *store.Product) (int64, int64) { return p.ID, p.Version }
func (productMember) title(p *store.Product) string         { return productTitle(p) }
func (productMember) form(cur *store.Product) memberForm[store.ProductInput] {
	return newProductForm(cur)
}
func (productMember) inVersion(in *store.ProductInput) *int64 { return in.Version }

func (productMember) newJSON() any {
	return fiber.Map{"sku": "", "name": "", "unit_price": "0.00", "currency": "USD", "active": true}
}

func (productMember) editJSON(p *store.Product) any { return fiber.Map{"product": p} }

func (productMember) conflict(cur *store.Product, in store.ProductInput, row bool) *conflictView {
	return fieldConflict(productResource, productFields, productInput(cur), in, cur.ID, cur.Version, row)
}

func productTitle(p *store.Product) string {
	return "Product " + strconv.FormatInt(p.ID, 10) + " · " + p.SKU
}

// listProducts is GET /products: the List, its results alone for an htmx
// swap, or JSON ({"products": [...], page...}); the product picker of the
// order forms asks it for ?q=…&active=true&per_page=10&picker=1 and gets
// the options of its listbox.
func listProducts(s store.Products) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		paging, err := parsePaging(c)
		if err != nil {
			return nil, err
		}
		q := store.ProductQuery{Q: paging.Q, Page: paging.Page, PerPage: paging.PerPage,
			Active: strings.ToLower(strings.TrimSpace(c.Query("active"))),
			Sort:   store.Sort(strings.ToLower(strings.TrimSpace(c.Query("sort"))))}
		if q.Active != "" && q.Active != "true" && q.Active != "false" {
			return nil, badRequest("active must be true or false (or empty for every product)")
		}
		if q.Sort == "" {
			q.Sort = store.ProductSorts[0]
		}
		if !validSort(productListing.Sorts, q.Sort) {
			return nil, badRequest("sort must be one of %s", sortNames(productListing.Sorts))
		}
		page, err := s.ListProducts(c.UserContext(), q)
		if err != nil {
			return nil, err
		}
		params := map[string]string{}
		if q.Active != "" {
			params["active"] = q.Active
		}
		l := newListView(productResource, productListing, productResource.Path(), q.Q, params, q.Sort,
			strings.TrimSpace(c.Query("sort")) != "",
			listResult{Rows: page.Products, N: len(page.Products), Page: page.Page, PerPage: page.PerPage,
				Total: page.Total, TotalIsLowerBound: page.TotalIsLowerBound, MatchOrder: page.MatchOrder})
		out := productResource.listResponse(c, rp, "list", productResource.Plural, l, page.Products)
		if rp == reprFragment && c.Query("picker") != "" {
			// The order forms' product picker asks for its options alone.
			out.Partial = productResource.Partial("picker")
		}
		return out, nil
	}
}

// newProductForm is the product's New and Edit form, and its List row's
// inline form.
func newProductForm(p *store.Product) *recordForm[store.ProductInput] {
	if p == nil {
		usd, yes := "USD", true
		return newRecordForm(productResource, productFields, store.ProductInput{Currency: &usd, Active: &yes}, 0, 0, productMember{}.inVersion)
	}
	return newRecordForm(productResource, productFields, productInput(p), p.ID, p.Version, productMember{}.inVersion)
}

// productInput is a stored product as the request that would set every
// one of its fields.
func productInput(p *store.Product) store.ProductInput {
	text := func(s string) *string { return &s }
	active := p.Active
	return store.ProductInput{SKU: text(p.SKU), Name: text(p.Name), UnitPrice: text(p.UnitPrice.In(p.Currency)),
		Currency: text(p.Currency), Active: &active}
}
