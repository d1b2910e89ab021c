package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RepairReport is what a check of the whole collection found, and fixed.
type RepairReport struct {
	Records  int // records read
	Damaged  int // record hashes that cannot be read (skipped, left alone)
	Missing  int // index entries a record belongs in but did not have
	Dangling int // index entries whose record does not exist
	Stale    int // index entries of a record that no longer belongs in them
	Intents  int // pending index intents settled first (Cluster)
	Fixed    int // records whose index entries were settled
}

// Problems counts what was wrong with the indexes and records.
func (r RepairReport) Problems() int { return r.Damaged + r.Missing + r.Dangling + r.Stale }

func (r RepairReport) String() string {
	return fmt.Sprintf("%d records, %d damaged, %d missing index entries, %d dangling, %d stale, %d intents settled, %d records fixed",
		r.Records, r.Damaged, r.Missing, r.Dangling, r.Stale, r.Intents, r.Fixed)
}

// repairBatch records or index entries are read in one pipeline.
const repairBatch = 500

// Repair checks every record and every index entry of the collection, and
// with fix settles each record that is wrong (the write path's own settle:
// idempotent, and safe beside live writers, so the service keeps running).
// It walks keys with SCAN and ZSCAN in batches: O(N) work, constant memory.
// Under live writes it may count a write in flight as a problem; a second
// run tells.
func (s *Store) Repair(ctx context.Context, fix bool) (RepairReport, error) {
	var r RepairReport
	if fix {
		n, err := s.reconcileOnce(ctx, 0)
		r.Intents = n
		if err != nil {
			return r, wrap(err)
		}
	}
	err := repairKind(ctx, s, orders, fix, &r)
	if err == nil {
		err = repairKind(ctx, s, productKind, fix, &r)
	}
	return r, wrap(err)
}

func repairKind[T any](ctx context.Context, s *Store, k *kind[T], fix bool, r *RepairReport) error {
	fixed := map[int64]bool{}
	fixID := func(id int64, stale []ixEntry) error {
		if !fix {
			return nil
		}
		if !fixed[id] {
			fixed[id] = true
			r.Fixed++
		}
		if k.sharded(s) {
			if err := s.fence(ctx, k.key(s, id)); err != nil {
				return err
			}
		}
		touched, err := settleAll(ctx, s, k, id, stale)
		if err != nil && k.sharded(s) {
			// Entries it may have written (of a state a write replaced
			// meanwhile) that no intent names: named now.
			_ = s.intentAgain(ctx, k.name, id, touched)
		}
		return err
	}

	// Every record is in every index it belongs in.
	pattern, idOf := k.keyPattern(s)
	err := s.scanKeys(ctx, pattern, func(keys []string) error {
		ids := make([]int64, 0, len(keys))
		for _, key := range keys {
			if id, ok := idOf(key); ok {
				ids = append(ids, id)
			}
		}
		recs, err := loadRecords(ctx, s, k, ids, r)
		if err != nil {
			return err
		}
		type check struct {
			id  int64
			e   ixEntry
			cmd *redis.FloatCmd
		}
		var checks []check
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids {
				if rec := recs[id]; rec != nil {
					for _, e := range k.entries(s, rec) {
						checks = append(checks, check{id, e, p.ZScore(ctx, e.Key, e.Member)})
					}
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, c := range checks {
			if score, err := c.cmd.Result(); err != nil || score != c.e.Score {
				r.Missing++
				if err := fixID(c.id, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	// No index entry points at a missing record, or at one that no longer
	// belongs in it.
	indexes := k.indexes(s)
	if k.indexPattern != nil {
		err := s.scanKeys(ctx, k.indexPattern(s), func(keys []string) error {
			for _, key := range keys {
				indexes = append(indexes, indexKey{key, memberID})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, ix := range indexes {
		iter := s.rdb.ZScan(ctx, ix.Key, 0, "", repairBatch).Iterator()
		var batch []ixEntry
		flush := func() error {
			ids := make([]int64, 0, len(batch))
			for _, e := range batch {
				if id, ok := ix.ID(e.Member); ok {
					ids = append(ids, id)
				}
			}
			recs, err := loadRecords(ctx, s, k, ids, nil)
			if err != nil {
				return err
			}
			for _, e := range batch {
				id, ok := ix.ID(e.Member)
				if !ok {
					r.Dangling++ // a member no record can own
					if fix {
						if err := s.rdb.ZRem(ctx, e.Key, e.Member).Err(); err != nil {
							return err
						}
					}
					continue
				}
				rec := recs[id]
				switch {
				case rec == nil:
					r.Dangling++
				case !hasEntry(k.entries(s, rec), e):
					r.Stale++
				default:
					continue
				}
				if err := fixID(id, []ixEntry{{Key: e.Key, Member: e.Member}}); err != nil {
					return err
				}
			}
			batch = batch[:0]
			return nil
		}
		for {
			more := iter.Next(ctx)
			if more {
				member := iter.Val()
				if !iter.Next(ctx) {
					break
				}
				score, _ := strconv.ParseFloat(iter.Val(), 64)
				batch = append(batch, ixEntry{Key: ix.Key, Member: member, Score: score})
			}
			if len(batch) >= repairBatch || (!more && len(batch) > 0) {
				if err := flush(); err != nil {
					return err
				}
			}
			if !more {
				break
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
	}
	return nil
}

// loadRecords reads records ids in one pipeline; a missing or damaged one
// is absent from the map (and counted in r, when given).
func loadRecords[T any](ctx context.Context, s *Store, k *kind[T], ids []int64, r *RepairReport) (map[int64]*T, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, k.key(s, id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	recs := make(map[int64]*T, len(ids))
	for i, id := range ids {
		h := cmds[i].Val()
		rec, ok := k.decode(id, h)
		if !ok {
			if len(h) > 0 && r != nil {
				r.Damaged++
				s.damaged(k.key(s, id), h)
			}
			continue
		}
		if r != nil {
			r.Records++
		}
		recs[id] = rec
	}
	return recs, nil
}

// scanKeys calls fn with the keys matching pattern, a batch at a time, on
// every master of a Cluster.
func (s *Store) scanKeys(ctx context.Context, pattern string, fn func(keys []string) error) error {
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, repairBatch).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if err := fn(keys); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		// One master at a time: fn is not safe to call concurrently.
		var (
			mu      sync.Mutex
			masters []*redis.Client
		)
		if err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
			mu.Lock() // ForEachMaster calls this concurrently
			masters = append(masters, c)
			mu.Unlock()
			return nil
		}); err != nil {
			return err
		}
		for _, c := range masters {
			if err := scan(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
	return scan(ctx, s.rdb)
}

// Layout names the index layout this code writes (docs/data.md): 2 had
// ix:id and ix:name (each also per status); 4 has the created, updated and
// total sets per status only, ix:name, and the search terms split by their
// first character (3 was a development version); 5 splits the search terms
// by status too. Repair moves the entries from a layout 4 term set into
// layout 5's (an entry in a set its order does not belong in is stale).
const Layout = "5"

func (s *Store) layoutKey() string { return s.prefix + "layout" }

// Upgrade brings data written by an earlier version to this layout: when
// the store has handed out ids but holds no mark of this layout, it
// rebuilds every record's index entries (Repair, safe beside live writers)
// and deletes the keys only the old layout used, then writes the mark.
// ran says whether it rebuilt anything.
func (s *Store) Upgrade(ctx context.Context) (ran bool, r RepairReport, err error) {
	got, err := s.rdb.Get(ctx, s.layoutKey()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, r, wrap(err)
	}
	if got == Layout {
		return false, r, nil
	}
	n, err := s.rdb.Exists(ctx, s.seqKey()).Result()
	if err != nil {
		return false, r, wrap(err)
	}
	if n > 0 {
		if r, err = s.Repair(ctx, true); err != nil {
			return true, r, err
		}
		// Layout 2's ix:id, and the keys of two development versions of
		// layout 3 that were never released but may sit in a snapshot.
		old := []string{s.prefix + "ix:id", s.prefix + "ix:up", s.prefix + "ix:tot", s.prefix + "ix:{w}"}
		for _, st := range Statuses {
			old = append(old, s.prefix+"ix:id:"+string(st), s.prefix+"ix:up:"+string(st), s.prefix+"ix:tot:"+string(st))
		}
		for d := 1; d <= dupDepth; d++ {
			old = append(old, s.prefix+"ix:{w}:d"+strconv.Itoa(d))
		}
		for _, k := range old {
			// One key at a time: on a Cluster they live in different slots.
			if err := s.rdb.Del(ctx, k).Err(); err != nil {
				return true, r, wrap(err)
			}
		}
	}
	return n > 0, r, wrap(s.rdb.Set(ctx, s.layoutKey(), Layout, 0).Err())
}
