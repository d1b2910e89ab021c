package redisstore

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// A test-only kind that keeps to one slot and claims a unique code, so the
// write path's claims are tested before any resource uses them.

// CodeRecord is a record with a code no other record may hold (case
// aside).
type CodeRecord struct {
	ID      int64
	Code    string
	Version int64
}

// CodeTakenError is what a write of a code another record holds answers.
type CodeTakenError struct {
	Code  string
	Owner int64
}

func (e *CodeTakenError) Error() string {
	return "code " + e.Code + " is held by record " + strconv.FormatInt(e.Owner, 10)
}

var codeKind = &kind[CodeRecord]{
	name:         "tc",
	slot:         "tc",
	versionField: "v",
	decode: func(id int64, h map[string]string) (*CodeRecord, bool) {
		v, err := strconv.ParseInt(h["v"], 10, 64)
		if err != nil || h["c"] == "" {
			return nil, false
		}
		return &CodeRecord{ID: id, Code: h["c"], Version: v}, true
	},
	encode: func(r *CodeRecord) []any { return []any{"c", r.Code, "v", r.Version} },
	meta:   func(r *CodeRecord) recordMeta { return recordMeta{ID: &r.ID, Version: &r.Version} },
	entries: func(s *Store, r *CodeRecord) []ixEntry {
		return []ixEntry{{Key: s.prefix + "tcx:{tc}:id", Member: strconv.FormatInt(r.ID, 10), Score: float64(r.ID)}}
	},
	indexes: func(s *Store) []indexKey {
		return []indexKey{{s.prefix + "tcx:{tc}:id", func(m string) (int64, bool) { return store.ParseID(m) }}}
	},
	claims: func(s *Store, r *CodeRecord) []string {
		return []string{s.prefix + "tcu:{tc}:" + strings.ToLower(r.Code)}
	},
	claimTaken: func(r *CodeRecord, key string, owner int64) error {
		return &CodeTakenError{Code: r.Code, Owner: owner}
	},
}

// PutCode creates record id with code, or gives it that code, or deletes
// it when code is empty.
func (s *Store) PutCode(ctx context.Context, id int64, code string) error {
	_, err := write(ctx, s, codeKind, id, func(cur *CodeRecord) (*CodeRecord, error) {
		if code == "" {
			if cur == nil {
				return nil, notFound(id)
			}
			return nil, nil
		}
		next := &CodeRecord{ID: id, Code: code, Version: 1}
		if cur != nil {
			if cur.Code == code {
				return cur, nil
			}
			next.Version = cur.Version + 1
		}
		return next, nil
	})
	return err
}

// CodeOwner returns the record that holds code by its claim (0 for none)
// and the code that record has (its hash), for checking the invariant.
func (s *Store) CodeOwner(ctx context.Context, code string) (owner int64, ownerCode string, err error) {
	v, err := s.rdb.Get(ctx, s.prefix+"tcu:{tc}:"+strings.ToLower(code)).Result()
	if err != nil {
		return 0, "", nil
	}
	owner, _ = store.ParseID(v)
	h, err := s.rdb.HGetAll(ctx, codeKind.key(s, owner)).Result()
	return owner, h["c"], err
}

// RepairCodes checks the test kind's records and indexes like Repair.
func (s *Store) RepairCodes(ctx context.Context) (RepairReport, error) {
	var r RepairReport
	err := repairKind(ctx, s, codeKind, true, &r)
	return r, err
}

// UncoveredIndexKeys returns the index keys the entries of o and p name
// that Repair would not walk: neither among their kind's indexes nor
// matching its indexPattern.
func (s *Store) UncoveredIndexKeys(o *store.Order, p *store.Product) []string {
	return append(uncovered(s, orders, o), uncovered(s, productKind, p)...)
}

func uncovered[T any](s *Store, k *kind[T], r *T) []string {
	known := map[string]bool{}
	for _, ix := range k.indexes(s) {
		known[ix.Key] = true
	}
	var out []string
	for _, e := range k.entries(s, r) {
		if known[e.Key] {
			continue
		}
		if k.indexPattern != nil {
			if ok, _ := path.Match(k.indexPattern(s), e.Key); ok {
				continue
			}
		}
		out = append(out, e.Key)
	}
	return out
}

// SeedProducts writes n products straight into the store, as Seed writes
// orders (hashes, claims and index entries in large pipelines, not the
// write path): a large catalogue for the cost tests in seconds. Their SKUs
// are "<word>-<number>", their names two words and the number; one in ten
// is inactive.
func (s *Store) SeedProducts(ctx context.Context, n int) error {
	words := []string{"mug", "tee", "cotton", "notebook", "pen", "bag", "cap", "sticker", "bottle", "cable",
		"lamp", "keyboard", "enamel", "steel", "canvas", "blue", "red", "green", "large", "small"}
	last, err := s.rdb.IncrBy(ctx, s.prefix+"seq:{p}", int64(n)).Result()
	if err != nil {
		return err
	}
	now := s.now().UTC().Truncate(time.Second)
	for start := last - int64(n) + 1; start <= last; start += 1000 {
		p := s.rdb.Pipeline()
		for id := start; id <= min(start+999, last); id++ {
			i := int(id)
			pr := &store.Product{ID: id, SKU: fmt.Sprintf("%s-%05d", words[i%len(words)], i), Currency: "USD",
				Name:      fmt.Sprintf("%s %s %d", words[(i/7)%len(words)], words[(i/3)%len(words)], i),
				UnitPrice: store.Money(100 + i%10000), Active: i%10 != 0, Version: 1,
				CreatedAt: now.Add(-time.Duration(last-id) * time.Minute)}
			pr.UpdatedAt = pr.CreatedAt
			p.HSet(ctx, productKind.key(s, id), encodeProduct(pr)...)
			p.Set(ctx, s.skuClaim(pr.SKU), id, 0)
			for _, e := range s.productEntries(pr) {
				p.ZAdd(ctx, e.Key, redis.Z{Score: e.Score, Member: e.Member})
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// SetSortLimits lowers the bounds of a dated sort (MaxSortedRange,
// MaxSortedWalk, and the chunks it reads: at most chunk entries a round
// trip and half that a command, a walk starting with 4) until the test ends, so that a few hundred
// orders take the paths a million do.
func SetSortLimits(t testing.TB, rangeMax, walkMax, chunk int64) {
	r, w, m, c, f := sortedRange, sortedWalk, sortCmd, sortChunk, walkFirst
	sortedRange, sortedWalk, sortCmd, sortChunk, walkFirst = rangeMax, walkMax, max(chunk/2, 1), chunk, 4
	t.Cleanup(func() { sortedRange, sortedWalk, sortCmd, sortChunk, walkFirst = r, w, m, c, f })
}

// ScriptSource is a list script's name and source.
type ScriptSource struct{ Name, Source string }

// ScriptNames maps the SHA-1 of each of the list scripts to its name and
// source, for naming them in SLOWLOG's entries.
func ScriptNames() map[string]ScriptSource {
	return map[string]ScriptSource{
		mergeScript.Hash(): {"mergeScript", mergeSource},
		pageScript.Hash():  {"pageScript", pageSource},
		unionScript.Hash(): {"unionScript", unionSource},
	}
}

// RegisteredKind is one kind of the registry as the shared store suite
// drives it: through its example records, without knowing its type.
type RegisteredKind interface {
	Name() string
	// Create stores example n and returns its id and version.
	Create(ctx context.Context, s *Store, n int) (id, version int64, err error)
	// Holds reports the stored record's version and whether it holds
	// example n's values.
	Holds(ctx context.Context, s *Store, id int64, n int) (version int64, holds bool, err error)
	// Change makes record id hold example n's values, checking ifMatch
	// and version (0: not named) as every change does.
	Change(ctx context.Context, s *Store, id int64, n int, ifMatch, version int64) (int64, error)
	Delete(ctx context.Context, s *Store, id, ifMatch, version int64) error
	// Restore brings back record id deleted within the undo window and
	// returns its version.
	Restore(ctx context.Context, s *Store, id int64) (int64, error)
	// Final reports whether its deletes are final (nothing kept to restore).
	Final() bool
	// Raw is record id's hash as stored, and its version field's name.
	Raw(ctx context.Context, s *Store, id int64) (map[string]string, string, error)
	// Key is record id's key.
	Key(s *Store, id int64) string
	// History is record id's newest change entries, newest first.
	History(ctx context.Context, s *Store, id int64) ([]store.HistoryEntry, error)
}

// RegisteredKinds are the kinds of the registry, in order; a kind without
// an example fails the test that asks.
func RegisteredKinds(t testing.TB) []RegisteredKind {
	t.Helper()
	var out []RegisteredKind
	for _, r := range registry {
		var rk RegisteredKind
		if k, ok := r.(interface{ suite() RegisteredKind }); ok {
			rk = k.suite()
		}
		if rk == nil {
			t.Fatalf("kind %q has no example: the shared store suite cannot write to it", r.kindName())
		}
		out = append(out, rk)
	}
	return out
}

func (k *kind[T]) suite() RegisteredKind {
	if k.example == nil {
		return nil
	}
	return suiteKind[T]{k}
}

// suiteKind drives one kind through its example records.
type suiteKind[T any] struct{ k *kind[T] }

func (s suiteKind[T]) Name() string { return s.k.name }

func (s suiteKind[T]) example(n int) (T, error) {
	r, errs := s.k.example(n)
	if errs != nil {
		return r, fmt.Errorf("the %s example %d is not valid: %v", s.k.noun, n, errs)
	}
	return r, nil
}

func (s suiteKind[T]) Create(ctx context.Context, st *Store, n int) (int64, int64, error) {
	r, err := s.example(n)
	if err != nil {
		return 0, 0, err
	}
	rec, err := createRecord(ctx, st, s.k, r)
	if err != nil {
		return 0, 0, err
	}
	m := s.k.meta(rec)
	return *m.ID, *m.Version, nil
}

func (s suiteKind[T]) Holds(ctx context.Context, st *Store, id int64, n int) (int64, bool, error) {
	rec, err := getRecord(ctx, st, st.rdb, s.k, id)
	if err != nil {
		return 0, false, err
	}
	want, err := s.example(n)
	if err != nil {
		return 0, false, err
	}
	*s.k.meta(&want).ID, *s.k.meta(&want).Version = id, s.k.version(rec)
	*s.k.meta(&want).CreatedAt, *s.k.meta(&want).UpdatedAt = *s.k.meta(rec).CreatedAt, *s.k.meta(rec).UpdatedAt
	return s.k.version(rec), s.k.same(rec, &want), nil
}

func (s suiteKind[T]) Change(ctx context.Context, st *Store, id int64, n int, ifMatch, version int64) (int64, error) {
	var v *int64
	if version != 0 {
		v = &version
	}
	rec, err := updateRecord(ctx, st, s.k, id, ifMatch, v, func(cur *T) (T, map[string]string) {
		next, errs := s.k.example(n)
		m, c := s.k.meta(&next), s.k.meta(cur)
		*m.ID, *m.Version, *m.CreatedAt, *m.UpdatedAt = *c.ID, *c.Version, *c.CreatedAt, *c.UpdatedAt
		return next, errs
	})
	if err != nil {
		return 0, err
	}
	return s.k.version(rec), nil
}

func (s suiteKind[T]) Delete(ctx context.Context, st *Store, id, ifMatch, version int64) error {
	return deleteRecord(ctx, st, s.k, id, ifMatch, version)
}

func (s suiteKind[T]) Restore(ctx context.Context, st *Store, id int64) (int64, error) {
	rec, err := restoreRecord(ctx, st, s.k, id, nil)
	if err != nil {
		return 0, err
	}
	return s.k.version(rec), nil
}

func (s suiteKind[T]) Final() bool { return s.k.final }

func (s suiteKind[T]) Raw(ctx context.Context, st *Store, id int64) (map[string]string, string, error) {
	h, err := st.rdb.HGetAll(ctx, s.k.key(st, id)).Result()
	return h, s.k.versionField, err
}

func (s suiteKind[T]) Key(st *Store, id int64) string { return s.k.key(st, id) }

func (s suiteKind[T]) History(ctx context.Context, st *Store, id int64) ([]store.HistoryEntry, error) {
	p, err := historyOf(ctx, st, s.k, id, "", 100)
	return p.Entries, err
}

// HoldLink takes a hold of order oid's link to customer cid, as a write
// that links them does before its transaction, and writes nothing more:
// what a writer that stopped there leaves.
func (s *Store) HoldLink(ctx context.Context, cid, oid int64) error {
	_, err := s.holdLink(ctx, cid, oid, nil)
	return err
}

// LinkUnderHold takes a hold of order oid's link to customer cid, runs
// between, then links them under that hold alone: what a writer stalled
// between its hold and its transaction does.
func (s *Store) LinkUnderHold(ctx context.Context, cid, oid int64, between func()) error {
	h, err := s.holdLink(ctx, cid, oid, nil)
	if err != nil {
		return err
	}
	between()
	ref := strconv.FormatInt(cid, 10)
	_, err = updateRecord(guarded(ctx, h.guard(s)), s, orders, oid, 0, nil, func(cur *store.Order) (store.Order, map[string]string) {
		return store.ApplyOrder(cur, store.OrderInput{CustomerID: &ref})
	})
	return err
}
