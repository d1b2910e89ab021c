package redisstore

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// ListOrders returns one page of orders that match q. Without a search, the
// page is a range of the sort's index (for the created sort, a score range
// when dates are given): O(log N + page), in two or three pipelined round
// trips whatever the page size. One search term is a range of the term
// index (search.go), also O(log N + page) with an exact total. Several
// terms intersect their matches from the indexes (search.go); they, and
// a search or a date range combined with another filter, examine at most
// MaxCandidates orders (Page.TotalIsLowerBound says when it stopped
// early). A search in a sort asked for is sorted when it has at most
// MaxCandidates matches (searchSorted).
func (s *Store) ListOrders(ctx context.Context, q store.OrderQuery) (store.OrderPage, error) {
	q.Normalize()
	out := store.OrderPage{Page: q.Page, PerPage: q.PerPage, Orders: []store.Order{}}
	offset := int64(q.Page-1) * int64(q.PerPage)
	if int64(q.Page) > 1<<40/store.MaxPerPage || offset > 1<<40 {
		// Far past any end, without overflow: empty, with the total counted.
		offset = 1 << 40
	}
	keep := orderFilter(q)
	terms := queryTerms(q.Q)
	if len(terms) == 0 && q.Q != "" {
		// Only punctuation or symbols: no word starts with them.
		out.MatchOrder = true
		return out, nil
	}
	dated := !q.From.IsZero() || !q.To.IsZero()
	if len(terms) > 0 && q.SortAsked {
		if ok, err := s.searchSorted(ctx, q, terms, offset, keep, &out); err != nil || ok {
			return out, err
		}
		out.SortTooBroad = true
	}
	switch {
	case len(terms) == 0 && (!dated || q.Sort.Field() == "created"):
		return out, s.listSorted(ctx, q, offset, keep, &out)
	case len(terms) == 0:
		return out, s.datedSorted(ctx, q, offset, keep, &out)
	case len(terms) == 1 && !dated && len(terms[0]) <= dupDepth:
		out.MatchOrder = true
		return out, s.searchOne(ctx, q, terms[0], offset, &out)
	}
	out.MatchOrder = true
	driver := 0
	var counts []int64
	if len(terms) > 1 {
		var err error
		if counts, err = s.termCounts(ctx, terms, q.Status); err != nil {
			return out, err
		}
		for i := range terms {
			if counts[i] < counts[driver] {
				driver = i
			}
		}
	}
	limit := store.MaxCandidates
	if !dated {
		limit = intersectLimit(terms, counts, driver)
	}
	ids, more, err := s.termCandidatesUpTo(ctx, terms[driver], q.Status, limit)
	if err != nil {
		return out, err
	}
	if id, ok := store.ParseID(terms[driver]); ok {
		// The order the digits name comes first.
		ids = append([]int64{id}, slices.DeleteFunc(ids, func(x int64) bool { return x == id })...)
	}
	// The other terms' matches, when each is a short term with at most
	// limit of them: the candidates outside any are dropped without
	// being read (one round trip per term instead of reading thousands of
	// orders). When every term is known so and there is no date filter, the
	// candidates left are the answer (they are of the query's status
	// already: each status has its own term sets).
	allKnown := !dated
	for _, i := range byCount(counts, driver) {
		t := terms[i]
		if !readCheaper(counts[i], limit, len(ids)) || len(t) > dupDepth {
			allKnown = false
			continue
		}
		tids, tmore, err := s.termCandidatesUpTo(ctx, t, q.Status, limit)
		if err != nil {
			return out, err
		}
		if tmore {
			allKnown = false
			continue
		}
		in := make(map[int64]bool, len(tids)+1)
		for _, id := range tids {
			in[id] = true
		}
		if id, ok := store.ParseID(t); ok {
			in[id] = true // the order the digits name, if it exists
		}
		ids = slices.DeleteFunc(ids, func(id int64) bool { return !in[id] })
	}
	if !allKnown && len(ids) > store.MaxCandidates {
		// Still to be read and checked: at most MaxCandidates of them.
		ids, more = ids[:store.MaxCandidates], true
	}
	all := func(o *store.Order) bool {
		if !keep(o) {
			return false
		}
		ts := orderTerms(o)
		for _, t := range terms {
			if !matchesTerm(o, ts, t) {
				return false
			}
		}
		return true
	}
	if allKnown && len(terms) > 1 {
		// Exact (or, when the driver had more, at least this many): the
		// page's orders are read and checked, as a lagging entry may be.
		out.Total, out.TotalIsLowerBound = int64(len(ids)), more
		if digits, ok := store.ParseID(terms[driver]); ok && len(ids) > 0 && ids[0] == digits {
			// The id the digits name is a candidate whether or not it exists.
			if got, err := s.loadOrders(ctx, ids[:1], false); err != nil {
				return out, err
			} else if got[0] == nil || !keep(got[0]) {
				ids, out.Total = ids[1:], out.Total-1
			}
		}
		lo := min(offset, int64(len(ids)))
		page := ids[lo:min(lo+int64(q.PerPage), int64(len(ids)))]
		orders, err := s.loadMany(ctx, page, nil, true, all)
		if err != nil {
			return out, err
		}
		if !q.Items {
			for i := range orders {
				orders[i].Items = nil
			}
		}
		out.Orders = orders
		return out, nil
	}
	return out, s.listExamined(ctx, q, ids, more, all, &out)
}

// orderFilter is the status and date part of the query, checked on every order
// read (an index entry may lag its order for a moment on a Cluster).
func orderFilter(q store.OrderQuery) func(o *store.Order) bool {
	lo, hi := dayScores(q.From, q.To)
	return func(o *store.Order) bool {
		if q.Status != "" && o.Status != q.Status {
			return false
		}
		c := timeScore(o.CreatedAt, o.ID)
		return c >= lo && c <= hi
	}
}

// sortKeys are the sets a sort in a status ("" for all) reads: the name
// index (lexicographic, one set for all statuses too), or one score set per
// status whose members are decimal ids (merged for all statuses).
func (s *Store) sortKeys(sort store.Sort, st store.Status) (keys []string, lex bool) {
	if sort.Field() == "customer" {
		return []string{s.nameIndex(st)}, true
	}
	key := s.idIndex
	switch sort.Field() {
	case "updated":
		key = s.updatedIndex
	case "total":
		key = s.totalIndex
	}
	if st != "" {
		return []string{key(st)}, false
	}
	for _, st := range store.Statuses {
		keys = append(keys, key(st))
	}
	return keys, false
}

// mergeScript returns the total and one page of the union of score sets
// (KEYS, one per status) within a score range: ARGV offset, count, "1" for
// descending, lo, hi (ZCOUNT bounds), g, then l and h (the bounds of a
// search under way, or empty) and the most search steps this call may
// take. Scores are integers below 2^53 (timeScore, totalScore) and almost
// all distinct (sorts add the id's low bits); equal scores order by
// member, as Redis orders them. Near the start it merges the first
// offset+count of each set; deeper, a binary search over the scores finds
// the page's first score S (each step one ZCOUNT per set, O(log N) each;
// about 25-50 steps in all), then merges from S. A call takes at most
// the steps it is given and, when the search is not over, answers
// {total, "search", l, h}: the caller calls again with them (merged), so
// that no call runs long, on the embedded store either (its ZCOUNT sorts
// the whole set).
var mergeScript = redis.NewScript(mergeSource)

// mergeSource is mergeScript's Lua.
const mergeSource = `
local off, cnt, desc = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local lo, hi, g = ARGV[4], ARGV[5], tonumber(ARGV[6])
local steps = tonumber(ARGV[9])
local function fmt(x) return string.format('%.0f', x) end
local total = 0
for _, k in ipairs(KEYS) do total = total + redis.call('ZCOUNT', k, lo, hi) end
local out = {total}
if off >= total or cnt <= 0 then return out end
-- Past the middle, read the page from the other end (the reverse order is
-- exactly reversed, ties included) and turn it round at the end.
local flip = false
if off + cnt > 256 and off * 2 > total then
  flip, desc = true, not desc
  -- One assignment at a time: gopher-lua (miniredis) assigns the first
  -- before it evaluates the second of "a, b = x, y".
  local stop = math.min(off + cnt, total)
  cnt = stop - off
  off = total - stop
end
local from, skip = nil, off
if off + cnt > 256 then
  local function count(a, b)
    local n = 0
    for _, k in ipairs(KEYS) do n = n + redis.call('ZCOUNT', k, a, b) end
    return n
  end
  local l, h = tonumber(ARGV[7]), tonumber(ARGV[8])
  if not l or not h then
    for _, k in ipairs(KEYS) do
      local a = redis.call('ZRANGEBYSCORE', k, lo, hi, 'WITHSCORES', 'LIMIT', 0, 1)
      local b = redis.call('ZREVRANGEBYSCORE', k, hi, lo, 'WITHSCORES', 'LIMIT', 0, 1)
      if #a > 0 then
        local x, y = tonumber(a[2]), tonumber(b[2])
        if not l or x < l then l = x end
        if not h or y > h then h = y end
      end
    end
  end
  -- Every score is an integer below 2^53, so l + (h - l) / 2 is exact (l + h
  -- may not be). The search stops within g of the page's first score (g is
  -- one second of a time score: its low bits are the id's), and the merge
  -- below skips the few orders between.
  for _ = 1, steps do
    if h - l < g then break end
    if desc then
      local mid = l + math.ceil((h - l) / 2)
      if count(fmt(mid), hi) > off then l = mid else h = mid - 1 end
    else
      local mid = l + math.floor((h - l) / 2)
      if count(lo, fmt(mid)) > off then h = mid else l = mid + 1 end
    end
  end
  if h - l >= g then return {total, 'search', fmt(l), fmt(h)} end
  if desc then
    from = fmt(h)
    skip = off - count('(' .. from, hi)
  else
    from = fmt(l)
    skip = off - count(lo, '(' .. from)
  end
end
local all = {}
for _, k in ipairs(KEYS) do
  local r
  if desc then
    r = redis.call('ZREVRANGEBYSCORE', k, from or hi, lo, 'WITHSCORES', 'LIMIT', 0, skip + cnt)
  else
    r = redis.call('ZRANGEBYSCORE', k, from or lo, hi, 'WITHSCORES', 'LIMIT', 0, skip + cnt)
  end
  for i = 1, #r, 2 do all[#all + 1] = {tonumber(r[i + 1]), r[i]} end
end
table.sort(all, function(a, b)
  if a[1] ~= b[1] then
    if desc then return a[1] > b[1] end
    return a[1] < b[1]
  end
  if desc then return a[2] > b[2] end
  return a[2] < b[2]
end)
local page = {}
for i = skip + 1, math.min(skip + cnt, #all) do page[#page + 1] = all[i][2] end
if flip then
  for i = #page, 1, -1 do out[#out + 1] = page[i] end
else
  for i = 1, #page do out[#out + 1] = page[i] end
end
return out
`

// mergeSteps is how many steps of its binary search one call of
// mergeScript takes: 8 steps are 40 ZCOUNTs, well under a millisecond on
// Redis at a million orders, and about 40 sorts of a status set on the
// embedded store.
const mergeSteps = 8

// listSorted reads one page of a sort's index by rank (for the created
// sort with dates, by rank within the dates' score range), or, for all
// statuses of a score sort, merges the status sets (mergeScript).
func (s *Store) listSorted(ctx context.Context, q store.OrderQuery, offset int64, keep func(*store.Order) bool, out *store.OrderPage) error {
	keys, lex := s.sortKeys(q.Sort, q.Status)
	lo, hi := dayScores(q.From, q.To)
	var (
		members []string
		err     error
	)
	if len(keys) > 1 {
		out.Total, members, err = s.merged(ctx, keys, q.Sort, offset, int64(q.PerPage), lo, hi)
	} else {
		out.Total, members, err = s.ranked(ctx, keys[0], offset, int64(q.PerPage), q.Sort.Desc(), lo, hi)
	}
	if err != nil {
		return err
	}
	var lexMembers []string
	if lex {
		lexMembers = members
	}
	out.Orders, err = s.loadMany(ctx, sortedIDs(members, lex), lexMembers, q.Items, keep)
	return err
}

// sortedIDs reads the ids of sort-index members.
func sortedIDs(members []string, lex bool) []int64 {
	ids := make([]int64, 0, len(members))
	for _, m := range members {
		var id int64
		var ok bool
		if lex {
			id, ok = memberID(m)
		} else {
			id, ok = store.ParseID(m)
		}
		if ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// merged is one page of the union of score sets within [lo, hi].
func (s *Store) merged(ctx context.Context, keys []string, sort store.Sort, offset, count int64, lo, hi float64) (int64, []string, error) {
	d := "0"
	if sort.Desc() {
		d = "1"
	}
	g := 1 << 21 // a second of a time score
	if sort.Field() == "total" {
		g = 1 // a cent holds every order of that total: search to the order
	}
	l, h := "", ""
	for range 64/mergeSteps + 1 {
		c := mergeScript.Run(ctx, s.rdb, keys, offset, count, d, scoreArg(lo, false), scoreArg(hi, false), g, l, h, mergeSteps)
		res, err := c.Slice()
		if err != nil {
			return 0, nil, wrap(err)
		}
		if len(res) == 4 && res[1] == "search" {
			l, h = res[2].(string), res[3].(string)
			continue
		}
		return scriptPage(c)
	}
	// 64 steps narrow any range of scores below 2^53 to one: not reached.
	return 0, nil, store.Errorf(store.EINTERNAL, "the page's place in the sort was not found")
}

// ranked is one page of one set by rank: the whole set, or for a score
// range (dates), the ranks within it.
func (s *Store) ranked(ctx context.Context, key string, offset, count int64, desc bool, lo, hi float64) (int64, []string, error) {
	var base int64 // the rank the range starts at
	var totalCmd *redis.IntCmd
	if !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		var before *redis.IntCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			totalCmd = p.ZCount(ctx, key, scoreArg(lo, false), scoreArg(hi, false))
			if desc {
				before = p.ZCount(ctx, key, scoreArg(hi, true), "+inf")
			} else {
				before = p.ZCount(ctx, key, "-inf", scoreArg(lo, true))
			}
			return nil
		})
		if err != nil {
			return 0, nil, wrap(err)
		}
		base = before.Val()
		if offset >= totalCmd.Val() {
			return totalCmd.Val(), nil, nil
		}
		count = min(count, totalCmd.Val()-offset)
	}
	var rangeCmd *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		start := base + offset
		if desc {
			rangeCmd = p.ZRevRange(ctx, key, start, start+count-1)
		} else {
			rangeCmd = p.ZRange(ctx, key, start, start+count-1)
		}
		if totalCmd == nil {
			totalCmd = p.ZCard(ctx, key)
		}
		return nil
	})
	if err != nil {
		return 0, nil, wrap(err)
	}
	return totalCmd.Val(), rangeCmd.Val(), nil
}

// scoreArg writes a score bound for ZCOUNT, exclusive when open is set.
func scoreArg(f float64, open bool) string {
	var v string
	switch {
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsInf(f, 1):
		return "+inf"
	default:
		v = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if open {
		return "(" + v
	}
	return v
}

// searchOne answers one term of at most dupDepth bytes, in one status or
// all, with no date filter: an exact total and a page in match order,
// O(log N + page) (O(log² N + page) in all statuses), in two round trips. A term of digits also names an order by id: when it exists it
// comes first, and the term's other matches follow (without it).
func (s *Store) searchOne(ctx context.Context, q store.OrderQuery, t string, offset int64, out *store.OrderPage) error {
	count := int64(q.PerPage)
	exact, digits := store.ParseID(t)
	off, n := pinWindow(offset, count, digits)
	var (
		page   func() (int64, []string, error)
		exactH *redis.MapStringStringCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		page = s.pageCmd(ctx, p, t, q.Status, off, n)
		if digits {
			exactH = p.HGetAll(ctx, s.orderKey(exact))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return wrap(err)
	}
	total, members, err := page()
	if err != nil {
		return err
	}
	var pinned *store.Order
	pinnedM := "" // pinned's first entry among the term's matches
	if digits {
		if o, ok := decodeOrder(exact, exactH.Val(), true); ok && (q.Status == "" || o.Status == q.Status) {
			pinned = &o
			for _, ot := range orderTerms(pinned) {
				if strings.HasPrefix(ot, t) {
					pinnedM = termMember(ot, exact)
					break
				}
			}
		}
	}
	members, out.Total = pinPage(members, total, offset, count, digits, exact, pinned != nil, pinnedM)
	ids := sortedIDs(members, true)
	stillMatches := func(o *store.Order) bool {
		return (q.Status == "" || o.Status == q.Status) && hasTermPrefix(orderTerms(o), t)
	}
	orders, err := s.loadMany(ctx, ids, members, true, stillMatches)
	if err != nil {
		return err
	}
	if pinned != nil && offset == 0 {
		orders = append([]store.Order{*pinned}, orders...)
	}
	if !q.Items {
		for i := range orders {
			orders[i].Items = nil
		}
	}
	out.Orders = orders
	return nil
}

// listExamined fills out with the candidates ids keep accepts.
func (s *Store) listExamined(ctx context.Context, q store.OrderQuery, ids []int64, more bool, keep func(*store.Order) bool, out *store.OrderPage) error {
	orders, total, lower, err := s.examine(ctx, q, ids, more, keep)
	if err != nil {
		return err
	}
	out.Orders, out.Total, out.TotalIsLowerBound = orders, total, lower
	return nil
}

// loadMany reads the given orders in one pipelined round trip, skipping
// (and repairing) index entries whose order is gone, and orders keep
// refuses (an entry that lags its order). lexMembers are the name- or
// term-index members the ids came from, if they did, for the repair.
func (s *Store) loadMany(ctx context.Context, ids []int64, lexMembers []string, items bool, keep func(*store.Order) bool) ([]store.Order, error) {
	orders := make([]store.Order, 0, len(ids))
	if len(ids) == 0 {
		return orders, nil
	}
	got, err := s.loadOrders(ctx, ids, items)
	if err != nil {
		return nil, err
	}
	var missing []int64
	for i, o := range got {
		if o == nil {
			missing = append(missing, ids[i])
			continue
		}
		if keep(o) {
			orders = append(orders, *o)
		}
	}
	if len(missing) > 0 {
		go s.repair(missing, lexMembers)
	}
	return orders, nil
}

// repair removes the index entries of orders that no longer exist: the
// entries whose member is the id, and those of lex (name- and term-index
// members) that end in one of the ids. Only a Cluster, where index entries
// are written outside the order's transaction, can leave such entries
// behind (a crash between the two); each id is checked again first, so an
// order that exists keeps its entries.
func (s *Store) repair(ids []int64, lex []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, id := range ids {
		if n, err := s.rdb.Exists(ctx, s.orderKey(id)).Result(); err != nil || n != 0 {
			continue
		}
		m := strconv.FormatInt(id, 10)
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, ix := range orders.indexes(s) {
				p.ZRem(ctx, ix.Key, m)
			}
			for _, l := range lex {
				if got, ok := memberID(l); !ok || got != id {
					continue
				}
				// A name entry, or a term entry with its dup entries.
				p.ZRem(ctx, s.nameIndex(""), l)
				for _, st := range store.Statuses {
					p.ZRem(ctx, s.nameIndex(st), l)
				}
				if t, _, _ := strings.Cut(l, "\x00"); t != "" {
					for _, st := range store.Statuses {
						p.ZRem(ctx, s.termIndex(t, st), l)
						for d := 1; d <= dupDepth; d++ {
							p.ZRem(ctx, s.dupIndex(t, st, d), l)
						}
					}
				}
			}
			return nil
		})
	}
}
