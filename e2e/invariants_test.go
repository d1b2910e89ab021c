package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// invariants is what checkInvariants found wrong, one count per kind of
// problem; every count must be zero after the repair window.
type invariants struct {
	// Exist is how many orders exist (GET /orders/<id> answers 200),
	// Listed how many rows the list of all orders holds, Live how many
	// acknowledged orders were checked.
	Exist, Listed, Live int
	// Searches is how many name searches were checked.
	Searches int

	// collectionFaults' DeletedExists counts deletes found by their name too.
	collectionFaults
	SearchMissing int // q=<a word of its name> does not find the order
	SearchStale   int // q=<a word of an old name> finds something
	StaleAccepted int // a PUT with an older version answered 2xx
	BothWon       int // a DELETE and a PUT carrying the same version both answered 2xx
	// Customers is what the customers and the orders' links to them
	// show (checkCustomers).
	Customers *customerChecks
}

func (v *invariants) problems() int {
	return v.collectionProblems() + v.SearchMissing + v.SearchStale + v.StaleAccepted + v.BothWon +
		v.Customers.problems()
}

func (v *invariants) String() string {
	return fmt.Sprintf("%d orders exist, %d listed, %d acknowledged live orders and %d name searches checked; problems: "+
		"%d wrong totals, %d duplicates, %d missing from a list, %d listed but missing, %d in the wrong list, "+
		"%d stale rows, %d acknowledged but unreadable, %d older than acknowledged, %d deleted but readable or found, "+
		"%d not found by name, %d found by an old name, %d stale versions accepted, %d delete and PUT of one version both won; %v",
		v.Exist, v.Listed, v.Live, v.Searches, v.WrongTotal, v.Duplicate, v.Missing, v.Dangling, v.WrongList, v.StaleRow,
		v.Unreadable, v.OlderThanAck, v.DeletedExists, v.SearchMissing, v.SearchStale, v.StaleAccepted, v.BothWon, v.History)
}

// walkList reads every page of GET /orders?per_page=100&<query>; totals
// are what each page claimed.
func walkList(base, query string) (rows []orderJSON, totals []int64, err error) {
	return walkPages[orderJSON](base, "/orders", "orders", query)
}

// nameWord is the first word of a customer name: the chaos load makes it
// unique per name, and a search for it is a prefix of the whole name and
// the start of a word, so it finds that name and no other.
func nameWord(customer string) string {
	w, _, _ := strings.Cut(customer, " ")
	return w
}

var statuses = []string{"pending", "confirmed", "shipped", "delivered", "cancelled"}

// checkInvariants checks, from the outside over HTTP JSON, that the app at
// base shows a whole collection: every order that exists (GET of every id
// up to the highest one seen) is in the list of all orders, in its status's
// list and in the name lists, each exactly once; no list holds a missing
// order, an order of another status or a row older than the order; every
// total is the number of rows its list holds; every acknowledged order is
// there at its acknowledged version or later; no acknowledged delete is
// readable or found; and a search for a word of an order's name finds it
// while a word of a name it had before finds nothing; and every order's
// history has exactly one entry per version, each acknowledged version
// among them, and none a write nobody was told about could not have made
// (checkHistories). a may be empty (newAcked()): then only the
// collection's own consistency is checked.
func checkInvariants(t *testing.T, base string, a *acked) *invariants {
	t.Helper()
	v := &invariants{}
	if a == nil {
		a = newAcked()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v.StaleAccepted, v.BothWon = a.counts["stale accepted"], a.counts["both won"]
	for _, d := range a.problems {
		if len(v.details) < 30 {
			v.details = append(v.details, d)
		}
	}

	// Every order that exists: ids are handed out in sequence, so probe
	// each up to past the highest one seen (an order whose create was
	// never answered is found this way even if no list holds it).
	maxID := a.maxID()
	if rows, _, err := walkList(base, "per_page=1&page=1"); err == nil && len(rows) > 0 {
		maxID = max(maxID, rows[0].ID)
	}
	records, failed := probeRecords[orderJSON](base, "/orders", maxID)
	if len(failed) > 0 {
		t.Fatalf("reading every order failed:\n%s", strings.Join(failed, "\n"))
	}
	var recMu sync.Mutex
	fail := func(format string, args ...any) {
		recMu.Lock()
		defer recMu.Unlock()
		if len(failed) < 10 {
			failed = append(failed, fmt.Sprintf(format, args...))
		}
	}
	v.Exist = len(records)

	for id, want := range a.records {
		if a.maybeGone[id] {
			continue
		}
		v.Live++
		o, ok := records[id]
		switch {
		case !ok:
			v.add(&v.Unreadable, "acknowledged order %d (v%d, %s) does not exist", id, want.Version, want.Status)
		case o.Version < want.Version:
			v.add(&v.OlderThanAck, "order %d is at v%d, acknowledged at v%d", id, o.Version, want.Version)
		}
	}
	for id := range a.deleted {
		if o, ok := records[id]; ok {
			v.add(&v.DeletedExists, "deleted order %d is readable (v%d, %s)", id, o.Version, o.Status)
		}
	}

	// checkList walks one list and compares it with the records that
	// belong in it.
	ids := sortedIDs(records)
	checkList := func(_, query string, belongs func(orderJSON) bool) []orderJSON {
		return checkListOf(t, &v.collectionFaults, base, "/orders", "orders", query, records, ids, belongs, func(row, o orderJSON) bool {
			return row.Version == o.Version && row.Status == o.Status && row.Customer == o.Customer && row.Total == o.Total &&
				row.CustomerID == o.CustomerID
		})
	}
	all := checkList("of all orders", "", func(orderJSON) bool { return true })
	v.Listed = len(all)
	for _, st := range statuses {
		checkList("status="+st, "status="+st, func(o orderJSON) bool { return o.Status == st })
	}
	// Every sort's indexes, whole, with and without a status.
	for _, sort := range []string{"customer", "-updated", "total"} {
		checkList("sort="+sort, "sort="+sort, func(orderJSON) bool { return true })
		for _, st := range statuses {
			checkList("sort="+sort+"&status="+st, "sort="+sort+"&status="+st, func(o orderJSON) bool { return o.Status == st })
		}
	}
	// The search terms: the load's names start with K (created) or R
	// (renamed), so q=k and q=r walk the terms of every name (and the
	// second words starting with k or r).
	for _, prefix := range []string{"k", "r"} {
		checkList("q="+prefix, "q="+prefix, func(o orderJSON) bool { return matchesSearch(o, prefix) })
	}

	// Name search by single words: every renamed order (by its name now,
	// and by each name it had, which must find nothing), every acknowledged
	// delete's last name (nothing), and others up to 300 orders.
	type search struct {
		q    string
		id   int64 // the order it must find; 0: it must find nothing
		what string
	}
	var searches []search
	sampled := 0
	want := func(o orderJSON) {
		w := url.QueryEscape(nameWord(o.Customer))
		searches = append(searches, search{"q=" + w, o.ID, "its name"},
			search{"q=" + w + "&status=" + o.Status, o.ID, "its name and status"})
		sampled++
	}
	for _, id := range ids {
		o := records[id]
		old := 0
		for name := range a.names[id] {
			if name != o.Customer {
				searches = append(searches, search{"q=" + url.QueryEscape(nameWord(name)), 0,
					fmt.Sprintf("order %d's old name %q (now %q)", id, name, o.Customer)})
				old++
			}
		}
		if old > 0 {
			want(o)
		}
	}
	for _, id := range ids {
		if sampled >= 300 {
			break
		}
		if o := records[id]; len(a.names[id]) < 2 {
			want(o)
		}
	}
	for id, name := range a.deleted {
		if name != "" {
			searches = append(searches, search{"q=" + url.QueryEscape(nameWord(name)), 0,
				fmt.Sprintf("deleted order %d's name %q", id, name)})
		}
	}
	v.Searches = len(searches)
	jobs := make(chan search)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				rows, totals, err := walkList(base, s.q)
				if err != nil {
					fail("search %s: %v", s.q, err)
					continue
				}
				for _, total := range totals {
					if total != int64(len(rows)) {
						v.add(&v.WrongTotal, "search %s says total %d, holds %d rows", s.q, total, len(rows))
						break
					}
				}
				if s.id == 0 {
					if len(rows) > 0 || (len(totals) > 0 && totals[0] > 0) {
						field := &v.SearchStale
						if strings.HasPrefix(s.what, "deleted") {
							field = &v.DeletedExists
						}
						v.add(field, "search %s for %s finds %d rows (first: order %d %q), total %d; want none",
							s.q, s.what, len(rows), firstID(rows), firstName(rows), totals[0])
					}
					continue
				}
				found := false
				for _, r := range rows {
					found = found || r.ID == s.id
				}
				if !found {
					v.add(&v.SearchMissing, "search %s (%s) does not find order %d among %d rows", s.q, s.what, s.id, len(rows))
				}
			}
		}()
	}
	for _, s := range searches {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("searching failed:\n%s", strings.Join(failed, "\n"))
	}

	// Every order's history, up to the highest id anyone saw.
	v.History = checkHistoriesOf(&v.collectionFaults, base, "/orders", maxID, records, a.historyAcks(true))
	v.Customers = checkCustomers(t, base, a.customers, records)
	for _, d := range v.Customers.details {
		if len(v.details) < 90 {
			v.details = append(v.details, "customers: "+d)
		}
	}
	return v
}

func firstID(rows []orderJSON) int64 {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].ID
}

func firstName(rows []orderJSON) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0].Customer
}
