package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// A created-date range with the customer, updated or total sort asks for
// two orders at once: the range is a score range of the created index, the
// order is another index. No sorted set holds both, so such a page is found
// in one of four ways, each made of many small commands (none reads more
// than sortCmd entries), never one large script. The total is always
// exact: the created index counts the range.
//
//   - A range that holds every order of the status sets read is no filter:
//     the sort's own page, O(log N + page).
//   - Read whole, a range of at most MaxSortedRange orders: their ids by
//     the created index, their sort keys (ZMSCORE of the sort's index; for
//     the customer sort each order's name), sorted here. Any page, O(range).
//   - Less a few: a range that leaves out at most MaxSortedRange orders
//     is the sort's own page less them (sortedBesides).
//   - Walked: the sort's index is read from the page's nearer end in
//     chunks (each status's set, merged here), each chunk's created scores
//     read in one ZMSCORE and those outside the range dropped, until the
//     page is complete. About (distance from that end) / (the range's
//     share of the orders) entries, if the range's orders are spread
//     through the sort, as an estimate says before it starts.
//
// The cheapest of the last three is taken. A walk stops at MaxSortedWalk
// entries (or, for a range that may be read whole, at the range's size,
// and reads it whole instead); a page of a larger range that the estimate
// or the walk puts further than that is refused (EBROAD) with what to
// narrow.

// MaxSortedRange is the largest created-date range whose orders are all
// read and sorted for another sort; MaxSortedWalk bounds the index entries
// a larger range may walk to reach its page.
const (
	MaxSortedRange = 100_000
	MaxSortedWalk  = 100_000
)

// sortedRange and sortedWalk are the bounds in use. One command reads at
// most sortCmd entries (ZMSCORE of 4,096 random members took up to 5 ms
// at a million orders on an idle machine, 1,024 about 1 ms); a walk reads
// walkFirst entries of each set in its first round trip, doubling each
// time up to sortChunk. Tests lower them all.
var (
	sortedRange, sortedWalk       int64 = MaxSortedRange, MaxSortedWalk
	sortCmd, sortChunk, walkFirst int64 = 1024, 4096, 256
)

// sortEntry is one order's place in a sort's index: its score and member
// (score sorts), or its name member (the customer sort, lex).
type sortEntry struct {
	score  float64
	member string
}

// entryLess orders entries as the index does: by score, then by member
// (lex indexes have equal scores).
func entryLess(a, b sortEntry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.member < b.member
}

// datedSorted answers a created-date range with a sort other than created
// (see above).
func (s *Store) datedSorted(ctx context.Context, q store.OrderQuery, offset int64, keep func(*store.Order) bool, out *store.OrderPage) error {
	sts := store.Statuses
	if q.Status != "" {
		sts = []store.Status{q.Status}
	}
	loF, hiF := dayScores(q.From, q.To)
	lo, hi := scoreArg(loF, false), scoreArg(hiF, false)
	type counts struct{ in, all, before *redis.IntCmd }
	cs := make([]counts, len(sts))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range sts {
			k := s.idIndex(st)
			cs[i] = counts{p.ZCount(ctx, k, lo, hi), p.ZCard(ctx, k), p.ZCount(ctx, k, "-inf", scoreArg(loF, true))}
		}
		return nil
	})
	if err != nil {
		return wrap(err)
	}
	var total int64
	whole := true
	for _, c := range cs {
		total += c.in.Val()
		whole = whole && c.in.Val() == c.all.Val()
	}
	if whole {
		// Every order read is in the range: the sort's own page.
		undated := q
		undated.From, undated.To = time.Time{}, time.Time{}
		return s.listSorted(ctx, undated, offset, keep, out)
	}
	out.Total = total
	if offset >= total {
		return nil
	}
	// What a walk would read, were the range's orders spread evenly
	// through the sort: the page's distance from its nearer end, over the
	// range's share of the sets. The cheaper way is taken; a range whose
	// orders sit further into the sort than that stops the walk at its
	// bound (the range's size when it may be read whole instead).
	var all int64
	for _, c := range cs {
		all += c.all.Val()
	}
	count := min(int64(q.PerPage), total-offset)
	near := min(offset, total-offset-count) + count
	estimate := near * all / total
	var members []string
	if outside := all - total; outside <= sortedRange && outside < estimate && (outside < total || total > sortedRange) {
		// Few orders outside the range: the sort's own page, less them.
		spans := make([]createdSpan, 0, 2*len(sts))
		for i, c := range cs {
			after := c.before.Val() + c.in.Val()
			spans = append(spans, createdSpan{sts[i], 0, c.before.Val()}, createdSpan{sts[i], after, c.all.Val() - after})
		}
		var done bool
		if members, done, err = s.sortedBesides(ctx, q, spans, offset, count); err != nil {
			return err
		}
		if done {
			return s.loadPage(ctx, q, members, keep, out)
		}
	}
	readWhole := total <= sortedRange && estimate >= total
	if !readWhole {
		if total > sortedRange && estimate > sortedWalk {
			return tooFar(q)
		}
		bound := sortedWalk
		if total <= sortedRange {
			bound = total
		}
		var done bool
		members, done, err = s.walkSorted(ctx, q, sts, loF, hiF, offset, total, bound)
		if err != nil {
			return err
		}
		if !done && total > sortedRange {
			return tooFar(q)
		}
		readWhole = !done
	}
	if readWhole {
		spans := make([]createdSpan, len(sts))
		for i, c := range cs {
			spans[i] = createdSpan{sts[i], c.before.Val(), c.in.Val()}
		}
		if members, err = s.sortRange(ctx, q, spans, offset); err != nil {
			return err
		}
	}
	return s.loadPage(ctx, q, members, keep, out)
}

// loadPage reads the orders of a page of q's sort index's members.
func (s *Store) loadPage(ctx context.Context, q store.OrderQuery, members []string, keep func(*store.Order) bool, out *store.OrderPage) error {
	lex := q.Sort.Field() == "customer"
	var lexMembers []string
	if lex {
		lexMembers = members
	}
	var err error
	out.Orders, err = s.loadMany(ctx, sortedIDs(members, lex), lexMembers, q.Items, keep)
	return err
}

// sortedBesides returns the members of the page at offset (count of them)
// of a range that leaves out the orders of spans (few): the excluded
// orders' places in the sort (spanEntries), where they fall among the
// sort's own pages (a binary search over them, each probe one ZRANK, or in
// all statuses one ZRANK and four ZCOUNTs), then the sort's own page that
// holds the range's page and the excluded orders within it, less those.
// It reports false when that page would be longer than sortCmd entries.
func (s *Store) sortedBesides(ctx context.Context, q store.OrderQuery, spans []createdSpan, offset, count int64) ([]string, bool, error) {
	ex, err := s.spanEntries(ctx, q, spans)
	if err != nil {
		return nil, false, err
	}
	keys, _ := s.sortKeys(q.Sort, q.Status)
	desc := q.Sort.Desc()
	// place is where e stands in the sort's own order (all statuses).
	place := func(e sortEntry) (int64, error) {
		var cmds []*redis.IntCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			if len(keys) == 1 {
				if desc {
					cmds = append(cmds, p.ZRevRank(ctx, keys[0], e.member))
				} else {
					cmds = append(cmds, p.ZRank(ctx, keys[0], e.member))
				}
				return nil
			}
			for _, k := range keys {
				if desc {
					cmds = append(cmds, p.ZCount(ctx, k, scoreArg(e.score, true), "+inf"))
				} else {
					cmds = append(cmds, p.ZCount(ctx, k, "-inf", scoreArg(e.score, true)))
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, wrap(err)
		}
		var n int64
		for _, c := range cmds {
			n += c.Val()
		}
		return n, nil
	}
	// before(m) is how many excluded orders come before the range's m-th:
	// the first i whose place, less the i excluded before it, exceeds m.
	before := func(m int64) (int64, error) {
		lo, hi := 0, len(ex)
		for lo < hi {
			mid := lo + (hi-lo)/2
			at, err := place(ex[mid])
			if err != nil {
				return 0, err
			}
			if at-int64(mid) <= m {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return int64(lo), nil
	}
	first, err := before(offset)
	if err != nil {
		return nil, false, err
	}
	last, err := before(offset + count - 1)
	if err != nil {
		return nil, false, err
	}
	window := count + last - first
	if window > sortCmd {
		return nil, false, nil
	}
	all := math.Inf(1)
	var members []string
	if len(keys) > 1 {
		_, members, err = s.merged(ctx, keys, q.Sort, offset+first, window, -all, all)
	} else {
		_, members, err = s.ranked(ctx, keys[0], offset+first, window, desc, -all, all)
	}
	if err != nil {
		return nil, false, err
	}
	out := map[string]bool{}
	for _, e := range ex {
		out[e.member] = true
	}
	page := make([]string, 0, count)
	for _, m := range members {
		if !out[m] && int64(len(page)) < count {
			page = append(page, m)
		}
	}
	return page, true, nil
}

// createdSpan is a run of ranks of one status's created set: n orders
// from rank start.
type createdSpan struct {
	st       store.Status
	start, n int64
}

// sortRange reads every order of a small created range (spans) with its
// sort key, sorts them as the sort's index would, and returns the page's
// members of that index.
func (s *Store) sortRange(ctx context.Context, q store.OrderQuery, spans []createdSpan, offset int64) ([]string, error) {
	entries, err := s.spanEntries(ctx, q, spans)
	if err != nil {
		return nil, err
	}
	lo := min(offset, int64(len(entries)))
	page := entries[lo:min(lo+int64(q.PerPage), int64(len(entries)))]
	members := make([]string, len(page))
	for i, e := range page {
		members[i] = e.member
	}
	return members, nil
}

// spanEntries reads the orders of spans of the created sets with their
// place in q's sort, sorted as the sort orders them. Two or three rounds
// of pipelined commands, none reading more than sortCmd entries.
func (s *Store) spanEntries(ctx context.Context, q store.OrderQuery, spans []createdSpan) ([]sortEntry, error) {
	type chunk struct {
		st  store.Status
		ids *redis.StringSliceCmd
	}
	var chunks []chunk
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, sp := range spans {
			for r := int64(0); r < sp.n; r += sortCmd {
				start := sp.start + r
				chunks = append(chunks, chunk{sp.st, p.ZRange(ctx, s.idIndex(sp.st), start, start+min(sortCmd, sp.n-r)-1)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	var entries []sortEntry
	if q.Sort.Field() == "customer" {
		// A name member is not found by id: each order's name is read.
		var ids []int64
		for _, c := range chunks {
			ids = append(ids, sortedIDs(c.ids.Val(), false)...)
		}
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
					entries = append(entries, sortEntry{member: nameMember(n, id)})
				}
			}
		}
	} else {
		keyOf := s.updatedIndex
		if q.Sort.Field() == "total" {
			keyOf = s.totalIndex
		}
		scores := make([]*redis.Cmd, len(chunks))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, c := range chunks {
				if ms := c.ids.Val(); len(ms) > 0 {
					scores[i] = p.Do(ctx, append([]any{"zmscore", keyOf(c.st)}, anys(ms)...)...)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap(err)
		}
		for i, c := range chunks {
			if scores[i] == nil {
				continue
			}
			got, err := scoreList(scores[i])
			if err != nil {
				return nil, err
			}
			for j, m := range c.ids.Val() {
				if j < len(got) && got[j] != nil {
					entries = append(entries, sortEntry{*got[j], m})
				}
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
	return entries, nil
}

// sortWalker walks one status's set of a sort in chunks, keeping the
// entries whose order was created in the range.
type sortWalker struct {
	st        store.Status
	key       string // the sort's set of that status
	lex       bool
	pos       int64 // the next rank to read, counted from the walk's start
	chunk     int64
	last      sortEntry // the last entry read (every entry not read yet comes after it)
	started   bool
	done      bool
	kept      []sortEntry // entries in the range, read and not yet merged
	rangeCmds []*redis.ZSliceCmd
}

// walkSorted returns the members of the page at offset of a created range
// (total orders) in q's sort: the status sets of the sort are walked from
// the end nearer the page, merged, and kept when their order's created
// score is in [lo, hi]. It reads at most bound entries, and reports false
// (with no page) when the page lies further than that.
func (s *Store) walkSorted(ctx context.Context, q store.OrderQuery, sts []store.Status, lo, hi float64, offset, total, bound int64) ([]string, bool, error) {
	count := min(int64(q.PerPage), total-offset)
	asc := !q.Sort.Desc()
	flip := offset*2 > total
	if flip {
		// Past the middle, from the other end: the same entries, reversed.
		asc = !asc
		offset = total - offset - count
	}
	ws := make([]*sortWalker, len(sts))
	for i, st := range sts {
		keys, lex := s.sortKeys(q.Sort, st)
		ws[i] = &sortWalker{st: st, key: keys[0], lex: lex, chunk: min(max(2*count, walkFirst), sortChunk)}
	}
	if q.Sort.Field() == "updated" && asc && !math.IsInf(lo, -1) {
		// An order is updated when or after it is created: one created on
		// or after lo was updated then too, and the walk up the updated
		// sets starts there. (A day earlier: the clocks of the instances
		// that created and updated an order may differ by a little.)
		from := scoreArg(lo-float64(int64(24*3600)<<21), true)
		skips := make([]*redis.IntCmd, len(ws))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, w := range ws {
				skips[i] = p.ZCount(ctx, w.key, "-inf", from)
			}
			return nil
		})
		if err != nil {
			return nil, false, wrap(err)
		}
		for i, w := range ws {
			w.pos = skips[i].Val()
		}
	}
	// before says a comes before b in the walk.
	before := func(a, b sortEntry) bool {
		if asc {
			return entryLess(a, b)
		}
		return entryLess(b, a)
	}
	var (
		page     []string
		emitted  int64
		examined int64
	)
	for emitted < offset+count {
		var head *sortWalker
		for _, w := range ws {
			if len(w.kept) > 0 && (head == nil || before(w.kept[0], head.kept[0])) {
				head = w
			}
		}
		// A set whose walk has not passed the head may still hold an
		// entry before it: read on there first.
		var behind []*sortWalker
		for _, w := range ws {
			if !w.done && (head == nil || !w.started || before(w.last, head.kept[0])) {
				behind = append(behind, w)
			}
		}
		if len(behind) == 0 {
			if head == nil {
				break // every set read to its end
			}
			if emitted >= offset {
				page = append(page, head.kept[0].member)
			}
			head.kept = head.kept[1:]
			emitted++
			continue
		}
		for _, w := range behind {
			examined += w.chunk
		}
		if examined > bound {
			return nil, false, nil
		}
		if err := s.walkStep(ctx, behind, asc, lo, hi); err != nil {
			return nil, false, err
		}
	}
	if flip {
		slices.Reverse(page)
	}
	return page, true, nil
}

// walkStep reads the next chunk of each walker (one round trip, commands
// of at most sortCmd entries) and the created scores of what it read
// (another).
func (s *Store) walkStep(ctx context.Context, ws []*sortWalker, asc bool, lo, hi float64) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, w := range ws {
			w.rangeCmds = w.rangeCmds[:0]
			for from := w.pos; from < w.pos+w.chunk; from += sortCmd {
				to := min(from+sortCmd, w.pos+w.chunk) - 1
				if asc {
					w.rangeCmds = append(w.rangeCmds, p.ZRangeWithScores(ctx, w.key, from, to))
				} else {
					w.rangeCmds = append(w.rangeCmds, p.ZRevRangeWithScores(ctx, w.key, from, to))
				}
			}
		}
		return nil
	})
	if err != nil {
		return wrap(err)
	}
	reads := make([][]redis.Z, len(ws))
	scores := make([][]*redis.Cmd, len(ws))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range ws {
			for _, c := range w.rangeCmds {
				reads[i] = append(reads[i], c.Val()...)
			}
			read := reads[i]
			for from := 0; from < len(read); from += int(sortCmd) {
				part := read[from:min(from+int(sortCmd), len(read))]
				args := make([]any, 0, 2+len(part))
				args = append(args, "zmscore", s.idIndex(w.st))
				for _, z := range part {
					id := z.Member.(string)
					if w.lex {
						n, _ := memberID(id)
						id = strconv.FormatInt(n, 10)
					}
					args = append(args, id)
				}
				scores[i] = append(scores[i], p.Do(ctx, args...))
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return wrap(err)
	}
	for i, w := range ws {
		read := reads[i]
		w.started = true
		w.pos += int64(len(read))
		if int64(len(read)) < w.chunk {
			w.done = true
		}
		w.chunk = min(2*w.chunk, sortChunk)
		var created []*float64
		for _, c := range scores[i] {
			got, err := scoreList(c)
			if err != nil {
				return err
			}
			created = append(created, got...)
		}
		for j, z := range read {
			e := sortEntry{z.Score, z.Member.(string)}
			if w.lex {
				e.score = 0
			}
			w.last = e
			if j < len(created) && created[j] != nil && *created[j] >= lo && *created[j] <= hi {
				w.kept = append(w.kept, e)
			}
		}
	}
	return nil
}

// tooFar is the refusal of a dated page too far into its sort to find
// within MaxSortedWalk entries.
func tooFar(q store.OrderQuery) error {
	by := map[string]string{"customer": "customer", "updated": "last update", "total": "total"}[q.Sort.Field()]
	return store.Errorf(store.EBROAD, "page %d of the orders created in these dates, sorted by %s, is too far into that sort to find: "+
		"narrow the dates (from, to) to at most %s orders, choose a status, sort by created date, or ask for a page nearer the start or the end",
		q.Page, by, groupThousands(sortedRange))
}

// groupThousands writes n with commas (50,000).
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// anys boxes strings as command arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// scoreList reads a ZMSCORE answer: one score per member, nil for a member
// the set does not hold (RESP2 sends scores as text, RESP3 as doubles).
func scoreList(c *redis.Cmd) ([]*float64, error) {
	vals, err := c.Slice()
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]*float64, len(vals))
	for i, v := range vals {
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case string:
			if f, err = strconv.ParseFloat(x, 64); err != nil {
				return nil, &store.Error{Code: store.EINTERNAL, Message: "the order store answered with an error", Err: fmt.Errorf("ZMSCORE answered %q", x)}
			}
		case int64:
			f = float64(x)
		default:
			continue
		}
		out[i] = &f
	}
	return out, nil
}
