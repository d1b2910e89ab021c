package testutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"orders/store"
	"orders/store/redisstore"
)

func ptr[T any](v T) *T { return &v }

// Churn runs workers that create, rename, move through statuses, update
// with stale versions and delete a small set of hot orders at once, for d.
// It returns the acknowledged state: the last version each live order was
// acknowledged at, the acknowledged deletes, and the orders whose delete
// failed in a way that leaves its outcome unknown.
func Churn(t *testing.T, s *redisstore.Store, workers int, d time.Duration) (live map[int64]int64, deleted, maybeGone map[int64]bool, acks int64) {
	t.Helper()
	var (
		mu  sync.Mutex
		hot []int64
		n   atomic.Int64
	)
	live, deleted, maybeGone = map[int64]int64{}, map[int64]bool{}, map[int64]bool{}
	ack := func(id, version int64, gone bool) {
		mu.Lock()
		defer mu.Unlock()
		n.Add(1)
		if gone {
			deleted[id] = true
			delete(live, id)
			return
		}
		if !deleted[id] && version > live[id] {
			live[id] = version
		}
	}
	next := []string{"confirmed", "shipped", "delivered", "cancelled"}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			ctx := context.Background()
			for i := 0; time.Now().Before(stop); i++ {
				mu.Lock()
				var id int64
				if len(hot) > 0 {
					id = hot[rnd.IntN(len(hot))]
				}
				mu.Unlock()
				switch op := rnd.IntN(10); {
				case id == 0 || op < 2:
					o, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprintf("Churn W%d N%d", w, i))})
					if err == nil {
						ack(o.ID, o.Version, false)
						mu.Lock()
						hot = append(hot, o.ID)
						if len(hot) > 12 {
							hot = hot[1:]
						}
						mu.Unlock()
					}
				case op < 5:
					o, err := s.UpdateOrder(ctx, id, store.OrderInput{Customer: ptr(fmt.Sprintf("Renamed W%d N%d", w, i))}, 0)
					if err == nil {
						ack(o.ID, o.Version, false)
					}
				case op < 7:
					o, err := s.UpdateOrder(ctx, id, store.OrderInput{Status: ptr(next[rnd.IntN(len(next))])}, 0)
					if err == nil {
						ack(o.ID, o.Version, false)
					}
				case op < 8:
					// A stale version: must be refused unless it happens to be current.
					o, err := s.UpdateOrder(ctx, id, store.OrderInput{Notes: ptr("stale " + strconv.Itoa(i)), Version: ptr(int64(1))}, 0)
					if err == nil {
						ack(o.ID, o.Version, false)
					}
				default:
					cur, err := s.GetOrder(ctx, id)
					if err != nil {
						continue
					}
					switch err := s.DeleteOrder(ctx, id, 0, cur.Version); {
					case err == nil:
					case store.ErrorCode(err) == store.ECONFLICT || store.ErrorCode(err) == store.ENOTFOUND:
						continue
					default:
						// Unknown: the delete may have happened.
						mu.Lock()
						maybeGone[id] = true
						mu.Unlock()
						continue
					}
					ack(id, 0, true)
				}
			}
		}()
	}
	wg.Wait()
	for id := range maybeGone {
		delete(live, id) // its fate is unknown; Repair still checks its entries
	}
	return live, deleted, maybeGone, n.Load()
}

// CheckWhole waits up to limit for Repair to find nothing wrong, and
// checks every acknowledged write is there. It returns the last report.
func CheckWhole(t *testing.T, s *redisstore.Store, limit time.Duration, live map[int64]int64, deleted map[int64]bool) redisstore.RepairReport {
	t.Helper()
	ctx := context.Background()
	var r redisstore.RepairReport
	deadline := time.Now().Add(limit)
	for {
		var err error
		r, err = s.Repair(ctx, false)
		if err != nil {
			t.Fatalf("Repair(check): %v", err)
		}
		if r.Problems() == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Problems() != 0 {
		t.Errorf("after %v the indexes are still wrong: %v", limit, r)
	}
	for id, v := range live {
		o, err := s.GetOrder(ctx, id)
		if err != nil || o.Version < v {
			t.Errorf("acknowledged order %d (version %d): got %+v, %v", id, v, o, err)
		}
	}
	for id := range deleted {
		if _, err := s.GetOrder(ctx, id); store.ErrorCode(err) != store.ENOTFOUND {
			t.Errorf("acknowledged delete of %d: Get says %v, want not found", id, err)
		}
	}
	if p, err := s.ListOrders(ctx, store.OrderQuery{PerPage: 1}); err != nil || p.Total != int64(r.Records) {
		t.Errorf("List total: got %d (%v), want the %d stored orders", p.Total, err, r.Records)
	}
	return r
}
