package store

// CustomerSorts are the sorts of the customer list; the first is the default.
var CustomerSorts = []Sort{"name", "-name", "-created", "created"}

// CustomerQuery is a page of the customer list: each term of q matches a
// customer's id, the start of any word of its name or company, the start
// of its email or of its phone's digits, and every term must match.
type CustomerQuery struct {
	Q       string
	Sort    Sort
	Page    int
	PerPage int
}

// CustomerPage is one page of customers.
type CustomerPage struct {
	Customers         []Customer
	Page, PerPage     int
	Total             int64
	TotalIsLowerBound bool
	// MatchOrder: q was given, so the customers come in match order and
	// Sort was not used.
	MatchOrder bool
}
