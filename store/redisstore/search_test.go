package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"orders/store"
	"orders/testutil"
)

// The oracle: the documented search (docs/api.md) written as plainly as
// possible, independent of the store's indexes, for orders with ASCII text.

// oracleWords splits lower-cased text at anything not a letter or digit.
func oracleWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// oracleRuns are the runs of words of text from each word to the end,
// joined by a space: a query of consecutive words starts one of them.
func oracleRuns(s string) []string {
	w := oracleWords(s)
	var out []string
	for i := range w {
		out = append(out, strings.Join(w[i:], " "))
	}
	return out
}

func oracleTerms(o *store.Order) []string {
	out := append(oracleRuns(o.Customer), oracleRuns(o.Email)...)
	for _, it := range o.Items {
		if it.SKU != "" {
			out = append(out, strings.Join(oracleWords(it.SKU), " "))
		}
	}
	return out
}

// firstMatch is the smallest of o's terms that starts with t, or "". A
// term that starts another term of the same order ("grace" and
// "grace.hopper@example.com") is indexed as the longer one only, so the
// order is listed under that (the match order of docs/api.md).
func firstMatch(o *store.Order, t string) string {
	best := ""
	terms := oracleTerms(o)
	for _, w := range terms {
		longer := false
		for _, x := range terms {
			longer = longer || (len(x) > len(w) && strings.HasPrefix(x, w))
		}
		if longer {
			continue
		}
		if strings.HasPrefix(w, t) && (best == "" || w < best) {
			best = w
		}
	}
	return best
}

// oracleQueryTerms splits a query at spaces; each part's words (split as
// names are) make one term, joined by a space; each term once.
func oracleQueryTerms(q string) []string {
	var out []string
	for _, f := range strings.Fields(q) {
		if t := strings.Join(oracleWords(f), " "); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func oracleMatches(o *store.Order, t string) bool {
	return strconv.FormatInt(o.ID, 10) == t || firstMatch(o, t) != ""
}

// oracleSearch lists the orders matching every term of q and its filters,
// in match order: the order the most selective term's digits name first,
// then by that term's first matching word, newest first.
func oracleSearch(all []*store.Order, q store.OrderQuery) []int64 {
	terms := oracleQueryTerms(q.Q)
	driver, best := 0, -1
	for i, t := range terms {
		n := 0
		for _, o := range all {
			if firstMatch(o, t) != "" {
				n++
			}
		}
		if best < 0 || n < best {
			driver, best = i, n
		}
	}
	var hits []*store.Order
	for _, o := range all {
		ok := oracleFilter(o, q)
		for _, t := range terms {
			ok = ok && oracleMatches(o, t)
		}
		if ok {
			hits = append(hits, o)
		}
	}
	d := terms[driver]
	slices.SortFunc(hits, func(a, b *store.Order) int {
		return matchOrder(d, a.ID, b.ID, firstMatch(a, d), firstMatch(b, d))
	})
	out := []int64{}
	for _, o := range hits {
		out = append(out, o.ID)
	}
	return out
}

// matchOrder compares two records in match order for the driving term d:
// the record d names by id first, then by the first of its
// terms that d starts (aTerm, bTerm), newest first.
func matchOrder(d string, aID, bID int64, aTerm, bTerm string) int {
	ea, eb := strconv.FormatInt(aID, 10) == d, strconv.FormatInt(bID, 10) == d
	switch {
	case ea != eb && ea:
		return -1
	case ea != eb:
		return 1
	}
	if c := strings.Compare(aTerm, bTerm); c != 0 {
		return c
	}
	return int(bID - aID)
}

func oracleFilter(o *store.Order, q store.OrderQuery) bool {
	if q.Status != "" && o.Status != q.Status {
		return false
	}
	day := o.CreatedAt.UTC().Format(time.DateOnly)
	if !q.From.IsZero() && day < q.From.Format(time.DateOnly) {
		return false
	}
	return q.To.IsZero() || day <= q.To.Format(time.DateOnly)
}

// oracleSorted lists the orders of a query without search in its sort.
func oracleSorted(all []*store.Order, q store.OrderQuery) []int64 {
	var hits []*store.Order
	for _, o := range all {
		if oracleFilter(o, q) {
			hits = append(hits, o)
		}
	}
	cmpOf := map[string]func(a, b *store.Order) int{
		"created": func(a, b *store.Order) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return int(a.ID - b.ID)
		},
		"updated": func(a, b *store.Order) int {
			if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
				return c
			}
			return int(a.ID - b.ID)
		},
		"total": func(a, b *store.Order) int {
			if a.Total != b.Total {
				return int(a.Total - b.Total)
			}
			return int(a.ID - b.ID) // equal totals: by id
		},
		"customer": func(a, b *store.Order) int {
			if c := strings.Compare(strings.ToLower(a.Customer), strings.ToLower(b.Customer)); c != 0 {
				return c
			}
			return int(b.ID - a.ID) // equal names: newest first
		},
	}
	c := cmpOf[q.Sort.Field()]
	slices.SortFunc(hits, func(a, b *store.Order) int {
		if q.Sort.Desc() {
			return c(b, a)
		}
		return c(a, b)
	})
	out := []int64{}
	for _, o := range hits {
		out = append(out, o.ID)
	}
	return out
}

// checkQuery compares List with the oracle at several page sizes: the
// total on every page, and the pages joined.
func checkQuery(t *testing.T, f *fixture, q store.OrderQuery, want []int64) {
	t.Helper()
	for _, pp := range []int{1, 3, 7, 100} {
		q := q
		q.PerPage = pp
		var got []int64
		for page := 1; ; page++ {
			q.Page = page
			p := f.list(t, q)
			if p.Total != int64(len(want)) || p.TotalIsLowerBound {
				t.Errorf("List(q=%q status=%q sort=%q from=%v to=%v per_page=%d page=%d): total %d (lower bound %v), want %d",
					q.Q, q.Status, q.Sort, q.From, q.To, pp, page, p.Total, p.TotalIsLowerBound, len(want))
				return
			}
			for _, o := range p.Orders {
				got = append(got, o.ID)
			}
			if len(p.Orders) < pp || page > len(want)+1 {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("List(q=%q status=%q sort=%q from=%v to=%v per_page=%d), pages joined:\n got %v\nwant %v",
				q.Q, q.Status, q.Sort, q.From, q.To, pp, got, want)
			return
		}
	}
}

// sortedSearchSorts are the sorts the quick suite checks a search in: a
// score sort either way and the name sort.
var sortedSearchSorts = []store.Sort{store.SortTotal, store.SortUpdatedDesc, store.SortCustomerDesc}

var (
	searchWords = []string{"Ann", "Anna", "Annabel", "Annie", "Bo", "Bob", "Bobby", "Grace", "Hopper", "Hop", "O'Brien", "Jean-Luc", "12", "120"}
	searchSKUs  = []string{"KBD-60", "KBD-61", "KBD-6", "K", "ABC-1", "ABC-12", "ANN-1", "BOB.X", "120-A"}
)

// TestSearchAgreesWithTheOracle makes orders whose words, emails and SKUs
// share prefixes with each other (the case that counts an order twice in a
// plain index), changes and deletes some, and compares every prefix of
// every word, several terms, filters and every sort with the oracle.
func TestSearchAgreesWithTheOracle(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			rnd := rand.New(rand.NewPCG(7, uint64(len(tg.Name))))
			word := func() string { return searchWords[rnd.IntN(len(searchWords))] }
			input := func() store.OrderInput {
				in := store.OrderInput{Customer: ptr(word() + " " + word())}
				if rnd.IntN(3) == 0 {
					in.Customer = ptr(word() + " " + word() + " " + word())
				}
				if rnd.IntN(2) == 0 {
					in.Email = ptr(strings.ToLower(strings.ReplaceAll(word(), "'", "")) + "." + strings.ToLower(strings.ReplaceAll(word(), "'", "")) + "@example.com")
				}
				in.HasItems = true
				for range rnd.IntN(4) {
					in.Items = append(in.Items, store.ItemInput{SKU: searchSKUs[rnd.IntN(len(searchSKUs))],
						Name: "thing", Quantity: strconv.Itoa(1 + rnd.IntN(3)), UnitPrice: strconv.Itoa(rnd.IntN(3)) + ".50"})
				}
				return in
			}
			for range 60 {
				f.clock.Advance(time.Duration(rnd.IntN(3*24*3600)) * time.Second)
				if _, err := f.s.CreateOrder(ctx, input()); err != nil {
					t.Fatal(err)
				}
			}
			for range 25 {
				f.clock.Advance(time.Duration(rnd.IntN(24*3600)) * time.Second)
				id := int64(1 + rnd.IntN(60))
				in := input()
				in.Status = ptr([]string{"pending", "confirmed", "cancelled"}[rnd.IntN(3)])
				if _, err := f.s.UpdateOrder(ctx, id, in, 0); err != nil && store.ErrorCode(err) != store.ENOTFOUND && store.ErrorCode(err) != store.EINVALID {
					t.Fatal(err)
				}
			}
			for range 6 {
				if err := f.s.DeleteOrder(ctx, int64(1+rnd.IntN(60)), 0, 0); err != nil && store.ErrorCode(err) != store.ENOTFOUND {
					t.Fatal(err)
				}
			}
			var all []*store.Order
			for id := int64(1); id <= 60; id++ {
				if o, err := f.s.GetOrder(ctx, id); err == nil {
					all = append(all, o)
				}
			}

			var queries []string
			for _, w := range append(append([]string{}, searchWords...), searchSKUs...) {
				lw := strings.ToLower(w)
				for n := 1; n <= len(lw); n++ {
					if !slices.Contains(queries, lw[:n]) {
						queries = append(queries, lw[:n])
					}
				}
			}
			queries = append(queries, "anna.", "bob.bo", "1", "7", "60", "zzz", "ANN", "o'brien", "(kbd-60)", "hopper,")
			for _, q := range queries {
				checkQuery(t, f, store.OrderQuery{Q: q}, oracleSearch(all, store.OrderQuery{Q: q}))
			}
			for _, q := range []string{"ann bo", "a b", "kbd ann", "12 a", "hop grace kbd-6", "1 a"} {
				checkQuery(t, f, store.OrderQuery{Q: q}, oracleSearch(all, store.OrderQuery{Q: q}))
			}
			mid := all[len(all)/2].CreatedAt
			from, to := mid.AddDate(0, 0, -20), mid.AddDate(0, 0, 10)
			for _, q := range []store.OrderQuery{
				{Q: "a", Status: store.Confirmed}, {Q: "ann", Status: store.Pending},
				{Q: "b", From: from}, {Q: "bo", From: from, To: to, Status: store.Pending},
			} {
				checkQuery(t, f, q, oracleSearch(all, q))
			}
			for _, sort := range store.Sorts {
				for _, q := range []store.OrderQuery{
					{Sort: sort}, {Sort: sort, Status: store.Pending}, {Sort: sort, Status: store.Cancelled},
					{Sort: sort, From: from}, {Sort: sort, To: to}, {Sort: sort, From: from, To: to, Status: store.Confirmed},
					{Sort: sort, From: mid, To: mid},
				} {
					checkQuery(t, f, q, oracleSorted(all, q))
				}
				// A search in a sort asked for: its matches (at most
				// MaxCandidates here) in that sort (three sorts in the
				// quick suite, one of each kind, and every sort in full).
				if !slices.Contains(testutil.Pick(sortedSearchSorts, store.Sorts), sort) {
					continue
				}
				for _, q := range []store.OrderQuery{
					{Q: "a"}, {Q: "ann bo"}, {Q: "kbd", Status: store.Pending}, {Q: "b", From: from},
					{Q: "12"}, {Q: "hop grace kbd-6"}, {Q: "1 a"}, {Q: "jean-luc"}, {Q: "example", To: to},
				} {
					q.Sort, q.SortAsked = sort, true
					match := oracleSearch(all, q)
					var hits []*store.Order
					for _, o := range all {
						if slices.Contains(match, o.ID) {
							hits = append(hits, o)
						}
					}
					checkQuery(t, f, q, oracleSorted(hits, q))
					if p := f.list(t, q); p.MatchOrder || p.SortTooBroad {
						t.Errorf("q=%q sort=%q: match order %v, too broad %v; want the sort", q.Q, sort, p.MatchOrder, p.SortTooBroad)
					}
				}
			}
		})
	}
}

// TestSearchFoldsUnicode: case, accents and compatibility forms fold on both
// sides; words split at anything that is not a letter or digit.
func TestSearchFoldsUnicode(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			a := f.create(t, "Grace B. Hopper", func(in *store.OrderInput) { in.Email = ptr("Grace.Hopper@Example.com") })
			b := f.create(t, "Jürgen Straße")
			c := f.create(t, "José O'Brien-Smith")
			d := f.create(t, "Ann", func(in *store.OrderInput) {
				in.HasItems = true
				in.Items = []store.ItemInput{{SKU: "KBD-60", Name: "k", Quantity: "1", UnitPrice: "1"}, {SKU: "KBD-61", Name: "k", Quantity: "1", UnitPrice: "1"}}
			})
			for _, c := range []struct {
				q    string
				want []int64
			}{
				{"hopper", []int64{a.ID}}, {"HOP", []int64{a.ID}}, {"b", []int64{a.ID, c.ID}}, {"grace.h", []int64{a.ID}},
				{"grace.hopper@exa", []int64{a.ID}}, {"juergen", nil}, {"jurgen", []int64{b.ID}}, {"JÜRG", []int64{b.ID}},
				{"strasse", []int64{b.ID}}, {"STRASS", []int64{b.ID}}, {"jose", []int64{c.ID}}, {"José", []int64{c.ID}},
				{"Jose\u0301", []int64{c.ID}}, {"smith", []int64{c.ID}}, {"brien", []int64{c.ID}},
				{"kbd", []int64{d.ID}}, {"kbd-6", []int64{d.ID}}, {"kbd-61", []int64{d.ID}}, {"kbd-62", nil},
				{"grace hopper", []int64{a.ID}}, {"grace jose", nil},
			} {
				p := f.list(t, store.OrderQuery{Q: c.q})
				if got := ids(p); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) || p.Total != int64(len(c.want)) {
					t.Errorf("search %q: got %v (total %d), want %v", c.q, got, p.Total, c.want)
				}
			}
		})
	}
}

// TestSearchOfManyCommonTermsIsExact: two terms that each match more than
// MaxCandidates orders (but fewer than the intersection reads) are
// intersected from the indexes: an exact total and a full page, not "at
// least"; a selective one is exact too.
func TestSearchOfManyCommonTermsIsExact(t *testing.T) {
	testutil.Long(t)
	tg := testutil.Targets(t)[0]
	f := fresh(t, tg)
	n := store.MaxCandidates + 1500
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if _, err := f.s.CreateOrder(context.Background(), store.OrderInput{Customer: ptr(fmt.Sprintf("Common Name %d", i))}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	p := f.list(t, store.OrderQuery{Q: "common name"})
	if p.TotalIsLowerBound || p.Total != int64(n) || len(p.Orders) != store.DefaultPerPage {
		t.Errorf(`"common name" over %d orders: total %d, lower bound %v, %d orders; want exactly %d and a full page`,
			n, p.Total, p.TotalIsLowerBound, len(p.Orders), n)
	}
	one := f.list(t, store.OrderQuery{Q: "common"})
	if one.TotalIsLowerBound || one.Total != int64(n) {
		t.Errorf(`"common": total %d, lower bound %v; want exactly %d`, one.Total, one.TotalIsLowerBound, n)
	}
	// "1234" is the word of one name and the id of another order: both,
	// the order with that id first.
	few := f.list(t, store.OrderQuery{Q: "common 1234"})
	if few.TotalIsLowerBound || few.Total != 2 || len(few.Orders) != 2 || few.Orders[0].ID != 1234 || few.Orders[1].Customer != "Common Name 1234" {
		t.Errorf(`"common 1234": %v, total %d, lower bound %v; want order 1234, then the one named "Common Name 1234"`, ids(few), few.Total, few.TotalIsLowerBound)
	}
}

// TestSortedPagesDeepInTheMerge: past the first 256 orders, a page of all
// statuses in a score sort is found by a binary search over the scores of
// the five status sets; seeded orders (many equal totals) agree with the
// oracle on every page and at single deep offsets.
func TestSortedPagesDeepInTheMerge(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			const n = 700
			all := seeded(t, f, n, rand.New(rand.NewPCG(3, 4)))
			mid := all[n/2].CreatedAt
			for _, sort := range store.Sorts {
				for _, q := range []store.OrderQuery{{Sort: sort}, {Sort: sort, From: mid.AddDate(0, -2, 0), To: mid.AddDate(0, 2, 0)}} {
					want := oracleSorted(all, q)
					for _, pp := range []int{97, 100} {
						var got []int64
						for page := 1; page <= n/pp+2; page++ {
							q.Page, q.PerPage = page, pp
							p := f.list(t, q)
							if p.Total != int64(len(want)) {
								t.Fatalf("sort %s per_page %d page %d: total %d, want %d", sort, pp, page, p.Total, len(want))
							}
							got = append(got, ids(p)...)
						}
						if !slices.Equal(got, want) {
							t.Errorf("sort %s from %v per_page %d, pages joined:\n got %v\nwant %v", sort, q.From, pp, got, want)
						}
					}
					for _, off := range []int{255, 256, 300, 555, len(want) - 1} {
						if off >= len(want) {
							continue
						}
						q.Page, q.PerPage = off+1, 1
						if got := ids(f.list(t, q)); len(got) != 1 || got[0] != want[off] {
							t.Errorf("sort %s from %v, order number %d: got %v, want %d", sort, q.From, off+1, got, want[off])
						}
					}
				}
			}
		})
	}
}

// TestSearchPagesDeepInTheUnion: past the first 256 matches, a page of one
// term in every status starts where exactly offset matches of the five
// status sets lie before it (a bisection over their ranks); seeded orders,
// whose SKUs share prefixes ("TEE-M", "TEE-L": an order can match twice),
// agree with the oracle on every page, at single deep offsets, and within
// one status.
func TestSearchPagesDeepInTheUnion(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			const n = 700
			all := seeded(t, f, n, rand.New(rand.NewPCG(5, 6)))
			for _, q := range []store.OrderQuery{
				{Q: "t"}, {Q: "tee"}, {Q: "tee-"}, {Q: "a"}, {Q: "m"}, {Q: "t", Status: store.Delivered},
				{Q: "tee-", Status: store.Pending}, {Q: "t a"}, {Q: "tee m", Status: store.Confirmed},
			} {
				want := oracleSearch(all, q)
				if q.Q == "t" && q.Status == "" && len(want) < 300 {
					t.Fatalf("q=t matches %d orders: too few to reach past the first 256", len(want))
				}
				for _, pp := range []int{97, 100} {
					var got []int64
					for page := 1; page <= n/pp+2; page++ {
						q.Page, q.PerPage = page, pp
						p := f.list(t, q)
						if p.Total != int64(len(want)) || p.TotalIsLowerBound {
							t.Fatalf("q=%q status=%q per_page %d page %d: total %d (lower bound %v), want %d", q.Q, q.Status, pp, page, p.Total, p.TotalIsLowerBound, len(want))
						}
						got = append(got, ids(p)...)
					}
					if !slices.Equal(got, want) {
						t.Errorf("q=%q status=%q per_page %d, pages joined:\n got %v\nwant %v", q.Q, q.Status, pp, got, want)
					}
				}
				for _, off := range []int{0, 255, 256, 257, 300, 555, len(want) - 1} {
					if off >= len(want) {
						continue
					}
					q.Page, q.PerPage = off+1, 1
					if got := ids(f.list(t, q)); len(got) != 1 || got[0] != want[off] {
						t.Errorf("q=%q status=%q, match number %d: got %v, want %d", q.Q, q.Status, off+1, got, want[off])
					}
				}
			}
		})
	}
}

// seeded seeds n demo orders into f and returns them, by id.
func seeded(t *testing.T, f *fixture, n int, rnd *rand.Rand) []*store.Order {
	t.Helper()
	ctx := context.Background()
	if _, err := f.s.Seed(ctx, n, rnd); err != nil {
		t.Fatal(err)
	}
	all := make([]*store.Order, 0, n)
	for id := int64(1); id <= int64(n); id++ {
		o, err := f.s.GetOrder(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, o)
	}
	return all
}
