package redisstore

import (
	"context"
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
