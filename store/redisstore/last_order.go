package redisstore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// The customers by their last order (the List's -last_order):
//
//	cx:{c}:last_order  every customer, member the id; score timeScore of its
//	                   newest order's created time and id, or minus its own id
//	                   when no order links it (so, descending, those come
//	                   after every customer with orders, lowest id first)
//	cx:{c}:to_place    the customers whose entry is to be set again: field
//	                   the id, value a token fresh for each change
//
// A customer's create adds its entry, and its delete removes it, in the
// customer's own transaction. The score of a customer with orders is
// derived from its orders index (ix:{w}:customer:<id>, another slot),
// which an order's write changes; the entry cannot share that write. So
// the write marks the customer (a fresh token in cx:{c}:to_place) in the
// same step as the orders index entry: in the order's transaction on a
// single Redis, and on a Cluster after the settle that wrote the entry and
// before the intent naming it is deleted (a crash in between leaves the
// intent, and its settle marks again). The writer then places the
// customer; so does, for every mark left behind, the reconciler on each
// pass, Repair, and a read of the -last_order List before it answers.
//
// A placement reads the mark's token, then the orders index, and in one
// script sets the entry from what it read and deletes the mark, only if
// the mark still holds that token. A change marked before the token was
// read is in what the placement read; one marked after leaves another
// token, which makes that placement write nothing if it comes first, and
// stays for a placement of the newer state either way. So an entry is
// only written from an index read after every mark made until then, and
// a mark is only removed with such a write: wherever an instance dies,
// the entry ends right once the marks left are placed.

// lastOrderIndex names the customers-by-last-order index.
func (s *Store) lastOrderIndex() string { return s.customerIndex("last_order") }

// toPlaceKey names the marks of customers to place again.
func (s *Store) toPlaceKey() string { return s.customerIndex("to_place") }

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

// placeScript places a marked customer: when its mark still holds the
// token read before the orders index, it deletes the mark and sets the
// customer's entry (or removes it when the customer is not stored: a
// delete that came first). 0: the mark was gone or newer, nothing written.
// KEYS: the customer's record, the index, the marks. ARGV: the id, the
// score, the token.
var placeScript = redis.NewScript(`
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[3] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1`)

// placeByLastOrder places customers ids that are marked. One that is not
// was placed by someone who read its orders index after the change that
// marked it.
func (s *Store) placeByLastOrder(ctx context.Context, ids ...int64) error {
	for _, id := range ids {
		if id == 0 {
			continue
		}
		token, err := s.rdb.HGet(ctx, s.toPlaceKey(), strconv.FormatInt(id, 10)).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err == nil {
			_, err = s.placeMarked(ctx, map[int64]string{id: token})
		}
		if err != nil {
			return wrap(err)
		}
	}
	return nil
}

// placeMarked places the customers of marks (id: the token read), their
// orders indexes read in one pipelined round trip. It returns how many
// it placed (the others were placed by someone else, or marked again).
func (s *Store) placeMarked(ctx context.Context, marks map[int64]string) (int, error) {
	newest := make(map[int64]*redis.StringSliceCmd, len(marks))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id := range marks {
			newest[id] = p.ZRange(ctx, s.customerOrders(id), 0, 0)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	placed := 0
	for id, token := range marks {
		n, err := placeScript.Run(ctx, s.rdb, []string{customerKind.key(s, id), s.lastOrderIndex(), s.toPlaceKey()},
			strconv.FormatInt(id, 10), lastOrderScore(id, newest[id].Val()), token).Int()
		if err != nil {
			return placed, err
		}
		placed += n
	}
	return placed, nil
}

// placePending places the customers marked to place (at most limit of
// them when limit > 0, in batches), and returns how many it placed.
func (s *Store) placePending(ctx context.Context, limit int) (int, error) {
	all, err := s.rdb.HGetAll(ctx, s.toPlaceKey()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, wrap(err)
	}
	placed := 0
	batch := map[int64]string{}
	flush := func() error {
		n, err := s.placeMarked(ctx, batch)
		placed += n
		clear(batch)
		return err
	}
	seen := 0
	for field, token := range all {
		if limit > 0 && seen == limit {
			break
		}
		id, ok := store.ParseID(field)
		if !ok {
			// No writer marks such a field.
			if err := s.rdb.HDel(ctx, s.toPlaceKey(), field).Err(); err != nil {
				return placed, wrap(err)
			}
			continue
		}
		seen++
		if batch[id] = token; len(batch) == placeBatch {
			if err := flush(); err != nil {
				return placed, wrap(err)
			}
		}
	}
	return placed, wrap(flush())
}

// placeBatch marked customers have their orders indexes read in one
// pipeline.
const placeBatch = 100

// readerPlaces bounds the marks a read of the -last_order List places
// before it answers; the reconciler places the rest (only a seed cut
// short leaves more).
const readerPlaces = 200

// markToPlace queues the marks of the customers whose orders index has
// an entry among entries (the order kind's marks).
func (s *Store) markToPlace(ctx context.Context, p redis.Pipeliner, entries []ixEntry) {
	prefix := s.customerOrdersPrefix()
	var fields []any
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Key, prefix); ok {
			if _, ok := store.ParseID(rest); ok {
				fields = append(fields, rest, newToken())
			}
		}
	}
	if len(fields) > 0 {
		p.HSet(ctx, s.toPlaceKey(), fields...)
	}
}

// mark marks customer id to place and places it: Repair's fix of a wrong
// entry, made the way a writer makes it.
func (s *Store) mark(ctx context.Context, id int64) error {
	token := newToken()
	if err := s.rdb.HSet(ctx, s.toPlaceKey(), strconv.FormatInt(id, 10), token).Err(); err != nil {
		return err
	}
	_, err := s.placeMarked(ctx, map[int64]string{id: token})
	return err
}

// customerBeside enters a new customer in the last-order index (no order
// can link it yet), and takes a deleted one out with its mark (no order
// links it any more), in the customer's transaction.
func (s *Store) customerBeside(ctx context.Context, p redis.Pipeliner, cur, next *store.Customer) {
	switch {
	case cur == nil && next != nil:
		p.ZAdd(ctx, s.lastOrderIndex(), redis.Z{Score: lastOrderScore(next.ID, nil), Member: strconv.FormatInt(next.ID, 10)})
	case cur != nil && next == nil:
		id := strconv.FormatInt(cur.ID, 10)
		p.ZRem(ctx, s.lastOrderIndex(), id)
		p.HDel(ctx, s.toPlaceKey(), id)
	}
}

func init() {
	orders.changed = (*Store).orderRelinked
	orders.marks = (*Store).markToPlace
	customerKind.beside = (*Store).customerBeside
	customerKind.derived = (*Store).repairLastOrders
}

// repairLastOrders checks (and with fix sets right) the last-order index
// against the customers and their orders indexes: every customer has its
// entry with the score its newest order gives, and no entry names a
// customer that is not stored. The marks left behind come first (with
// fix, placed): what a crash leaves, counted in Unplaced, not damage. A
// wrong entry whose customer is marked is its writer's to place; one that
// is not is looked at again before it counts, as a writer may have been
// placing it, and then is damage: a customer missing or out of date is
// Missing, a customer that is not stored Dangling.
func (s *Store) repairLastOrders(ctx context.Context, fix bool, r *RepairReport) error {
	if fix {
		n, err := s.placePending(ctx, 0)
		r.Unplaced += n
		if err != nil {
			return err
		}
	} else {
		n, err := s.rdb.HLen(ctx, s.toPlaceKey()).Result()
		if err != nil {
			return err
		}
		r.Unplaced += int(n)
	}
	counted := map[int64]bool{}
	// wrong returns the customers of ids whose entry is wrong and who are
	// not marked, and whether each is stored.
	wrong := func(ids []int64) ([]int64, map[int64]bool, error) {
		newest := make([]*redis.StringSliceCmd, len(ids))
		have := make([]*redis.FloatCmd, len(ids))
		exists := make([]*redis.IntCmd, len(ids))
		marked := make([]*redis.BoolCmd, len(ids))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				member := strconv.FormatInt(id, 10)
				// The mark first (on one server it is read before the
				// rest): a change marked after it is in the reads that
				// follow, or looked at again.
				marked[i] = p.HExists(ctx, s.toPlaceKey(), member)
				newest[i] = p.ZRange(ctx, s.customerOrders(id), 0, 0)
				have[i] = p.ZScore(ctx, s.lastOrderIndex(), member)
				exists[i] = p.Exists(ctx, customerKind.key(s, id))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, err
		}
		var out []int64
		stored := map[int64]bool{}
		for i, id := range ids {
			if marked[i].Val() {
				continue
			}
			got, err := have[i].Result()
			there := err == nil
			stored[id] = exists[i].Val() > 0
			if !stored[id] {
				if there {
					out = append(out, id)
				}
				continue
			}
			if !there || got != lastOrderScore(id, newest[i].Val()) {
				out = append(out, id)
			}
		}
		return out, stored, nil
	}
	check := func(ids []int64) error {
		suspect, _, err := wrong(ids)
		if err != nil || len(suspect) == 0 {
			return err
		}
		still, stored, err := wrong(suspect)
		if err != nil {
			return err
		}
		r.InFlight += len(suspect) - len(still)
		for _, id := range still {
			if counted[id] {
				continue
			}
			counted[id] = true
			if stored[id] {
				r.Missing++
			} else {
				r.Dangling++
			}
			if fix {
				if err := s.mark(ctx, id); err != nil {
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

// markAll marks customers ids to place, in one round trip per batch,
// and returns their tokens: for the bulk Seed, before its orders link
// them without the write path (so that a seed cut short leaves them
// marked).
func (s *Store) markAll(ctx context.Context, ids []int64) (map[int64]string, error) {
	tokens := make(map[int64]string, len(ids))
	for start := 0; start < len(ids); start += repairBatch {
		fields := make([]any, 0, 2*repairBatch)
		for _, id := range ids[start:min(start+repairBatch, len(ids))] {
			tokens[id] = newToken()
			fields = append(fields, strconv.FormatInt(id, 10), tokens[id])
		}
		if err := s.rdb.HSet(ctx, s.toPlaceKey(), fields...).Err(); err != nil {
			return nil, wrap(err)
		}
	}
	return tokens, nil
}

// placeAllScript is placeScript for many customers of the seed, which
// made or found them stored (a delete since took its mark too).
// KEYS: the index, the marks. ARGV: id, score, token, for each.
var placeAllScript = redis.NewScript(`
for i = 1, #ARGV, 3 do
  if redis.call('HGET', KEYS[2], ARGV[i]) == ARGV[i+2] then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[1], ARGV[i+1], ARGV[i])
  end
end
return 0`)

// placeAllByLastOrder places the customers markAll marked (tokens), in
// two round trips per batch: the orders indexes in one pipeline, then
// one script (the embedded store starts an interpreter for every script
// it runs, and hundreds in one pipeline outlast a read timeout on a busy
// machine).
func (s *Store) placeAllByLastOrder(ctx context.Context, tokens map[int64]string) error {
	ids := slices.Sorted(maps.Keys(tokens))
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
		args := make([]any, 0, 3*len(batch))
		for i, id := range batch {
			args = append(args, strconv.FormatInt(id, 10), lastOrderScore(id, newest[i].Val()), tokens[id])
		}
		if err := placeAllScript.Run(ctx, s.rdb, []string{s.lastOrderIndex(), s.toPlaceKey()}, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return wrap(err)
		}
	}
	return nil
}
