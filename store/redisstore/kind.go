package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"orders/store"

	"github.com/redis/go-redis/v9"
)

// ixEntry is one index entry: a member of a sorted set.
type ixEntry struct {
	Key    string
	Member string
	Score  float64
}

// kind describes how one resource is stored: its record key, how a record
// hash is read and written, the index entries a record belongs in, and
// what its history and its events say. Everything generic (the write
// path, get, create, update and delete, history, events, repair, seeding)
// works from it. A resource's file declares one kind and registers it.
type kind[T any] struct {
	// name is the record keys' prefix ("o" for orders: o:{42}); it also
	// names the kind's event feed (Store.Feed) and its intents.
	name string
	// noun is the resource as its messages say it: "order".
	noun string
	// counter is the kind's id counter, numbered by register; seq is its
	// key (after the store's prefix).
	counter int
	seq     string
	// newest, when set, is the highest id the kind's indexes name: an id
	// counter that Redis forgot is raised past it (forgetting.go).
	newest func(s *Store, ctx context.Context) (int64, error)
	// versionField is the hash field holding the version.
	versionField string
	// decode reads a record hash; ok is false when it is empty or damaged.
	decode func(id int64, h map[string]string) (*T, bool)
	// encode returns the record as HSET field-value arguments.
	encode func(r *T) []any
	// meta points at a record's id, version and times.
	meta func(r *T) recordMeta
	// same reports whether two records store the same values (the
	// version and times aside): a change to the same values writes
	// nothing.
	same func(a, b *T) bool
	// fields are the record's values as its history names them, in order
	// (history.go): each is compared before and after a change.
	fields []recordField[T]
	// rows, when set, are the record's item rows, paired before and after
	// a change for its history (diffItems).
	rows func(r *T) []store.Item
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
	// event is a record's event data for live updates (events.go): its
	// id, version and what a list shows of its state.
	event func(r *T) []byte
	// deleteConflict is the message of a delete refused because the
	// version it names is not the stored one ("": the change's message).
	deleteConflict string
	// seed, when set, writes the kind's demo records into an empty store
	// (Seed runs it before the demo orders).
	seed func(s *Store, ctx context.Context) error
	// changed, when set, runs after each write that changed a record (its
	// transaction, and on a Cluster its index entries, done): for what
	// is derived from the record in another kind's slot.
	changed func(s *Store, ctx context.Context, ch Change[T])
	// beside, when set, queues in a write's transaction what is derived
	// from the change and kept in the record's slot, so that it changes
	// with the record or not at all. Only for a kind whose writes are one
	// transaction (kept to one slot, or on a single Redis).
	beside func(s *Store, ctx context.Context, p redis.Pipeliner, cur, next *T)
	// marks, when set, queues the marks of what is derived from index
	// entries in another kind's slot and must be set again now that they
	// changed (entries: those a write added or removed, or those an
	// intent names). A mark is written in the same step as the entries:
	// in the record's transaction where its indexes share it, otherwise
	// after the settle that wrote them and before the intent that names
	// them is deleted. Whoever sets the derived state again removes the
	// mark (last_order.go), so a crash at any point leaves either an
	// intent or a mark, and the reconciler finishes the work.
	marks func(s *Store, ctx context.Context, p redis.Pipeliner, entries []ixEntry)
	// derived, when set, checks (and with fix sets right) what changed
	// keeps: Repair runs it after every kind's own indexes are repaired.
	derived func(s *Store, ctx context.Context, fix bool, r *RepairReport) error
	// final, when set, makes deletes final: nothing is kept for a restore
	// (accounts, whose sessions and tokens end with them).
	final bool
	// example is a valid record as a create of it stores it, another for
	// each n (its unique values differ with n), and the validation's
	// messages if it is not valid: the shared store tests write it to
	// every kind of the registry.
	example func(n int) (T, map[string]string)
}

// recordMeta points at the fields every record has.
type recordMeta struct {
	ID, Version          *int64
	CreatedAt, UpdatedAt *time.Time
}

// recordField is one value of a record as its history names it: value
// returns something comparable with == (a string, a bool).
// A value of type secret (a password hash) is compared but never written:
// the history says only that it was set or changed.
type recordField[T any] struct {
	name  string
	value func(r *T) any
}

// secret is a recordField value the history never shows.
type secret string

// version returns a record's version.
func (k *kind[T]) version(r *T) int64 { return *k.meta(r).Version }

// notFound is the error for a record id that is not stored.
func (k *kind[T]) notFound(id int64) *store.Error {
	return store.Errorf(store.ENOTFOUND, "%s %d not found", k.noun, id)
}

// invalid is the error for values that fail validation (cur: the stored
// record, nil on a create).
func (k *kind[T]) invalid(errs map[string]string, cur *T) *store.Error {
	e := &store.Error{Code: store.EINVALID, Message: fmt.Sprintf("the %s has invalid values", k.noun), Fields: errs}
	if cur != nil {
		e.Current = cur // never a typed nil in the interface
	}
	return e
}

// registered is what the code that serves every kind at once needs of
// one: the reconciler, the event feeds, Repair and Seed.
type registered interface {
	kindName() string
	// settleRecord settles record id's index entries and adds its event.
	settleRecord(ctx context.Context, s *Store, id int64, stale []ixEntry) error
	// eventsKey is the kind's event stream.
	eventsKey(s *Store) string
	// repair checks (and with fix settles) every record and index entry.
	repair(ctx context.Context, s *Store, fix bool, r *RepairReport) error
	// repairDerived checks (and with fix settles) what is derived from
	// other kinds' records, once every kind's own indexes are repaired.
	repairDerived(ctx context.Context, s *Store, fix bool, r *RepairReport) error
	// seedDemo writes the kind's demo records, if it has any.
	seedDemo(ctx context.Context, s *Store) error
	// nounOf is the kind's noun; counterKey its id counter's key;
	// newestID the highest id its indexes name (0: not known).
	nounOf() string
	counterKey(s *Store) string
	newestID(ctx context.Context, s *Store) (int64, error)
}

// registry lists every stored kind in the order it was registered;
// kinds finds one by its name.
var (
	registry []registered
	kinds    = map[string]registered{}
)

// register adds k to the registry; each resource's file calls it once.
func register[T any](k *kind[T]) *kind[T] {
	if _, dup := kinds[k.name]; dup {
		panic("store: two kinds named " + k.name)
	}
	if len(registry) == maxKinds {
		panic("store: more kinds than maxKinds")
	}
	k.counter = len(registry)
	registry = append(registry, k)
	kinds[k.name] = k
	return k
}

func (k *kind[T]) kindName() string { return k.name }

func (k *kind[T]) nounOf() string { return k.noun }

func (k *kind[T]) counterKey(s *Store) string { return s.prefix + k.seq }

func (k *kind[T]) newestID(ctx context.Context, s *Store) (int64, error) {
	if k.newest == nil {
		return 0, nil
	}
	return k.newest(s, ctx)
}

func (k *kind[T]) repair(ctx context.Context, s *Store, fix bool, r *RepairReport) error {
	return repairKind(ctx, s, k, fix, r)
}

func (k *kind[T]) repairDerived(ctx context.Context, s *Store, fix bool, r *RepairReport) error {
	if k.derived == nil {
		return nil
	}
	return k.derived(s, ctx, fix, r)
}

func (k *kind[T]) seedDemo(ctx context.Context, s *Store) error {
	if k.seed == nil {
		return nil
	}
	return k.seed(s, ctx)
}

// settleRecord settles the record's index entries, marks what is derived
// from them, then adds the event of the record as it is (its writer may
// not have added its own).
func (k *kind[T]) settleRecord(ctx context.Context, s *Store, id int64, stale []ixEntry) error {
	if err := settle(ctx, s, k, id, stale); err != nil {
		return err
	}
	// What the intents name may have changed, or not: marked either way
	// (a mark costs one needless placement at worst).
	if err := markDerived(ctx, s, k, stale); err != nil {
		return err
	}
	return k.publishCurrent(ctx, s, id)
}

// Get, create, update and delete, once for every kind: a resource's file
// supplies its type, its validation and its kind, and calls these.

// getRecord reads record id of kind k: one HGETALL. A damaged hash is
// reported and not found.
func getRecord[T any](ctx context.Context, s *Store, c redis.Cmdable, k *kind[T], id int64) (*T, error) {
	key := k.key(s, id)
	h, err := c.HGetAll(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	r, ok := k.decode(id, h)
	if !ok {
		if len(h) > 0 {
			s.damaged(key, h)
		}
		return nil, k.notFound(id)
	}
	s.sawID(k.counter, id)
	return r, nil
}

// createRecord stores r as a new record of kind k with a fresh id. The
// write reads the id under WATCH even though it is fresh: after a failover
// that lost an unreplicated INCR, the counter can hand out an id a record
// has. Such an id is skipped, never overwritten.
func createRecord[T any](ctx context.Context, s *Store, k *kind[T], r T) (*T, error) {
	if err := claimsFree(ctx, s, k, &r); err != nil {
		return nil, err
	}
	for range 100 {
		id, err := s.nextID(ctx, k.counter)
		if err != nil {
			return nil, wrap(err)
		}
		created, err := createRecordAs(ctx, s, k, id, r)
		if err != errRecordExists {
			return created, err
		}
		s.log.Warn("the id counter handed out a used id; skipping it", "kind", k.noun, "id", id)
	}
	return nil, &store.Error{Code: store.EINTERNAL, Message: fmt.Sprintf("the %s id counter keeps handing out used ids; run orders -repair", k.noun), Err: errRecordExists}
}

// claimsFree refuses a create whose claims another record holds before an
// id is drawn, so a refused create changes nothing. The write checks the
// claims again under WATCH: of creates racing for one value, only one can
// win there.
func claimsFree[T any](ctx context.Context, s *Store, k *kind[T], r *T) error {
	for _, c := range claimsOf(s, k, r) {
		owner, err := s.rdb.Get(ctx, c).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return wrap(err)
		}
		if id, ok := store.ParseID(owner); ok {
			return k.claimTaken(r, c, id)
		}
	}
	return nil
}

// createRecordAs stores r as the new record id at version 1, or answers
// errRecordExists when the id is taken.
func createRecordAs[T any](ctx context.Context, s *Store, k *kind[T], id int64, r T) (*T, error) {
	now := s.now().UTC().Truncate(time.Second)
	m := k.meta(&r)
	*m.ID, *m.Version, *m.CreatedAt, *m.UpdatedAt = id, 1, now, now
	ch, err := write(ctx, s, k, id, func(cur *T) (*T, error) {
		if cur != nil {
			return nil, errRecordExists
		}
		return &r, nil // write refuses it too over a damaged hash or a tombstone
	})
	if err != nil {
		return nil, err
	}
	return ch.After, nil
}

// updateRecord applies a change to record id. ifMatch, when not 0, is the
// version an If-Match header requires (EPRECONDITION otherwise); version,
// when set, is the one a form or JSON body carries (ECONFLICT otherwise).
// apply validates the change against the stored record. A change that
// changes nothing writes nothing and keeps the version.
func updateRecord[T any](ctx context.Context, s *Store, k *kind[T], id, ifMatch int64, version *int64,
	apply func(cur *T) (T, map[string]string)) (*T, error) {
	var seen *T // the record as the last attempt read it
	ch, err := write(ctx, s, k, id, func(cur *T) (*T, error) {
		seen = cur
		if err := checkVersions(k, cur, id, ifMatch, version, false); err != nil {
			return nil, err
		}
		next, errs := apply(cur)
		if errs != nil {
			return nil, k.invalid(errs, cur)
		}
		if k.same(cur, &next) {
			return cur, nil
		}
		m := k.meta(&next)
		*m.Version = k.version(cur) + 1
		*m.UpdatedAt = s.now().UTC().Truncate(time.Second)
		return &next, nil
	})
	if se, ok := err.(*store.Error); ok && se.Code == store.EINVALID && se.Current == nil && seen != nil {
		// A claim another record holds (claimTaken, checked after apply):
		// the error carries the stored record like every other invalid
		// change, so the form shown again is this record's Edit form (or
		// its row), never the New form.
		se.Current = seen
	}
	if err != nil {
		return nil, err
	}
	return ch.After, nil
}

// deleteRecord removes record id, its index entries and its claims.
// ifMatch and version (0: not named) are checked as updateRecord checks
// them.
func deleteRecord[T any](ctx context.Context, s *Store, k *kind[T], id, ifMatch, version int64) error {
	var v *int64
	if version != 0 {
		v = &version
	}
	_, err := write(ctx, s, k, id, func(cur *T) (*T, error) {
		return nil, checkVersions(k, cur, id, ifMatch, v, true)
	})
	return err
}

// restoreRecord brings back record id of kind k, deleted within the undo
// window, through the one write path: its values as the delete kept them
// (undoKey, in its slot), its id, claims and index entries, at the next
// version, with a "restored" history entry and event. The kept values go
// in the same transaction, so a record is restored once. Refused: a
// record that is stored (ECONFLICT), a delete older than the window
// (EGONE: its tombstone is there, the kept values are not), an id never
// used (ENOTFOUND), a claim another record took meanwhile (claimTaken's
// EINVALID); nothing is written then.
//
// check, when set, refuses a kept record the caller cannot restore as it
// prepared for (an order's customer link, held before the write); a write
// guard already in ctx for the record (that link's hold) holds too.
func restoreRecord[T any](ctx context.Context, s *Store, k *kind[T], id int64, check func(r *T) error) (*T, error) {
	key := k.key(s, id)
	undo := undoKey(key)
	var kept *redis.MapStringStringCmd // read under the write's WATCH
	var gone *redis.IntCmd
	g := guard{key: key, watch: []string{undo}, revive: true,
		reads: func(ctx context.Context, p redis.Pipeliner) func(map[string]string) error {
			kept, gone = p.HGetAll(ctx, undo), p.Exists(ctx, key+":gone")
			return nil
		},
		also: func(ctx context.Context, p redis.Pipeliner) { p.Del(ctx, undo) },
	}
	if outer, ok := ctx.Value(guardKey{}).(guard); ok && outer.key == key {
		g = g.and(outer)
	}
	ch, err := write(guarded(ctx, g), s, k, id, func(cur *T) (*T, error) {
		if cur != nil {
			return nil, store.Errorf(store.ECONFLICT, "%s %d is not deleted: there is nothing to restore", k.noun, id)
		}
		var h map[string]string
		wasGone := false
		if kept != nil {
			h, wasGone = kept.Val(), gone.Val() > 0
			kept, gone = nil, nil
		} else {
			// A Cluster write plans before its WATCH (plan): a plain read,
			// checked again under the WATCH.
			var err error
			if h, err = s.rdb.HGetAll(ctx, undo).Result(); err != nil && !errors.Is(err, redis.Nil) {
				return nil, err
			}
			n, err := s.rdb.Exists(ctx, key+":gone").Result()
			if err != nil {
				return nil, err
			}
			wasGone = n > 0
		}
		r, ok := k.decode(id, h)
		switch {
		case ok && !k.final:
			if check != nil {
				if err := check(r); err != nil {
					return nil, err
				}
			}
			m := k.meta(r)
			*m.Version++
			*m.UpdatedAt = s.now().UTC().Truncate(time.Second)
			return r, nil
		case wasGone && !k.final:
			return nil, store.Errorf(store.EGONE, "%s %d was deleted more than %s ago: it can no longer be restored", k.noun, id, undoWindowWords(s.undoWindow))
		case wasGone:
			return nil, store.Errorf(store.EGONE, "a deleted %s cannot be restored", k.noun)
		}
		return nil, k.notFound(id)
	})
	if err != nil {
		return nil, err
	}
	return ch.After, nil
}

// undoKey is where a deleted record's values are kept for a restore, in
// its slot (the record key's hash tag).
func undoKey(recordKey string) string { return recordKey + ":undo" }

// undoWindowWords says a window as a person reads it: "10 minutes".
func undoWindowWords(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		if d == time.Minute {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}

// checkVersions is the not-found, If-Match and body-version check of a
// change (or, deleting, of a delete).
func checkVersions[T any](k *kind[T], cur *T, id, ifMatch int64, version *int64, deleting bool) error {
	if cur == nil {
		return k.notFound(id)
	}
	v := k.version(cur)
	switch {
	case ifMatch != 0 && v != ifMatch:
		return &store.Error{Code: store.EPRECONDITION, Message: fmt.Sprintf("the %s has changed since the version you named", k.noun), Current: cur}
	case version != nil && *version != v:
		msg := fmt.Sprintf("someone else changed this %s; review the current values", k.noun)
		if deleting && k.deleteConflict != "" {
			msg = k.deleteConflict
		}
		return &store.Error{Code: store.ECONFLICT, Message: msg, Current: cur}
	}
	return nil
}
