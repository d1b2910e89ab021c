package store

import (
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

// OrderQuery selects a page of the order collection: the query that the
// List (GET /orders) and the Inquiry (GET /orders/inquiry) share.
type OrderQuery struct {
	// Q is an exact order id or a case-insensitive prefix of the customer name.
	Q string
	// Status, when set, keeps only orders in that status.
	Status Status
	// Sort orders the results; empty means SortCreatedDesc. With Q the
	// results come in match order unless SortAsked: then in Sort when at
	// most MaxCandidates orders match (the page says when more do).
	Sort      Sort
	SortAsked bool
	// From and To, when not zero, keep orders created on or after From's
	// date and on or before To's (whole days, inclusive), each date read in
	// the time's own location: a date in Europe/Berlin starts at Berlin's
	// midnight, one in UTC at UTC's.
	From, To time.Time
	// Page counts from 1; PerPage is 1 to 100.
	Page, PerPage int
	// Items says whether to load each order's items (the Inquiry).
	Items bool
	// Export allows pages of up to ExportPerPage: an export reads every
	// page, and each page's fixed cost (finding where it starts) is paid
	// fewer times.
	Export bool
}

// OrderPage is one page of orders and the number of orders that match in all.
type OrderPage struct {
	Orders []Order
	// Total counts the matching orders; when TotalIsLowerBound is set the
	// search stopped after MaxCandidates and there are at least Total.
	Total             int64
	TotalIsLowerBound bool
	// MatchOrder says the orders come in match order (a search), not in
	// the order Query.Sort asked for.
	MatchOrder bool
	// SortTooBroad says a sort was asked for with Q but more than
	// MaxCandidates orders match: they come in match order.
	SortTooBroad bool
	Page         int
	PerPage      int
}

// Sort names an order of the List: a field, descending when it starts
// with "-".
type Sort string

// The sorts the List knows; the first is the default.
const (
	SortCreatedDesc  Sort = "-created"
	SortCreated      Sort = "created"
	SortCustomer     Sort = "customer"
	SortCustomerDesc Sort = "-customer"
	SortUpdatedDesc  Sort = "-updated"
	SortUpdated      Sort = "updated"
	SortTotalDesc    Sort = "-total"
	SortTotal        Sort = "total"
)

// Sorts lists every Sort, the default first.
var Sorts = []Sort{SortCreatedDesc, SortCreated, SortCustomer, SortCustomerDesc,
	SortUpdatedDesc, SortUpdated, SortTotalDesc, SortTotal}

// Valid reports whether s is one of Sorts.
func (s Sort) Valid() bool {
	for _, v := range Sorts {
		if s == v {
			return true
		}
	}
	return false
}

// Field is the sorted field without its direction ("created").
func (s Sort) Field() string { return strings.TrimPrefix(string(s), "-") }

// Desc reports whether s sorts descending.
func (s Sort) Desc() bool { return strings.HasPrefix(string(s), "-") }

// MaxCandidates bounds the orders a search of several terms (or a search
// with a status or date filter) examines; past it the total is a lower bound.
const MaxCandidates = 10000

// Default and largest page sizes.
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
	// ExportPerPage is the page size of an export (OrderQuery.Export).
	ExportPerPage = 1000
	// MaxQuery bounds the length of a search.
	MaxQuery = 120
)

// Normalize clamps the page numbers and tidies the search text.
func (q *OrderQuery) Normalize() {
	if q.PerPage == 0 {
		q.PerPage = DefaultPerPage
	}
	most := MaxPerPage
	if q.Export {
		most = ExportPerPage
	}
	q.PerPage = min(max(q.PerPage, 1), most)
	q.Page = max(q.Page, 1)
	if q.Sort == "" {
		q.Sort = SortCreatedDesc
	}
	// Stored names are NFC (cleanText): so is what is searched for.
	q.Q = norm.NFC.String(strings.TrimSpace(q.Q))
	if r := []rune(q.Q); len(r) > MaxQuery {
		q.Q = string(r[:MaxQuery])
	}
}
