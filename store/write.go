package store

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file is the one write path of every resource: a record (one hash)
// and its index entries (members of sorted sets) change through write and
// nothing else (the bulk Seed aside, docs/data.md).
//
// On a single Redis (and the embedded one) the record and its index entries
// change in one MULTI under a WATCH of the record. On a Cluster the indexes
// live in other slots, so they cannot share the record's transaction; there
// the write first records an intent (the index entries the record had and
// will have) in the intents hash, then runs the record's transaction, then
// settles the indexes from the record itself and deletes the intent. An
// intent left behind (a crash, a timeout, a lost race) is settled by
// Reconcile within a few seconds: every index change is recoverable.

// ixEntry is one index entry: a member of a sorted set.
type ixEntry struct {
	Key    string
	Member string
	Score  float64
}

// kind describes how one resource is stored: its record key, how a record
// hash is read and written, and the index entries a record belongs in.
// Everything generic in this file works from it.
type kind[T any] struct {
	// name is the record keys' prefix ("o" for orders: o:{42}).
	name string
	// versionField is the hash field holding the version.
	versionField string
	// decode reads a record hash; ok is false when it is empty or damaged.
	decode func(id int64, h map[string]string) (*T, bool)
	// encode returns the record as HSET field-value arguments.
	encode func(r *T) []any
	// version returns a record's version.
	version func(r *T) int64
	// entries lists the index entries a record belongs in.
	entries func(s *Store, r *T) []ixEntry
	// indexes lists every index key the kind may write, with a function
	// that reads the record id back from a member (for Repair).
	indexes func(s *Store) []indexKey
	// indexPattern, when set, matches more index keys (named after what
	// they hold) that Repair finds with SCAN; their members end in the id
	// as memberID reads it.
	indexPattern func(s *Store) string
	// slot, when set, puts every key of the kind in one Cluster slot: its
	// records are name:{slot}:id, and its indexes and claims must carry the
	// same hash tag. A write is then one transaction on a Cluster too (no
	// intents), which claims need. For a collection that stays small (a
	// catalogue), not for one that must spread over the nodes.
	slot string
	// claims lists the keys a record holds alone (a unique SKU): a write
	// that would take a key another record holds fails with the error
	// claimTaken makes, and nothing is written. Only with slot (or on a
	// single Redis).
	claims func(s *Store, r *T) []string
	// claimTaken is the error for r wanting key, which record owner holds.
	claimTaken func(r *T, key string, owner int64) error
}

// key is the record key of id.
func (k *kind[T]) key(s *Store, id int64) string {
	if k.slot != "" {
		return s.prefix + k.name + ":{" + k.slot + "}:" + strconv.FormatInt(id, 10)
	}
	return s.recordKey(k.name, id)
}

// keyPattern matches every record key of the kind (for Repair's SCAN), and
// idOf reads the id back from one.
func (k *kind[T]) keyPattern(s *Store) (pattern string, idOf func(key string) (int64, bool)) {
	if k.slot != "" {
		prefix := s.prefix + k.name + ":{" + k.slot + "}:"
		return globEscape(prefix) + "*", func(key string) (int64, bool) { return ParseID(strings.TrimPrefix(key, prefix)) }
	}
	prefix := s.prefix + k.name + ":{"
	return globEscape(prefix) + "*", func(key string) (int64, bool) {
		return ParseID(strings.TrimSuffix(strings.TrimPrefix(key, prefix), "}"))
	}
}

// sharded says the kind's indexes live in other slots than its records:
// on a Cluster, unless the kind keeps to one slot.
func (k *kind[T]) sharded(s *Store) bool { return s.cluster && k.slot == "" }

// claimsOf is r's claims (none for no record).
func claimsOf[T any](s *Store, k *kind[T], r *T) []string {
	if r == nil || k.claims == nil {
		return nil
	}
	return k.claims(s, r)
}

// indexKey is one sorted set of a kind and how its members name records.
type indexKey struct {
	Key string
	ID  func(member string) (int64, bool)
}

// Change is what one write did. Before is nil for a create, After nil for a
// delete; both are the same record when the write changed nothing.
type Change[T any] struct {
	Before, After *T
}

func (s *Store) recordKey(name string, id int64) string {
	return s.prefix + name + ":{" + strconv.FormatInt(id, 10) + "}"
}

// intentsKey is the hash of pending index changes on a Cluster: field
// "<kind>:<id>:<token>", value an encoded intent.
func (s *Store) intentsKey() string { return s.prefix + "ix:intents" }

// intent is the index entries a record had and will have, recorded before
// its transaction; the score is not needed to remove an entry.
type intent struct {
	At    int64       `json:"t"` // Unix milliseconds
	Stale [][2]string `json:"e"` // key, member
}

func entriesOrNil[T any](s *Store, k *kind[T], r *T) []ixEntry {
	if r == nil {
		return nil
	}
	return k.entries(s, r)
}

// write is the one write path: it reads record id under WATCH, asks fn for
// the next state (nil deletes; returning cur itself means nothing changes
// and nothing is written), and stores it with its index entries, retrying
// when another writer got in between. An *Error from fn is returned as is.
func write[T any](ctx context.Context, s *Store, k *kind[T], id int64, fn func(cur *T) (*T, error)) (Change[T], error) {
	return writeRecord(ctx, s, k, id, fn)
}

func writeRecord[T any](ctx context.Context, s *Store, k *kind[T], id int64, fn func(cur *T) (*T, error)) (Change[T], error) {
	key := k.key(s, id)
	sharded := k.sharded(s)
	idText := strconv.FormatInt(id, 10)
	tomb := key + ":gone" // same hash tag, same slot
	decode := func(h map[string]string) *T {
		cur, ok := k.decode(id, h)
		if !ok {
			if len(h) > 0 {
				s.damaged(key, h)
			}
			return nil
		}
		return cur
	}
	for attempt := 0; attempt < maxRetries; attempt++ {
		var (
			ch            Change[T]
			before, after []ixEntry
			field         string
			planned       *T
			intentAt      time.Time
		)
		if attempt > 0 {
			// Another writer got in between: step aside a little, longer
			// each time, so a hot record's writers do not retry in lockstep.
			time.Sleep(time.Duration(1+rand.IntN(2*min(attempt, 10))) * time.Millisecond)
		}
		if sharded {
			// The intent is written before the WATCH, from a plain read:
			// writing it inside would need a second connection while the
			// WATCH holds one, and under load every connection of a node's
			// pool can be held by writers waiting for another.
			h, err := s.rdb.HGetAll(ctx, key).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return ch, wrap(err)
			}
			cur := decode(h)
			next, err := fn(cur)
			if err != nil {
				return ch, wrap(err)
			}
			if next == cur {
				return Change[T]{Before: cur, After: cur}, nil
			}
			planned = cur
			before, after = entriesOrNil(s, k, cur), entriesOrNil(s, k, next)
			field = k.name + ":" + idText + ":" + newToken()
			intentAt = time.Now()
			if err := s.recordIntent(ctx, field, before, after); err != nil {
				// It may have been written: the reconciler drops it harmlessly.
				return ch, wrap(err)
			}
		}
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var hc *redis.MapStringStringCmd
			var gone *redis.IntCmd
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				hc, gone = p.HGetAll(ctx, key), p.Exists(ctx, tomb)
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			h := hc.Val()
			cur := decode(h)
			if sharded {
				if !sameVersion(k, planned, cur) {
					return redis.TxFailedErr // changed since the intent was written: again
				}
				if time.Since(intentAt) > reconcileAge/2 {
					// The reconciler may take an intent over once it is
					// reconcileAge old, fencing the record only then: a
					// WATCH this late might come after its fence and its
					// settle. A fresh intent, then.
					return redis.TxFailedErr
				}
			}
			next, err := fn(cur)
			if err != nil {
				return err
			}
			ch = Change[T]{Before: cur, After: next}
			if next == cur {
				return nil
			}
			if cur == nil && next != nil && (len(h) > 0 || gone.Val() > 0) {
				// Ids are never reused: not over a damaged record, and not
				// for a record deleted within tombstoneTTL (a retried create,
				// a counter that went back).
				return errRecordExists
			}
			if !sharded {
				before, after = entriesOrNil(s, k, cur), entriesOrNil(s, k, next)
			}
			// Claims: the ones next takes, watched and checked free (a
			// writer that takes one first makes this EXEC fail, and the
			// retry sees it taken), and the ones cur gives up.
			have, want := claimsOf(s, k, cur), claimsOf(s, k, next)
			var take, give []string
			for _, c := range want {
				if !slices.Contains(have, c) {
					take = append(take, c)
				}
			}
			for _, c := range have {
				if !slices.Contains(want, c) {
					give = append(give, c)
				}
			}
			if len(take) > 0 {
				if err := tx.Watch(ctx, take...).Err(); err != nil {
					return err
				}
				owners, err := tx.MGet(ctx, take...).Result()
				if err != nil {
					return err
				}
				for i, o := range owners {
					if o, ok := o.(string); ok && o != idText {
						owner, _ := ParseID(o)
						return k.claimTaken(next, take[i], owner)
					}
				}
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, c := range take {
					p.Set(ctx, c, idText, 0)
				}
				for _, c := range give {
					p.Del(ctx, c)
				}
				// A whole new hash: fields the record no longer has (a
				// cleared email, dropped items, a damaged leftover) go.
				p.Del(ctx, key)
				if next != nil {
					p.HSet(ctx, key, k.encode(next)...)
				} else {
					p.Set(ctx, tomb, "1", tombstoneTTL)
				}
				if !sharded {
					moveEntries(ctx, p, before, after)
				}
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			if field != "" {
				// Nothing happened; the reconciler would find that too.
				s.rdb.HDel(ctx, s.intentsKey(), field)
			}
			continue
		}
		if err != nil {
			// The transaction may still have happened (a timeout after it
			// was sent): the intent stays, and the reconciler settles it.
			return ch, wrap(err)
		}
		if field != "" {
			stale := append(before, after...)
			if err := settle(ctx, s, k, id, stale); err == nil {
				s.rdb.HDel(ctx, s.intentsKey(), field)
			}
			// Else the write happened and the intent stays for the
			// reconciler: the write is still a success.
		}
		return ch, nil
	}
	return Change[T]{}, &Error{Code: EUNAVAILABLE, Message: "too many people are changing this record at once; try again in a moment",
		Err: errors.New("too many concurrent writers")}
}

// sameVersion reports whether a and b are the same state of a record: both
// missing, or both there at one version.
func sameVersion[T any](k *kind[T], a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return k.version(a) == k.version(b)
}

// tombstoneTTL is how long a deleted record's id is remembered (a
// "<key>:gone" key in the record's slot), so that no create brings it
// back: longer than an Idempotency-Key lives.
const tombstoneTTL = IdempotencyTTL + time.Hour

// errRecordExists is what a create under an id that is taken (by a record,
// a damaged hash, or a recent delete) gets from write. An *Error, so the
// write path passes it through as it is.
var errRecordExists error = &Error{Code: ECONFLICT, Message: "the id is taken"}

// moveEntries queues the index changes from before to after: entries only
// before has go, entries after has are added (an unchanged entry is left
// alone).
func moveEntries(ctx context.Context, p redis.Pipeliner, before, after []ixEntry) {
	for _, e := range before {
		// A member that stays with another score is moved by its ZADD.
		if !hasMember(after, e) {
			p.ZRem(ctx, e.Key, e.Member)
		}
	}
	for _, e := range after {
		if !hasEntry(before, e) {
			p.ZAdd(ctx, e.Key, redis.Z{Score: e.Score, Member: e.Member})
		}
	}
}

func hasEntry(es []ixEntry, e ixEntry) bool {
	for _, x := range es {
		if x.Key == e.Key && x.Member == e.Member && x.Score == e.Score {
			return true
		}
	}
	return false
}

func newToken() string {
	var b [6]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Store) recordIntent(ctx context.Context, field string, before, after []ixEntry) error {
	in := intent{At: time.Now().UnixMilli()}
	for _, es := range [][]ixEntry{before, after} {
		for _, e := range es {
			in.Stale = append(in.Stale, [2]string{e.Key, e.Member})
		}
	}
	b, _ := json.Marshal(in)
	return s.rdb.HSet(ctx, s.intentsKey(), field, b).Err()
}

// settle makes record id's index entries match the record as it is now:
// the entries it belongs in are added, and the stale ones (entries of
// states it had or was meant to have) that it does not belong in are
// removed. It reads the version again after and goes round while the
// record keeps changing, so whichever settle runs last leaves the indexes
// right: a write that lands after this one's check is settled by its own
// writer (or by the reconciler). It is idempotent.
func settle[T any](ctx context.Context, s *Store, k *kind[T], id int64, stale []ixEntry) error {
	key := k.key(s, id)
	for range 20 {
		h, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		// The raw version field, not the decoded one: a damaged record
		// (no entries wanted) still has a version to compare.
		version := h[k.versionField]
		var want []ixEntry
		if cur, ok := k.decode(id, h); ok {
			want = k.entries(s, cur)
		}
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, e := range stale {
				if !hasMember(want, e) {
					p.ZRem(ctx, e.Key, e.Member)
				}
			}
			// Added last first: a term entry comes before its dup entries
			// (appendTermEntries), and a term entry without them would count
			// its order twice in a search read between the two; a dup entry
			// without its term counts it once (pageScript). The removals
			// above go term first for the same reason.
			for i := len(want) - 1; i >= 0; i-- {
				e := want[i]
				p.ZAdd(ctx, e.Key, redis.Z{Score: e.Score, Member: e.Member})
			}
			return nil
		})
		if err != nil {
			return err
		}
		v, err := s.rdb.HGet(ctx, key, k.versionField).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if v == version {
			return nil
		}
		stale = append(stale, want...)
	}
	return errors.New("the record kept changing while its index entries were settled")
}

// hasMember reports whether es has e's key and member (whatever the score):
// such an entry is re-added with its right score, not removed.
func hasMember(es []ixEntry, e ixEntry) bool {
	for _, x := range es {
		if x.Key == e.Key && x.Member == e.Member {
			return true
		}
	}
	return false
}

// fence makes any transaction still on its way to record key fail: a
// no-op write (add and remove a field, in one MULTI) touches the key, and
// a WATCH on it then aborts the EXEC. A writer's intent exists only after
// its WATCH ran, so once the reconciler has fenced a record, the record
// can no longer change behind its back by that writer.
func (s *Store) fence(ctx context.Context, key string) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "_fence", "1")
		p.HDel(ctx, key, "_fence")
		return nil
	})
	return err
}

// settler settles one record of some kind; the reconciler finds it by the
// kind's name.
type settler interface {
	settleRecord(ctx context.Context, s *Store, id int64, stale []ixEntry) error
}

func (k *kind[T]) settleRecord(ctx context.Context, s *Store, id int64, stale []ixEntry) error {
	return settle(ctx, s, k, id, stale)
}

// kinds lists every stored resource by its key prefix.
var kinds = map[string]settler{}

// reconcileAge is how old an intent must be before the reconciler takes
// it over from its writer, which normally deletes it within milliseconds.
const reconcileAge = time.Second

// Reconcile settles the intents that writers left behind, every interval
// (a second when 0) until ctx ends. Only a Cluster leaves intents; every
// app instance may run it (settling is idempotent).
func (s *Store) Reconcile(ctx context.Context, interval time.Duration) {
	if !s.cluster {
		return
	}
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := s.reconcileOnce(rctx, reconcileAge); err != nil && ctx.Err() == nil {
				s.log.Warn("settling index intents", "err", err)
			}
			cancel()
		}
	}
}

// reconcileOnce settles every intent at least minAge old and returns how
// many it settled. The intents of one record are settled together (one
// fence, one settle), several records at once.
func (s *Store) reconcileOnce(ctx context.Context, minAge time.Duration) (int, error) {
	all, err := s.rdb.HGetAll(ctx, s.intentsKey()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	type record struct {
		name   string
		id     int64
		fields []string
		stale  []ixEntry
	}
	byRecord := map[string]*record{}
	now := time.Now().UnixMilli()
	for field, v := range all {
		var in intent
		name, rest, _ := strings.Cut(field, ":")
		idText, _, _ := strings.Cut(rest, ":")
		id, okID := ParseID(idText)
		_, okKind := kinds[name]
		if json.Unmarshal([]byte(v), &in) != nil || !okID || !okKind {
			s.log.Warn("dropping a damaged index intent", "field", field)
			s.rdb.HDel(ctx, s.intentsKey(), field)
			continue
		}
		if now-in.At < minAge.Milliseconds() {
			continue
		}
		key := s.recordKey(name, id)
		r := byRecord[key]
		if r == nil {
			r = &record{name: name, id: id}
			byRecord[key] = r
		}
		r.fields = append(r.fields, field)
		for _, e := range in.Stale {
			r.stale = append(r.stale, ixEntry{Key: e[0], Member: e[1]})
		}
	}
	work := make(chan *record)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		done     int
		firstErr error
	)
	for range min(8, len(byRecord)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				key := s.recordKey(r.name, r.id)
				err := s.fence(ctx, key)
				if err == nil {
					err = kinds[r.name].settleRecord(ctx, s, r.id, r.stale)
				}
				if err == nil {
					err = s.rdb.HDel(ctx, s.intentsKey(), r.fields...).Err()
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				} else if err == nil {
					done += len(r.fields)
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range byRecord {
		work <- r
	}
	close(work)
	wg.Wait()
	return done, firstErr
}

// damaged reports a record hash that cannot be read: it is skipped (as if
// missing), never a crash.
func (s *Store) damaged(key string, h map[string]string) {
	s.log.Error("skipping a damaged record", "key", key, "fields", len(h))
}
