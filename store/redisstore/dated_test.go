package redisstore_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestDatedSortsAgreeWithTheOracle: a created-date range with the customer,
// updated or total sort, answered each of its ways (the range read whole
// and sorted, the sort's index walked and filtered by date, the sort's own
// pages less the few orders left out, no filter when the range holds
// everything), agrees with the oracle on every page and at
// single offsets near both ends and the middle, with an exact total, in
// every status and in one.
func TestDatedSortsAgreeWithTheOracle(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			const n = 400
			all := seeded(t, f, n, rand.New(rand.NewPCG(8, 9)))
			first, mid, last := all[0].CreatedAt, all[n/2].CreatedAt, all[n-1].CreatedAt
			ranges := [][2]int{{0, 0}, {-20, 20}, {-200, 0}, {0, 400}}
			for _, walk := range []bool{false, true} {
				if walk {
					// Every range of more than 30 orders is walked, in
					// chunks of 4 to 16 entries: the sets' walks interleave.
					redisstore.SetSortLimits(t, 30, 1_000_000, 16)
				}
				for _, sort := range store.Sorts {
					if sort.Field() == "created" {
						continue
					}
					for _, st := range []store.Status{"", store.Pending, store.Delivered} {
						for _, r := range ranges {
							q := store.OrderQuery{Sort: sort, Status: st, From: mid.AddDate(0, 0, r[0]), To: mid.AddDate(0, 0, r[1])}
							checkDated(t, f, q, oracleSorted(all, q))
						}
						// Everything: no filter at all.
						q := store.OrderQuery{Sort: sort, Status: st, From: first.AddDate(-1, 0, 0), To: last.AddDate(0, 0, 1)}
						checkDated(t, f, q, oracleSorted(all, q))
						// All but a few: the sort's own pages, less the orders
						// left out, wherever they fall.
						for _, q := range []store.OrderQuery{
							{Sort: sort, Status: st, From: first.AddDate(0, 0, 1)},
							{Sort: sort, Status: st, From: first.AddDate(0, 0, 20)},
							{Sort: sort, Status: st, To: last.AddDate(0, 0, -20)},
						} {
							checkDated(t, f, q, oracleSorted(all, q))
						}
					}
				}
			}
		})
	}
}

// checkDated compares pages of q with want: all pages joined at two page
// sizes, and single orders near the start, the middle and the end.
func checkDated(t *testing.T, f *fixture, q store.OrderQuery, want []int64) {
	t.Helper()
	what := func() string {
		return strings.Join([]string{"sort=" + string(q.Sort), "status=" + string(q.Status), "from=" + q.From.Format("2006-01-02"), "to=" + q.To.Format("2006-01-02")}, " ")
	}
	for _, pp := range []int{13, 100} {
		var got []int64
		for page := 1; page <= len(want)/pp+2; page++ {
			q.Page, q.PerPage = page, pp
			p := f.list(t, q)
			if p.Total != int64(len(want)) || p.TotalIsLowerBound {
				t.Fatalf("%s per_page %d page %d: total %d (lower bound %v), want %d", what(), pp, page, p.Total, p.TotalIsLowerBound, len(want))
			}
			got = append(got, ids(p)...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s per_page %d, pages joined:\n got %v\nwant %v", what(), pp, got, want)
		}
	}
	for _, off := range []int{0, 1, len(want)/2 - 1, len(want) / 2, len(want)/2 + 1, len(want) - 2, len(want) - 1} {
		if off < 0 || off >= len(want) {
			continue
		}
		q.Page, q.PerPage = off+1, 1
		if got := ids(f.list(t, q)); len(got) != 1 || got[0] != want[off] {
			t.Fatalf("%s, order number %d: got %v, want %d", what(), off+1, got, want[off])
		}
	}
}

// TestSearchCandidatesMergeInChunks: the candidates of a search of several
// terms, or of a term with dates, are read from the five status sets a
// chunk at a time and merged; read in chunks of 4 to 16 members, they
// still agree with the oracle, in match order, on every page.
func TestSearchCandidatesMergeInChunks(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			const n = 400
			all := seeded(t, f, n, rand.New(rand.NewPCG(10, 11)))
			redisstore.SetSortLimits(t, 30, 1_000_000, 16)
			mid := all[n/2].CreatedAt
			for _, q := range []store.OrderQuery{
				{Q: "tee m"}, {Q: "a t"}, {Q: "kbd ada"}, {Q: "grace.hopper@example.com"}, {Q: "t", From: mid.AddDate(0, -2, 0)},
				{Q: "tee m", Status: store.Delivered}, {Q: "m", Status: store.Pending, From: mid, To: mid.AddDate(0, 1, 0)},
			} {
				checkQuery(t, f, q, oracleSearch(all, q))
			}
		})
	}
}

// TestDatedSortRefusesAPageTooFarToFind: a page of a large created range
// in another sort that lies further into the sort than the walk may read
// is refused at once as too broad (EBROAD, a 400), with words on what to
// narrow; the pages near either end of the same range are answered, and
// so is every page of a narrower one.
func TestDatedSortRefusesAPageTooFarToFind(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			const n = 600
			all := seeded(t, f, n, rand.New(rand.NewPCG(12, 13)))
			// A range of more than 20 orders is walked, 60 entries at most.
			redisstore.SetSortLimits(t, 20, 60, 16)
			mid := all[n/2].CreatedAt
			q := store.OrderQuery{Sort: store.SortTotalDesc, From: mid.AddDate(0, -1, 0), To: mid.AddDate(0, 1, 0), PerPage: 1}
			want := oracleSorted(all, q)
			if len(want) < 60 {
				t.Fatalf("the range holds %d orders: too few to be far", len(want))
			}
			for _, page := range []int{1, 2, len(want) - 1, len(want)} {
				q.Page = page
				if got := ids(f.list(t, q)); len(got) != 1 || got[0] != want[page-1] {
					t.Errorf("page %d of %d: got %v, want %d", page, len(want), got, want[page-1])
				}
			}
			q.Page = len(want) / 2
			_, err := f.s.ListOrders(context.Background(), q)
			if store.ErrorCode(err) != store.EBROAD || !strings.Contains(err.Error(), "narrow the dates") {
				t.Errorf("the middle page of %d: %v, want EBROAD saying to narrow the dates", len(want), err)
			}
			narrow := store.OrderQuery{Sort: store.SortTotalDesc, From: mid, To: mid.AddDate(0, 0, 3), PerPage: 1}
			checkDated(t, f, narrow, oracleSorted(all, narrow))
		})
	}
}
