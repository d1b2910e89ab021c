package redisstore_test

// Attacks on the List and search promises (docs/data.md
// "Reads", "Search", "Upgrades"). Each test names the promise it tries to
// break. A test that shows a known bug is skipped with testutil.KnownBug,
// which names it on go test's output; remove that line to see the failure.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/testutil"
)

// attackItems is a create option with items of the given SKUs (price 1.00).
func attackSKUs(skus ...string) func(*store.OrderInput) {
	return func(in *store.OrderInput) {
		in.HasItems = true
		in.Items = nil
		for _, s := range skus {
			in.Items = append(in.Items, store.ItemInput{SKU: s, Name: "thing", Quantity: "1", UnitPrice: "1.00"})
		}
	}
}

// attackPrice makes an order's total exactly cents, with at most two items
// of at most MaxUnitPrice each.
func attackPrice(cents int64) func(*store.OrderInput) {
	return func(in *store.OrderInput) {
		const max = int64(store.MaxUnitPrice)
		q, r := cents/max, cents%max
		in.HasItems = true
		in.Items = nil
		if q > 0 {
			in.Items = append(in.Items, store.ItemInput{Name: "big", Quantity: strconv.FormatInt(q, 10), UnitPrice: store.Money(max).String()})
		}
		if r > 0 {
			in.Items = append(in.Items, store.ItemInput{Name: "rest", Quantity: "1", UnitPrice: store.Money(r).String()})
		}
	}
}

// allPages joins every page of q at per page pp, and checks that no page
// lists an order twice and that every page has the same total.
func allPages(t *testing.T, f *fixture, q store.OrderQuery, pp int) ([]int64, int64) {
	t.Helper()
	q.PerPage = pp
	var got []int64
	total := int64(-1)
	for page := 1; page < 10000; page++ {
		q.Page = page
		p := f.list(t, q)
		if total >= 0 && p.Total != total {
			t.Errorf("List(%q sort %s pp %d): page %d total %d, page 1 said %d", q.Q, q.Sort, pp, page, p.Total, total)
		}
		total = p.Total
		got = append(got, ids(p)...)
		if len(p.Orders) < pp {
			break
		}
	}
	return got, total
}

// TestTotalTiesAtTheExactBoundary: "totals sort with ties by id" (the
// oracle of TestSearchAgreesWithTheOracle). totalScore
// adds the id's low bits only below 2^33 cents; at exactly 2^33 cents
// ($85,899,345.92) and above, two orders of the same total tie in the score
// and Redis orders them by the member's text: "10" before "9".
func TestTotalTiesAtTheExactBoundary(t *testing.T) {
	testutil.KnownBug(t, "from 2^33 cents totalScore (store/redisstore/order.go) keeps no id bits: equal totals sort by member text (\"10\" before \"9\"), not by id")
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			const boundary = int64(1) << 33
			var all []*store.Order
			// Ids 1..12: 1-6 just below the boundary, 7-12 exactly at it, in
			// two statuses so both the merge and one status's set are read.
			for i := range 12 {
				cents := boundary - 1
				if i >= 6 {
					cents = boundary
				}
				o := f.create(t, fmt.Sprintf("Big %d", i), attackPrice(cents))
				if o.Total != store.Money(cents) {
					t.Fatalf("total %d, want %d", o.Total, cents)
				}
				if i%2 == 1 {
					o = f.update(t, o.ID, store.OrderInput{Status: ptr("confirmed")})
				}
				all = append(all, o)
			}
			for _, q := range []store.OrderQuery{{Sort: store.SortTotal}, {Sort: store.SortTotalDesc},
				{Sort: store.SortTotal, Status: store.Pending}, {Sort: store.SortTotalDesc, Status: store.Confirmed}} {
				want := oracleSorted(all, q)
				got, _ := allPages(t, f, q, 100)
				if !slices.Equal(got, want) {
					t.Errorf("sort %s status %q: got %v, want %v (equal totals by id)", q.Sort, q.Status, got, want)
				}
			}
		})
	}
}

// TestTotalTiesPastTwoToTheTwenty: the same promise for ids past 2^20
// (1,048,576 orders; the benchmark seeds a million): totalScore keeps only
// the id's low 20 bits, so ids 9 and 2^20+9 of the same total tie, and the
// member text puts "1048585" before "9". timeScore has the same flaw past
// 2^21 for orders created in the same second.
func TestTotalTiesPastTwoToTheTwenty(t *testing.T) {
	testutil.KnownBug(t, "totalScore (store/redisstore/order.go) keeps the id's low 20 bits (timeScore 21): past 1,048,576 orders equal totals (and same-second times past 2,097,152) sort by member text, not by id")
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			var all []*store.Order
			// Orders 1..9, then the counter jumps (as after a million orders)
			// so that the next ids share the low bits of 1..9.
			for i := range 9 {
				all = append(all, f.create(t, fmt.Sprintf("Low %d", i), attackPrice(100)))
			}
			if err := tg.Client.Set(ctx, f.prefix+"seq", 1<<21, 0).Err(); err != nil {
				t.Fatal(err)
			}
			for i := range 9 {
				all = append(all, f.create(t, fmt.Sprintf("High %d", i), attackPrice(100)))
			}
			for _, q := range []store.OrderQuery{{Sort: store.SortTotal}, {Sort: store.SortTotalDesc},
				{Sort: store.SortCreated}, {Sort: store.SortCreatedDesc}, {Sort: store.SortUpdated, Status: store.Pending}} {
				want := oracleSorted(all, q)
				got, _ := allPages(t, f, q, 100)
				if !slices.Equal(got, want) {
					t.Errorf("sort %s status %q: got %v, want %v (ties by id)", q.Sort, q.Status, got, want)
				}
			}
		})
	}
}

// hangTarget is where a test that may hang a Lua script runs: a miniredis
// of its own (never closed: a script spinning in it would block Close), or
// a private real Redis from ORDERS_ATTACK_PRIVATE_REDIS (never the shared
// one: a busy script blocks every other client); its cleanup kills a
// script still running.
func hangTarget(t *testing.T, real bool) testutil.Target {
	if !real {
		mr, err := miniredis.Run()
		if err != nil {
			t.Fatal(err)
		}
		return testutil.Target{Name: "miniredis", Client: redis.NewClient(&redis.Options{Addr: mr.Addr()})}
	}
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("ORDERS_ATTACK_PRIVATE_REDIS")})
	t.Cleanup(func() {
		for range 20 {
			if c.ScriptKill(context.Background()).Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.FlushAll(context.Background())
		c.Close()
	})
	return testutil.Target{Name: "private-redis", Client: c}
}

// TestDeepPagesPastTwoToTheFiftyTwo: mergeScript's binary
// search computes mid = floor((l + h) / 2) in Lua doubles. When the scores
// reach 2^52, l + h passes 2^53 and is rounded to an even number, so mid can
// equal h: then "h = mid" never moves and the script spins forever (a
// real Redis answers BUSY to every client after lua-time-limit). Scores
// reach 2^52 for created and updated times from 2038-01-19 (Unix 2^31; the
// comment at timeScore promises exactness until 2106) and for totals from
// 2^32 cents ($42,949,672.96). Any all-statuses page of an ascending sort
// past the 256th order can hang; the descending sorts too (l + h + 1 is
// rounded twice, and mid can equal l). Before 2038 (the control) it works.
func TestDeepPagesPastTwoToTheFiftyTwo(t *testing.T) {
	if os.Getenv("ORDERS_ATTACK_HANG") == "-" {
		t.Skip("was BUG: mergeScript (store/redisstore/list.go:259-262) loops forever for ascending sorts once scores pass 2^52 (created/updated after 2038-01-19, totals from $42,949,672.96): mid = floor((l+h)/2) rounds up to h; set ORDERS_ATTACK_HANG=1 (and ORDERS_ATTACK_PRIVATE_REDIS=host:port of a Redis of your own) to run; it leaks a spinning miniredis")
	}
	reals := []bool{false}
	if os.Getenv("ORDERS_ATTACK_PRIVATE_REDIS") != "" {
		reals = append(reals, true)
	}
	for _, real := range reals {
		for _, c := range []struct {
			name  string
			start time.Time
			sort  store.Sort
			price func(i int) int64
		}{
			{"created-2039", time.Date(2039, 1, 1, 0, 0, 0, 0, time.UTC), store.SortCreated, func(i int) int64 { return 100 }},
			{"updated-2039", time.Date(2039, 1, 1, 0, 0, 0, 0, time.UTC), store.SortUpdated, func(i int) int64 { return 100 }},
			{"total-43M", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), store.SortTotal, func(i int) int64 { return 1<<32 + int64(i)*1237 }},
			{"desc-created-2039", time.Date(2039, 1, 1, 0, 0, 0, 0, time.UTC), store.SortCreatedDesc, func(i int) int64 { return 100 }},
			{"desc-total-43M", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), store.SortTotalDesc, func(i int) int64 { return 1<<32 + int64(i)*1237 }},
			{"control-created-2037", time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC), store.SortCreated, func(i int) int64 { return 100 }},
		} {
			name := "miniredis/"
			if real {
				name = "private-redis/"
			}
			t.Run(name+c.name, func(t *testing.T) {
				f := fresh(t, hangTarget(t, real))
				f.clock.unix.Store(c.start.Unix())
				var all []*store.Order
				sts := []string{"pending", "confirmed", "cancelled"}
				for i := range 300 {
					f.clock.Advance(time.Duration(1+i%7) * time.Second)
					o := f.create(t, fmt.Sprintf("Far %d", i), attackPrice(c.price(i)))
					if st := sts[i%3]; st != "pending" {
						o = f.update(t, o.ID, store.OrderInput{Status: ptr(st)})
					}
					all = append(all, o)
				}
				want := oracleSorted(all, store.OrderQuery{Sort: c.sort})
				for off := 256; off < 300; off++ {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					p, err := f.s.ListOrders(ctx, store.OrderQuery{Sort: c.sort, Page: off + 1, PerPage: 1})
					cancel()
					if err != nil {
						t.Fatalf("sort %s, order number %d: %v (the merge script did not return)", c.sort, off+1, err)
					}
					if got := ids(p); len(got) != 1 || got[0] != want[off] {
						t.Errorf("sort %s, order number %d: got %v, want %d", c.sort, off+1, got, want[off])
					}
				}
			})
		}
	}
}

// TestSearchPunctuationTerms: a SKU may be made of '.', '-' and '_' only
// (skuRE), or start with one. A query and a SKU split into words alike, so
// a query of punctuation alone finds nothing (it is no term, and the page
// says so rather than listing everything), while the SKU's words are found
// with or without the punctuation before them ("--x" and "x" find "--X").
func TestSearchPunctuationTerms(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			a := f.create(t, "Ann", attackSKUs("_"))
			b := f.create(t, "Bob", attackSKUs("--X"))
			c := f.create(t, "Cid", attackSKUs(".5"))
			f.create(t, "Dee 🎉", attackSKUs("ABC"))
			for _, q := range []struct {
				q    string
				want []int64
			}{
				{"_", nil}, {"--", nil}, {"-", nil}, {".", nil},
				{"--x", []int64{b.ID}}, {"x", []int64{b.ID}}, {".5", []int64{c.ID}}, {"5", []int64{c.ID}}, {"ann", []int64{a.ID}},
				{"@", nil}, {"🎉", nil}, {"+", nil}, {"(", nil}, {"[", nil}, {"ann @", []int64{a.ID}},
			} {
				p := f.list(t, store.OrderQuery{Q: q.q})
				if got := ids(p); p.Total != int64(len(q.want)) || !(slices.Equal(got, q.want) || len(got) == 0 && len(q.want) == 0) {
					t.Errorf("search %q: got %v (total %d, match order %v), want %v", q.q, got, p.Total, p.MatchOrder, q.want)
				}
			}
		})
	}
}

// TestSearchUnicodeTerms: "Case-insensitive, Unicode-folded, NFC-normalised
// on both sides", words split at anything that is not a letter or digit,
// terms of 16 and 17 bytes either side of the dup sets' depth, multi-byte
// letters crossing it, and very long words. Each case names the orders a
// query must find.
func TestSearchUnicodeTerms(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			id := map[string]int64{}
			mk := func(key, customer string, mod ...func(*store.OrderInput)) {
				id[key] = f.create(t, customer, mod...).ID
			}
			mk("zoe", "Zoe\u0308 Saldan\u0303a")                     // decomposed: stored NFC
			mk("fi", "\ufb01nn O\u0308zil")                          // "ﬁnn"
			mk("irem", "\u0130rem Y\u0131ld\u0131z")                 // İrem Yıldız
			mk("wide", "\uff21\uff2e\uff2e Lee")                     // ＡＮＮ
			mk("emoji", "Ann🎉Lee 🚀")                                 // emoji between words
			mk("cjk", "山田太郎")                                        // one word
			mk("hangul", "\u1112\u1161\u11ab\u1100\u116e\u11a8 Kim") // 한국 as conjoining jamo
			mk("greek", "ΣΊΣΥΦΟΣ")
			mk("cyr", "жжжжжжжжжа жжжжжжжжжб") // two 20-byte words, lcp 18 bytes
			mk("long", strings.Repeat("x", 40)+" "+strings.Repeat("x", 39)+"y")
			mk("sku16", "Sku Sixteen", attackSKUs("ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOPQ", "ABCDEFGHIJKLMNOPQR"))
			mk("sku17", "Sku Seventeen", attackSKUs("ABCDEFGHIJKLMNOPQ1", "ABCDEFGHIJKLMNOPQ2"))
			for _, c := range []struct {
				q    string
				want []string
			}{
				{"zoë", []string{"zoe"}}, {"ZOE", []string{"zoe"}}, {"saldaña", []string{"zoe"}}, {"SALDAN\u0303", []string{"zoe"}},
				{"fi", []string{"fi"}}, {"\ufb01", []string{"fi"}}, {"FINN", []string{"fi"}}, {"özil", []string{"fi"}},
				{"irem", []string{"irem"}}, {"İREM", []string{"irem"}}, {"i\u0307rem", []string{"irem"}},
				{"ａｎｎ", []string{"wide"}}, {"ＡＮＮ", []string{"wide"}},
				{"lee", []string{"emoji", "wide"}}, {"ann", []string{"emoji"}},
				{"山田", []string{"cjk"}}, {"山田太郎", []string{"cjk"}},
				{"한국", []string{"hangul"}}, {"\u1112\u1161\u11ab", []string{"hangul"}}, {"한", []string{"hangul"}},
				{"σίσυφος", []string{"greek"}}, {"ΣΙΣΥΦΟς", []string{"greek"}}, {"σισυφοσ", []string{"greek"}},
				{"жжжжжжжж", []string{"cyr"}}, {"жжжжжжжжж", []string{"cyr"}}, {"жжжжжжжжжб", []string{"cyr"}}, {"ЖЖЖЖЖЖЖЖЖА", []string{"cyr"}},
				{strings.Repeat("x", 16), []string{"long"}}, {strings.Repeat("x", 17), []string{"long"}},
				{strings.Repeat("x", 39) + "y", []string{"long"}}, {strings.Repeat("x", 41), nil},
				{"abcdefghijklmno", []string{"sku17", "sku16"}}, {"abcdefghijklmnop", []string{"sku17", "sku16"}},
				{"abcdefghijklmnopq", []string{"sku17", "sku16"}}, {"abcdefghijklmnopqr", []string{"sku16"}},
				{"abcdefghijklmnopq1", []string{"sku17"}}, {"ABCDEFGHIJKLMNOPQ2", []string{"sku17"}},
				{"sku abcdefghijklmnop", []string{"sku17", "sku16"}},
			} {
				want := []int64{}
				for _, k := range c.want {
					want = append(want, id[k])
				}
				for _, pp := range []int{1, 25} {
					got, total := allPages(t, f, store.OrderQuery{Q: c.q}, pp)
					slices.Sort(got)
					w := slices.Clone(want)
					slices.Sort(w)
					if total != int64(len(want)) || !slices.Equal(got, w) {
						t.Errorf("search %q (per page %d): got %v total %d, want %v (%v)", c.q, pp, got, total, w, c.want)
						break
					}
				}
			}
		})
	}
}

// TestSearchIndicNames: "search by any word of the name". foldTerm removes
// the nonspacing marks (Mn: the virama) and wordsOf then splits at the
// spacing marks (Mc: the vowel signs), so "प्रिया शर्मा" is indexed as the
// fragments "पर", "य", "शरम" and the name as typed ("प्रिया", folded to
// "परिया") is the start of none of them: a Devanagari (Bengali, Tamil, ...)
// customer cannot be found by their name. Marks belong to the word.
func TestSearchIndicNames(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			o := f.create(t, "प्रिया शर्मा")
			for _, q := range []string{"प्रिया", "शर्मा", "प्रिया शर्मा", "शर्"} {
				if p := f.list(t, store.OrderQuery{Q: q}); p.Total != 1 || len(p.Orders) != 1 || p.Orders[0].ID != o.ID {
					t.Errorf("search %q: got %v (total %d), want [%d]", q, ids(p), p.Total, o.ID)
				}
			}
		})
	}
}

// TestOneTermTotalsAreExact: "A one-term q is O(log N +
// page) too, and its total is exact", and "without q, every combination of
// status, sort, from/to and page is O(log N + page)". The store sends a
// term longer than 16 bytes, and a term with a status, through the
// candidate walk (at most 10,000 orders read), and a date range with a
// sort other than created through the first 10,000 of that sort: past
// 10,000 matches each says "at least 10000", and the pages past the
// 10,000th are empty though orders match there. The boundary itself
// (exactly 10,000 candidates) is exact.
func TestOneTermTotalsAreExact(t *testing.T) {
	testutil.Long(t)
	tg := testutil.Targets(t)[0]
	ctx := context.Background()
	f := fresh(t, tg)
	n := store.MaxCandidates + 1
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				in := store.OrderInput{Customer: ptr(fmt.Sprintf("Common %d", i))}
				attackSKUs("MECHANICAL-KEYBOARD-60")(&in)
				if _, err := f.s.CreateOrder(ctx, in); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	day := f.clock.Now()
	t.Run("boundary", func(t *testing.T) {
		// Exactly MaxCandidates candidates for the multi-term walk: exact.
		if err := f.s.DeleteOrder(ctx, int64(n), 0, 0); err != nil {
			t.Fatal(err)
		}
		defer func() {
			in := store.OrderInput{Customer: ptr("Common last")}
			attackSKUs("MECHANICAL-KEYBOARD-60")(&in)
			if _, err := f.s.CreateOrder(ctx, in); err != nil {
				t.Fatal(err)
			}
		}()
		p := f.list(t, store.OrderQuery{Q: "common mech"})
		if p.Total != int64(store.MaxCandidates) || p.TotalIsLowerBound {
			t.Errorf("%d candidates: total %d, lower bound %v; want exactly %d", store.MaxCandidates, p.Total, p.TotalIsLowerBound, store.MaxCandidates)
		}
	})
	t.Run("one term in one status", func(t *testing.T) {
		// Each status has its own term sets: exact, and the last page holds
		// the 10,001st.
		q := store.OrderQuery{Q: "common", Status: store.Pending, PerPage: 25, Page: 1}
		p := f.list(t, q)
		if p.Total != int64(n) || p.TotalIsLowerBound {
			t.Errorf("List(q=common status=pending): total %d, lower bound %v; want exactly %d", p.Total, p.TotalIsLowerBound, n)
		}
		q.Page = (n + 24) / 25
		if p := f.list(t, q); len(p.Orders) != 1 {
			t.Errorf("List(q=common status=pending): page %d has %d orders, want 1", q.Page, len(p.Orders))
		}
		q.Status = store.Shipped
		if p := f.list(t, q); p.Total != 0 || len(p.Orders) != 0 {
			t.Errorf("List(q=common status=shipped): total %d, %d orders; want none", p.Total, len(p.Orders))
		}
	})
	t.Run("one term", func(t *testing.T) {
		testutil.KnownBug(t, "a one-term q longer than 16 bytes or with a date, and a date range with a sort other than created, go through a walk of at most 10,000 orders (store/redisstore/list.go): the total says \"at least 10000\" and pages past the 10,000th are empty, where the total should be exact")
		for _, q := range []store.OrderQuery{
			{Q: "mechanical-keyboard"},         // 19 bytes: a long term
			{Q: "common", From: day},           // one term and a date
			{Sort: store.SortTotal, From: day}, // a date with another sort
			{Sort: store.SortCustomer, To: day},
		} {
			q.PerPage = 25
			q.Page = 1
			p := f.list(t, q)
			if p.Total != int64(n) || p.TotalIsLowerBound {
				t.Errorf("List(q=%q status=%q sort=%q from/to set): total %d, lower bound %v; want exactly %d",
					q.Q, q.Status, q.Sort, p.Total, p.TotalIsLowerBound, n)
			}
			q.Page = (n + 24) / 25 // the last page holds the 10,001st
			if p := f.list(t, q); len(p.Orders) != 1 {
				t.Errorf("List(q=%q status=%q sort=%q): page %d has %d orders, want 1", q.Q, q.Status, q.Sort, q.Page, len(p.Orders))
			}
		}
	})
}

// TestSearchWhileWriting: pages of searches read while orders are
// renamed, re-itemised, moved between statuses and deleted. A page never
// lists an order twice, never fails, never has a negative total; at rest
// every query agrees with the oracle. Order 12 is renamed back and forth
// between two names that both start with "12" while "12" (its id and a
// word) is searched: the pinned order must not also appear in the list.
func TestSearchWhileWriting(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			words := []string{"Ann", "Anna", "Annie", "Bob", "12", "120", "12b"}
			skus := []string{"KBD-60", "KBD-61", "KBD-6", "ANN-1", "12-X"}
			input := func(rnd *rand.Rand) store.OrderInput {
				in := store.OrderInput{Customer: ptr(words[rnd.IntN(len(words))] + " " + words[rnd.IntN(len(words))])}
				var its []string
				for range rnd.IntN(3) {
					its = append(its, skus[rnd.IntN(len(skus))])
				}
				attackSKUs(its...)(&in)
				return in
			}
			rnd0 := rand.New(rand.NewPCG(1, 2))
			for range 80 {
				f.clock.Advance(time.Second)
				if _, err := f.s.CreateOrder(ctx, input(rnd0)); err != nil {
					t.Fatal(err)
				}
			}
			f.update(t, 12, store.OrderInput{Customer: ptr("12zz Ann")})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var dupPages, errs, writes, reads, pinnedTwice atomic.Int64
			var firstDup atomic.Value
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(w), 9))
					for {
						select {
						case <-stop:
							return
						default:
						}
						id := int64(1 + rnd.IntN(80))
						if id == 12 {
							continue
						}
						var err error
						switch rnd.IntN(6) {
						case 0:
							err = f.s.DeleteOrder(ctx, id, 0, 0)
						case 1:
							_, err = f.s.CreateOrder(ctx, input(rnd))
						default:
							in := input(rnd)
							in.Status = ptr([]string{"pending", "confirmed", "cancelled"}[rnd.IntN(3)])
							_, err = f.s.UpdateOrder(ctx, id, in, 0)
						}
						if err != nil && store.ErrorCode(err) != store.ENOTFOUND && store.ErrorCode(err) != store.EINVALID {
							t.Errorf("write: %v", err)
							return
						}
						writes.Add(1)
					}
				}()
			}
			wg.Add(1)
			go func() { // order 12 flips between two "12" names
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name := []string{"12aa Ann", "12zz Ann"}[i%2]
					if _, err := f.s.UpdateOrder(ctx, 12, store.OrderInput{Customer: ptr(name)}, 0); err != nil {
						t.Errorf("rename 12: %v", err)
						return
					}
				}
			}()
			queries := []string{"12", "ann", "an", "kbd", "kbd-6", "1", "ann kbd", "12 ann"}
			for r := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(r), 77))
					for {
						select {
						case <-stop:
							return
						default:
						}
						q := store.OrderQuery{Q: queries[rnd.IntN(len(queries))], PerPage: []int{1, 3, 7, 25}[rnd.IntN(4)]}
						if r == 0 {
							q = store.OrderQuery{Q: "12", PerPage: 25}
						}
						for page := 1; page <= 6; page++ {
							q.Page = page
							p, err := f.s.ListOrders(ctx, q)
							reads.Add(1)
							if err != nil {
								errs.Add(1)
								firstDup.CompareAndSwap(nil, fmt.Sprintf("List(%q page %d): %v", q.Q, page, err))
								break
							}
							seen := map[int64]bool{}
							for _, o := range p.Orders {
								if seen[o.ID] && strconv.FormatInt(o.ID, 10) == q.Q {
									// The known break of TestPinnedOrderRenamedDuringThePage.
									pinnedTwice.Add(1)
									continue
								}
								if seen[o.ID] || p.Total < 0 || len(p.Orders) > q.PerPage {
									dupPages.Add(1)
									firstDup.CompareAndSwap(nil, fmt.Sprintf("List(%q per page %d page %d): ids %v total %d", q.Q, q.PerPage, page, ids(p), p.Total))
								}
								seen[o.ID] = true
							}
							if len(p.Orders) < q.PerPage {
								break
							}
						}
					}
				}()
			}
			time.Sleep(4 * time.Second)
			close(stop)
			wg.Wait()
			t.Logf("%d writes, %d pages read, %d pages listed the order the digits name twice (TestPinnedOrderRenamedDuringThePage)", writes.Load(), reads.Load(), pinnedTwice.Load())
			if dupPages.Load() > 0 || errs.Load() > 0 {
				t.Errorf("%d pages listed an order twice (or a negative total), %d reads failed; first: %v", dupPages.Load(), errs.Load(), firstDup.Load())
			}
			if tg.Cluster {
				if _, err := f.s.Repair(ctx, true); err != nil { // settles any intent left
					t.Fatal(err)
				}
			}
			var all []*store.Order
			last, _ := tg.Client.Get(ctx, f.prefix+"seq").Int64()
			for id := int64(1); id <= last; id++ {
				if o, err := f.s.GetOrder(ctx, id); err == nil {
					all = append(all, o)
				}
			}
			for _, q := range queries {
				checkQuery(t, f, store.OrderQuery{Q: q}, oracleSearch(all, store.OrderQuery{Q: q}))
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("at rest, Repair(check): %v, %v", r, err)
			}
		})
	}
}

// renameBetween is a hook that, once armed, runs a search page's pipeline
// (the page script, then HGETALL of the order its digits name) one command
// at a time and calls between() in between: what another client's write
// landing between the two commands does (any client may be served there;
// on a Cluster they go to different nodes anyway).
type renameBetween struct {
	armed   atomic.Bool
	between func()
}

func (h *renameBetween) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *renameBetween) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *renameBetween) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 2 && strings.HasPrefix(cmds[0].Name(), "eval") && cmds[1].Name() == "hgetall" && h.armed.CompareAndSwap(true, false) {
			err1 := next(ctx, cmds[:1])
			h.between()
			err2 := next(ctx, cmds[1:])
			return errors.Join(err1, err2)
		}
		return next(ctx, cmds)
	}
}

// TestPinnedOrderRenamedDuringThePage: a digits term names an order
// that is listed first and dropped from the term's matches by its member
// (searchOne, list.go:436-458). The member is recomputed from the order as
// read by HGETALL, after the page script ran: when the order was renamed in
// between (to another name its digits still start), the member the script
// returned is not the one computed, the order is not dropped, and the page
// lists it twice. TestSearchWhileWriting meets this now and then on
// the Cluster; this hook makes it certain.
func TestPinnedOrderRenamedDuringThePage(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			for i := range 14 {
				f.create(t, fmt.Sprintf("12%c Ann", 'b'+i))
			}
			f.update(t, 12, store.OrderInput{Customer: ptr("12zz Ann")})
			h := &renameBetween{between: func() { f.update(t, 12, store.OrderInput{Customer: ptr("12aa Ann")}) }}
			tg.Client.AddHook(h)
			for _, pp := range []int{25, 5} {
				h.armed.Store(true)
				p := f.list(t, store.OrderQuery{Q: "12", PerPage: pp})
				if h.armed.Load() {
					t.Fatal("the hook did not see the page's pipeline")
				}
				seen := map[int64]bool{}
				for _, id := range ids(p) {
					if seen[id] {
						t.Errorf("per page %d: page 1 lists order %d twice: %v (total %d)", pp, id, ids(p), p.Total)
					}
					seen[id] = true
				}
				f.update(t, 12, store.OrderInput{Customer: ptr("12zz Ann")})
			}
		})
	}
}

// TestRepairOfTermEntries: orders -repair (Store.Repair) finds term
// and dup entries that are missing, stale or dangling, and fixes them so
// that every search agrees with the oracle again. Before the repair, a dup
// entry whose term entry is gone (what a Cluster's settle leaves for a
// moment between its ZREMs, or a crash leaves until the reconciler runs)
// must not make the search fail: pageScript takes ZRANK of the dup member
// in ix:{w}, gets false, and does arithmetic on it.
func TestRepairOfTermEntries(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			var all []*store.Order
			for i := range 30 {
				all = append(all, f.create(t, []string{"Ann Lee", "Anna Bell", "Bob Ann"}[i%3],
					attackSKUs([][]string{{"KBD-60", "KBD-61"}, {"KBD-6", "ANN-1"}, {"KBD-61", "KBD-62", "KBD-63"}}[i%3]...)))
			}
			// The search sets, whatever their names: the term sets, and the
			// dup sets (names ending in ":d<N>" or ":<N>").
			var termSets, dupSets []string
			for _, k := range f.keys(t) {
				if !strings.HasPrefix(k, "ix:{w}") {
					continue
				}
				i := strings.LastIndexByte(k, ':')
				if _, err := strconv.Atoi(strings.TrimPrefix(k[i+1:], "d")); err == nil && i > len("ix:{w}") {
					dupSets = append(dupSets, f.prefix+k)
				} else {
					termSets = append(termSets, f.prefix+k)
				}
			}
			if len(termSets) == 0 || len(dupSets) == 0 {
				t.Fatalf("no search sets among %v", f.keys(t))
			}
			// Damage: drop a third of the term entries, some dup entries, add
			// a dup entry where none belongs and entries of an order that
			// does not exist.
			var kept []string
			for _, w := range termSets {
				members, err := tg.Client.ZRange(ctx, w, 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				for i, m := range members {
					if i%3 == 0 {
						tg.Client.ZRem(ctx, w, m)
					} else {
						kept = append(kept, m)
					}
				}
				tg.Client.ZAdd(ctx, w, redis.Z{Member: "zz-gone\x00xA"}) // an order never created
			}
			for _, d := range dupSets {
				dm, _ := tg.Client.ZRange(ctx, d, 0, -1).Result()
				for i, m := range dm {
					if i%4 == 1 {
						tg.Client.ZRem(ctx, d, m)
					}
				}
				tg.Client.ZAdd(ctx, d, redis.Z{Member: kept[0]})
			}

			t.Run("search before the repair", func(t *testing.T) {
				for _, q := range []string{"kbd", "kbd-6", "ann", "a"} {
					for page := 1; page <= 4; page++ {
						if _, err := f.s.ListOrders(ctx, store.OrderQuery{Q: q, Page: page, PerPage: 3}); err != nil {
							t.Errorf("search %q page %d over damaged term entries: %v", q, page, err)
						}
					}
				}
			})

			r, err := f.s.Repair(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if r.Missing == 0 || r.Dangling == 0 || r.Stale == 0 {
				t.Errorf("Repair(fix) found %v; want missing, dangling and stale entries", r)
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair(check) after the fix: %v, %v", r, err)
			}
			for _, q := range []string{"k", "kbd", "kbd-6", "kbd-60", "kbd-61", "kbd-62", "a", "an", "ann", "ann-", "anna", "bo", "lee", "2", "12"} {
				checkQuery(t, f, store.OrderQuery{Q: q}, oracleSearch(all, store.OrderQuery{Q: q}))
			}
		})
	}
}

// TestSearchEmailWithApostrophe: "a term matches ... the start of the email
// address". An address may hold ' & = / ! # $ % * ? ^ ` { | } ~ (RFC 5322
// atext; the store accepts them). queryTerms splits a query at punctuation
// and symbols other than ". - _ @ +", so the address typed as it is became
// several terms, none of which starts the address. Now a term with an @ or
// a dot is kept whole ("sales&o", with neither, still splits: documented).
func TestSearchEmailWithApostrophe(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			a := f.create(t, "Pat Kelly", func(in *store.OrderInput) { in.Email = ptr("pat.o'brien@example.com") })
			b := f.create(t, "Sam Ray", func(in *store.OrderInput) { in.Email = ptr("sales&ops@example.com") })
			for _, c := range []struct {
				q    string
				want int64
			}{{"pat.o'brien@example.com", a.ID}, {"pat.o'b", a.ID}, {"sales&ops@", b.ID}, {"sales&ops@ex", b.ID}} {
				if p := f.list(t, store.OrderQuery{Q: c.q}); p.Total != 1 || len(p.Orders) != 1 || p.Orders[0].ID != c.want {
					t.Errorf("search %q: got %v (total %d), want [%d]", c.q, ids(p), p.Total, c.want)
				}
			}
		})
	}
}

// TestUpgradeLeavesNoOldKeys: "deletes the keys only the old layout
// used". A store written before Layout existed (it upgrades like layout
// 2) may hold all-statuses and per-status updated and total sets
// named ix:up, ix:tot, ix:up:<status>, ix:tot:<status>; Upgrade deletes
// them with ix:id and ix:id:<status>, or they would stay in Redis for good
// (and in every snapshot), orphans that no code reads or repairs.
func TestUpgradeLeavesNoOldKeys(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			o := f.create(t, "Ann Lee")
			// What the older code left: no layout mark, its own sets.
			must(t, tg.Client.Del(ctx, f.prefix+"layout").Err())
			old := []string{"ix:id", "ix:id:pending", "ix:up", "ix:tot", "ix:up:pending", "ix:tot:pending"}
			for _, k := range old {
				must(t, tg.Client.ZAdd(ctx, f.prefix+k, redis.Z{Score: 1, Member: strconv.FormatInt(o.ID, 10)}).Err())
			}
			ran, _, err := f.s.Upgrade(ctx)
			if err != nil || !ran {
				t.Fatalf("Upgrade: ran %v, %v", ran, err)
			}
			var left []string
			for _, k := range old {
				if n, _ := tg.Client.Exists(ctx, f.prefix+k).Result(); n > 0 {
					left = append(left, k)
				}
			}
			if len(left) > 0 {
				t.Errorf("after Upgrade the old layout's keys %v remain", left)
			}
			if p := f.list(t, store.OrderQuery{Q: "ann"}); p.Total != 1 {
				t.Errorf("search after Upgrade: total %d, want 1", p.Total)
			}
		})
	}
}
