package store

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

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
// several terms examine at most MaxCandidates customers.
func (s *Store) ListCustomers(ctx context.Context, q CustomerQuery) (CustomerPage, error) {
	if !slices.Contains(CustomerSorts, q.Sort) {
		q.Sort = CustomerSorts[0]
	}
	q.Page = max(q.Page, 1)
	if q.PerPage <= 0 {
		q.PerPage = DefaultPerPage
	}
	q.PerPage = min(q.PerPage, MaxPerPage)
	out := CustomerPage{Page: q.Page, PerPage: q.PerPage, Customers: []Customer{}}
	offset := int64(q.Page-1) * int64(q.PerPage)
	if int64(q.Page) > 1<<40/MaxPerPage {
		offset = 1 << 40
	}
	keep := func(*Customer) bool { return true }
	terms := queryTerms(q.Q)
	if q.Q != "" {
		out.MatchOrder = true
		if len(terms) == 0 {
			return out, nil
		}
	}
	var (
		ids  []int64
		more bool
		err  error
	)
	switch {
	case len(terms) == 0:
		field := q.Sort.Field()
		var members []string
		out.Total, members, err = s.ranked(ctx, s.customerIndex(field), offset, int64(q.PerPage), q.Sort.Desc(), math.Inf(-1), math.Inf(1))
		if err != nil {
			return out, err
		}
		out.Customers, err = s.loadCustomers(ctx, sortedIDs(members, field != "created"), keep)
		return out, err
	case len(terms) == 1 && len(terms[0]) <= dupDepth:
		return out, s.searchCustomersOne(ctx, terms[0], offset, keep, &out)
	}
	// Several terms, or a long one: the most selective term's matches,
	// each checked against the whole query.
	driver, best := 0, int64(-1)
	for i, t := range terms {
		n, err := s.customerTermCount(ctx, t)
		if err != nil {
			return out, err
		}
		if best < 0 || n < best {
			driver, best = i, n
		}
	}
	ids, more, err = s.lexCandidates(ctx, []string{s.customerTermSet(terms[driver])}, terms[driver], MaxCandidates)
	if err != nil {
		return out, err
	}
	if id, ok := ParseID(terms[driver]); ok {
		ids = append([]int64{id}, slices.DeleteFunc(ids, func(x int64) bool { return x == id })...)
	}
	all := func(p *Customer) bool {
		if !keep(p) {
			return false
		}
		ts := customerTerms(p)
		for _, t := range terms {
			if id, ok := ParseID(t); !(ok && id == p.ID) && !hasTermPrefix(ts, t) {
				return false
			}
		}
		return true
	}
	var kept []Customer
	for start := 0; start < len(ids); start += loadBatch {
		got, err := s.loadCustomers(ctx, ids[start:min(start+loadBatch, len(ids))], all)
		if err != nil {
			return out, err
		}
		kept = append(kept, got...)
	}
	out.Total, out.TotalIsLowerBound = int64(len(kept)), more
	lo := min(offset, out.Total)
	out.Customers = append(out.Customers, kept[lo:min(lo+int64(q.PerPage), out.Total)]...)
	return out, nil
}

// searchCustomersOne is one term of at most dupDepth bytes:
// pageScript's exact total and page, and a customer the digits name by id
// first (as searchOne does for orders).
func (s *Store) searchCustomersOne(ctx context.Context, t string, offset int64, keep func(*Customer) bool, out *CustomerPage) error {
	count := int64(out.PerPage)
	exact, digits := ParseID(t)
	off, n := pinWindow(offset, count, digits)
	var (
		page   *redis.Cmd
		exactH *redis.MapStringStringCmd
	)
	lo, hi := lexRange(t)
	keys := []string{s.customerTermSet(t), s.customerDupSet(t, len(t))}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		page = pageScript.Eval(ctx, p, keys, lo, hi, off, n)
		if digits {
			exactH = p.HGetAll(ctx, customerKind.key(s, exact))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return wrap(err)
	}
	total, members, err := scriptPage(page)
	if err != nil {
		return err
	}
	var pinned *Customer
	pinnedM := "" // pinned's first entry among the term's matches
	if digits {
		if p, ok := decodeCustomer(exact, exactH.Val()); ok && keep(p) {
			pinned = p
			for _, pt := range customerTerms(p) {
				if strings.HasPrefix(pt, t) {
					pinnedM = termMember(pt, exact)
					break
				}
			}
		}
	}
	members, out.Total = pinPage(members, total, offset, count, digits, exact, pinned != nil, pinnedM)
	ps, err := s.loadCustomers(ctx, sortedIDs(members, true), keep)
	if err != nil {
		return err
	}
	if pinned != nil && offset == 0 {
		ps = append([]Customer{*pinned}, ps...)
	}
	out.Customers = ps
	return nil
}

// customerTermCount is how many customers term t matches (exact up to
// dupDepth bytes; entries beyond, only to choose the driver).
func (s *Store) customerTermCount(ctx context.Context, t string) (int64, error) {
	lo, hi := lexRange(t)
	var a, d *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		a = p.ZLexCount(ctx, s.customerTermSet(t), lo, hi)
		d = p.ZLexCount(ctx, s.customerDupSet(t, min(len(t), dupDepth)), lo, hi)
		return nil
	})
	return a.Val() - d.Val(), wrap(err)
}

// loadCustomers reads customers in one pipelined round trip, in order,
// without those missing or refused by keep, then their order counts and
// last orders in another.
func (s *Store) loadCustomers(ctx context.Context, ids []int64, keep func(*Customer) bool) ([]Customer, error) {
	out := make([]Customer, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, customerKind.key(s, id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	for i, id := range ids {
		if p, ok := decodeCustomer(id, cmds[i].Val()); ok && keep(p) {
			out = append(out, *p)
		}
	}
	cs := make([]*Customer, len(out))
	for i := range out {
		cs[i] = &out[i]
	}
	return out, s.orderFacts(ctx, cs)
}
