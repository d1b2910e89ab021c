package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Redis can forget writes it acknowledged: a restart without persistence
// wipes it, a restore from a backup takes it back in time, and a failover
// to a replica that lagged loses what was not replicated yet. It says
// nothing when it does. Each instance therefore keeps markers a forgetful
// Redis cannot take back: the highest id of each kind it handed out, read
// or saw the counter at, and whether it saw this layout's mark. When Redis
// is behind them, the instance logs one ERROR with what it saw, answers
// not ready until each id counter is past every id it knows of and the
// layout mark is back, and then repairs the indexes in the background
// while it serves.

// maxKinds bounds the registered kinds: each has an id counter, numbered
// in the order the kinds register (register).
const maxKinds = 8

// forgetting is what an instance knows that Redis must not have forgotten.
type forgetting struct {
	highest    [maxKinds]atomic.Int64 // highest id handed out, read or counted
	sawLayout  atomic.Bool            // this layout's mark was seen in Redis
	unsafe     atomic.Bool            // the counters are not yet past every known id
	recovering atomic.Bool            // a recovery (its repair included) is running
	detected   atomic.Int64           // times Redis was found to have forgotten
	noticed    atomic.Pointer[string] // forgetting a create saw, for the watcher
	mu         sync.Mutex             // one recovery at a time
}

// Forgetting reports what this instance saw of Redis forgetting writes.
func (s *Store) Forgetting() store.ForgettingState {
	f := &s.forgot
	return store.ForgettingState{Detected: f.detected.Load(), Recovering: f.recovering.Load(), Unsafe: f.unsafe.Load()}
}

// sawID raises the highest id this instance knows of counter c to id.
func (s *Store) sawID(c int, id int64) {
	h := &s.forgot.highest[c]
	for {
		cur := h.Load()
		if id <= cur || h.CompareAndSwap(cur, id) {
			return
		}
	}
}

// nextIDScript draws the next id of the counter KEYS[1], never one at or
// below ARGV[1] (the highest id the caller knows is in use): a counter
// found behind is moved past it first, in the same step, so no concurrent
// draw can get an id twice. It answers the id and the counter's value when
// it was behind (0 when it was not).
var nextIDScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[1])
if n <= floor then
  redis.call('SET', KEYS[1], floor + 1)
  return {floor + 1, n}
end
return {n, 0}
`)

// nextID draws a fresh id from counter c. A counter behind what this
// instance handed out or read means Redis forgot: the id drawn is past
// them anyway, and the watcher's next check recovers.
func (s *Store) nextID(ctx context.Context, c int) (int64, error) {
	floor := s.forgot.highest[c].Load()
	v, err := nextIDScript.Run(ctx, s.rdb, []string{registry[c].counterKey(s)}, floor).Int64Slice()
	if err != nil {
		return 0, err
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("the id counter answered %v", v)
	}
	s.sawID(c, v[0])
	if v[1] != 0 {
		what := fmt.Sprintf("the %s id counter was at %d, below id %d this instance had seen", registry[c].nounOf(), v[1]-1, floor)
		s.forgot.noticed.CompareAndSwap(nil, &what)
	}
	return v[0], nil
}

// WatchForgetting checks every interval (2 s when 0) until ctx ends that
// Redis still holds what this instance saw: the layout mark and each id
// counter at or past the highest id known. When it does not, it recovers
// (see recoverFromForgetting).
func (s *Store) WatchForgetting(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var masters map[string]string // address: run id, as last seen
	for {
		// A restart found with a counter behind is recovered from once.
		now, err := s.masterRunIDs(ctx)
		if what := s.checkForgetting(ctx); what != "" {
			s.recoverFromForgetting(ctx, what)
		} else if what := changedMasters(masters, now); err == nil && what != "" {
			s.checkAfterRestart(ctx, what)
		}
		if err == nil {
			masters = now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkForgetting says what Redis forgot, or "" when it is not behind
// anything this instance saw (or does not answer: that is an outage, not
// forgetting). Counters found ahead raise what the instance knows, so it
// also notices ids other instances handed out that Redis then forgot.
func (s *Store) checkForgetting(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	layout, err := s.rdb.Get(ctx, s.layoutKey()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return ""
	}
	var what string
	if p := s.forgot.noticed.Swap(nil); p != nil {
		what = *p
	}
	if layout == Layout {
		s.forgot.sawLayout.Store(true)
	} else if s.forgot.sawLayout.Load() {
		if what != "" {
			what += "; "
		}
		what += fmt.Sprintf("the layout mark is %q, was %q", layout, Layout)
	}
	for c, k := range registry {
		// Read before the counter: an id drawn between the two reads
		// raises both.
		known := s.forgot.highest[c].Load()
		v, err := s.rdb.Get(ctx, k.counterKey(s)).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return what
		}
		if v < known {
			if what != "" {
				what += "; "
			}
			what += fmt.Sprintf("the %s id counter is at %d, below id %d this instance had seen", k.nounOf(), v, known)
		} else {
			s.sawID(c, v)
		}
	}
	return what
}

// masterRunIDs answers the run id of each master by its address (one on a
// single Redis). A run id changes when the server restarts; a replica
// promoted by a failover is a master at another address.
func (s *Store) masterRunIDs(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out := map[string]string{}
	var mu sync.Mutex
	read := func(ctx context.Context, c redis.Cmdable, addr string) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(info, "\n") {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				mu.Lock()
				out[addr] = id
				mu.Unlock()
			}
		}
		return nil
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return read(ctx, c, c.Options().Addr)
		})
		return out, err
	}
	return out, read(ctx, s.rdb, "redis")
}

// changedMasters says which masters are new or restarted since before
// ("" when none, or when there was no before).
func changedMasters(before, now map[string]string) string {
	if before == nil {
		return ""
	}
	var changed []string
	for addr, id := range now {
		if was, ok := before[addr]; !ok {
			changed = append(changed, addr+" became a master")
		} else if was != id {
			changed = append(changed, addr+" restarted")
		}
	}
	slices.Sort(changed)
	return strings.Join(changed, ", ")
}

// checkAfterRestart handles a master that restarted or a replica promoted
// (what says which): Redis may then have lost the writes it had not made
// durable or replicated yet, and nothing else would show it (no counter
// need be behind). The id counters are moved past every id known, and the
// indexes are repaired in the background; only damage the repair found is
// reported as forgetting.
func (s *Store) checkAfterRestart(ctx context.Context, what string) {
	f := &s.forgot
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	f.recovering.Store(true)
	defer f.recovering.Store(false)
	s.log.Warn("a Redis master restarted or was failed over to; checking the indexes for writes it lost", "seen", what)
	start := time.Now()
	for ctx.Err() == nil {
		err := s.raiseCounters(ctx)
		var r RepairReport
		if err == nil {
			r, err = s.Repair(ctx, true)
		}
		if err == nil {
			if r.Missing+r.Dangling+r.Stale > 0 {
				f.detected.Add(1)
				s.log.Error("Redis forgot writes it had acknowledged (a master restarted or was failed over to); the indexes are repaired",
					"seen", what, "report", r.String(), "seconds", time.Since(start).Seconds())
			} else {
				s.log.Info("checked the indexes after a Redis master restarted or was failed over to", "report", r.String(), "seconds", time.Since(start).Seconds())
			}
			return
		}
		s.log.Warn("checking the indexes after a Redis restart failed; trying again", "err", err)
		time.Sleep(time.Second)
	}
}

// raiseCounterScript moves the counter KEYS[1] to ARGV[1] unless it is
// already there or past, in one step beside concurrent draws.
var raiseCounterScript = redis.NewScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[1])
if v < floor then redis.call('SET', KEYS[1], floor) end
return v
`)

// recoverFromForgetting handles Redis found behind (what says how): one
// ERROR, then the store answers not ready while each id counter is moved
// past every id this instance knows of (and the newest order in the
// indexes) and the layout mark is written back; then every record's index
// entries are repaired in the background, batch by batch, while the
// service serves. A detection during a recovery is part of it.
func (s *Store) recoverFromForgetting(ctx context.Context, what string) {
	f := &s.forgot
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	// Not ready before the detection is counted: whoever sees the count
	// sees the store unsafe.
	f.recovering.Store(true)
	f.unsafe.Store(true)
	f.detected.Add(1)
	attrs := []any{"seen", what}
	for c, k := range registry {
		attrs = append(attrs, "highest_"+k.nounOf()+"_id", f.highest[c].Load())
	}
	s.log.Error("Redis forgot writes it had acknowledged (wiped, restored from a backup, or failed over to a replica that lagged); moving the id counters past every id in use and repairing the indexes",
		attrs...)
	for ctx.Err() == nil {
		err := s.raiseCounters(ctx)
		if err == nil {
			err = s.rdb.Set(ctx, s.layoutKey(), Layout, 0).Err()
		}
		if err == nil {
			break
		}
		s.log.Warn("moving the id counters past the ids in use failed; trying again", "err", err)
		time.Sleep(time.Second)
	}
	f.sawLayout.Store(true)
	f.unsafe.Store(false)
	start := time.Now()
	for ctx.Err() == nil {
		r, err := s.Repair(ctx, true)
		if err == nil {
			s.log.Info("repaired the indexes after Redis forgot writes", "report", r.String(), "seconds", time.Since(start).Seconds())
			break
		}
		s.log.Warn("repairing the indexes after Redis forgot writes failed; trying again", "err", err)
		time.Sleep(time.Second)
	}
	f.recovering.Store(false)
}

// raiseCounters moves each id counter to at least the highest id this
// instance knows of, and past the newest record its kind's indexes name
// (kind.newest).
func (s *Store) raiseCounters(ctx context.Context) error {
	for c, k := range registry {
		floor := s.forgot.highest[c].Load()
		newest, err := k.newestID(ctx, s)
		if err != nil {
			return err
		}
		floor = max(floor, newest)
		if err := raiseCounterScript.Run(ctx, s.rdb, []string{k.counterKey(s)}, floor).Err(); err != nil {
			return err
		}
		s.sawID(c, floor)
	}
	return nil
}
