package e2e

// History after a load: every write of a record appends
// exactly one entry, in the record's own transaction. Read from the
// outside over HTTP JSON, after a chaos run: every acknowledged version
// has exactly one created/updated entry with that version; no entry has a
// version that was never acknowledged, unless a write whose answer was
// lost (a 5xx, a dropped connection, a killed instance) could have made
// it; the versions run 1, 2, ... without a gap up to the record's own;
// an acknowledged delete left exactly one "deleted" entry, the newest.

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"orders/testutil"
)

// historyAcks is what a load was told about one resource's records, as
// far as their history goes. known false: there is no record of the load
// (the collection's own consistency only), so only the history's shape
// is checked.
type historyAcks struct {
	known bool
	// versions are the versions each record was acknowledged at (created
	// at 1, each accepted change at its new version).
	versions map[int64]map[int64]bool
	// lost are the versions carried by writes to a record whose answer
	// was lost: each may have made the version after it (or, for a
	// delete, deleted that version).
	lost map[int64]map[int64]bool
	// lostCreates is how many creates had an unknown outcome.
	lostCreates int
	// deleted are acknowledged deletes and the version each carried;
	// maybeGone deletes whose answer was lost.
	deleted   map[int64]int64
	maybeGone map[int64]bool
}

// addTo records v in m[id].
func addTo(m map[int64]map[int64]bool, id, v int64) {
	if m[id] == nil {
		m[id] = map[int64]bool{}
	}
	m[id][v] = true
}

// histories is what checkHistories found: how much it read, and one count
// per kind of problem, each of which must be zero.
type histories struct {
	Records, Entries int

	Unreadable int // the history of a record that was acknowledged does not answer (or not as JSON)
	Missing    int // an acknowledged version (or delete) without its entry
	Duplicate  int // two entries of one version, two creates or two deletes
	Unacked    int // an entry of a version no acknowledged or lost write made
	Broken     int // a gap in the versions, the newest not the record's own, a delete that is not the newest entry

	mu      sync.Mutex
	details []string
}

func (h *histories) problems() int {
	if h == nil {
		return 0
	}
	return h.Unreadable + h.Missing + h.Duplicate + h.Unacked + h.Broken
}

func (h *histories) add(field *int, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*field++
	if len(h.details) < 30 {
		h.details = append(h.details, fmt.Sprintf(format, args...))
	}
}

func (h *histories) String() string {
	if h == nil {
		return "histories not checked"
	}
	return fmt.Sprintf("%d histories (%d entries) read; problems: %d unreadable, %d acknowledged writes without their entry, "+
		"%d versions with two entries, %d entries no acknowledged or lost write made, %d histories out of shape",
		h.Records, h.Entries, h.Unreadable, h.Missing, h.Duplicate, h.Unacked, h.Broken)
}

// historyEntry is one entry of GET <member>/history as JSON.
type historyEntry struct {
	Version int64  `json:"version"`
	Action  string `json:"action"`
}

// readHistory reads every page of a record's history (newest first); a
// 404 is found false.
func readHistory(base, member string) (entries []historyEntry, found bool, err error) {
	next := member + "/history"
	for pages := 0; next != ""; pages++ {
		if pages > 100 {
			return nil, true, fmt.Errorf("GET %s/history: more than 100 pages", member)
		}
		r, err := call(base, http.MethodGet, next, "", nil, testutil.HJSON)
		if err != nil {
			return nil, false, fmt.Errorf("GET %s: %v", next, err)
		}
		if r.Status == http.StatusNotFound && pages == 0 {
			return nil, false, nil
		}
		if r.Status != http.StatusOK {
			return nil, true, fmt.Errorf("GET %s: %d %s, want 200", next, r.Status, testutil.Snippet(r.Body))
		}
		var p struct {
			Entries []historyEntry `json:"entries"`
			Next    *string        `json:"next"`
		}
		if err := r.Decode(&p); err != nil || p.Entries == nil {
			return nil, true, fmt.Errorf("GET %s: %v in %s", next, err, testutil.Snippet(r.Body))
		}
		entries = append(entries, p.Entries...)
		next = ""
		if p.Next != nil {
			next = *p.Next
		}
	}
	return entries, true, nil
}

// checkHistories reads the history of every record of the collection at
// path ("/orders") with an id from 1 to maxID, whose records that exist
// are at the versions in current, and checks it against what the load
// was told (a).
func checkHistories(base, path string, maxID int64, current map[int64]int64, a historyAcks) *histories {
	h := &histories{}
	// Lost creates that happened: records with a history that nobody was
	// told about. At most a.lostCreates of them.
	var unackedCreates int
	var mu sync.Mutex
	check := func(id int64) {
		member := path + "/" + strconv.FormatInt(id, 10)
		acked := a.versions[id]
		_, deletedAcked := a.deleted[id]
		cur, exists := current[id]
		entries, found, err := readHistory(base, member)
		switch {
		case err != nil:
			h.add(&h.Unreadable, "%s: %v", member, err)
			return
		case !found:
			if exists || len(acked) > 0 || deletedAcked {
				h.add(&h.Unreadable, "%s/history is 404, but the record exists (v%d: %v) or was acknowledged (versions %v, deleted %v)",
					member, cur, exists, sortedVersions(acked), deletedAcked)
			}
			return
		}
		mu.Lock()
		h.Records++
		h.Entries += len(entries)
		mu.Unlock()
		say := func(field *int, format string, args ...any) {
			h.add(field, "%s: "+format+"; its history (newest first): %s", append([]any{member}, append(args, describeHistory(entries))...)...)
		}
		// The shape: one entry per version, the versions 1..n with no gap
		// (unless the oldest were dropped: 1,000 are kept), a create the
		// oldest, a delete the newest, the newest the record's own version.
		count := map[int64]int{}
		var creates, deletes int
		var newest, oldest int64
		for i, e := range entries {
			switch e.Action {
			case "created", "updated":
				count[e.Version]++
				if newest == 0 {
					newest = e.Version
				}
				oldest = e.Version
				if e.Action == "created" {
					creates++
					if e.Version != 1 || i != len(entries)-1 {
						say(&h.Broken, "a create at v%d, entry %d of %d (want v1, the oldest)", e.Version, i+1, len(entries))
					}
				}
			case "deleted":
				deletes++
				if i != 0 {
					say(&h.Broken, "a delete (v%d) that is not the newest entry", e.Version)
				}
			case "note":
				// Loads write none; nothing to check but that it is an entry.
			default:
				say(&h.Broken, "an entry of action %q", e.Action)
			}
		}
		if creates > 1 || deletes > 1 {
			say(&h.Duplicate, "%d creates and %d deletes", creates, deletes)
		}
		truncated := creates == 0 && len(entries) >= 1000
		if creates == 0 && !truncated {
			say(&h.Broken, "no create")
		}
		for v := oldest; v <= newest; v++ {
			switch n := count[v]; {
			case n > 1:
				say(&h.Duplicate, "%d entries of version %d", n, v)
			case n == 0:
				say(&h.Broken, "no entry of version %d (a gap between v%d and v%d)", v, oldest, newest)
			}
		}
		if exists && (newest != cur || deletes > 0) {
			say(&h.Broken, "the record is at v%d, its newest change entry is v%d and it has %d deletes", cur, newest, deletes)
		}
		if !exists && deletes == 0 && len(entries) > 0 {
			say(&h.Broken, "the record does not exist, and its history has no delete")
		}
		if deletes == 1 && entries[0].Version != newest {
			say(&h.Broken, "the delete is of v%d, the newest change v%d", entries[0].Version, newest)
		}
		if !a.known {
			return
		}
		// Against what the load was told.
		for v := range acked {
			if count[v] == 0 && !(truncated && v < oldest) {
				say(&h.Missing, "acknowledged v%d has no entry", v)
			}
		}
		if len(acked) == 0 && !deletedAcked {
			// A create nobody was told about: one whose answer was lost.
			// Nobody else writes to it.
			mu.Lock()
			unackedCreates++
			mu.Unlock()
			if len(entries) != 1 || entries[0].Action != "created" {
				say(&h.Unacked, "a record whose create was never acknowledged has more than its create")
			}
			return
		}
		for v := range count {
			if !acked[v] && !a.lost[id][v-1] {
				say(&h.Unacked, "v%d was never acknowledged, and no write with v%d had its answer lost", v, v-1)
			}
		}
		switch dv, ok := a.deleted[id]; {
		case ok && (deletes != 1 || entries[0].Version != dv):
			say(&h.Missing, "the acknowledged delete of v%d has no entry of its own", dv)
		case !ok && deletes > 0 && !a.maybeGone[id]:
			say(&h.Unacked, "a delete (v%d) nobody was told about, and no delete had its answer lost", entries[0].Version)
		}
	}
	ids := make(chan int64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				check(id)
			}
		}()
	}
	for id := int64(1); id <= maxID; id++ {
		ids <- id
	}
	close(ids)
	wg.Wait()
	if a.known && unackedCreates > a.lostCreates {
		h.add(&h.Unacked, "%d records were created without an acknowledgement, and only %d creates had their answer lost", unackedCreates, a.lostCreates)
	}
	return h
}

func sortedVersions(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// describeHistory says a history in a few words: "deleted v4, updated v4,
// updated v3, ...".
func describeHistory(entries []historyEntry) string {
	var parts []string
	for i, e := range entries {
		if i == 12 {
			parts = append(parts, fmt.Sprintf("… %d in all", len(entries)))
			break
		}
		parts = append(parts, e.Action+" v"+strconv.FormatInt(e.Version, 10))
	}
	return strings.Join(parts, ", ")
}
