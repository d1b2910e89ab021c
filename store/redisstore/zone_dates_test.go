package redisstore_test

import (
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// TestDateRangeDaysStartAtTheirZonesMidnight: a date range keeps the orders
// created on those calendar days in the zone the dates are written in. An
// order made at 23:30 UTC on the 23rd is on the 23rd in UTC and on the 24th
// in Berlin; one made at 00:30 UTC on the 24th is on the 24th in both; a
// day across a clock change (Berlin's 2026-03-29, 23 hours) ends at the
// next midnight, not 24 hours later.
func TestDateRangeDaysStartAtTheirZonesMidnight(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			at := func(s string) {
				tm, err := time.Parse(time.RFC3339, s)
				if err != nil {
					t.Fatal(err)
				}
				f.clock.unix.Store(tm.Unix())
			}
			at("2026-03-23T23:30:00Z")
			late := f.create(t, "Late Evening").ID
			at("2026-03-24T00:30:00Z")
			early := f.create(t, "Early Morning").ID
			// 2026-03-29 in Berlin runs from 22:00 UTC on the 28th to
			// 22:00 UTC on the 29th (the clocks go forward at 01:00 UTC).
			at("2026-03-29T21:30:00Z")
			lastOfDay := f.create(t, "Last Of Day").ID
			at("2026-03-29T22:30:00Z")
			nextDay := f.create(t, "Next Day").ID

			day := func(loc *time.Location, y, m, d int) time.Time {
				return time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)
			}
			ids := func(q store.OrderQuery) []int64 {
				q.Page, q.PerPage = 1, 100
				var out []int64
				for _, o := range f.list(t, q).Orders {
					out = append(out, o.ID)
				}
				return out
			}
			for _, c := range []struct {
				what     string
				from, to time.Time
				want     []int64
			}{
				{"the 23rd in UTC", day(time.UTC, 2026, 3, 23), day(time.UTC, 2026, 3, 23), []int64{late}},
				{"the 23rd in Berlin", day(berlin, 2026, 3, 23), day(berlin, 2026, 3, 23), nil},
				{"the 24th in UTC", day(time.UTC, 2026, 3, 24), day(time.UTC, 2026, 3, 24), []int64{early}},
				{"the 24th in Berlin", day(berlin, 2026, 3, 24), day(berlin, 2026, 3, 24), []int64{early, late}},
				{"the 29th in Berlin (23 hours)", day(berlin, 2026, 3, 29), day(berlin, 2026, 3, 29), []int64{lastOfDay}},
				{"from the 30th in Berlin", day(berlin, 2026, 3, 30), time.Time{}, []int64{nextDay}},
				{"the 29th in UTC", day(time.UTC, 2026, 3, 29), day(time.UTC, 2026, 3, 29), []int64{nextDay, lastOfDay}},
			} {
				for _, sort := range []store.Sort{store.SortCreatedDesc, store.SortCustomer} {
					got := ids(store.OrderQuery{From: c.from, To: c.to, Sort: sort})
					want := c.want
					if sort == store.SortCustomer {
						want = byCustomer(f, t, want)
					}
					if !equalIDs(got, want) {
						t.Errorf("%s, sort %s: got orders %v, want %v", c.what, sort, got, want)
					}
				}
			}
		})
	}
}

// byCustomer orders ids by their customer's name, as the customer sort does.
func byCustomer(f *fixture, t *testing.T, ids []int64) []int64 {
	out := append([]int64(nil), ids...)
	name := map[int64]string{}
	for _, id := range ids {
		o, err := f.s.GetOrder(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		name[id] = o.Customer
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && name[out[j]] < name[out[j-1]]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
