package store

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

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
	if !slices.Contains(ProductSorts, q.Sort) {
		q.Sort = ProductSorts[0]
	}
	q.Page = max(q.Page, 1)
	if q.PerPage <= 0 {
		q.PerPage = DefaultPerPage
	}
	q.PerPage = min(q.PerPage, MaxPerPage)
	out := ProductPage{Page: q.Page, PerPage: q.PerPage, Products: []Product{}}
	offset := int64(q.Page-1) * int64(q.PerPage)
	if int64(q.Page) > 1<<40/MaxPerPage {
		offset = 1 << 40
	}
	part := map[string]string{"true": "active", "false": "inactive"}[q.Active]
	keep := func(p *Product) bool { return part == "" || p.Active == (part == "active") }
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
		out.Total, members, err = s.ranked(ctx, s.productIndex(field, part), offset, int64(q.PerPage), q.Sort.Desc(), math.Inf(-1), math.Inf(1))
		if err != nil {
			return out, err
		}
		out.Products, err = s.loadProducts(ctx, sortedIDs(members, field != "created"), keep)
		return out, err
	case len(terms) == 1 && len(terms[0]) <= dupDepth:
		return out, s.searchProductsOne(ctx, terms[0], part, offset, keep, &out)
	}
	// Several terms, or a long one: the most selective term's matches,
	// each checked against the whole query.
	driver, best := 0, int64(-1)
	for i, t := range terms {
		n, err := s.productTermCount(ctx, t, part)
		if err != nil {
			return out, err
		}
		if best < 0 || n < best {
			driver, best = i, n
		}
	}
	ids, more, err = s.productCandidates(ctx, terms[driver], part)
	if err != nil {
		return out, err
	}
	if id, ok := ParseID(terms[driver]); ok {
		ids = append([]int64{id}, slices.DeleteFunc(ids, func(x int64) bool { return x == id })...)
	}
	all := func(p *Product) bool {
		if !keep(p) {
			return false
		}
		ts := productTerms(p)
		for _, t := range terms {
			if id, ok := ParseID(t); !(ok && id == p.ID) && !hasTermPrefix(ts, t) {
				return false
			}
		}
		return true
	}
	var kept []Product
	for start := 0; start < len(ids); start += loadBatch {
		got, err := s.loadProducts(ctx, ids[start:min(start+loadBatch, len(ids))], all)
		if err != nil {
			return out, err
		}
		kept = append(kept, got...)
	}
	out.Total, out.TotalIsLowerBound = int64(len(kept)), more
	lo := min(offset, out.Total)
	out.Products = append(out.Products, kept[lo:min(lo+int64(q.PerPage), out.Total)]...)
	return out, nil
}

// searchProductsOne is one term of at most dupDepth bytes in one part:
// pageScript's exact total and page, and a product the digits name by id
// first (as searchOne does for orders).
func (s *Store) searchProductsOne(ctx context.Context, t, part string, offset int64, keep func(*Product) bool, out *ProductPage) error {
	count := int64(out.PerPage)
	exact, digits := ParseID(t)
	off, n := pinWindow(offset, count, digits)
	var (
		page   *redis.Cmd
		exactH *redis.MapStringStringCmd
	)
	lo, hi := lexRange(t)
	keys := []string{s.productTermSet(t, part), s.productDupSet(t, part, len(t))}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		page = pageScript.Eval(ctx, p, keys, lo, hi, off, n)
		if digits {
			exactH = p.HGetAll(ctx, productKind.key(s, exact))
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
	var pinned *Product
	pinnedM := "" // pinned's first entry among the term's matches
	if digits {
		if p, ok := decodeProduct(exact, exactH.Val()); ok && keep(p) {
			pinned = p
			for _, pt := range productTerms(p) {
				if strings.HasPrefix(pt, t) {
					pinnedM = termMember(pt, exact)
					break
				}
			}
		}
	}
	members, out.Total = pinPage(members, total, offset, count, digits, exact, pinned != nil, pinnedM)
	ps, err := s.loadProducts(ctx, sortedIDs(members, true), keep)
	if err != nil {
		return err
	}
	if pinned != nil && offset == 0 {
		ps = append([]Product{*pinned}, ps...)
	}
	out.Products = ps
	return nil
}

// productTermCount is how many products of a part term t matches (exact up
// to dupDepth bytes; entries beyond, only to choose the driver).
func (s *Store) productTermCount(ctx context.Context, t, part string) (int64, error) {
	lo, hi := lexRange(t)
	var a, d *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		a = p.ZLexCount(ctx, s.productTermSet(t, part), lo, hi)
		d = p.ZLexCount(ctx, s.productDupSet(t, part, min(len(t), dupDepth)), lo, hi)
		return nil
	})
	return a.Val() - d.Val(), wrap(err)
}

// productCandidates are up to MaxCandidates products of a part matching
// term t in match order, each once, and whether there may be more.
func (s *Store) productCandidates(ctx context.Context, t, part string) ([]int64, bool, error) {
	return s.lexCandidates(ctx, []string{s.productTermSet(t, part)}, t, MaxCandidates)
}

// loadProducts reads products in one pipelined round trip, in order,
// without those missing or refused by keep.
func (s *Store) loadProducts(ctx context.Context, ids []int64, keep func(*Product) bool) ([]Product, error) {
	out := make([]Product, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, productKind.key(s, id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	for i, id := range ids {
		if p, ok := decodeProduct(id, cmds[i].Val()); ok && keep(p) {
			out = append(out, *p)
		}
	}
	return out, nil
}
