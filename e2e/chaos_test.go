package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// chaosDuration is how long the chaos load runs: ORDERS_CHAOS_SECONDS
// (.ci/run sets 60), 15 s by default so `go test ./...` stays short.
func chaosDuration() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("ORDERS_CHAOS_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 15 * time.Second
}

// acked is what the chaos workers were told: the last acknowledged state
// of every order, acknowledged deletes, and deletes whose outcome is
// unknown (a 5xx or a lost connection: it may have happened).
type acked struct {
	mu        sync.Mutex
	orders    map[int64]orderJSON
	deleted   map[int64]bool
	maybeGone map[int64]bool
	oldNames  map[int64][]string
	hot       []int64
	counts    map[string]int
}

func (a *acked) count(what string) {
	a.mu.Lock()
	a.counts[what]++
	a.mu.Unlock()
}

// ack records an acknowledged state of o.
func (a *acked) ack(o orderJSON) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.deleted[o.ID] {
		return
	}
	if cur, ok := a.orders[o.ID]; ok {
		if o.Version <= cur.Version {
			return
		}
		if cur.Customer != o.Customer {
			a.oldNames[o.ID] = append(a.oldNames[o.ID], cur.Customer)
		}
	}
	a.orders[o.ID] = o
}

func (a *acked) pick(rnd *rand.Rand) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.hot) == 0 {
		return 0
	}
	return a.hot[rnd.IntN(len(a.hot))]
}

// chaos runs workers against the app instances at bases for d: creates,
// renames and status changes with a fresh version, PUTs with a stale one,
// and DELETEs racing PUTs of the same order, on a small set of hot orders.
func chaos(t *testing.T, bases func() []string, workers int, d time.Duration) *acked {
	a := &acked{orders: map[int64]orderJSON{}, deleted: map[int64]bool{}, maybeGone: map[int64]bool{},
		oldNames: map[int64][]string{}, counts: map[string]int{}}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; time.Now().Before(stop); i++ {
				bs := bases()
				base := bs[rnd.IntN(len(bs))]
				chaosStep(a, base, rnd, w, i)
			}
		}()
	}
	wg.Wait()
	return a
}

func chaosStep(a *acked, base string, rnd *rand.Rand, w, i int) {
	put := func(id int64, v map[string]any) (*resp, error) {
		return call(base, http.MethodPut, "/orders/"+strconv.FormatInt(id, 10), "application/json", jsonOf(v), hJSON)
	}
	ackOf := func(r *resp, err error) {
		if err != nil || r.status >= 500 {
			a.count("unknown")
			return
		}
		switch r.status {
		case http.StatusOK, http.StatusCreated:
			var o orderJSON
			if json.Unmarshal(r.body, &o) == nil && o.ID > 0 {
				a.ack(o)
				a.count("acknowledged")
			}
		case http.StatusConflict:
			a.count("409")
		default:
			a.count(strconv.Itoa(r.status))
		}
	}
	id := a.pick(rnd)
	op := rnd.IntN(100)
	if id == 0 || op < 20 {
		r, err := call(base, http.MethodPost, "/orders", "application/json",
			jsonOf(map[string]any{"customer": fmt.Sprintf("Chaos C%dx%d Q", w, i)}), hJSON)
		ackOf(r, err)
		if err == nil && r.status == http.StatusCreated {
			var o orderJSON
			_ = json.Unmarshal(r.body, &o)
			a.mu.Lock()
			a.hot = append(a.hot, o.ID)
			if len(a.hot) > 40 {
				a.hot = a.hot[1:]
			}
			a.mu.Unlock()
		}
		return
	}
	cur, err := call(base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, hJSON)
	if err != nil || cur.status != http.StatusOK {
		return
	}
	var o orderJSON
	if json.Unmarshal(cur.body, &o) != nil {
		return
	}
	switch {
	case op < 45: // rename with the fresh version
		ackOf(put(id, map[string]any{"customer": fmt.Sprintf("Renamed R%dx%d Q", w, i), "version": o.Version}))
	case op < 65: // a status change along the lifecycle
		next := nextStatus[o.Status]
		if len(next) == 0 {
			return
		}
		ackOf(put(id, map[string]any{"status": next[rnd.IntN(len(next))], "version": o.Version}))
	case op < 75: // a stale version: 409 unless it happens to be current
		ackOf(put(id, map[string]any{"notes": "stale " + strconv.Itoa(i), "version": max(o.Version-1, 1)}))
	default: // a DELETE racing a PUT of the same version
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			ackOf(put(id, map[string]any{"notes": "racing", "version": o.Version}))
		}()
		go func() {
			defer wg.Done()
			r, err := call(base, http.MethodDelete, "/orders/"+strconv.FormatInt(id, 10)+"?version="+strconv.FormatInt(o.Version, 10), "", nil, hJSON)
			a.mu.Lock()
			defer a.mu.Unlock()
			switch {
			case err != nil || r.status >= 500:
				a.maybeGone[id] = true
				a.counts["unknown"]++
			case r.status == http.StatusNoContent:
				a.deleted[id] = true
				delete(a.orders, id)
				a.counts["deleted"]++
			default:
				a.counts[strconv.Itoa(r.status)]++
			}
		}()
		wg.Wait()
	}
}

// invariants is what the check found wrong.
type invariants struct {
	Listed, Live                                        int
	WrongTotal, Duplicate, MissingFromAll, WrongStatus  int
	InDeletedOrGone, StaleRow, Unreadable, OlderThanAck int
	SearchMissing, SearchStale                          int
	details                                             []string
}

func (v *invariants) problems() int {
	return v.WrongTotal + v.Duplicate + v.MissingFromAll + v.WrongStatus + v.InDeletedOrGone + v.StaleRow +
		v.Unreadable + v.OlderThanAck + v.SearchMissing + v.SearchStale
}

func (v *invariants) add(field *int, format string, args ...any) {
	*field++
	if len(v.details) < 20 {
		v.details = append(v.details, fmt.Sprintf(format, args...))
	}
}

func (v *invariants) String() string {
	return fmt.Sprintf("%d listed, %d live acknowledged; problems: %d wrong totals, %d duplicates, %d missing from the list, "+
		"%d in the wrong status list, %d deleted but listed, %d stale rows, %d unreadable, %d older than acknowledged, "+
		"%d not found by name, %d found by an old name",
		v.Listed, v.Live, v.WrongTotal, v.Duplicate, v.MissingFromAll, v.WrongStatus, v.InDeletedOrGone, v.StaleRow,
		v.Unreadable, v.OlderThanAck, v.SearchMissing, v.SearchStale)
}

// walk reads every page of a list and returns its rows and the totals the
// pages claimed.
func walk(t *testing.T, base, query string) (rows []orderJSON, totals []int64) {
	t.Helper()
	next := "/orders?per_page=100" + query
	for next != "" {
		r := mustCall(t, base, http.MethodGet, next, "", nil, hJSON).wantStatus(t, http.StatusOK)
		var page struct {
			Orders []orderJSON
			Total  int64
			Next   *string
		}
		r.decode(t, &page)
		rows = append(rows, page.Orders...)
		totals = append(totals, page.Total)
		next = ""
		if page.Next != nil {
			next = *page.Next
		}
	}
	return rows, totals
}

// checkInvariants checks, from the outside, that every list holds exactly
// the orders that exist in it, that every acknowledged write is there,
// and that a name search finds each order by its current name only.
func checkInvariants(t *testing.T, base string, a *acked) *invariants {
	t.Helper()
	v := &invariants{}
	records := map[int64]orderJSON{} // what GET /orders/<id> says
	read := func(id int64) (orderJSON, bool) {
		if o, ok := records[id]; ok {
			return o, o.ID != 0
		}
		r := mustCall(t, base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, hJSON)
		var o orderJSON
		if r.status == http.StatusOK {
			r.decode(t, &o)
		} else if r.status != http.StatusNotFound {
			t.Fatalf("GET order %d: %d %s", id, r.status, snippet(r.body))
		}
		records[id] = o
		return o, o.ID != 0
	}
	for id, want := range a.orders {
		if a.maybeGone[id] {
			continue
		}
		v.Live++
		o, ok := read(id)
		switch {
		case !ok:
			v.add(&v.Unreadable, "acknowledged order %d (v%d) is not readable", id, want.Version)
		case o.Version < want.Version:
			v.add(&v.OlderThanAck, "order %d is at v%d, acknowledged at v%d", id, o.Version, want.Version)
		}
	}
	for id := range a.deleted {
		if _, ok := read(id); ok {
			v.add(&v.InDeletedOrGone, "deleted order %d is readable", id)
		}
	}
	for _, status := range []string{"", "pending", "confirmed", "shipped", "delivered", "cancelled"} {
		q := ""
		if status != "" {
			q = "&status=" + status
		}
		rows, totals := walk(t, base, q)
		if status == "" {
			v.Listed = len(rows)
		}
		for _, total := range totals {
			if total != int64(len(rows)) {
				v.add(&v.WrongTotal, "list %q says total %d, holds %d", status, total, len(rows))
				break
			}
		}
		seen := map[int64]bool{}
		for _, row := range rows {
			if seen[row.ID] {
				v.add(&v.Duplicate, "order %d twice in list %q", row.ID, status)
			}
			seen[row.ID] = true
			o, ok := read(row.ID)
			switch {
			case !ok:
				v.add(&v.InDeletedOrGone, "list %q holds order %d, which does not exist", status, row.ID)
			case status != "" && o.Status != status:
				v.add(&v.WrongStatus, "list %q holds order %d, which is %s", status, row.ID, o.Status)
			case row.Version != o.Version || row.Status != o.Status || row.Customer != o.Customer:
				v.add(&v.StaleRow, "list %q shows order %d as v%d %s, it is v%d %s", status, row.ID, row.Version, row.Status, o.Version, o.Status)
			}
		}
		// Every order that exists is in "all" and in its status's list.
		for id, o := range records {
			if o.ID == 0 || (status != "" && o.Status != status) {
				continue
			}
			if !seen[id] {
				v.add(&v.MissingFromAll, "order %d (%s) is missing from list %q", id, o.Status, status)
			}
		}
	}
	// Name search: each live order by its current name, never by an old one.
	n := 0
	for id := range a.orders {
		o, ok := read(id)
		if !ok || (n >= 300 && len(a.oldNames[id]) == 0) {
			continue
		}
		n++
		if !searchFinds(t, base, o.Customer, id) {
			v.add(&v.SearchMissing, "q=%q does not find order %d", o.Customer, id)
		}
		for _, old := range a.oldNames[id] {
			if old != o.Customer && searchFinds(t, base, old, id) {
				v.add(&v.SearchStale, "q=%q (an old name) finds order %d, now %q", old, id, o.Customer)
			}
		}
		if n > 1500 {
			break
		}
	}
	return v
}

func searchFinds(t *testing.T, base, name string, id int64) bool {
	rows, _ := walk(t, base, "&q="+url.QueryEscape(name))
	for _, r := range rows {
		if r.ID == id {
			return true
		}
	}
	return false
}

// reportChaos prints the summary line and fails on any problem.
func reportChaos(t *testing.T, name string, workers int, d time.Duration, a *acked, v *invariants, extra string) {
	t.Helper()
	line := fmt.Sprintf("chaos %s: %d workers, %v, %d acknowledged writes (%d deletes), %d refused as stale (409), %d unknown (5xx or lost)%s; %v",
		name, workers, d, a.counts["acknowledged"], a.counts["deleted"], a.counts["409"], a.counts["unknown"], extra, v)
	figure(line)
	t.Log(line)
	if v.problems() > 0 {
		t.Errorf("%d invariant problems after the repair window:\n%s", v.problems(), strings.Join(v.details, "\n"))
	}
	if a.counts["acknowledged"] == 0 || a.counts["deleted"] == 0 || a.counts["409"] == 0 {
		t.Errorf("the load did not exercise creates, deletes and stale versions: %v", a.counts)
	}
}

// TestChaos: 16 workers against two app instances sharing a real Redis,
// then a real 3-node Cluster; after the 5 s repair window every list,
// total and search agrees with the orders that exist, and every
// acknowledged write is there (issue 8, test a).
func TestChaos(t *testing.T) {
	d := chaosDuration()
	for _, target := range []string{"redis", "cluster"} {
		t.Run(target, func(t *testing.T) {
			var redisArg string
			if target == "redis" {
				redisArg = startRedis(t, 0).url()
			} else {
				redisArg = startCluster(t, 3, 0).addrs()
			}
			apps := []*appServer{startApp(t, redisArg), startApp(t, redisArg)}
			bases := []string{apps[0].base, apps[1].base}
			a := chaos(t, func() []string { return bases }, 16, d)
			time.Sleep(5 * time.Second)
			reportChaos(t, target, 16, d, a, checkInvariants(t, bases[0], a), "")
		})
	}
}

// TestChaosWithFaults: the same load while the app is killed (SIGKILL,
// then restarted on its port) every few seconds and, on the Cluster, a
// master is paused (SIGSTOP, shorter than the node timeout, so no
// failover) between an order's transaction and its index writes; after 5 s
// the invariants hold (issue 8, test b).
func TestChaosWithFaults(t *testing.T) {
	d := chaosDuration()
	for _, target := range []string{"redis", "cluster"} {
		t.Run(target, func(t *testing.T) {
			var (
				redisArg string
				tc       *testCluster
			)
			if target == "redis" {
				redisArg = startRedis(t, 0).url()
			} else {
				tc = startCluster(t, 3, 0)
				redisArg = tc.addrs()
			}
			steady := startApp(t, redisArg)
			victim := startApp(t, redisArg)
			var mu sync.Mutex
			bases := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return []string{steady.base, victim.base}
			}
			var kills, pauses atomic.Int64
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					case <-time.After(3 * time.Second):
					}
					mu.Lock()
					old := victim
					mu.Unlock()
					old.kill()
					kills.Add(1)
					next := restartApp(t, old, redisArg)
					mu.Lock()
					victim = next
					mu.Unlock()
				}
			}()
			if tc != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-done:
							return
						case <-time.After(2 * time.Second):
						}
						n := tc.nodes[i%len(tc.nodes)]
						n.signal(t, syscall.SIGSTOP)
						time.Sleep(600 * time.Millisecond)
						n.signal(t, syscall.SIGCONT)
						pauses.Add(1)
					}
				}()
			}
			a := chaos(t, bases, 16, d)
			close(done)
			wg.Wait()
			time.Sleep(5 * time.Second)
			extra := fmt.Sprintf(", %d app kills, %d node pauses", kills.Load(), pauses.Load())
			reportChaos(t, target+" with faults", 16, d, a, checkInvariants(t, steady.base, a), extra)
		})
	}
}

// restartApp starts the binary again on old's address.
func restartApp(t *testing.T, old *appServer, redisArg string) *appServer {
	addr := strings.TrimPrefix(old.base, "http://")
	cmd := exec.Command(appBinary(t), "-addr", addr, "-redis", redisArg, "-data", "")
	cmd.Env = appEnv()
	next := &appServer{proc: startProc(t, "app "+addr, cmd), base: old.base}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := quick.Get(next.base + "/healthz"); err == nil {
			res.Body.Close()
			return next
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the restarted app on %s did not answer; its output:\n%s", addr, tail(next.out.String(), 20))
	return next
}
