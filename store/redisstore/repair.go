package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// RepairReport is what a check of the whole collection found, and fixed.
// Missing, Dangling and Stale count only damage that was still there once
// the record's writes had settled: an entry a writer was changing while the
// repair looked (the record's transaction done, or on a Cluster its index
// writes still on their way) is counted in InFlight instead, not as damage.
type RepairReport struct {
	Records  int // records read
	Damaged  int // record hashes that cannot be read (skipped, left alone)
	Missing  int // index entries a record belongs in but did not have
	Dangling int // index entries whose record does not exist
	Stale    int // index entries of a record that no longer belongs in them
	Intents  int // index intents left behind by writers, settled first (Cluster)
	Fixed    int // records whose index entries the repair itself fixed
	InFlight int // entries that looked wrong but that their writers settled meanwhile
	// Holds counts customer link holds left behind by order writers that
	// stopped half way (their orders do not link the customer), dropped
	// with fix: what a crash leaves, not damage (links.go).
	Holds int
	// Unplaced counts customers left marked to place by their last order
	// (a writer that stopped between its write and the placement), placed
	// with fix: what a crash leaves, which the reconciler would have placed
	// within a second anyway, not damage (last_order.go). A customer
	// placed wrong with no mark is damage: Missing, or Dangling once
	// deleted.
	Unplaced int
	// Restorable counts deleted records whose values are kept for an undo
	// (undoKey): not damage, never indexed or brought back by a repair;
	// they expire by themselves at the end of the undo window.
	Restorable int
}

// Problems counts what was wrong with the indexes and records.
func (r RepairReport) Problems() int { return r.Damaged + r.Missing + r.Dangling + r.Stale }

func (r RepairReport) String() string {
	return fmt.Sprintf("%d records, %d damaged, %d missing index entries, %d dangling, %d stale, %d intents settled, %d records fixed; %d entries settled by their writers meanwhile, %d customer link holds left behind, %d customers left to place by their last order; %d deleted records restorable (undo)",
		r.Records, r.Damaged, r.Missing, r.Dangling, r.Stale, r.Intents, r.Fixed, r.InFlight, r.Holds, r.Unplaced, r.Restorable)
}

// repairBatch records or index entries are read in one pipeline.
const repairBatch = 500

// settleWait is how long Repair waits for the writes in flight on a record
// it suspects (the intents that name it) before it looks anyway: the
// reconciler settles an intent left behind well within it.
const settleWait = 5 * time.Second

// Repair checks every record and every index entry of the collection, and
// with fix settles each record that is wrong, safe beside live writers (the
// service keeps running). It walks keys with SCAN and ZSCAN in batches:
// O(N) work, constant memory. What a batch shows wrong is only a suspicion
// (a writer may have changed the record between two reads): each suspect
// record is looked at again once its writes have settled, and only what is
// still wrong then is counted and fixed.
func (s *Store) Repair(ctx context.Context, fix bool) (RepairReport, error) {
	var r RepairReport
	if fix {
		n, err := s.settleLeftBehind(ctx)
		r.Intents = n
		if err != nil {
			return r, wrap(err)
		}
	}
	for _, k := range registry {
		if err := k.repair(ctx, s, fix, &r); err != nil {
			return r, wrap(err)
		}
	}
	for _, k := range registry {
		if err := k.repairDerived(ctx, s, fix, &r); err != nil {
			return r, wrap(err)
		}
	}
	// The customers' links, from the orders (links.go).
	if err := s.repairLinks(ctx, fix, &r); err != nil {
		return r, wrap(err)
	}
	return r, nil
}

// settleLeftBehind settles the intents that are older than a live writer's
// (by this instance's clock, as the reconciler does): the ones pending now
// are seen, and those still there a little later are taken over. A fresh
// intent is its writer's: taking it over would only make the writer start
// again.
func (s *Store) settleLeftBehind(ctx context.Context) (int, error) {
	n, err := s.reconcileOnce(ctx, reconcileAge)
	if err != nil {
		return n, err
	}
	pending, err := s.rdb.HLen(ctx, s.intentsKey()).Result()
	if err != nil || pending == 0 {
		return n, err
	}
	select {
	case <-ctx.Done():
		return n, ctx.Err()
	case <-time.After(reconcileAge):
	}
	more, err := s.reconcileOnce(ctx, reconcileAge)
	return n + more, err
}

// repairer checks and fixes the records of one kind.
type repairer[T any] struct {
	s   *Store
	k   *kind[T]
	fix bool
	r   *RepairReport
	// fixed holds the records fixed, counted holds the entries counted as
	// damage: a record is checked again when both passes suspect it.
	fixed   map[int64]bool
	counted map[[2]string]bool
	// impatient is set once a record's intents outlived settleWait: no
	// reconciler is settling them, and later looks wait no more.
	impatient bool
}

func repairKind[T any](ctx context.Context, s *Store, k *kind[T], fix bool, r *RepairReport) error {
	rp := &repairer[T]{s: s, k: k, fix: fix, r: r, fixed: map[int64]bool{}, counted: map[[2]string]bool{}}

	// Every record is in every index it belongs in.
	pattern, idOf := k.keyPattern(s)
	err := s.scanKeys(ctx, pattern, func(keys []string) error {
		ids := make([]int64, 0, len(keys))
		for _, key := range keys {
			if id, ok := idOf(key); ok {
				ids = append(ids, id)
			} else if rest, ok := strings.CutSuffix(key, ":undo"); ok {
				if _, ok := idOf(rest); ok {
					r.Restorable++
				}
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
		suspects := newSuspects()
		for _, c := range checks {
			if score, err := c.cmd.Result(); err != nil || score != c.e.Score {
				suspects.add(c.id, c.e)
			}
		}
		return rp.checkAll(ctx, suspects)
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
			suspects := newSuspects()
			for _, e := range batch {
				id, ok := ix.ID(e.Member)
				if !ok {
					r.Dangling++ // a member no record can own: no writer wrote it
					if fix {
						if err := s.rdb.ZRem(ctx, e.Key, e.Member).Err(); err != nil {
							return err
						}
					}
					continue
				}
				if rec := recs[id]; rec == nil || !hasEntry(k.entries(s, rec), e) {
					suspects.add(id, e)
				}
			}
			batch = batch[:0]
			return rp.checkAll(ctx, suspects)
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

// suspects are the entries a pass found wrong, by record, in the order met.
type suspects struct {
	ids     []int64
	entries map[int64][]ixEntry
}

func newSuspects() *suspects { return &suspects{entries: map[int64][]ixEntry{}} }

func (x *suspects) add(id int64, e ixEntry) {
	if _, ok := x.entries[id]; !ok {
		x.ids = append(x.ids, id)
	}
	x.entries[id] = append(x.entries[id], e)
}

func (rp *repairer[T]) checkAll(ctx context.Context, x *suspects) error {
	for _, id := range x.ids {
		if err := rp.check(ctx, id, x.entries[id]); err != nil {
			return err
		}
	}
	return nil
}

// verdict is what a second look at one record found: the entries it
// belongs in but lacks (or has with a wrong score), and the suspect entries
// it has but does not belong in.
type verdict struct {
	exists         bool // the record is there and can be read
	missing, extra []ixEntry
}

// lookAt reads record h: want is the entries it belongs in, probe the
// entries whose scores judge needs (want, then suspect, in that order, as
// score reads them by position), and judge the verdict once they are read.
func lookAt[T any](s *Store, k *kind[T], id int64, h map[string]string, suspect []ixEntry, score func(i int) (float64, bool)) (want, probe []ixEntry, judge func() verdict) {
	rec, ok := k.decode(id, h)
	if ok {
		want = k.entries(s, rec)
	}
	probe = append(slices.Clip(want), suspect...)
	return want, probe, func() verdict {
		v := verdict{exists: ok}
		for i, e := range want {
			if got, there := score(i); !there || got != e.Score {
				v.missing = append(v.missing, e)
			}
		}
		for i, e := range suspect {
			if _, there := score(len(want) + i); there && !hasMember(want, e) && !hasMember(v.extra, e) {
				v.extra = append(v.extra, e)
			}
		}
		return v
	}
}

// check looks at record id again once its writes have settled, and counts
// (and with fix, fixes) what is still wrong; what its writers settled
// meanwhile is counted apart. On one Redis, or for a kind kept to one slot,
// the record and its entries are read under a WATCH of the record and the
// look ends with an EXEC: a writer changes the record and its entries in
// one transaction, so a look that no write interrupted saw them as they
// are. On a Cluster the entries follow the record's transaction, named by
// intents: the look waits until no intent names the record, and counts
// only when the record's version and the absence of intents held across it.
func (rp *repairer[T]) check(ctx context.Context, id int64, suspect []ixEntry) error {
	var (
		v   verdict
		err error
	)
	if rp.k.sharded(rp.s) {
		v, err = rp.lookSharded(ctx, id, suspect)
	} else {
		v, err = rp.lookInOne(ctx, id, suspect)
	}
	if err != nil {
		return err
	}
	damage := 0
	for _, e := range v.missing {
		if rp.count(e) {
			rp.r.Missing++
		}
		damage++
	}
	for _, e := range v.extra {
		if rp.count(e) {
			if v.exists {
				rp.r.Stale++
			} else {
				rp.r.Dangling++
			}
		}
		damage++
	}
	for _, e := range suspect {
		if !hasMember(v.missing, e) && !hasMember(v.extra, e) {
			rp.r.InFlight++
		}
	}
	if damage > 0 && rp.fix && !rp.fixed[id] {
		rp.fixed[id] = true
		rp.r.Fixed++
	}
	return nil
}

// count says whether entry e is counted now (not yet counted as damage).
func (rp *repairer[T]) count(e ixEntry) bool {
	k := [2]string{e.Key, e.Member}
	if rp.counted[k] {
		return false
	}
	rp.counted[k] = true
	return true
}

// lookInOne is check's look where the record and its entries share a
// transaction; with fix, the fix is that transaction.
func (rp *repairer[T]) lookInOne(ctx context.Context, id int64, suspect []ixEntry) (verdict, error) {
	s, k := rp.s, rp.k
	key := k.key(s, id)
	var v verdict
	for range 20 {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			h, err := tx.HGetAll(ctx, key).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			var cmds []*redis.FloatCmd
			_, probe, judge := lookAt(s, k, id, h, suspect, func(i int) (float64, bool) {
				got, err := cmds[i].Result()
				return got, err == nil
			})
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, e := range probe {
					cmds = append(cmds, p.ZScore(ctx, e.Key, e.Member))
				}
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			v = judge()
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				// Always something, so the EXEC tells whether a write came
				// in between (the WATCH aborts it).
				p.Exists(ctx, key)
				if rp.fix {
					for _, e := range v.extra {
						p.ZRem(ctx, e.Key, e.Member)
					}
					for _, e := range v.missing {
						p.ZAdd(ctx, e.Key, redis.Z{Score: e.Score, Member: e.Member})
					}
				}
				return nil
			})
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return v, err
		}
	}
	return v, errors.New("the record kept changing while its index entries were checked")
}

// lookSharded is check's look on a Cluster, where the entries are written
// after the record's transaction; with fix, what is wrong is settled as the
// reconciler settles (fenced first, so no writer in flight commits behind
// it).
func (rp *repairer[T]) lookSharded(ctx context.Context, id int64, suspect []ixEntry) (verdict, error) {
	s, k := rp.s, rp.k
	key := k.key(s, id)
	deadline := time.Now().Add(settleWait)
	var v verdict
	for {
		patient := !rp.impatient && time.Now().Before(deadline)
		if !patient {
			rp.impatient = true
		}
		pending, err := s.intentsName(ctx, k.name, id)
		if err != nil {
			return v, err
		}
		if pending && patient {
			if err := pause(ctx, 10*time.Millisecond); err != nil {
				return v, err
			}
			continue
		}
		h, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return v, err
		}
		var cmds []*redis.FloatCmd
		_, probe, judge := lookAt(s, k, id, h, suspect, func(i int) (float64, bool) {
			got, err := cmds[i].Result()
			return got, err == nil
		})
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, e := range probe {
				cmds = append(cmds, p.ZScore(ctx, e.Key, e.Member))
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return v, err
		}
		// A write whose intent came after the first look, or whose
		// transaction came during it, makes the look worthless: again.
		after, err := s.rdb.HGet(ctx, key, k.versionField).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return v, err
		}
		again, err := s.intentsName(ctx, k.name, id)
		if err != nil {
			return v, err
		}
		if (after != h[k.versionField] || again) && patient {
			continue
		}
		v = judge()
		if rp.fix && len(v.missing)+len(v.extra) > 0 {
			if err := s.fence(ctx, key); err != nil {
				return v, err
			}
			touched, err := settleAll(ctx, s, k, id, v.extra)
			if err != nil {
				// Entries it may have written (of a state a write replaced
				// meanwhile) that no intent names: named now.
				_ = s.intentAgain(ctx, k.name, id, touched)
				return v, err
			}
		}
		return v, nil
	}
}

// intentsName reports whether an intent pending in Redis names record id
// of the kind called name.
func (s *Store) intentsName(ctx context.Context, name string, id int64) (bool, error) {
	match := globEscape(name+":"+strconv.FormatInt(id, 10)+":") + "*"
	var cursor uint64
	for {
		fields, next, err := s.rdb.HScan(ctx, s.intentsKey(), cursor, match, 1000).Result()
		if err != nil {
			return false, err
		}
		if len(fields) > 0 {
			return true, nil
		}
		if next == 0 {
			return false, nil
		}
		cursor = next
	}
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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
// by status too; 6 adds the customers by their last order and counts the
// time down in a customer's orders index; 7 writes search terms as runs of
// words ("berners lee", the parts of an email, "kbd 60"). Repair moves the
// entries from an earlier layout's sets into this one's (an entry in a set
// its order does not belong in is stale, as is a term written the old way)
// and builds the customers by their last order.
const Layout = "7"

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
		s.forgot.sawLayout.Store(true)
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
		for _, st := range store.Statuses {
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
	if err := s.rdb.Set(ctx, s.layoutKey(), Layout, 0).Err(); err != nil {
		return n > 0, r, wrap(err)
	}
	s.forgot.sawLayout.Store(true)
	return n > 0, r, nil
}
