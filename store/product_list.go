package store

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
