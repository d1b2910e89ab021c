package store

import "context"

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

// ListProducts answers one page of the product list. Every sort, with or
// without the active filter, and one term of at most dupDepth bytes are
// O(log N + page) with an exact total (each filter value has its own sets);
// several terms examine at most MaxCandidates products.
func (s *Store) ListProducts(ctx context.Context, q ProductQuery) (ProductPage, error) {
	part := map[string]string{"true": "active", "false": "inactive"}[q.Active]
	keep := func(p *Product) bool { return part == "" || p.Active == (part == "active") }
	l := termList[Product]{k: productKind, sorts: ProductSorts,
		sorted:  func(field string) string { return s.productIndex(field, part) },
		termSet: func(t string) string { return s.productTermSet(t, part) },
		dupSet:  func(t string, d int) string { return s.productDupSet(t, part, d) },
		terms:   productTerms, keep: keep,
		load: func(ctx context.Context, ids []int64, keep func(*Product) bool) ([]Product, error) {
			return readRecords(ctx, s, productKind, ids, keep)
		}}
	p, err := l.list(ctx, s, q.Q, q.Sort, q.Page, q.PerPage)
	return ProductPage{Products: p.Rows, Page: p.Page, PerPage: p.PerPage, Total: p.Total,
		TotalIsLowerBound: p.TotalIsLowerBound, MatchOrder: p.MatchOrder}, err
}
