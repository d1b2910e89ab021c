package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"orders/testutil"
)

// listedIDs reads every page of GET /orders?per_page=100 plus q.
func listedIDs(base, q string) (map[int64]bool, error) {
	ids := map[int64]bool{}
	rows := 0
	var total int64
	for next := "/orders?per_page=100" + q; next != ""; {
		r, err := call(base, http.MethodGet, next, "", nil, testutil.HJSON)
		if err != nil || r.Status != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %v %v", next, r, err)
		}
		var page listJSON
		if err := r.Decode(&page); err != nil {
			return nil, err
		}
		for _, o := range page.Orders {
			ids[o.ID] = true
		}
		rows += len(page.Orders)
		total = page.Total
		next = ""
		if page.Next != nil {
			next = *page.Next
		}
	}
	if int64(rows) != total {
		return ids, fmt.Errorf("GET /orders?per_page=100%s: the pages hold %d orders; their total says %d", q, rows, total)
	}
	return ids, nil
}

// wholeLists compares the lists with the orders themselves: every order
// that exists (of the ids given, and of those listed) is listed, in its
// status's list and in a search by its customer's name; none that does not
// exist is listed anywhere. It answers what is wrong (nothing when whole).
func wholeLists(base string, ids map[int64]bool, workers int) []string {
	var wrong []string
	all, err := listedIDs(base, "")
	if err != nil {
		return []string{err.Error()}
	}
	byStatus := map[string]map[int64]bool{}
	for _, st := range []string{"pending", "confirmed"} {
		if byStatus[st], err = listedIDs(base, "&status="+st); err != nil {
			return []string{err.Error()}
		}
	}
	searched := map[int64]bool{}
	for w := range workers {
		got, err := listedIDs(base, "&q="+url.QueryEscape(fmt.Sprintf("Failover W%d ", w)))
		if err != nil {
			return []string{err.Error()}
		}
		for id := range got {
			searched[id] = true
		}
	}
	check := map[int64]bool{}
	for id := range ids {
		check[id] = true
	}
	for id := range all {
		check[id] = true
	}
	missing, dangling, filters, searches := 0, 0, 0, 0
	for id := range check {
		r, err := call(base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
		if err != nil || (r.Status != http.StatusOK && r.Status != http.StatusNotFound) {
			return []string{fmt.Sprintf("GET /orders/%d: %v %v", id, r, err)}
		}
		if r.Status == http.StatusNotFound {
			if all[id] || byStatus["pending"][id] || byStatus["confirmed"][id] || searched[id] {
				dangling++
			}
			continue
		}
		var o orderJSON
		if err := r.Decode(&o); err != nil {
			return []string{err.Error()}
		}
		if !all[id] {
			missing++
		}
		if !byStatus[o.Status][id] || byStatus[map[string]string{"pending": "confirmed", "confirmed": "pending"}[o.Status]][id] {
			filters++
		}
		if !searched[id] {
			searches++
		}
	}
	if missing+dangling+filters+searches > 0 {
		wrong = append(wrong, fmt.Sprintf("%d orders missing from /orders, %d wrong in the status filters, %d missing from searches, %d gone but listed (of %d ids)",
			missing, filters, searches, dangling, len(check)))
	}
	return wrong
}

// TestLossyFailoverListsWholeWithinSeconds: a Cluster master whose replica
// lags (stopped, and dropped by its master after a second) takes writes
// under load, then is killed; the stale replica takes over, losing those
// writes. Within 10 s of the promotion, with no manual step, the lists,
// the status filters and the searches show exactly the orders that exist.
func TestLossyFailoverListsWholeWithinSeconds(t *testing.T) {
	testutil.Long(t)
	ctx := context.Background()
	tc := startCluster(t, 3, 1)
	app := startApp(t, tc.addrs())
	victim, replicaAddr := tc.aMasterWithReplica(t)
	replica := tc.node(replicaAddr)

	l := &failoverLoad{failedBy: map[string]int{}, acked: map[int64]int64{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	const workers = 3
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failoverWorker(app.base, w, l, &stop)
		}()
	}
	time.Sleep(2 * time.Second)

	// The replica stops, and its master drops it after a second: what the
	// master takes from then on is on no other node.
	mcl := victim.client(t)
	if err := mcl.ConfigSet(ctx, "repl-timeout", "1").Err(); err != nil {
		t.Fatal(err)
	}
	replica.signal(t, syscall.SIGSTOP)
	if !poll(10*time.Second, func() bool {
		info, _ := mcl.Info(ctx, "replication").Result()
		return strings.Contains(info, "connected_slaves:0")
	}) {
		replica.signal(t, syscall.SIGCONT)
		t.Fatal("the master did not drop its stopped replica within 10 s")
	}
	time.Sleep(2 * time.Second)
	killed := time.Now()
	tc.kill(t, victim)
	replica.signal(t, syscall.SIGCONT)
	if !poll(30*time.Second, func() bool {
		ns, err := tc.view(t, replica)
		return err == nil && slices.ContainsFunc(ns, func(n clusterNode) bool { return n.addr == replica.addr() && n.isMaster })
	}) {
		stop.Store(true)
		wg.Wait()
		t.Fatal("the replica did not take over within 30 s")
	}
	promoted := time.Now()
	time.Sleep(time.Second) // writes go on after the promotion too
	stop.Store(true)
	wg.Wait()

	ids := map[int64]bool{}
	l.mu.Lock()
	for id := range l.acked {
		ids[id] = true
	}
	creates, puts := l.creates, l.puts
	l.mu.Unlock()
	var wrong []string
	whole := poll(time.Until(promoted.Add(10*time.Second)), func() bool {
		wrong = wholeLists(app.base, ids, workers)
		return len(wrong) == 0
	})
	took := time.Since(promoted)
	lost := 0 // acknowledged creates that Redis lost
	for id := range ids {
		if r, err := call(app.base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON); err == nil && r.Status == http.StatusNotFound {
			lost++
		}
	}
	var said []string // what the app logged about it
	for line := range strings.SplitSeq(app.out.String(), "\n") {
		if strings.Contains(line, "Redis forgot") || strings.Contains(line, "checked the indexes after") || strings.Contains(line, "was failed over to") {
			said = append(said, testutil.Snippet(line))
		}
	}
	summary := fmt.Sprintf("lossy failover: promotion %v after kill -9; %d creates and %d PUTs acknowledged, %d acknowledged orders lost by Redis; lists whole: %v, %v after the promotion; %v; the app logged %d lines about it: %v",
		promoted.Sub(killed).Round(time.Millisecond), creates, puts, lost, whole, took.Round(100*time.Millisecond), wrong, len(said), said)
	figure(summary)
	t.Log(summary)
	if !whole {
		t.Errorf("10 s after the promotion the lists are not whole: %v", wrong)
	}
}
