package store

import (
	"context"
	"time"
)

// Products are the catalogue that fills order items: SKU, name, unit price
// and currency, and whether the order forms offer them.

// Product is one entry of the catalogue.
type Product struct {
	ID        int64     `json:"id"`
	SKU       string    `json:"sku"`
	Name      string    `json:"name"`
	UnitPrice Money     `json:"unit_price"`
	Currency  string    `json:"currency"`
	Active    bool      `json:"active"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ProductInput is a create or a change: nil fields are not sent (a change
// keeps them; a create takes the default or says the field is required).
type ProductInput struct {
	SKU       *string
	Name      *string
	UnitPrice *string
	Currency  *string
	Active    *bool
	Version   *int64
}

// ApplyProduct validates in against the stored product cur (nil on
// create) and returns the resulting product, or the field errors.
func ApplyProduct(cur *Product, in ProductInput) (Product, map[string]string) {
	errs := map[string]string{}
	p := Product{Currency: "USD", Active: true}
	if cur != nil {
		p = *cur
	}
	var msg string
	switch {
	case in.SKU != nil:
		var sku string
		if sku, msg = checkSKU(*in.SKU, true); msg != "" {
			errs["sku"] = msg
		} else {
			p.SKU = sku
		}
	case cur == nil:
		errs["sku"] = "is required"
	}
	switch {
	case in.Name != nil:
		var name string
		if name, msg = CheckText(*in.Name, MaxItemName, true, false); msg != "" {
			errs["name"] = msg
		} else {
			p.Name = name
		}
	case cur == nil:
		errs["name"] = "is required"
	}
	if in.Currency != nil {
		c, msg := checkCurrency(*in.Currency)
		switch {
		case cur != nil && c == cur.Currency:
			// The stored currency again is no change, even a code no
			// longer accepted: such a product stays editable as it is.
		case msg != "":
			errs["currency"] = msg
		default:
			p.Currency = c
		}
	}
	switch {
	case in.UnitPrice != nil:
		var m Money
		if m, msg = checkPrice(*in.UnitPrice, p.Currency); msg != "" {
			errs["unit_price"] = msg
		} else {
			p.UnitPrice = m
		}
	case cur == nil:
		errs["unit_price"] = "is required"
	case p.Currency != cur.Currency:
		// A price kept through a change of currency keeps its digits,
		// which must fit the new currency's decimals.
		m, ok := cur.UnitPrice.Rescale(MoneyScale(cur.Currency), MoneyScale(p.Currency))
		if !ok || !m.FitsCurrency(p.Currency) {
			errs["unit_price"] = "has more decimals than " + p.Currency + " has: change it too"
		} else {
			p.UnitPrice = m
		}
	}
	if in.Active != nil {
		p.Active = *in.Active
	}
	if len(errs) > 0 {
		return Product{}, errs
	}
	return p, nil
}

// ProductSorts are the sorts of the product list; the first is the default.
var ProductSorts = []Sort{"sku", "-sku", "name", "-name", "-created", "created"}

// ProductQuery is a page of the product list: each term of q matches a
// product's id, the start of its SKU or the start of any word of its name,
// and every term must match; Active is "true", "false" or "" (all).
type ProductQuery struct {
	Q       string
	Active  string
	Sort    Sort
	Page    int
	PerPage int
}

// ProductPage is one page of products.
type ProductPage struct {
	Products          []Product
	Page, PerPage     int
	Total             int64
	TotalIsLowerBound bool
	// MatchOrder: q was given, so the products come in match order and
	// Sort was not used.
	MatchOrder bool
}

// Products are the catalogue's records.
type Products interface {
	GetProduct(ctx context.Context, id int64) (*Product, error)
	ListProducts(ctx context.Context, q ProductQuery) (ProductPage, error)
	// ProductsBySKU finds the products that hold skus (case aside): the
	// map's keys are the SKUs as given; one that no product holds is
	// absent.
	ProductsBySKU(ctx context.Context, skus []string) (map[string]*Product, error)
	CreateProduct(ctx context.Context, in ProductInput) (*Product, error)
	UpdateProduct(ctx context.Context, id int64, in ProductInput, ifMatch int64) (*Product, error)
	DeleteProduct(ctx context.Context, id int64, ifMatch, version int64) error
	// RestoreProduct brings back product id deleted within UndoWindow, with its id,
	// values and history, as the next version: ENOTFOUND for no such product,
	// EGONE when its delete is older than the window, ECONFLICT when it is
	// not deleted, EINVALID when a value it holds alone is taken meanwhile.
	RestoreProduct(ctx context.Context, id int64) (*Product, error)
	ProductHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddProductNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
}
