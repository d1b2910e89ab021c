package e2e

// What the checks of every collection share (orders, products,
// customers): reading every member and every page of a List over HTTP
// JSON, what a load's writers were told, and the problems a List can
// have.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"orders/testutil"
)

// recordJSON is a member of a collection as its JSON shows it.
type recordJSON interface {
	ident() (id, version int64)
}

func (o orderJSON) ident() (int64, int64)    { return o.ID, o.Version }
func (p productJSON) ident() (int64, int64)  { return p.ID, p.Version }
func (c customerJSON) ident() (int64, int64) { return c.ID, c.Version }

// walkPages reads every page of GET <path>?per_page=100&<query>, the rows
// under the page's member key (the collection's plural); totals are what
// each page claimed.
func walkPages[T any](base, path, key, query string) (rows []T, totals []int64, err error) {
	next := path + "?per_page=100"
	if query != "" {
		next += "&" + query
	}
	for pages := 0; next != ""; pages++ {
		if pages > 10000 {
			return nil, nil, fmt.Errorf("GET %s?%s: more than 10,000 pages", path, query)
		}
		r, err := call(base, http.MethodGet, next, "", nil, testutil.HJSON)
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %v", next, err)
		}
		if r.Status != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %d %s, want 200", next, r.Status, testutil.Snippet(r.Body))
		}
		var p map[string]json.RawMessage
		var page []T
		var total int64
		var nextURL *string
		if err := r.Decode(&p); err != nil {
			return nil, nil, fmt.Errorf("GET %s: %v in %s", next, err, testutil.Snippet(r.Body))
		}
		for k, dst := range map[string]any{key: &page, "total": &total, "next": &nextURL} {
			if err := json.Unmarshal(p[k], dst); err != nil {
				return nil, nil, fmt.Errorf("GET %s: %q: %v in %s", next, k, err, testutil.Snippet(r.Body))
			}
		}
		rows = append(rows, page...)
		totals = append(totals, total)
		next = ""
		if nextURL != nil {
			next = *nextURL
		}
	}
	return rows, totals, nil
}

// probeRecords reads GET <path>/<id> of every id from 1 to past maxID: ids
// are handed out in sequence (a refused create may skip one), so it keeps
// going while members turn up (creates whose answer was lost) until 200
// ids in a row do not exist. failed holds the first reads that went
// wrong.
func probeRecords[T recordJSON](base, path string, maxID int64) (records map[int64]T, failed []string) {
	records = map[int64]T{}
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
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
					r, err := call(base, http.MethodGet, path+"/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
					switch {
					case err != nil:
						fail("GET %s/%d: %v", path, id, err)
					case r.Status == http.StatusOK:
						var rec T
						if err := r.Decode(&rec); err != nil {
							fail("GET %s/%d: %v %s", path, id, err, testutil.Snippet(r.Body))
							continue
						}
						if got, _ := rec.ident(); got != id {
							fail("GET %s/%d: the member is %d: %s", path, id, got, testutil.Snippet(r.Body))
							continue
						}
						mu.Lock()
						records[id] = rec
						highest = max(highest, id)
						mu.Unlock()
					case r.Status != http.StatusNotFound:
						fail("GET %s/%d: %d %s, want 200 or 404", path, id, r.Status, testutil.Snippet(r.Body))
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
	for from, to := int64(1), maxID+200; ; {
		h := probe(from, to)
		if h <= to-200 {
			break
		}
		from, to = to+1, h+200
	}
	return records, failed
}

// sortedIDs are the keys of records, smallest first.
func sortedIDs[T any](records map[int64]T) []int64 {
	ids := make([]int64, 0, len(records))
	for id := range records {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// ackedRecords is what a load's writers of one collection were told: the
// last acknowledged state of every member, acknowledged deletes (with
// what names the member: a SKU, an email), and members whose delete had
// an unknown outcome (a 5xx or a lost connection: it may have happened).
type ackedRecords[T recordJSON] struct {
	mu        sync.Mutex
	records   map[int64]T
	deleted   map[int64]string
	maybeGone map[int64]bool
	hot       []int64
	counts    map[string]int
	problems  []string
	// For the history check, as acked has them.
	versions    map[int64]map[int64]bool
	lost        map[int64]map[int64]bool
	lostCreates int
	delVersion  map[int64]int64
}

func newAckedRecords[T recordJSON]() *ackedRecords[T] {
	return &ackedRecords[T]{records: map[int64]T{}, deleted: map[int64]string{}, maybeGone: map[int64]bool{}, counts: map[string]int{},
		versions: map[int64]map[int64]bool{}, lost: map[int64]map[int64]bool{}, delVersion: map[int64]int64{}}
}

// unknown records a write whose answer was lost: a create (id 0), or a
// write to member id carrying version.
func (a *ackedRecords[T]) unknown(id, version int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts["unknown"]++
	if id == 0 {
		a.lostCreates++
		return
	}
	addTo(a.lost, id, version)
}

func (a *ackedRecords[T]) count(what string) {
	a.mu.Lock()
	a.counts[what]++
	a.mu.Unlock()
}

func (a *ackedRecords[T]) problem(what, format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts[what]++
	if len(a.problems) < 10 {
		a.problems = append(a.problems, fmt.Sprintf(format, args...))
	}
}

// ack records an acknowledged state of rec (the highest version wins).
func (a *ackedRecords[T]) ack(rec T) {
	id, version := rec.ident()
	a.mu.Lock()
	defer a.mu.Unlock()
	addTo(a.versions, id, version)
	if _, gone := a.deleted[id]; gone {
		return
	}
	if cur, ok := a.records[id]; ok {
		if _, v := cur.ident(); version <= v {
			return
		}
	}
	a.records[id] = rec
}

// pickHot is one of the members the writers work on (0: none yet).
func (a *ackedRecords[T]) pickHot(pick func(n int) int) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.hot) == 0 {
		return 0
	}
	return a.hot[pick(len(a.hot))]
}

// addHot adds a created member to the hot ones, the oldest leaving past n.
func (a *ackedRecords[T]) addHot(id int64, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hot = append(a.hot, id)
	if len(a.hot) > n {
		a.hot = a.hot[1:]
	}
}

// historyAcks is what the writers were told, for checkHistories (known:
// a load ran). The caller holds a.mu.
func (a *ackedRecords[T]) historyAcks(known bool) historyAcks {
	return historyAcks{known: known, versions: a.versions, lost: a.lost, lostCreates: a.lostCreates,
		deleted: a.delVersion, maybeGone: a.maybeGone}
}

// maxID is the highest id the writers heard of. The caller holds a.mu.
func (a *ackedRecords[T]) maxID() int64 {
	var m int64
	for id := range a.records {
		m = max(m, id)
	}
	for id := range a.deleted {
		m = max(m, id)
	}
	for id := range a.maybeGone {
		m = max(m, id)
	}
	return m
}

// collectionFaults counts what is wrong with the members of one
// collection, its Lists and its histories; every count must be zero.
type collectionFaults struct {
	WrongTotal    int // a list's total is not the number of its rows
	Duplicate     int // a member twice in one list
	Missing       int // an existing member absent from a list it belongs in
	Dangling      int // a listed member that does not exist
	WrongList     int // a listed member that does not belong in that list
	StaleRow      int // a row that differs from GET <path>/<id>
	Unreadable    int // an acknowledged member that does not exist
	OlderThanAck  int // a member older than its last acknowledged version
	DeletedExists int // an acknowledged delete that is readable
	LoadProblems  int // wrong answers the load got (a stale version accepted, ...)
	// History is what the members' histories say (history_test.go).
	History *histories

	mu      sync.Mutex
	details []string
}

func (f *collectionFaults) collectionProblems() int {
	return f.WrongTotal + f.Duplicate + f.Missing + f.Dangling + f.WrongList + f.StaleRow + f.Unreadable + f.OlderThanAck + f.DeletedExists +
		f.LoadProblems + f.History.problems()
}

func (f *collectionFaults) add(field *int, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*field++
	if len(f.details) < 30 {
		f.details = append(f.details, fmt.Sprintf(format, args...))
	}
}

// checkAcked compares the members that exist with what the writers were
// told: every acknowledged member there at its acknowledged version or
// later, no acknowledged delete readable. noun names the members in
// messages. It returns how many acknowledged live members were checked.
// The caller holds a.mu.
func checkAcked[T recordJSON](f *collectionFaults, noun string, records map[int64]T, a *ackedRecords[T]) (live int) {
	for id, want := range a.records {
		if a.maybeGone[id] {
			continue
		}
		live++
		_, wantV := want.ident()
		rec, ok := records[id]
		if !ok {
			f.add(&f.Unreadable, "acknowledged %s %d (v%d) does not exist", noun, id, wantV)
			continue
		}
		if _, v := rec.ident(); v < wantV {
			f.add(&f.OlderThanAck, "%s %d is at v%d, acknowledged at v%d", noun, id, v, wantV)
		}
	}
	for id, name := range a.deleted {
		if rec, ok := records[id]; ok {
			_, v := rec.ident()
			f.add(&f.DeletedExists, "deleted %s %d (%s) is readable (v%d)", noun, id, name, v)
		}
	}
	return live
}

// checkListOf walks GET <path>?<query> and compares it with the members
// that belong in it (belongs), each once and as GET <path>/<id> shows it
// (same); ids are the members that exist, in order. It returns the rows.
func checkListOf[T recordJSON](t interface{ Fatalf(string, ...any) }, f *collectionFaults, base, path, key, query string,
	records map[int64]T, ids []int64, belongs func(T) bool, same func(row, rec T) bool) []T {
	rows, totals, err := walkPages[T](base, path, key, query)
	if err != nil {
		t.Fatalf("list %s?%s: %v", path, query, err)
	}
	for _, total := range totals {
		if total != int64(len(rows)) {
			f.add(&f.WrongTotal, "list %s?%s says total %d, holds %d rows", path, query, total, len(rows))
			break
		}
	}
	seen := map[int64]bool{}
	for _, row := range rows {
		id, _ := row.ident()
		if seen[id] {
			f.add(&f.Duplicate, "%d twice in list %s?%s", id, path, query)
		}
		seen[id] = true
		rec, ok := records[id]
		switch {
		case !ok:
			f.add(&f.Dangling, "list %s?%s holds %d, which does not exist", path, query, id)
		case !belongs(rec):
			f.add(&f.WrongList, "list %s?%s holds %+v, which does not belong there", path, query, rec)
		case !same(row, rec):
			f.add(&f.StaleRow, "list %s?%s shows %+v, it is %+v", path, query, row, rec)
		}
	}
	for _, id := range ids {
		if rec := records[id]; belongs(rec) && !seen[id] {
			f.add(&f.Missing, "%+v is missing from list %s?%s", rec, path, query)
		}
	}
	return rows
}

// ackWrite records the outcome of a write of that kind to member id (0: a
// create) carrying version: acknowledged (the member the answer carried),
// refused (counted by status), or unknown (a 5xx or a lost answer).
func ackWrite[T recordJSON](a *ackedRecords[T], kind string, id, version int64, r *testutil.Resp, err error) (T, bool) {
	var rec T
	if err != nil || r.Status >= 500 {
		a.unknown(id, version)
		return rec, false
	}
	switch r.Status {
	case http.StatusOK, http.StatusCreated:
		if err := r.Decode(&rec); err != nil {
			a.problem("bad body", "%s answered %d with %s", r.What, r.Status, testutil.Snippet(r.Body))
			return rec, false
		}
		if got, _ := rec.ident(); got <= 0 {
			a.problem("bad body", "%s answered %d with %s", r.What, r.Status, testutil.Snippet(r.Body))
			return rec, false
		}
		a.ack(rec)
		a.count(kind)
		return rec, true
	}
	a.count(strconv.Itoa(r.Status)) // 409: a stale version; 422: a value another member holds
	return rec, false
}

// raceDelete sends DELETE <path>/<id>?version=<version> while put sends a
// PUT carrying the same version; never may both win. name is what names
// the member once deleted (its SKU, its email); put reports whether the
// PUT made a new version.
func raceDelete[T recordJSON](a *ackedRecords[T], base, path string, id, version int64, name string, put func() bool) {
	var wg sync.WaitGroup
	var putWon, delWon bool
	wg.Add(2)
	go func() {
		defer wg.Done()
		putWon = put()
	}()
	go func() {
		defer wg.Done()
		r, err := call(base, http.MethodDelete, path+"/"+strconv.FormatInt(id, 10)+"?version="+strconv.FormatInt(version, 10), "", nil, testutil.HJSON)
		a.mu.Lock()
		defer a.mu.Unlock()
		switch {
		case err != nil || r.Status >= 500:
			a.maybeGone[id] = true
			a.counts["unknown"]++
			addTo(a.lost, id, version)
		case r.Status == http.StatusNoContent:
			delWon = true
			a.deleted[id] = name
			a.delVersion[id] = version
			delete(a.records, id)
			a.counts["deleted"]++
		default:
			a.counts[strconv.Itoa(r.Status)]++
		}
	}()
	wg.Wait()
	if putWon && delWon {
		a.problem("both won", "%s/%d: a PUT and a DELETE both with version %d both succeeded", path, id, version)
	}
}

// claimHeld checks that a member of path holds its unique value of field
// (a SKU, an email): a create of that value in another case is refused
// with a 422 whose message for field is want ("is already the SKU of
// product 7"), and changes nothing; rest is the create's other fields.
// It returns what went wrong, or "".
func claimHeld(t *testing.T, base, path, field, value, want string, rest map[string]any) string {
	t.Helper()
	other := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return r
	}, value)
	body := maps.Clone(rest)
	body[field] = other
	r, err := call(base, http.MethodPost, path, "application/json", jsonOf(body), testutil.HJSON)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	var e struct {
		Errors map[string]string `json:"errors"`
	}
	_ = r.Decode(&e)
	if r.Status == http.StatusUnprocessableEntity && e.Errors[field] == want {
		return ""
	}
	if r.Status == http.StatusCreated {
		t.Fatalf("POST %s with %s %q: a second member holds it (%s): %s", path, field, other, want, r.Body)
	}
	return fmt.Sprintf("POST %s with %s %q: %d %s, want 422 with %s %q", path, field, other, r.Status, testutil.Snippet(r.Body), field, want)
}

// loadProblems is how many wrong answers the writers got (a stale version
// accepted, a PUT and a DELETE of one version both won, a body that was
// no member) and what they were. The caller holds a.mu.
func (a *ackedRecords[T]) loadProblems() (int, []string) {
	n := 0
	for _, k := range []string{"stale accepted", "both won", "bad body"} {
		n += a.counts[k]
	}
	return n, a.problems
}

// checkHistoriesOf checks the history of every member of path up to the
// highest id anyone saw (maxID, or a member of records) against what the
// writers were told (checkHistories), noting its details in f.
func checkHistoriesOf[T recordJSON](f *collectionFaults, base, path string, maxID int64, records map[int64]T, acks historyAcks) *histories {
	current := map[int64]int64{}
	for id, rec := range records {
		_, current[id] = rec.ident()
		maxID = max(maxID, id)
	}
	h := checkHistories(base, path, maxID, current, acks)
	for _, d := range h.details {
		if len(f.details) < 60 {
			f.details = append(f.details, "history: "+d)
		}
	}
	return h
}

// readMember reads GET <path> as JSON: false when it does not answer 200
// with a member.
func readMember[T any](base, path string) (T, bool) {
	var rec T
	r, err := call(base, http.MethodGet, path, "", nil, testutil.HJSON)
	if err != nil || r.Status != http.StatusOK || r.Decode(&rec) != nil {
		return rec, false
	}
	return rec, true
}
