package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"orders/testutil"
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

	WrongTotal    int // a page's total is not the number of rows its list holds
	Duplicate     int // an order twice in one list
	Missing       int // an existing order absent from a list it belongs in
	Dangling      int // a listed order that does not exist
	WrongList     int // a listed order that does not belong in that list (status, name)
	StaleRow      int // a row that differs from GET /orders/<id>
	Unreadable    int // an acknowledged order that does not exist
	OlderThanAck  int // an order older than its last acknowledged version
	DeletedExists int // an acknowledged delete that is readable or found by its name
	SearchMissing int // q=<a word of its name> does not find the order
	SearchStale   int // q=<a word of an old name> finds something
	StaleAccepted int // a PUT with an older version answered 2xx
	BothWon       int // a DELETE and a PUT carrying the same version both answered 2xx
	// History is what the orders' histories say (history_test.go).
	History *histories

	mu      sync.Mutex
	details []string
}

func (v *invariants) problems() int {
	return v.WrongTotal + v.Duplicate + v.Missing + v.Dangling + v.WrongList + v.StaleRow + v.Unreadable +
		v.OlderThanAck + v.DeletedExists + v.SearchMissing + v.SearchStale + v.StaleAccepted + v.BothWon + v.History.problems()
}

func (v *invariants) add(field *int, format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	*field++
	if len(v.details) < 30 {
		v.details = append(v.details, fmt.Sprintf(format, args...))
	}
}

func (v *invariants) String() string {
	return fmt.Sprintf("%d orders exist, %d listed, %d acknowledged live orders and %d name searches checked; problems: "+
		"%d wrong totals, %d duplicates, %d missing from a list, %d listed but missing, %d in the wrong list, "+
		"%d stale rows, %d acknowledged but unreadable, %d older than acknowledged, %d deleted but readable or found, "+
		"%d not found by name, %d found by an old name, %d stale versions accepted, %d delete and PUT of one version both won; %v",
		v.Exist, v.Listed, v.Live, v.Searches, v.WrongTotal, v.Duplicate, v.Missing, v.Dangling, v.WrongList, v.StaleRow,
		v.Unreadable, v.OlderThanAck, v.DeletedExists, v.SearchMissing, v.SearchStale, v.StaleAccepted, v.BothWon, v.History)
}

// listPage is one page of GET /orders as JSON.
type listPage struct {
	Orders []orderJSON `json:"orders"`
	Total  int64       `json:"total"`
	Next   *string     `json:"next"`
}

// walkList reads every page of GET /orders?per_page=100&<query>; totals
// are what each page claimed.
func walkList(base, query string) (rows []orderJSON, totals []int64, err error) {
	next := "/orders?per_page=100"
	if query != "" {
		next += "&" + query
	}
	for pages := 0; next != ""; pages++ {
		if pages > 10000 {
			return nil, nil, fmt.Errorf("GET /orders?%s: more than 10,000 pages", query)
		}
		r, err := call(base, http.MethodGet, next, "", nil, testutil.HJSON)
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %v", next, err)
		}
		if r.Status != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %d %s, want 200", next, r.Status, testutil.Snippet(r.Body))
		}
		var p listPage
		if err := r.Decode(&p); err != nil {
			return nil, nil, fmt.Errorf("GET %s: %v in %s", next, err, testutil.Snippet(r.Body))
		}
		rows = append(rows, p.Orders...)
		totals = append(totals, p.Total)
		next = ""
		if p.Next != nil {
			next = *p.Next
		}
	}
	return rows, totals, nil
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
	maxID := int64(0)
	for id := range a.orders {
		maxID = max(maxID, id)
	}
	for id := range a.deleted {
		maxID = max(maxID, id)
	}
	for id := range a.maybeGone {
		maxID = max(maxID, id)
	}
	if rows, _, err := walkList(base, "per_page=1&page=1"); err == nil && len(rows) > 0 {
		maxID = max(maxID, rows[0].ID)
	}
	records := map[int64]orderJSON{}
	var recMu sync.Mutex
	var failed []string
	fail := func(format string, args ...any) {
		recMu.Lock()
		defer recMu.Unlock()
		if len(failed) < 10 {
			failed = append(failed, fmt.Sprintf(format, args...))
		}
	}
	probe := func(from, to int64) int64 { // returns the highest existing id
		ids := make(chan int64)
		var wg sync.WaitGroup
		var highest int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range ids {
					r, err := call(base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
					switch {
					case err != nil:
						fail("GET /orders/%d: %v", id, err)
					case r.Status == http.StatusOK:
						var o orderJSON
						if err := r.Decode(&o); err != nil || o.ID != id {
							fail("GET /orders/%d: %v %s", id, err, testutil.Snippet(r.Body))
							continue
						}
						recMu.Lock()
						records[id] = o
						highest = max(highest, id)
						recMu.Unlock()
					case r.Status != http.StatusNotFound:
						fail("GET /orders/%d: %d %s, want 200 or 404", id, r.Status, testutil.Snippet(r.Body))
					}
				}
			}()
		}
		for id := from; id <= to; id++ {
			ids <- id
		}
		close(ids)
		wg.Wait()
		return highest
	}
	// Past the highest id seen, keep probing while orders turn up (creates
	// whose answer was lost), until 200 ids in a row do not exist.
	for from, to := int64(1), maxID+200; ; {
		h := probe(from, to)
		if h <= to-200 {
			break
		}
		from, to = to+1, h+200
	}
	if len(failed) > 0 {
		t.Fatalf("reading every order failed:\n%s", strings.Join(failed, "\n"))
	}
	v.Exist = len(records)

	for id, want := range a.orders {
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
	checkList := func(label, query string, belongs func(orderJSON) bool) []orderJSON {
		rows, totals, err := walkList(base, query)
		if err != nil {
			t.Fatalf("list %s: %v", label, err)
		}
		for _, total := range totals {
			if total != int64(len(rows)) {
				v.add(&v.WrongTotal, "list %s says total %d, holds %d rows", label, total, len(rows))
				break
			}
		}
		seen := map[int64]bool{}
		for _, row := range rows {
			if seen[row.ID] {
				v.add(&v.Duplicate, "order %d twice in list %s", row.ID, label)
			}
			seen[row.ID] = true
			o, ok := records[row.ID]
			switch {
			case !ok:
				v.add(&v.Dangling, "list %s holds order %d, which does not exist", label, row.ID)
			case !belongs(o):
				v.add(&v.WrongList, "list %s holds order %d, which is %s %q", label, row.ID, o.Status, o.Customer)
			case row.Version != o.Version || row.Status != o.Status || row.Customer != o.Customer || row.Total != o.Total:
				v.add(&v.StaleRow, "list %s shows order %d as v%d %s %q %s, it is v%d %s %q %s", label, row.ID,
					row.Version, row.Status, row.Customer, row.Total, o.Version, o.Status, o.Customer, o.Total)
			}
		}
		ids := make([]int64, 0, len(records))
		for id := range records {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			if o := records[id]; belongs(o) && !seen[id] {
				v.add(&v.Missing, "order %d (v%d %s %q) is missing from list %s", id, o.Version, o.Status, o.Customer, label)
			}
		}
		return rows
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
	ids := make([]int64, 0, len(records))
	for id := range records {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
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
	current := map[int64]int64{}
	for id, o := range records {
		current[id] = o.Version
		maxID = max(maxID, id)
	}
	v.History = checkHistories(base, "/orders", maxID, current, a.historyAcks())
	for _, d := range v.History.details {
		if len(v.details) < 60 {
			v.details = append(v.details, "history: "+d)
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
