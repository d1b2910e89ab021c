package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/testutil"
)

const (
	crashWorkers = 8
	crashRounds  = 2
	crashLoad    = 2 * time.Second
)

var crashNames = []string{"Alice", "Alex", "Bob", "Carol", "Émile", "Zoë", "o'Brien"}

// loadState is what the writers learned from the answers they got.
type loadState struct {
	mu       sync.Mutex
	ids      []int64
	status   map[int64]string
	version  map[int64]int64 // highest version an answer acknowledged
	created  map[int64]bool  // acknowledged with 201
	deleting map[int64]bool  // a DELETE was sent (its fate may be unknown)
}

type loadCounts struct {
	sent, ok, rejected, conflict, inFlightLost, refused atomic.Int64
	creates, updates, deletes                           atomic.Int64

	mu       sync.Mutex
	statuses map[string]int // "PUT 422" → how many
}

func (n *loadCounts) saw(method string, status int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.statuses == nil {
		n.statuses = map[string]int{}
	}
	n.statuses[method+" "+strconv.Itoa(status)]++
}

// next lists the statuses an order may move to.
var nextStatus = map[string][]string{
	"pending": {"confirmed", "cancelled"}, "confirmed": {"shipped", "cancelled"}, "shipped": {"delivered"},
}

var nameSeq atomic.Int64

// uniqueName is a customer name no write used before, so every entry of a
// name index can be told apart by its name alone.
func uniqueName(r *rand.Rand, w int) string {
	return fmt.Sprintf("%s %d-%d", crashNames[r.IntN(len(crashNames))], w, nameSeq.Add(1))
}

func randomItems(r *rand.Rand) []any {
	n := 1 + r.IntN(5)
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{
			"sku":        fmt.Sprintf("SKU-%d", r.IntN(1000)),
			"name":       fmt.Sprintf("Part %d", r.IntN(10000)),
			"quantity":   1 + r.IntN(50),
			"unit_price": fmt.Sprintf("%d.%02d", r.IntN(500), r.IntN(100)),
		}
	}
	return items
}

// runLoad sends creates, updates and deletes from crashWorkers goroutines
// until stop is closed; a request that fails in transport is counted as
// lost in flight when it began before killed was set.
func runLoad(base string, seed uint64, st *loadState, n *loadCounts, stop <-chan struct{}, killed *atomic.Bool, inflight *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := 0; w < crashWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				st.mu.Lock()
				var id int64
				if len(st.ids) > 0 {
					id = st.ids[r.IntN(len(st.ids))]
				}
				cur, ver := st.status[id], st.version[id]
				st.mu.Unlock()

				op := r.IntN(100)
				var (
					method, path = http.MethodPost, "/orders"
					body         = map[string]any{}
					kind         = "create"
				)
				switch {
				case id == 0 || op < 35:
					body["customer"] = uniqueName(r, w)
					body["items"] = randomItems(r)
					body["notes"] = "load"
				case op < 95:
					kind = "update"
					method, path = http.MethodPut, "/orders/"+strconv.FormatInt(id, 10)
					switch r.IntN(3) {
					case 0: // items replaced
						body["items"] = randomItems(r)
					case 1: // a status change
						if nx := nextStatus[cur]; len(nx) > 0 {
							body["status"] = nx[r.IntN(len(nx))]
						} else {
							body["notes"] = "final"
						}
					default: // a rename, which moves the order in the name indexes
						body["customer"] = uniqueName(r, w)
					}
					if r.IntN(4) == 0 && ver > 0 {
						body["version"] = ver
					}
				default:
					kind = "delete"
					method, path = http.MethodDelete, "/orders/"+strconv.FormatInt(id, 10)
					st.mu.Lock()
					st.deleting[id] = true
					st.mu.Unlock()
				}
				var payload []byte
				ctype := ""
				if kind != "delete" {
					payload, ctype = jsonOf(body), "application/json"
				}
				wasKilled := killed.Load()
				n.sent.Add(1)
				inflight.Add(1)
				res, err := call(base, method, path, ctype, payload, testutil.HJSON)
				inflight.Add(-1)
				if err != nil {
					if wasKilled {
						n.refused.Add(1)
					} else {
						n.inFlightLost.Add(1)
					}
					time.Sleep(5 * time.Millisecond)
					continue
				}
				n.saw(method, res.Status)
				switch {
				case res.Status == http.StatusCreated || res.Status == http.StatusOK:
					n.ok.Add(1)
					var o orderJSON
					if res.Decode(&o) == nil && o.ID > 0 {
						st.mu.Lock()
						if kind == "create" {
							st.ids = append(st.ids, o.ID)
							st.created[o.ID] = true
						}
						st.status[o.ID] = o.Status
						st.version[o.ID] = max(st.version[o.ID], o.Version)
						st.mu.Unlock()
					}
				case res.Status == http.StatusNoContent:
					n.ok.Add(1)
					st.mu.Lock()
					for i, x := range st.ids {
						if x == id {
							st.ids = append(st.ids[:i], st.ids[i+1:]...)
							break
						}
					}
					st.mu.Unlock()
				case res.Status == http.StatusConflict:
					n.conflict.Add(1)
				default:
					n.rejected.Add(1)
				}
				switch kind {
				case "create":
					n.creates.Add(1)
				case "update":
					n.updates.Add(1)
				default:
					n.deletes.Add(1)
				}
			}
		}()
	}
	return &wg
}

// TestCrashAtomicity: SIGKILL the app under a load of writes, start it again
// on the same Redis, and find no half-written order, no index entry without
// its order, no order without its index entries, and no acknowledged order
// lost.
func TestCrashAtomicity(t *testing.T) {
	testutil.Long(t)
	rs := startRedis(t, 0)
	rdb := rs.client(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	st := &loadState{status: map[int64]string{}, version: map[int64]int64{}, created: map[int64]bool{}, deleting: map[int64]bool{}}
	var n loadCounts
	var inflightAtKill []int64

	app := startApp(t, rs.url())
	for round := 0; round < crashRounds; round++ {
		stop := make(chan struct{})
		var killed atomic.Bool
		var inflight atomic.Int64
		wg := runLoad(app.base, seed+uint64(round)*1000, st, &n, stop, &killed, &inflight)
		time.Sleep(crashLoad)
		if !app.running() {
			t.Fatalf("the app exited under load (%v):\n%s", app.err, tail(app.out.String(), 30))
		}
		inflightAtKill = append(inflightAtKill, inflight.Load())
		app.signal(t, syscall.SIGKILL)
		killed.Store(true)
		<-app.exited
		close(stop)
		wg.Wait()
		app = startApp(t, rs.url())
	}
	t.Logf("load: %d rounds × %v from %d writers, then SIGKILL: %d requests (%d creates, %d updates, %d deletes answered; %d ok, %d conflicts, %d rejected), writes in flight when each SIGKILL was sent %v, %d failed in transport (cut off by the kill), %d refused while the app was down",
		crashRounds, crashLoad, crashWorkers, n.sent.Load(), n.creates.Load(), n.updates.Load(), n.deletes.Load(),
		n.ok.Load(), n.conflict.Load(), n.rejected.Load(), inflightAtKill, n.inFlightLost.Load(), n.refused.Load())
	t.Logf("answers under load: %v", n.statuses)
	for k, c := range n.statuses {
		if strings.HasSuffix(k, " 500") || strings.HasSuffix(k, " 503") || strings.HasSuffix(k, " 502") {
			t.Errorf("under load: %d × %s, want no 5xx while Redis is up", c, k)
		}
	}
	if n.creates.Load() < 50 || n.updates.Load() < 50 {
		t.Fatalf("the load was too light to prove anything: %d creates and %d updates answered", n.creates.Load(), n.updates.Load())
	}

	// Through the API: every list, filter and search, and every order listed.
	listed := map[int64]orderSummary{}
	walk := func(query url.Values, check func(o orderJSON) error) int {
		seen := 0
		query.Set("per_page", "100")
		var total int64 = -1
		for page := 1; ; page++ {
			query.Set("page", strconv.Itoa(page))
			var l listJSON
			mustCall(t, app.base, http.MethodGet, "/orders?"+query.Encode(), "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &l)
			if total >= 0 && l.Total != total {
				t.Fatalf("GET /orders?%s: total changed from %d to %d with no writer running", query.Encode(), total, l.Total)
			}
			total = l.Total
			for _, o := range l.Orders {
				seen++
				if err := check(o); err != nil {
					t.Errorf("GET /orders?%s: order %d: %v", query.Encode(), o.ID, err)
				}
				if prev, ok := listed[o.ID]; ok && prev != o.summary() {
					t.Errorf("order %d is listed as %+v and as %+v", o.ID, prev, o.summary())
				}
				listed[o.ID] = o.summary()
			}
			if l.Next == nil {
				break
			}
			if page > 10000 {
				t.Fatalf("GET /orders?%s: more than 10000 pages", query.Encode())
			}
		}
		if int64(seen) != total {
			t.Errorf("GET /orders?%s: walked %d entries over all pages, the list says total %d (an entry pointed nowhere and was skipped, or one was listed twice)",
				query.Encode(), seen, total)
		}
		return seen
	}
	ids := map[int64]bool{}
	all := walk(url.Values{}, func(o orderJSON) error {
		if ids[o.ID] {
			return errors.New("listed twice")
		}
		ids[o.ID] = true
		return nil
	})
	byStatus := 0
	for _, s := range store.Statuses {
		byStatus += walk(url.Values{"status": {string(s)}}, func(o orderJSON) error {
			if o.Status != string(s) {
				return fmt.Errorf("status %q in the %s filter", o.Status, s)
			}
			if !ids[o.ID] {
				return errors.New("in a status filter but not in the whole list")
			}
			return nil
		})
	}
	if byStatus != all {
		t.Errorf("the status filters list %d orders in all, the whole list %d", byStatus, all)
	}
	searched := 0
	for _, q := range []string{"a", "AL", "alice", "bob 1", "é", "ÉMILE", "zoë", "o'b", "carol 3-1", "b", "c", "z", "o"} {
		searched += walk(url.Values{"q": {q}}, func(o orderJSON) error {
			if !matchesSearch(o, q) {
				return fmt.Errorf("customer %q does not match %q", o.Customer, q)
			}
			return nil
		})
	}

	// Every order listed can be fetched, whole.
	idList := make([]int64, 0, len(listed))
	for id := range listed {
		idList = append(idList, id)
	}
	sort.Slice(idList, func(i, j int) bool { return idList[i] < idList[j] })
	var (
		mu      sync.Mutex
		fetched = map[int64]orderJSON{}
		wg      sync.WaitGroup
		next    atomic.Int64
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(idList) {
					return
				}
				id := idList[i]
				r, err := call(app.base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
				if err != nil {
					t.Errorf("GET /orders/%d: %v", id, err)
					continue
				}
				if r.Status != 200 {
					t.Errorf("order %d is listed, but GET /orders/%d answers %d (%s), want 200", id, id, r.Status, testutil.Snippet(r.Body))
					continue
				}
				var o orderJSON
				if err := r.Decode(&o); err != nil {
					t.Errorf("GET /orders/%d: %v", id, err)
					continue
				}
				if err := o.consistent(); err != nil {
					t.Errorf("GET /orders/%d: %v", id, err)
				}
				if o.summary() != listed[id] {
					t.Errorf("order %d: the list shows %+v, GET shows %+v", id, listed[id], o.summary())
				}
				mu.Lock()
				fetched[id] = o
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	// No acknowledged order is lost, and no acknowledged update undone.
	lost, behind, kept := 0, 0, 0
	for id := range st.created {
		if st.deleting[id] {
			continue
		}
		kept++
		o, ok := fetched[id]
		if !ok {
			lost++
			if lost <= 5 {
				t.Errorf("order %d was created (201) and never deleted, but it is not listed after the crash", id)
			}
			continue
		}
		if o.Version < st.version[id] {
			behind++
			t.Errorf("order %d: version %d after the crash, but version %d was acknowledged", id, o.Version, st.version[id])
		}
	}
	if lost > 0 || behind > 0 {
		t.Errorf("%d acknowledged orders lost, %d acknowledged updates undone", lost, behind)
	}

	// In Redis itself: no items without their order, no index entry without
	// its order, no order missing from its indexes.
	ctx := context.Background()
	checkRedis(t, ctx, rdb, fetched)

	// Ids are never reused, crash or not: a new order gets a fresh one.
	var maxID int64
	for id := range st.created {
		maxID = max(maxID, id)
	}
	var fresh orderJSON
	mustCall(t, app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "After the crash"}), testutil.HJSON).
		WantStatus(t, http.StatusCreated).JSON(t, &fresh)
	if fresh.ID <= maxID {
		t.Errorf("the first order after the crashes got id %d, want above %d (the highest ever acknowledged)", fresh.ID, maxID)
	}

	t.Logf("checked after %d crashes: %d orders listed and fetched whole, %d list entries walked (%d in status filters, %d in name searches), %d acknowledged creates all present",
		crashRounds, len(fetched), all+byStatus+searched, byStatus, searched, kept)
	if !app.running() {
		t.Fatalf("the restarted app exited: %v", app.err)
	}
}

// orderSummary is what a list entry shows of an order.
type orderSummary struct {
	ID        int64
	Customer  string
	Status    string
	ItemCount int
	Total     store.Money
	Version   int64
}

func (o orderJSON) summary() orderSummary {
	return orderSummary{o.ID, o.Customer, o.Status, o.ItemCount, o.Total, o.Version}
}

// consistent checks an order's derived fields against its items.
func (o orderJSON) consistent() error {
	if o.ItemCount != len(o.Items) {
		return fmt.Errorf("item_count %d, but %d items", o.ItemCount, len(o.Items))
	}
	var sum store.Money
	for i, it := range o.Items {
		if it.LineTotal != it.UnitPrice.Times(it.Quantity) {
			return fmt.Errorf("item %d: line_total %s, want %d × %s", i, it.LineTotal, it.Quantity, it.UnitPrice)
		}
		sum += it.LineTotal
	}
	if o.Total != sum {
		return fmt.Errorf("total %s, but the line totals add up to %s", o.Total, sum)
	}
	if o.Version < 1 {
		return fmt.Errorf("version %d", o.Version)
	}
	return nil
}

func checkRedis(t *testing.T, ctx context.Context, rdb *redis.Client, fetched map[int64]orderJSON) {
	t.Helper()
	var orderKeys, itemKeys, indexKeys []string
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		switch {
		case strings.HasPrefix(k, "o:{") && strings.HasSuffix(k, "}:i"):
			itemKeys = append(itemKeys, k)
		case strings.HasPrefix(k, "o:{") && strings.HasSuffix(k, "}"):
			orderKeys = append(orderKeys, k)
		case strings.HasPrefix(k, "ix:"):
			indexKeys = append(indexKeys, k)
		case k == "seq":
		default:
			t.Logf("note: Redis holds a key this test does not know: %q", k)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	exists := map[int64]bool{}
	for _, k := range orderKeys {
		id, err := strconv.ParseInt(k[3:len(k)-1], 10, 64)
		if err != nil {
			t.Errorf("order key %q has no numeric id", k)
			continue
		}
		exists[id] = true
		if _, ok := fetched[id]; !ok {
			t.Errorf("order %d is in Redis (%s) but was not listed through the API: an order lost from the indexes", id, k)
		}
	}
	if len(exists) != len(fetched) {
		t.Errorf("Redis holds %d orders, the API listed %d", len(exists), len(fetched))
	}
	for _, k := range itemKeys {
		id, _ := strconv.ParseInt(k[3:len(k)-3], 10, 64)
		if !exists[id] {
			t.Errorf("%s exists without its order o:{%d}: items without an order", k, id)
		}
	}
	// Index entries. An id index member is the id; a name index member is
	// the folded name, a NUL, then the id in the store's own encoding, which
	// this test does not decode: every name is unique (uniqueName), so the
	// name alone says which order an entry belongs to.
	byName := map[string]orderJSON{}
	for _, o := range fetched {
		byName[strings.ToLower(o.Customer)] = o
	}
	entries := 0
	idEntries := map[string]map[int64]bool{}   // key → ids
	nameEntries := map[string]map[string]int{} // key → folded name → entries
	for _, k := range indexKeys {
		if strings.HasPrefix(k, "ix:{w}") {
			// Search terms: the store's own tests hold them to an oracle.
			continue
		}
		ms, err := rdb.ZRange(ctx, k, 0, -1).Result()
		if err != nil {
			t.Fatalf("ZRANGE %s: %v", k, err)
		}
		entries += len(ms)
		status := ""
		if i := strings.LastIndexByte(k, ':'); strings.Count(k, ":") == 2 {
			status = k[i+1:]
		}
		for _, m := range ms {
			switch {
			case strings.HasPrefix(k, "ix:{id}:") || strings.HasPrefix(k, "ix:{up}:") || strings.HasPrefix(k, "ix:{tot}:"):
				id, err := strconv.ParseInt(m, 10, 64)
				if err != nil {
					t.Errorf("%s: member %q is not an id", k, m)
					continue
				}
				if idEntries[k] == nil {
					idEntries[k] = map[int64]bool{}
				}
				idEntries[k][id] = true
				o, ok := fetched[id]
				switch {
				case !exists[id]:
					t.Errorf("%s: member %q points to order %d, which does not exist", k, m, id)
				case ok && status != "" && o.Status != status:
					t.Errorf("%s: holds order %d, which is %s", k, id, o.Status)
				}
			case k == "ix:name" || strings.HasPrefix(k, "ix:name:"):
				i := strings.LastIndexByte(m, 0)
				if i < 0 {
					t.Errorf("%s: member %q has no NUL before its id", k, m)
					continue
				}
				name := m[:i]
				if nameEntries[k] == nil {
					nameEntries[k] = map[string]int{}
				}
				nameEntries[k][name]++
				o, ok := byName[name]
				switch {
				case !ok:
					t.Errorf("%s: member %q names no existing order: an entry left behind by a rename or delete", k, m)
				case status != "" && o.Status != status:
					t.Errorf("%s: member %q belongs to order %d, which is %s", k, m, o.ID, o.Status)
				}
			default:
				t.Logf("note: index key %q is not one this test knows", k)
			}
		}
	}
	for id, o := range fetched {
		for _, k := range []string{"ix:{id}:" + o.Status, "ix:{up}:" + o.Status, "ix:{tot}:" + o.Status} {
			if !idEntries[k][id] {
				t.Errorf("order %d (%s) is missing from %s", id, o.Status, k)
			}
		}
		name := strings.ToLower(o.Customer)
		for _, k := range []string{"ix:name", "ix:name:" + o.Status} {
			if n := nameEntries[k][name]; n != 1 {
				t.Errorf("order %d (%q, %s) has %d entries in %s, want 1", id, o.Customer, o.Status, n, k)
			}
		}
	}
	if want := 5 * len(exists); entries != want {
		t.Errorf("the indexes hold %d entries, want 5 per order = %d (a stale entry stayed behind)", entries, want)
	}
	t.Logf("Redis: %d order hashes, %d item hashes, %d index sets with %d entries checked", len(orderKeys), len(itemKeys), len(indexKeys), entries)
}
