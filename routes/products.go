package routes

// The product resource (CONTRACT §9): what a second resource provides.
// Its description, its fields, its List's sorts and filters, its form
// and its store functions; everything else (the eight routes, the three
// representations, ETags, locking, notices, errors, the pager and the
// sort headers) is the resource machinery every resource shares
// (resource.go, members.go, list.go, response.go).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// productResource is the product catalogue.
var productResource = &resource{Name: "product", Plural: "products", Title: "Product", ETagPrefix: "p", Feed: store.ProductEvents}

// productFields are a product's fields as requests send them (CONTRACT §9).
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
	{Name: "active", Label: "Active: offered in the order forms", Kind: kindBool, UI: control{Type: "checkbox"},
		flag: func(in *store.ProductInput) **bool { return &in.Active }},
	{Name: "version", Kind: kindVersion, version: func(in *store.ProductInput) **int64 { return &in.Version }},
}

// productListing is the product List: sorted by SKU unless asked
// otherwise, filtered by active (CONTRACT §9).
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
func productMembers(s *store.Store) *members[store.Product, store.ProductInput] {
	return &members[store.Product, store.ProductInput]{
		R: productResource, fields: productFields,
		store: memberStore[store.Product, store.ProductInput]{get: s.GetProduct, create: s.CreateProduct,
			update: s.UpdateProduct, remove: s.DeleteProduct},
		ident: func(p *store.Product) (int64, int64) { return p.ID, p.Version },
		title: productTitle,
		page:  func(v *view, p *store.Product) { v.Product = p },
		form: func(cur *store.Product) memberForm[store.ProductInput] {
			return newProductForm(cur)
		},
		inVersion: func(in *store.ProductInput) *int64 { return in.Version },
		newNav:    productResource.Plural,
		newJSON: func() any {
			return fiber.Map{"sku": "", "name": "", "unit_price": "0.00", "currency": "USD", "active": true}
		},
		editJSON: func(p *store.Product) any { return fiber.Map{"product": p} },
		history:  s.ProductHistory,
		note:     s.AddProductNote,
		conflict: func(cur *store.Product, in store.ProductInput, row bool) *conflictView {
			return fieldConflict(productResource, productFields, productInput(cur), in, cur.ID, cur.Version, row)
		},
	}
}

func productTitle(p *store.Product) string {
	return "Product " + strconv.FormatInt(p.ID, 10) + " · " + p.SKU
}

// listProducts is GET /products: the List, its results alone for an htmx
// swap, or JSON ({"products": [...], page...}); the product picker of the
// order forms asks it for ?q=…&active=true&per_page=10&picker=1 and gets
// the options of its listbox.
func listProducts(s *store.Store) handler {
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

// productForm is the product's New and Edit form, and its List row's
// inline form.
type productForm struct {
	formState[store.ProductInput]
	R        *resource
	New      bool
	ID       int64
	Action   string
	Version  int64
	Conflict *conflictView
}

func newProductForm(p *store.Product) *productForm {
	f := &productForm{R: productResource, New: p == nil, Action: productResource.Path()}
	f.fields = productFields
	usd, yes := "USD", true
	f.values = store.ProductInput{Currency: &usd, Active: &yes}
	if p != nil {
		f.ID, f.Version = p.ID, p.Version
		f.Action = productResource.MemberPath(p.ID)
		f.values = productInput(p)
	}
	return f
}

// productInput is a stored product as the request that would set every
// one of its fields.
func productInput(p *store.Product) store.ProductInput {
	text := func(s string) *string { return &s }
	active := p.Active
	return store.ProductInput{SKU: text(p.SKU), Name: text(p.Name), UnitPrice: text(p.UnitPrice.String()),
		Currency: text(p.Currency), Active: &active}
}

// Field is the view of a field of the New or Edit form.
func (f *productForm) Field(name string) fieldView { return f.field(name, "") }

// RowField is the view of a field of a list row's inline form.
func (f *productForm) RowField(name string) fieldView {
	v := f.field(name, "row-"+strconv.FormatInt(f.ID, 10)+"-")
	v.Compact = true
	return v
}

func (f *productForm) fill(in store.ProductInput) {
	f.formState.fill(in)
	if in.Version != nil {
		f.Version = *in.Version
	}
}

func (f *productForm) setErrors(errs map[string]string) { f.Errors = errs }

func (f *productForm) setConflict(c *conflictView, version int64) { f.Conflict, f.Version = c, version }

// prefill: the product form has no button that shows it again changed.
func (f *productForm) prefill(*fiber.Ctx) {}
