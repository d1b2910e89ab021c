package redisstore

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// termList is the List of a kind whose records have search terms (products,
// customers): its sorted indexes and its term sets (for one list filter),
// and how a record is read and matched.
type termList[T any] struct {
	k *kind[T]
	// sorts are the List's sorts, the first the default; sorted is the
	// index of a sort's field: by score for "created" and the fields of
	// scored (members the decimal id), lexicographic ("name NUL
	// inverted-id") for the others.
	sorts  []store.Sort
	sorted func(field string) string
	scored []string
	// termSet and dupSet name the search sets for the terms that start
	// like t (search.go); terms are a record's search terms.
	termSet func(t string) string
	dupSet  func(t string, depth int) string
	terms   func(r *T) []string
	// keep says whether a record is in the list (its filter).
	keep func(r *T) bool
	// load reads records by id, in order, without those missing or
	// refused by keep.
	load func(ctx context.Context, ids []int64, keep func(*T) bool) ([]T, error)
}

// termPage is one page of a termList.
type termPage[T any] struct {
	Rows              []T
	Page, PerPage     int
	Total             int64
	TotalIsLowerBound bool
	MatchOrder        bool
}

// list answers one page: every sort and one term of at most dupDepth
// bytes are O(log N + page) with an exact total; several terms examine at
// most MaxCandidates records.
func (l termList[T]) list(ctx context.Context, s *Store, q string, sort store.Sort, page, perPage int) (termPage[T], error) {
	if !slices.Contains(l.sorts, sort) {
		sort = l.sorts[0]
	}
	page = max(page, 1)
	if perPage <= 0 {
		perPage = store.DefaultPerPage
	}
	perPage = min(perPage, store.MaxPerPage)
	out := termPage[T]{Page: page, PerPage: perPage, Rows: []T{}}
	offset := int64(page-1) * int64(perPage)
	if int64(page) > 1<<40/store.MaxPerPage {
		offset = 1 << 40
	}
	terms := queryTerms(q)
	if q != "" {
		out.MatchOrder = true
		if len(terms) == 0 {
			return out, nil
		}
	}
	var err error
	switch {
	case len(terms) == 0:
		field := sort.Field()
		var members []string
		out.Total, members, err = s.ranked(ctx, l.sorted(field), offset, int64(perPage), sort.Desc(), math.Inf(-1), math.Inf(1))
		if err != nil {
			return out, err
		}
		out.Rows, err = l.load(ctx, sortedIDs(members, field != "created" && !slices.Contains(l.scored, field)), l.keep)
		return out, err
	case len(terms) == 1 && len(terms[0]) <= dupDepth:
		return out, l.searchOne(ctx, s, terms[0], offset, &out)
	}
	// Several terms, or a long one: the most selective term's matches,
	// each checked against the whole query.
	driver, best := 0, int64(-1)
	for i, t := range terms {
		n, err := l.termCount(ctx, s, t)
		if err != nil {
			return out, err
		}
		if best < 0 || n < best {
			driver, best = i, n
		}
	}
	ids, more, err := s.lexCandidates(ctx, []string{l.termSet(terms[driver])}, terms[driver], store.MaxCandidates)
	if err != nil {
		return out, err
	}
	if id, ok := store.ParseID(terms[driver]); ok {
		ids = append([]int64{id}, slices.DeleteFunc(ids, func(x int64) bool { return x == id })...)
	}
	all := func(r *T) bool {
		if !l.keep(r) {
			return false
		}
		ts, rid := l.terms(r), *l.k.meta(r).ID
		for _, t := range terms {
			if id, ok := store.ParseID(t); !(ok && id == rid) && !hasTermPrefix(ts, t) {
				return false
			}
		}
		return true
	}
	var kept []T
	for start := 0; start < len(ids); start += loadBatch {
		got, err := l.load(ctx, ids[start:min(start+loadBatch, len(ids))], all)
		if err != nil {
			return out, err
		}
		kept = append(kept, got...)
	}
	out.Total, out.TotalIsLowerBound = int64(len(kept)), more
	lo := min(offset, out.Total)
	out.Rows = append(out.Rows, kept[lo:min(lo+int64(perPage), out.Total)]...)
	return out, nil
}

// searchOne is one term of at most dupDepth bytes: pageScript's exact
// total and page, and a record the digits name by id first (as searchOne
// does for orders).
func (l termList[T]) searchOne(ctx context.Context, s *Store, t string, offset int64, out *termPage[T]) error {
	count := int64(out.PerPage)
	exact, digits := store.ParseID(t)
	off, n := pinWindow(offset, count, digits)
	var (
		page   *redis.Cmd
		exactH *redis.MapStringStringCmd
	)
	lo, hi := lexRange(t)
	keys := []string{l.termSet(t), l.dupSet(t, len(t))}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		page = pageScript.Eval(ctx, p, keys, lo, hi, off, n)
		if digits {
			exactH = p.HGetAll(ctx, l.k.key(s, exact))
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
	var pinned *T
	pinnedM := "" // pinned's first entry among the term's matches
	if digits {
		if r, ok := l.k.decode(exact, exactH.Val()); ok && l.keep(r) {
			pinned = r
			for _, rt := range l.terms(r) {
				if strings.HasPrefix(rt, t) {
					pinnedM = termMember(rt, exact)
					break
				}
			}
		}
	}
	members, out.Total = pinPage(members, total, offset, count, digits, exact, pinned != nil, pinnedM)
	rs, err := l.load(ctx, sortedIDs(members, true), l.keep)
	if err != nil {
		return err
	}
	if pinned != nil && offset == 0 {
		if got, err := l.load(ctx, []int64{exact}, l.keep); err == nil && len(got) == 1 {
			rs = append(got, rs...)
		}
	}
	out.Rows = rs
	return nil
}

// termCount is how many records term t matches (exact up to dupDepth
// bytes; entries beyond, only to choose the driver).
func (l termList[T]) termCount(ctx context.Context, s *Store, t string) (int64, error) {
	lo, hi := lexRange(t)
	var a, d *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		a = p.ZLexCount(ctx, l.termSet(t), lo, hi)
		d = p.ZLexCount(ctx, l.dupSet(t, min(len(t), dupDepth)), lo, hi)
		return nil
	})
	return a.Val() - d.Val(), wrap(err)
}

// readRecords reads records of kind k in one pipelined round trip, in
// order, without those missing or refused by keep.
func readRecords[T any](ctx context.Context, s *Store, k *kind[T], ids []int64, keep func(*T) bool) ([]T, error) {
	out := make([]T, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, k.key(s, id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	for i, id := range ids {
		if r, ok := k.decode(id, cmds[i].Val()); ok && keep(r) {
			out = append(out, *r)
		}
	}
	return out, nil
}
