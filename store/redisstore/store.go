// Package redisstore keeps the store's records in Redis (one server, a
// Cluster, or the embedded miniredis of store/embedded): it implements
// store.Service. Each resource's storage (its kind: hash fields, index
// entries, claims, seed) and its List are in the resource's own file
// (order.go, product.go, customer.go); the write path, history, events,
// repair, seeding and the limits are written once for every kind.
package redisstore

import (
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Store keeps orders in Redis. Each order is one hash ("o:{42}") holding
// its fields and its items, one field per item, so an order is one key and
// changes atomically on its own (and its hash tag {42} pins it to one
// Cluster slot). Sorted sets index the collection: by id (newest first), by
// status, and by lower-cased customer name (for prefix search), each also
// per status. docs/data.md describes every key and field.
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	cluster bool
	now     func() time.Time
	health  func() error
	log     *slog.Logger
	ready   readyCache
	// undoWindow is how long a deleted record's values are kept for a
	// restore.
	undoWindow time.Duration
	keys       indexNames
	// seen is when this instance's reconciler first saw each pending
	// intent: its age by this clock, whatever the writer's clock says.
	seen intentsSeen
	// forgot holds what this instance saw that Redis must not forget
	// (forgetting.go).
	forgot forgetting
	// feeds follow the event streams, one per stream (events.go).
	feedsMu sync.Mutex
	feeds   map[string]*Feed
}

// indexNames are the index keys with the prefix, made once (a write or a
// seeded order names a dozen of them).
type indexNames struct {
	id, up, tot, name map[store.Status]string
	// term and dup: by status (its place in Statuses), then a term's first
	// byte (and depth).
	term [5][utf8.RuneSelf]string
	dup  [5][utf8.RuneSelf][dupDepth + 1]string
}

func (s *Store) makeIndexNames() {
	k := &s.keys
	k.id, k.up, k.tot, k.name = map[store.Status]string{}, map[store.Status]string{}, map[store.Status]string{}, map[store.Status]string{}
	k.name[""] = s.prefix + "ix:name"
	for _, st := range store.Statuses {
		k.id[st] = s.prefix + "ix:{id}:" + string(st)
		k.up[st] = s.prefix + "ix:{up}:" + string(st)
		k.tot[st] = s.prefix + "ix:{tot}:" + string(st)
		k.name[st] = s.prefix + "ix:name:" + string(st)
	}
	for i, st := range store.Statuses {
		for c := range utf8.RuneSelf {
			k.term[i][c] = s.prefix + "ix:{w}:" + string(st) + ":" + string(rune(c))
			for d := 1; d <= dupDepth; d++ {
				k.dup[i][c][d] = k.term[i][c] + ":" + strconv.Itoa(d)
			}
		}
	}
}

// Options configures a Store.
type Options struct {
	// Prefix is put before every key, so tests and apps can share a Redis.
	Prefix string
	// Cluster says the indexes live in other slots than the orders: they are
	// then written outside the order's transaction (see docs/data.md).
	Cluster bool
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// Health, when set, is asked by Ready besides Redis itself (the
	// embedded store reports failing snapshots through it).
	Health func() error
	// UndoWindow is how long a deleted record can be restored;
	// store.UndoWindow when 0 (tests shorten it).
	UndoWindow time.Duration
	// Logger receives reports of damaged records and repairs;
	// slog.Default() when nil.
	Logger *slog.Logger
}

var _ store.Service = (*Store)(nil)

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opt Options) *Store {
	s := &Store{rdb: rdb, prefix: opt.Prefix, cluster: opt.Cluster, now: opt.Now, health: opt.Health, log: opt.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.undoWindow = opt.UndoWindow; s.undoWindow <= 0 {
		s.undoWindow = store.UndoWindow
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.makeIndexNames()
	return s
}
