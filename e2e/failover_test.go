package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestClusterFailoverWithinSeconds: 3 masters with a replica each, the app
// under load, and kill -9 of a master. The replica takes over after the
// node timeout; the app must answer again within 2 s of that promotion
// (go-redis alone took up to a minute: it re-read the slot map only on
// MOVED or every 60 s), /readyz must say 503 while the slots have no
// master, and every acknowledged create must be readable after.
func TestClusterFailoverWithinSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node cluster")
	}
	tc := startCluster(t, 3, 1)
	app := startApp(t, tc.addrs())
	victim, replica := tc.aMasterWithReplica(t)
	survivor := tc.nodes[0]
	if survivor == victim {
		survivor = tc.nodes[1]
	}

	var (
		mu        sync.Mutex
		bad       []time.Time // 5xx answers and transport errors
		acked     []int64
		stop      atomic.Bool
		wg        sync.WaitGroup
		readySeen = map[int]bool{}
		ready503  []time.Time
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				body := jsonOf(map[string]any{"customer": fmt.Sprintf("Failover W%d N%d", w, i)})
				r, err := call(app.base, http.MethodPost, "/orders", "application/json", body, hJSON)
				at := time.Now()
				switch {
				case err != nil || r.status >= 500:
					mu.Lock()
					bad = append(bad, at)
					mu.Unlock()
				case r.status == http.StatusCreated:
					var o orderJSON
					r.decode(t, &o)
					mu.Lock()
					acked = append(acked, o.ID)
					mu.Unlock()
					if g, err := call(app.base, http.MethodGet, fmt.Sprintf("/orders/%d", o.ID), "", nil, hJSON); err != nil || g.status >= 500 {
						mu.Lock()
						bad = append(bad, time.Now())
						mu.Unlock()
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			r, err := call(app.base, http.MethodGet, "/readyz", "", nil, nil)
			mu.Lock()
			if err == nil {
				readySeen[r.status] = true
				if r.status == http.StatusServiceUnavailable {
					ready503 = append(ready503, time.Now())
				}
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()

	time.Sleep(2 * time.Second)
	killed := time.Now()
	victim.signal(t, syscall.SIGKILL)
	var promoted time.Time
	for time.Since(killed) < 30*time.Second {
		nodes, err := tc.view(t, survivor)
		if err == nil {
			for _, n := range nodes {
				if n.addr == replica && n.isMaster && !n.failed {
					promoted = time.Now()
				}
			}
		}
		if !promoted.IsZero() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if promoted.IsZero() {
		stop.Store(true)
		wg.Wait()
		t.Fatalf("the replica %s was not promoted within 30 s of the kill", replica)
	}
	time.Sleep(8 * time.Second)
	stop.Store(true)
	wg.Wait()

	var last time.Time
	for _, b := range bad {
		if b.After(last) {
			last = b
		}
	}
	window := last.Sub(promoted)
	if last.IsZero() {
		window = 0
	}
	summary := fmt.Sprintf("failover: promotion %v after the kill; %d failed answers, the last %v after the promotion; %d creates acknowledged",
		promoted.Sub(killed).Round(time.Millisecond), len(bad), window.Round(time.Millisecond), len(acked))
	fmt.Println(summary)
	t.Log(summary)
	if window > 2*time.Second {
		t.Errorf("5xx answers went on %v after the replica's promotion; want at most 2 s", window)
	}
	if len(acked) == 0 {
		t.Fatal("no create was acknowledged: the test proves nothing")
	}
	sawGap := false
	for _, at := range ready503 {
		if at.After(killed) && at.Before(promoted.Add(500*time.Millisecond)) {
			sawGap = true
		}
	}
	if !sawGap {
		t.Errorf("/readyz never answered 503 between the kill and the promotion (statuses seen: %v)", readySeen)
	}
	if r, err := call(app.base, http.MethodGet, "/readyz", "", nil, nil); err != nil || r.status != http.StatusOK {
		t.Errorf("/readyz after the failover: %v %v, want 200", r, err)
	}
	lost := 0
	for _, id := range acked {
		r, err := call(app.base, http.MethodGet, fmt.Sprintf("/orders/%d", id), "", nil, hJSON)
		if err != nil || r.status != http.StatusOK {
			// Replication is asynchronous: a create acknowledged by the
			// master in its last moment may not have reached the replica
			// (docs/operations.md). Counted, not failed.
			lost++
		}
	}
	fmt.Printf("failover: %d of %d acknowledged creates not readable after the failover (asynchronous replication)\n", lost, len(acked))
}
