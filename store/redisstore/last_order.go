package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// The customers by their last order (the List's -last_order):
//
//	cx:{c}:last_order  every customer, member the id; score timeScore of its
//	                   newest order's created time and id, or minus its own id
//	                   when no order links it (so, descending, those come
//	                   after every customer with orders, lowest id first)
//
// The score is derived from the customer's orders index (ix:{w}:customer:<id>,
// another slot), so it cannot share an order's transaction: after an order
// write that links or unlinks a customer, and after a customer's create and
// delete, placeByLastOrder sets it again from that index. Repair rebuilds it
// the same way.

// lastOrderIndex names the customers-by-last-order index.
func (s *Store) lastOrderIndex() string { return s.customerIndex("last_order") }

// lastOrderScore is customer id's score in the last-order index, from the
// first member of its orders index (newest, nil when it has none).
func lastOrderScore(id int64, newest []string) float64 {
	if len(newest) == 1 {
		at, ok1 := customerOrderTime(newest[0])
		oid, ok2 := memberID(newest[0])
		if ok1 && ok2 {
			return timeScore(at, oid)
		}
	}
	return -float64(id)
}

// placeScript sets a customer's entry in the last-order index, or removes
// it when the customer is not stored (a delete that came first).
// KEYS: the customer's record, the index. ARGV: the id, the score.
var placeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  return 1
end
redis.call('ZREM', KEYS[2], ARGV[1])
return 0`)

// placeByLastOrder sets the entries of customers ids in the last-order
// index from their orders indexes. Writers may do so side by side: each
// reads the orders index again after its own write and writes again until
// what it wrote is what the index says, so the last to write leaves the
// newest state.
func (s *Store) placeByLastOrder(ctx context.Context, ids ...int64) error {
	for _, id := range ids {
		if id == 0 {
			continue
		}
		member := strconv.FormatInt(id, 10)
		newest, err := s.rdb.ZRange(ctx, s.customerOrders(id), 0, 0).Result()
		for try := 0; err == nil; try++ {
			score := lastOrderScore(id, newest)
			err = placeScript.Run(ctx, s.rdb, []string{customerKind.key(s, id), s.lastOrderIndex()}, member, score).Err()
			if err != nil || try == maxRetries {
				break
			}
			var again []string
			if again, err = s.rdb.ZRange(ctx, s.customerOrders(id), 0, 0).Result(); err == nil && slices.Equal(again, newest) {
				break
			}
			newest = again
		}
		if err != nil {
			return wrap(err)
		}
	}
	return nil
}

// customerPlaced enters a new customer in the last-order index, and takes
// a deleted one out.
func (s *Store) customerPlaced(ctx context.Context, ch Change[store.Customer]) {
	if ch.Before != nil && ch.After != nil {
		return
	}
	c := ch.Before
	if c == nil {
		c = ch.After
	}
	if err := s.placeByLastOrder(ctx, c.ID); err != nil {
		s.log.Warn("placing a customer by its last order failed; orders -repair sets it right", "customer", c.ID, "err", err)
	}
}

func init() {
	orders.changed = (*Store).orderRelinked
	customerKind.changed = (*Store).customerPlaced
	customerKind.derived = (*Store).repairLastOrders
}

// repairLastOrders checks (and with fix sets right) the last-order index
// against the customers and their orders indexes: every customer has its
// entry with the score its newest order gives, and no entry names a
// customer that is not stored. A wrong entry is looked at again before it
// counts, as a writer may have been placing it.
func (s *Store) repairLastOrders(ctx context.Context, fix bool, r *RepairReport) error {
	counted := map[int64]bool{}
	wrong := func(ids []int64) ([]int64, error) {
		newest := make([]*redis.StringSliceCmd, len(ids))
		have := make([]*redis.FloatCmd, len(ids))
		exists := make([]*redis.IntCmd, len(ids))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				newest[i] = p.ZRange(ctx, s.customerOrders(id), 0, 0)
				have[i] = p.ZScore(ctx, s.lastOrderIndex(), strconv.FormatInt(id, 10))
				exists[i] = p.Exists(ctx, customerKind.key(s, id))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		var out []int64
		for i, id := range ids {
			got, err := have[i].Result()
			there := err == nil
			if exists[i].Val() == 0 {
				if there {
					out = append(out, id)
				}
				continue
			}
			if !there || got != lastOrderScore(id, newest[i].Val()) {
				out = append(out, id)
			}
		}
		return out, nil
	}
	check := func(ids []int64) error {
		suspect, err := wrong(ids)
		if err != nil || len(suspect) == 0 {
			return err
		}
		still, err := wrong(suspect)
		if err != nil {
			return err
		}
		for _, id := range still {
			if counted[id] {
				continue
			}
			counted[id] = true
			// Missing, misplaced, or a deleted customer's: a placement
			// that did not run after its write.
			r.Unplaced++
			if fix {
				if err := s.placeByLastOrder(ctx, id); err != nil {
					return err
				}
				r.Fixed++
			}
		}
		return nil
	}
	// Every customer is placed, by its newest order.
	pattern, idOf := customerKind.keyPattern(s)
	err := s.scanKeys(ctx, pattern, func(keys []string) error {
		ids := make([]int64, 0, len(keys))
		for _, key := range keys {
			if id, ok := idOf(key); ok {
				ids = append(ids, id)
			}
		}
		return check(ids)
	})
	if err != nil {
		return err
	}
	// No entry names a customer that is not stored.
	iter := s.rdb.ZScan(ctx, s.lastOrderIndex(), 0, "", repairBatch).Iterator()
	var ids []int64
	for member := true; iter.Next(ctx); member = !member {
		if !member {
			continue
		}
		id, ok := store.ParseID(iter.Val())
		if !ok {
			r.Dangling++
			if fix {
				if err := s.rdb.ZRem(ctx, s.lastOrderIndex(), iter.Val()).Err(); err != nil {
					return err
				}
			}
			continue
		}
		if ids = append(ids, id); len(ids) >= repairBatch {
			if err := check(ids); err != nil {
				return err
			}
			ids = ids[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return check(ids)
}

// placeAllByLastOrder sets the entries of customers ids in the last-order
// index in two pipelined round trips per batch: for the bulk Seed, whose
// orders link customers without the write path. Seed made those customers
// before it linked them, so a plain ZADD places each (no script: the
// embedded store starts an interpreter for every script it runs, and
// hundreds in one pipeline outlast a read timeout on a busy machine).
func (s *Store) placeAllByLastOrder(ctx context.Context, ids []int64) error {
	for start := 0; start < len(ids); start += repairBatch {
		batch := ids[start:min(start+repairBatch, len(ids))]
		newest := make([]*redis.StringSliceCmd, len(batch))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				newest[i] = p.ZRange(ctx, s.customerOrders(id), 0, 0)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return wrap(err)
		}
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				p.ZAdd(ctx, s.lastOrderIndex(), redis.Z{Score: lastOrderScore(id, newest[i].Val()), Member: strconv.FormatInt(id, 10)})
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return wrap(err)
		}
	}
	return nil
}
