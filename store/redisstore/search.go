package redisstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"golang.org/x/text/cases"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"orders/store"
)

// Search: an order matches q when every term of q matches it. Text is
// split into words the way names are (wordsOf: at anything that is not a
// letter, digit or mark), and a search term is a run of words joined by one
// space. Every order has search terms: for each word of its customer name
// and of its email address, that word and the words after it ("tim berners
// lee", "berners lee", "lee"; "ada example com", "example com", "com"), and
// each item's SKU as one run ("kbd 60"). A query term is split the same way
// ("Berners-Lee" → "berners lee", "ada@exa" → "ada exa") and matches an
// order when it is a prefix of one of its terms (or is the order's id): a
// prefix of a word, or of consecutive words from the first on.
//
// The term index ix:{w} is one lexicographic sorted set of members
// "term NUL inverted-id": a prefix p is the range [p, p\xff), in match order
// (by term, newest first within a term). An order whose terms share a
// prefix ("KBD-60" and "KBD-61") is in that range once per term, so the
// index alone would count it twice. The dup sets fix that exactly: sort an
// order's terms t1 < t2 < …; the terms a prefix p matches are consecutive,
// and ti is not the first of them exactly when p is also a prefix of t(i-1),
// i.e. when len(p) <= lcp(t(i-1), ti). So ti's member also goes in the dup
// sets ix:{w}:d1 … ix:{w}:dK for K = min(lcp, dupDepth), and for a term of
// length L <= dupDepth bytes the orders matching are
//
//	ZLEXCOUNT ix:{w} [p (p\xff  -  ZLEXCOUNT ix:{w}:dL [p (p\xff
//
// and a page is the range of ix:{w} without the members in ix:{w}:dL (the
// script pageScript finds where page N starts by a binary search over the
// dup set's ranks). Both cost O(log N + page). All these keys share the
// hash tag {w}, so the scripts run on a Cluster too (one slot, one node).
//
// Each status has its own term and dup sets, so a term within one status is
// the same exact count and page. A term in every status reads the five
// (unionScript): the counts add up, and page N starts at the member that
// has exactly offset counted members before it in all five, found by
// bisecting the sets' rank ranges with ZLEXCOUNTs, O(log² N).
//
// Terms longer than dupDepth bytes, several terms, and a term with a date
// filter walk candidates instead: the matches of the most selective term
// (in the query's status), in match order. The other terms' matches are
// read as id sets and intersected with them, rarest first, while that is
// cheaper than reading the candidates left (intersectLimit, readCheaper);
// the candidates left are then checked against the rest of the query, at
// most MaxCandidates of them; past that the total is a lower bound.

// dupDepth is the longest query term (in bytes) answered from the dup sets.
const dupDepth = 16

// termIndex and dupIndex name the search sets of the orders in status st
// whose terms start like t: the sets are split by status, so that a search
// within one status is exact and O(log N + page) like a search of all, and
// by a term's first character ("ix:{w}:pending:k", "ix:{w}:pending:k:3"):
// a prefix's range lies in one of them, and the embedded store (miniredis
// sorts a whole set for every range it reads) reads a small set instead of
// one with every term.
func (s *Store) termIndex(t string, st store.Status) string {
	if i := slices.Index(store.Statuses, st); i >= 0 && t[0] < utf8.RuneSelf {
		return s.keys.term[i][t[0]]
	}
	_, n := utf8.DecodeRuneInString(t)
	return s.prefix + "ix:{w}:" + string(st) + ":" + t[:n]
}

func (s *Store) dupIndex(t string, st store.Status, depth int) string {
	if i := slices.Index(store.Statuses, st); i >= 0 && t[0] < utf8.RuneSelf && depth >= 1 && depth <= dupDepth {
		return s.keys.dup[i][t[0]][depth]
	}
	return s.termIndex(t, st) + ":" + strconv.Itoa(depth)
}

// termSets lists the term sets a search for t in status st reads (every
// status's when st is empty), then their dup sets for t's length.
func (s *Store) termSets(t string, st store.Status) []string {
	sts := store.Statuses
	if st != "" {
		sts = []store.Status{st}
	}
	keys := make([]string, 0, 2*len(sts))
	for _, st := range sts {
		keys = append(keys, s.termIndex(t, st))
	}
	for _, st := range sts {
		keys = append(keys, s.dupIndex(t, st, min(len(t), dupDepth)))
	}
	return keys
}

// termPattern matches the names of every search set and every customer's
// orders (for Repair's SCAN): their members end in the order's id as
// memberID reads it.
func (s *Store) termPattern() string { return globEscape(s.prefix) + "ix:{w}:*" }

// globEscape escapes the characters SCAN's MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// foldTerm is the searchable form of text: NFC, without combining marks
// ("José" → "jose"), case-folded ("Straße" → "strasse"). Pure ASCII text
// is only lower-cased, without allocating more than the result.
func foldTerm(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || s[i] == 0 {
			ascii = false
			break
		}
	}
	if ascii {
		return foldName(s)
	}
	// Accents go from Latin, Greek and Cyrillic letters only: in other
	// scripts (Devanagari's virama and vowel signs) the marks are part of
	// the word.
	d := norm.NFD.String(s)
	b := make([]rune, 0, len(d))
	accented := false
	for _, r := range d {
		if r == 0 {
			continue
		}
		if unicode.Is(unicode.Mn, r) {
			if accented {
				continue
			}
		} else {
			accented = unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic)
		}
		b = append(b, r)
	}
	out, _, err := transform.String(transform.Chain(cases.Fold(), norm.NFC), string(b))
	if err != nil {
		return foldName(s)
	}
	return out
}

// wordsOf splits folded text into words: runs of letters, digits and
// marks.
func wordsOf(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	})
}

// orderTerms returns o's search terms, sorted, each once, without a term
// that is a prefix of another (whatever matches it matches the longer one).
func orderTerms(o *store.Order) []string {
	terms := wordTerms(nil, o.Customer)
	terms = wordTerms(terms, o.Email)
	for i := range o.Items {
		if sku := codeTerm(o.Items[i].SKU); sku != "" {
			terms = append(terms, sku)
		}
	}
	return distinctTerms(terms)
}

// wordTerms appends the search terms of text made of words (a name, a
// company, an email address): for each word, the run of words from it to
// the end, joined by a space, so that a query of consecutive words is a
// prefix of one term.
func wordTerms(out []string, text string) []string {
	w := wordsOf(foldTerm(text))
	for i := range w {
		out = append(out, strings.Join(w[i:], " "))
	}
	return out
}

// codeTerm is the one search term of a code (a SKU): its words joined by a
// space ("KBD-60" → "kbd 60"), so that it is found from its start only.
func codeTerm(code string) string { return strings.Join(wordsOf(foldTerm(code)), " ") }

// distinctTerms sorts terms and drops each that starts another: whatever
// finds it finds the longer one, so the record is listed under that.
func distinctTerms(terms []string) []string {
	slices.Sort(terms)
	out := terms[:0]
	for i, t := range terms {
		// Sorted, so a term that is a prefix of another sits right before
		// one that starts with it.
		if i+1 < len(terms) && strings.HasPrefix(terms[i+1], t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// termMember is an order's entry for term t: the term, NUL, its inverted id
// (the name indexes' encoding, so memberID reads it back).
func termMember(t string, id int64) string {
	b := make([]byte, 0, len(t)+12)
	b = append(b, t...)
	b = append(b, 0)
	return string(appendInvID(b, id))
}

// termEntries are o's entries in the term index and the dup sets.
func (s *Store) termEntries(o *store.Order, out []ixEntry) []ixEntry {
	return appendTermEntries(out, orderTerms(o), o.ID,
		func(t string) string { return s.termIndex(t, o.Status) },
		func(t string, d int) string { return s.dupIndex(t, o.Status, d) })
}

// appendTermEntries appends the entries of record id's distinct terms
// (distinctTerms) in the term sets set names and the dup sets dup names
// (see the top of this file).
func appendTermEntries(out []ixEntry, terms []string, id int64, set func(t string) string, dup func(t string, depth int) string) []ixEntry {
	for i, t := range terms {
		m := termMember(t, id)
		out = append(out, ixEntry{set(t), m, 0})
		if i == 0 {
			continue
		}
		for d := 1; d <= min(commonPrefix(terms[i-1], t), dupDepth); d++ {
			out = append(out, ixEntry{dup(t, d), m, 0})
		}
	}
	return out
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// queryTerms splits a query into folded terms at white space; each term's
// words (wordsOf, as a name's are split) are joined by one space, so that
// "Berners-Lee", "O'Brien", "jean-luc" and "ada@exa" match those words in a
// row ("berners lee") and punctuation around a word ("Hopper,") is dropped.
// A part with no letter or digit is no term.
func queryTerms(q string) []string {
	var out []string
	for _, f := range strings.Fields(foldTerm(q)) {
		if t := strings.Join(wordsOf(f), " "); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// matchesTerm reports whether query term t matches o: its id, or a prefix
// of one of its terms.
func matchesTerm(o *store.Order, terms []string, t string) bool {
	if id, ok := store.ParseID(t); ok && id == o.ID {
		return true
	}
	return hasTermPrefix(terms, t)
}

// hasTermPrefix reports whether t is a prefix of one of terms.
func hasTermPrefix(terms []string, t string) bool {
	for _, ot := range terms {
		if strings.HasPrefix(ot, t) {
			return true
		}
	}
	return false
}

// pinWindow is the range of a term's matches to read for a page at offset
// of count: with digits, one earlier and one longer, so that wherever the
// record the digits name turns out to be, the page is in it.
func pinWindow(offset, count int64, digits bool) (off, n int64) {
	if digits && offset > 0 {
		return offset - 1, count + 1
	}
	return offset, count
}

// pinPage makes a page of the list [the record a digits term names] + (the
// term's matches without it) from the matches read over pinWindow: found
// says that record exists (within the query's filter), m is its first
// entry among the matches ("" when it has none: it is counted here, not by
// the index). It returns the page's matches (the record itself goes first
// on the first page, by the caller) and the total.
func pinPage(members []string, total, offset, count int64, digits bool, exact int64, found bool, m string) ([]string, int64) {
	switch {
	case !found && digits && offset > 0:
		members = members[min(1, len(members)):] // the one read before
	case found && m == "":
		total++
	case found:
		if offset > 0 && len(members) > 0 && m < members[0] {
			members = members[1:] // it lies before this page
		}
		// By id, not by member: the record may have been renamed since.
		members = slices.DeleteFunc(members, func(x string) bool { id, _ := memberID(x); return id == exact })
	}
	want := count
	if found && offset == 0 {
		want--
	}
	return members[:min(int64(len(members)), want)], total
}

// lexRange is the term-index range of the members starting with t.
func lexRange(t string) (lo, hi string) { return "[" + t, "(" + t + "\xff" }

// pageScript returns the total and one page of the orders matching one
// term: KEYS ix:{w} and its dup set for the term's length; ARGV lo, hi,
// offset, count. The page is the offset-th to (offset+count-1)-th member of
// the range that is not in the dup set. With d_j the j-th dup member in the
// range and a_j its rank in the range, a_j - j members that count come
// before d_j; that grows with j, so a binary search finds how many dups lie
// before the page's first member, which then sits at rank offset + that.
var pageScript = redis.NewScript(pageSource)

// pageSource is pageScript's Lua.
const pageSource = `
local w, d = KEYS[1], KEYS[2]
local lo, hi = ARGV[1], ARGV[2]
local off, cnt = tonumber(ARGV[3]), tonumber(ARGV[4])
local a = redis.call('ZLEXCOUNT', w, lo, hi)
local nd = redis.call('ZLEXCOUNT', d, lo, hi)
local out = {a - nd}
if a == 0 or off >= a - nd or cnt <= 0 then return out end
local r0 = redis.call('ZRANK', w, redis.call('ZRANGEBYLEX', w, lo, hi, 'LIMIT', 0, 1)[1])
local j = 0
if nd > 0 then
  local d0 = redis.call('ZRANK', d, redis.call('ZRANGEBYLEX', d, lo, hi, 'LIMIT', 0, 1)[1])
  local l, h = 0, nd
  while l < h do
    local mid = math.floor((l + h) / 2)
    local m = redis.call('ZRANGE', d, d0 + mid, d0 + mid)[1]
    -- A dup entry without its term entry (a Cluster settle between its
    -- ZREMs, or a crash before the reconciler ran) counts as before the page.
    local r = m and redis.call('ZRANK', w, m)
    if not r or r - r0 - mid <= off then l = mid + 1 else h = mid end
  end
  j = l
end
local pos, stop = r0 + off + j, r0 + a
while #out <= cnt and pos < stop do
  local batch = redis.call('ZRANGE', w, pos, math.min(pos + 2 * cnt, stop) - 1)
  if #batch == 0 then break end
  for _, m in ipairs(batch) do
    if #out > cnt then break end
    if nd == 0 or not redis.call('ZSCORE', d, m) then out[#out + 1] = m end
  end
  pos = pos + #batch
end
return out
`

// unionScript is pageScript over several statuses' sets: KEYS the n term
// sets, then their n dup sets; ARGV lo, hi, offset, count. It answers the
// total, then how many of the members that follow the caller skips, then
// for each set how many members follow and those members. The caller
// merges the sets' members (by bytes: Lua's string order follows the
// locale) and takes count of them after the skipped ones.
//
// The first 256 matches are read from the start of each set. A deeper page
// starts at y, the counted member with exactly offset counted members
// before it in the union: y is the largest member m with before(m) <=
// offset, found by bisection (each step halves the widest remaining rank
// range of one set and narrows the others by the pivot's rank in them). A
// page of more than 256 (the candidates of a search of several terms) also
// ends at the member after it, found the same way, so that each set is read
// only as far as the union needs.
var unionScript = redis.NewScript(unionSource)

// unionSource is unionScript's Lua.
const unionSource = `
local n = #KEYS / 2
local lo, hi = ARGV[1], ARGV[2]
local off, cnt = tonumber(ARGV[3]), tonumber(ARGV[4])
local p = string.sub(lo, 2)
local r0, e0, total = {}, {}, 0
for t = 1, n do
  r0[t] = redis.call('ZLEXCOUNT', KEYS[t], '-', '(' .. p)
  local a = redis.call('ZLEXCOUNT', KEYS[t], lo, hi)
  e0[t] = r0[t] + a
  total = total + a - redis.call('ZLEXCOUNT', KEYS[n + t], lo, hi)
end
local out = {total}
if off >= total or cnt <= 0 then return out end
local function before(m)
  local b, lt = 0, {}
  for t = 1, n do
    lt[t] = redis.call('ZLEXCOUNT', KEYS[t], '-', '(' .. m)
    b = b + lt[t] - r0[t] - redis.call('ZLEXCOUNT', KEYS[n + t], lo, '(' .. m)
  end
  return b, lt
end
local function kth(k)
  local L, H, best = {}, {}, nil
  for t = 1, n do
    L[t] = r0[t]
    H[t] = e0[t]
  end
  for _ = 1, 64 * n do
    local s, w = 0, 0
    for t = 1, n do
      if H[t] - L[t] > w then
        s = t
        w = H[t] - L[t]
      end
    end
    if s == 0 then break end
    local mid = L[s] + math.floor(w / 2)
    local m = redis.call('ZRANGE', KEYS[s], mid, mid)[1]
    if not m then break end
    local b, lt = before(m)
    if b <= k then
      best = m
      for t = 1, n do
        if lt[t] > L[t] then L[t] = lt[t] end
      end
      L[s] = mid + 1
    else
      for t = 1, n do
        if lt[t] < H[t] then H[t] = lt[t] end
      end
      H[s] = mid
    end
  end
  return best
end
local from, to, want = {}, {}, cnt
for t = 1, n do
  from[t] = r0[t]
  to[t] = e0[t]
end
if off + cnt <= 256 then
  want = off + cnt
  out[2] = off
else
  out[2] = 0
  local y = kth(off)
  if not y then return {total} end
  for t = 1, n do from[t] = redis.call('ZLEXCOUNT', KEYS[t], '-', '(' .. y) end
  if cnt > 256 and off + cnt < total then
    local z = kth(off + cnt)
    if z then
      for t = 1, n do to[t] = redis.call('ZLEXCOUNT', KEYS[t], '-', '(' .. z) end
    end
  end
end
for t = 1, n do
  local got, pos, d = {}, from[t], KEYS[n + t]
  while #got < want and pos < to[t] do
    local batch = redis.call('ZRANGE', KEYS[t], pos, math.min(pos + 2 * (want - #got) + 8, to[t]) - 1)
    if #batch == 0 then break end
    for _, m in ipairs(batch) do
      if #got >= want then break end
      if not redis.call('ZSCORE', d, m) then got[#got + 1] = m end
    end
    pos = pos + #batch
  end
  out[#out + 1] = #got
  for _, m in ipairs(got) do out[#out + 1] = m end
end
return out
`

// pageCmd queues the script that answers one page of the orders matching
// one term of at most dupDepth bytes in status st (every status when
// empty), and returns how to read its answer: the total and the page's
// members in match order.
func (s *Store) pageCmd(ctx context.Context, p redis.Scripter, t string, st store.Status, offset, count int64) func() (int64, []string, error) {
	lo, hi := lexRange(t)
	keys := s.termSets(t, st)
	if len(keys) == 2 {
		cmd := pageScript.Eval(ctx, p, keys, lo, hi, offset, count)
		return func() (int64, []string, error) { return scriptPage(cmd) }
	}
	cmd := unionScript.Eval(ctx, p, keys, lo, hi, offset, count)
	return func() (int64, []string, error) { return unionPage(cmd, count) }
}

// unionPage reads unionScript's answer: the sets' members merged in match
// order, the skipped ones dropped, count of them kept.
func unionPage(c *redis.Cmd, count int64) (int64, []string, error) {
	res, err := c.Slice()
	if err != nil {
		return 0, nil, wrap(err)
	}
	if len(res) < 2 {
		total := int64(0)
		if len(res) == 1 {
			total, _ = res[0].(int64)
		}
		return total, nil, nil
	}
	total, _ := res[0].(int64)
	skip, _ := res[1].(int64)
	var members []string
	for i := 2; i < len(res); {
		n, _ := res[i].(int64)
		i++
		for j := 0; j < int(n) && i < len(res); j, i = j+1, i+1 {
			if m, ok := res[i].(string); ok {
				members = append(members, m)
			}
		}
	}
	slices.Sort(members)
	members = slices.Compact(members) // a member in two statuses' sets for a moment (a Cluster write in flight)
	members = members[min(int(skip), len(members)):]
	return total, members[:min(int(count), len(members))], nil
}

// scriptPage reads pageScript's answer.
func scriptPage(c *redis.Cmd) (int64, []string, error) {
	res, err := c.Slice()
	if err != nil {
		return 0, nil, wrap(err)
	}
	if len(res) == 0 {
		return 0, nil, nil
	}
	total, _ := res[0].(int64)
	members := make([]string, 0, len(res)-1)
	for _, v := range res[1:] {
		if m, ok := v.(string); ok {
			members = append(members, m)
		}
	}
	return total, members, nil
}

// termCounts returns how many orders in status st (every status when
// empty) each term matches (exact for a term of at most dupDepth bytes;
// for a longer one, the entries, which may count an order twice: only used
// to choose the most selective term).
func (s *Store) termCounts(ctx context.Context, terms []string, st store.Status) ([]int64, error) {
	cmds := make([][]*redis.IntCmd, len(terms))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range terms {
			lo, hi := lexRange(t)
			for _, k := range s.termSets(t, st) {
				cmds[i] = append(cmds[i], p.ZLexCount(ctx, k, lo, hi))
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]int64, len(terms))
	for i := range terms {
		half := len(cmds[i]) / 2
		for j, c := range cmds[i] {
			if j < half {
				out[i] += c.Val()
			} else {
				out[i] -= c.Val()
			}
		}
	}
	return out, nil
}

// termCandidatesUpTo returns, in match order and each once, up to limit
// orders in status st (every status when empty) matching term t, and
// whether there may be more (lexCandidates).
func (s *Store) termCandidatesUpTo(ctx context.Context, t string, st store.Status, limit int) ([]int64, bool, error) {
	sets := s.termSets(t, st)
	return s.lexCandidates(ctx, sets[:len(sets)/2], t, limit)
}

// maxIntersect bounds the index entries a search of several terms reads
// from each term's sets (a full name at a million orders: each word 50,000
// matches, the name 2,500): the matches are the intersection of the terms'
// ids, found from the indexes alone, with an exact total, where reading
// MaxCandidates orders to check them would give a lower bound.
const maxIntersect = 100_000

// intersectLimit is how many matches of each term a search of several
// terms reads (counts are the terms' exact counts, driver the rarest):
// MaxCandidates, or maxIntersect when the rarest has more than
// MaxCandidates, at most maxIntersect, and is short enough for an exact
// count. A term with more than the limit is not read: the candidates left
// are read and checked against it, at most MaxCandidates of them.
func intersectLimit(terms []string, counts []int64, driver int) int {
	if len(terms) < 2 || counts[driver] > maxIntersect || len(terms[driver]) > dupDepth {
		return store.MaxCandidates
	}
	return maxIntersect
}

// readCheaper says whether the matches of a term with count matches are
// read (to intersect) rather than the candidates left (n of them) read
// and checked against it: a term with at most limit matches, unless the
// candidates are few enough to check and far fewer than its matches.
func readCheaper(count int64, limit, n int) bool {
	return count <= int64(limit) && (n > store.MaxCandidates || count <= 10*int64(n))
}

// byCount lists the indexes of terms but driver, fewest matches first.
func byCount(counts []int64, driver int) []int {
	var out []int
	for i := range counts {
		if i != driver {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(counts[a], counts[b]) })
	return out
}

// lexCandidates returns, in match order (by member) and each once, up to
// limit ids of the members starting with t of the term sets sets, and
// whether there may be more. The sets are read in chunks (ZRANGEBYLEX,
// at most sortChunk members each, the first walkFirst) and merged here,
// each set read only as far as the merge needs it: a few round trips, no
// command that reads more than a chunk, on every store (the embedded one
// sorts a set for each range it reads: one per chunk).
func (s *Store) lexCandidates(ctx context.Context, sets []string, t string, limit int) ([]int64, bool, error) {
	lo, hi := lexRange(t)
	type cursor struct {
		key, from string
		chunk     int64
		kept      []string
		last      string
		started   bool
		done      bool
		cmd       *redis.StringSliceCmd
	}
	cs := make([]*cursor, len(sets))
	for i, k := range sets {
		cs[i] = &cursor{key: k, from: lo, chunk: walkFirst}
	}
	var ids []int64
	seen := map[int64]bool{}
	for len(ids) < limit {
		var head *cursor
		for _, c := range cs {
			if len(c.kept) > 0 && (head == nil || c.kept[0] < head.kept[0]) {
				head = c
			}
		}
		var behind []*cursor
		for _, c := range cs {
			if !c.done && (head == nil || !c.started || c.last < head.kept[0]) {
				behind = append(behind, c)
			}
		}
		if len(behind) == 0 {
			if head == nil {
				return ids, false, nil
			}
			if id, ok := memberID(head.kept[0]); ok && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
			head.kept = head.kept[1:]
			continue
		}
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range behind {
				c.cmd = p.ZRangeByLex(ctx, c.key, &redis.ZRangeBy{Min: c.from, Max: hi, Count: c.chunk})
			}
			return nil
		})
		if err != nil {
			return nil, false, wrap(err)
		}
		for _, c := range behind {
			read := c.cmd.Val()
			c.started = true
			c.done = int64(len(read)) < c.chunk
			c.chunk = min(2*c.chunk, sortChunk)
			if len(read) > 0 {
				c.kept = append(c.kept, read...)
				c.last = read[len(read)-1]
				c.from = "(" + c.last
			}
		}
	}
	more := false
	for _, c := range cs {
		more = more || !c.done || len(c.kept) > 0
	}
	return ids, more, nil
}

// loadBatch orders are read in one pipelined round trip while candidates
// are examined.
const loadBatch = 1000

// examine reads the candidates ids (first ones first; more says ids is not
// all of them), keeps those keep accepts, and returns the page of them the
// query asks for, how many were kept, and whether that count is a lower
// bound.
func (s *Store) examine(ctx context.Context, q store.OrderQuery, ids []int64, more bool, keep func(o *store.Order) bool) ([]store.Order, int64, bool, error) {
	offset := int64(q.Page-1) * int64(q.PerPage)
	page := []store.Order{}
	var kept int64
	for start := 0; start < len(ids); start += loadBatch {
		got, err := s.loadOrders(ctx, ids[start:min(start+loadBatch, len(ids))], true)
		if err != nil {
			return nil, 0, false, err
		}
		for _, o := range got {
			if o == nil || !keep(o) {
				continue
			}
			if kept >= offset && kept < offset+int64(q.PerPage) {
				if !q.Items {
					o.Items = nil
				}
				page = append(page, *o)
			}
			kept++
		}
	}
	return page, kept, more, nil
}

// loadOrders reads orders in one pipelined round trip; a missing or
// damaged one is nil (and a damaged one is logged).
func (s *Store) loadOrders(ctx context.Context, ids []int64, items bool) ([]*store.Order, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.orderKey(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	out := make([]*store.Order, len(ids))
	for i, id := range ids {
		o, ok := decodeOrder(id, cmds[i].Val(), items)
		if !ok {
			if h := cmds[i].Val(); len(h) > 0 {
				s.damaged(s.orderKey(id), h)
			}
			continue
		}
		out[i] = &o
	}
	return out, nil
}
