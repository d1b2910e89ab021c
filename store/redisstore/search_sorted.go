package redisstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// searchSorted answers a search in the sort the query asks for: every
// match is found from the term indexes (matchIDs, at most MaxCandidates of
// them), placed by the sort's own index (the created, updated or total
// score of each, or its name), sorted, and the page's orders read. It
// reports false, having answered nothing, when more orders may match.
func (s *Store) searchSorted(ctx context.Context, q store.OrderQuery, terms []string, offset int64, keep func(*store.Order) bool, out *store.OrderPage) (bool, error) {
	ids, ok, err := s.matchIDs(ctx, q, terms, keep)
	if err != nil || !ok {
		return false, err
	}
	sts := store.Statuses
	if q.Status != "" {
		sts = []store.Status{q.Status}
	}
	if dated := !q.From.IsZero() || !q.To.IsZero(); dated {
		created, err := s.scoresOf(ctx, ids, s.idIndex, sts)
		if err != nil {
			return false, err
		}
		lo, hi := dayScores(q.From, q.To)
		ids = slices.DeleteFunc(ids, func(id int64) bool { c, ok := created[id]; return !ok || c < lo || c > hi })
	}
	entries := make([]sortEntry, 0, len(ids))
	if q.Sort.Field() == "customer" {
		names, err := s.namesOf(ctx, ids)
		if err != nil {
			return false, err
		}
		for _, id := range ids {
			if n, ok := names[id]; ok {
				entries = append(entries, sortEntry{member: nameMember(n, id)})
			}
		}
	} else {
		keyOf := s.idIndex
		switch q.Sort.Field() {
		case "updated":
			keyOf = s.updatedIndex
		case "total":
			keyOf = s.totalIndex
		}
		scores, err := s.scoresOf(ctx, ids, keyOf, sts)
		if err != nil {
			return false, err
		}
		for _, id := range ids {
			if sc, ok := scores[id]; ok {
				entries = append(entries, sortEntry{sc, strconv.FormatInt(id, 10)})
			}
		}
	}
	slices.SortFunc(entries, func(a, b sortEntry) int {
		c := cmp.Compare(a.score, b.score)
		if c == 0 {
			c = strings.Compare(a.member, b.member)
		}
		if q.Sort.Desc() {
			return -c
		}
		return c
	})
	out.Total = int64(len(entries))
	lo := min(offset, out.Total)
	page := entries[lo:min(lo+int64(q.PerPage), out.Total)]
	members := make([]string, len(page))
	for i, e := range page {
		members[i] = e.member
	}
	lex := q.Sort.Field() == "customer"
	var lexMembers []string
	if lex {
		lexMembers = members
	}
	out.Orders, err = s.loadMany(ctx, sortedIDs(members, lex), lexMembers, q.Items, keep)
	return true, err
}

// matchIDs returns every order (in the query's status) that matches all
// of terms, each once, when there are at most MaxCandidates; ok is false
// when there may be more. The rarest term's matches are the candidates;
// another term with at most MaxCandidates matches keeps only the
// candidates among its own (index reads only); the candidates of a query
// with a term that has more, or a term longer than the dup sets answer
// exactly, are read and checked (keep is the rest of the filter).
func (s *Store) matchIDs(ctx context.Context, q store.OrderQuery, terms []string, keep func(*store.Order) bool) ([]int64, bool, error) {
	counts, err := s.termCounts(ctx, terms, q.Status)
	if err != nil {
		return nil, false, err
	}
	driver := 0
	for i := range terms {
		if counts[i] < counts[driver] {
			driver = i
		}
	}
	limit := intersectLimit(terms, counts, driver)
	if counts[driver] > int64(limit) && len(terms[driver]) <= dupDepth {
		return nil, false, nil
	}
	ids, more, err := s.termCandidatesUpTo(ctx, terms[driver], q.Status, limit)
	if err != nil || more {
		return nil, false, err
	}
	if id, ok := store.ParseID(terms[driver]); ok && !slices.Contains(ids, id) {
		ids = append(ids, id) // checked below: it may not exist
	}
	check := false
	for _, i := range byCount(counts, driver) {
		t := terms[i]
		if !readCheaper(counts[i], limit, len(ids)) || len(t) > dupDepth {
			check = true
			continue
		}
		tids, tmore, err := s.termCandidatesUpTo(ctx, t, q.Status, limit)
		if err != nil {
			return nil, false, err
		}
		if tmore {
			check = true
			continue
		}
		in := make(map[int64]bool, len(tids)+1)
		for _, id := range tids {
			in[id] = true
		}
		if id, ok := store.ParseID(t); ok {
			in[id] = true
		}
		ids = slices.DeleteFunc(ids, func(id int64) bool { return !in[id] })
	}
	if len(ids) > store.MaxCandidates && (check || limit > store.MaxCandidates) {
		return nil, false, nil // too many to read and check, or to sort
	}
	_, digits := store.ParseID(terms[driver])
	if !check && !digits {
		return ids, true, nil
	}
	// Read and check: a term's matches were not all read, or a digits
	// term named an id that may not exist or be in another status.
	var kept []int64
	for start := 0; start < len(ids); start += loadBatch {
		got, err := s.loadOrders(ctx, ids[start:min(start+loadBatch, len(ids))], true)
		if err != nil {
			return nil, false, err
		}
		for _, o := range got {
			if o == nil || !keep(o) {
				continue
			}
			ts := orderTerms(o)
			if !slices.ContainsFunc(terms, func(t string) bool { return !matchesTerm(o, ts, t) }) {
				kept = append(kept, o.ID)
			}
		}
	}
	return kept, true, nil
}

// scoresOf reads the scores of ids in the sets keyOf names for each of
// sts (an order is in its status's set only): ZMSCORE, sortCmd members a
// command, in one pipelined round trip.
func (s *Store) scoresOf(ctx context.Context, ids []int64, keyOf func(store.Status) string, sts []store.Status) (map[int64]float64, error) {
	members := make([]string, len(ids))
	for i, id := range ids {
		members[i] = strconv.FormatInt(id, 10)
	}
	type chunk struct {
		from int
		cmd  *redis.Cmd
	}
	var chunks []chunk
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, st := range sts {
			for from := 0; from < len(members); from += int(sortCmd) {
				ms := members[from:min(from+int(sortCmd), len(members))]
				chunks = append(chunks, chunk{from, p.Do(ctx, append([]any{"zmscore", keyOf(st)}, anys(ms)...)...)})
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	out := make(map[int64]float64, len(ids))
	for _, c := range chunks {
		got, err := scoreList(c.cmd)
		if err != nil {
			return nil, err
		}
		for j, sc := range got {
			if sc != nil {
				out[ids[c.from+j]] = *sc
			}
		}
	}
	return out, nil
}

// namesOf reads the customer names of ids, loadBatch a round trip.
func (s *Store) namesOf(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for start := 0; start < len(ids); start += loadBatch {
		batch := ids[start:min(start+loadBatch, len(ids))]
		names := make([]*redis.StringCmd, len(batch))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				names[i] = p.HGet(ctx, s.orderKey(id), "c")
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap(err)
		}
		for i, id := range batch {
			if n, err := names[i].Result(); err == nil {
				out[id] = n
			}
		}
	}
	return out, nil
}
