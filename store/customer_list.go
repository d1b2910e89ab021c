package store

import "context"

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

// ListCustomers answers one page of the customer list. Every sort and one
// term of at most dupDepth bytes are O(log N + page) with an exact total;
// several terms examine at most MaxCandidates customers. Each customer
// has its order count and last order.
func (s *Store) ListCustomers(ctx context.Context, q CustomerQuery) (CustomerPage, error) {
	l := termList[Customer]{k: customerKind, sorts: CustomerSorts, sorted: s.customerIndex,
		termSet: s.customerTermSet, dupSet: s.customerDupSet, terms: customerTerms,
		keep: func(*Customer) bool { return true }, load: s.loadCustomers}
	p, err := l.list(ctx, s, q.Q, q.Sort, q.Page, q.PerPage)
	return CustomerPage{Customers: p.Rows, Page: p.Page, PerPage: p.PerPage, Total: p.Total,
		TotalIsLowerBound: p.TotalIsLowerBound, MatchOrder: p.MatchOrder}, err
}

// loadCustomers reads customers in one pipelined round trip, in order,
// without those missing or refused by keep, then their order counts and
// last orders in another.
func (s *Store) loadCustomers(ctx context.Context, ids []int64, keep func(*Customer) bool) ([]Customer, error) {
	out, err := readRecords(ctx, s, customerKind, ids, keep)
	if err != nil {
		return nil, err
	}
	cs := make([]*Customer, len(out))
	for i := range out {
		cs[i] = &out[i]
	}
	return out, s.orderFacts(ctx, cs)
}
