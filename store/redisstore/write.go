package redisstore

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// This file is the one write path of every resource, with the get,
// create, update and delete every kind shares: a record (one hash) and its
// index entries (members of sorted sets) change through write and nothing
// else (the bulk Seed aside, docs/data.md).
//
// On a single Redis (and the embedded one) the record and its index entries
// change in one MULTI under a WATCH of the record. On a Cluster the indexes
// live in other slots, so they cannot share the record's transaction; there
// the write first records an intent (the index entries the record had and
// will have) in the intents hash, then runs the record's transaction, then
// settles the indexes from the record itself and deletes the intent. An
// intent left behind (a crash, a timeout, a lost race) is settled by
// Reconcile within a few seconds: every index change is recoverable.
//
// Three rules make that hold whatever the timing (a stalled writer,
// orders -repair taking over fresh intents, clocks that disagree):
//   - a settle touches only the entries its intents name, so an intent left
//     behind names everything its writer's settle may have written;
//   - the reconciler may take an intent over before its writer's
//     transaction ran: it fences the record and marks the intent's token
//     taken, and a writer whose token is taken never commits under it (see
//     fence);
//   - a settle that fails records its intents again (intentAgain): a
//     writer and the reconciler that took its intent over may settle side
//     by side, and the first to succeed deletes the intent.
// An intent's age is measured by the reconciler's own clock, never by the
// writer's.

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
		return globEscape(prefix) + "*", func(key string) (int64, bool) { return store.ParseID(strings.TrimPrefix(key, prefix)) }
	}
	prefix := s.prefix + k.name + ":{"
	return globEscape(prefix) + "*", func(key string) (int64, bool) {
		return store.ParseID(strings.TrimSuffix(strings.TrimPrefix(key, prefix), "}"))
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

// takenKey is the key that says the reconciler took over the intent with
// token of the record at key: same hash tag, same slot as the record, so a
// writer reads it beside the record under its WATCH.
func takenKey(key, token string) string { return key + ":taken:" + token }

// takenTTL is how long a taken mark lives: far longer than a writer may
// take from its intent to its WATCH (it gives the intent up past
// watchWithin by its own clock).
const takenTTL = time.Minute

// watchWithin is how long after recording its intent a writer may still
// WATCH the record under it, by its own clock; later, it starts over.
const watchWithin = 500 * time.Millisecond

// intent is the index entries a record had and will have, recorded before
// its transaction; the score is not needed to remove an entry.
type intent struct {
	At    int64       `json:"t"` // Unix milliseconds, by the writer's clock: for people reading the hash, not for the reconciler
	Stale [][2]string `json:"e"` // key, member
}

func entriesOrNil[T any](s *Store, k *kind[T], r *T) []ixEntry {
	if r == nil {
		return nil
	}
	return k.entries(s, r)
}

// version returns a record's version.
func (k *kind[T]) version(r *T) int64 { return *k.meta(r).Version }

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
		if !ok {
			// The record and its kept values were read one after the
			// other: a restore racing this one may have taken the values
			// and written the record in between (one transaction), so
			// the record is there now.
			if n, err := s.rdb.Exists(ctx, key).Result(); err != nil {
				return nil, err
			} else if n > 0 {
				return nil, store.Errorf(store.ECONFLICT, "%s %d is not deleted: there is nothing to restore", k.noun, id)
			}
		}
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

// write is the one write path: it reads record id under WATCH, asks fn for
// the next state (nil deletes; returning cur itself means nothing changes
// and nothing is written), and stores it with its index entries, retrying
// when another writer got in between. An *Error from fn is returned as is.
//
// Each attempt is a writeAttempt: on a Cluster it first plans and records
// its intent (plan), then runs the record's transaction (commit: read,
// check, claims, queue), then settles the indexes and adds the event
// (finish).
func write[T any](ctx context.Context, s *Store, k *kind[T], id int64, fn func(cur *T) (*T, error)) (Change[T], error) {
	w := &writer[T]{s: s, k: k, id: id, fn: fn, key: k.key(s, id), sharded: k.sharded(s), idText: strconv.FormatInt(id, 10)}
	w.tomb = w.key + ":gone" // same hash tag, same slot
	if g, ok := ctx.Value(guardKey{}).(guard); ok && g.key == w.key {
		w.guard = g
	}
	for attempt := 0; attempt < maxRetries; attempt++ {
		if attempt > 0 {
			// Another writer got in between: step aside a little, longer
			// each time, so a hot record's writers do not retry in lockstep.
			time.Sleep(time.Duration(1+rand.IntN(2*min(attempt, 10))) * time.Millisecond)
		}
		a := &writeAttempt[T]{writer: w}
		if w.sharded {
			if done, err := a.plan(ctx); done || err != nil {
				return a.ch, err
			}
		}
		err := s.rdb.Watch(ctx, a.commit(ctx), append([]string{w.key, historyKey(w.key), notesKey(w.key)}, w.guard.watch...)...)
		if errors.Is(err, redis.TxFailedErr) {
			if a.field != "" {
				// Nothing happened; the reconciler would find that too.
				s.rdb.HDel(ctx, s.intentsKey(), a.field)
			}
			continue
		}
		var refused *store.Error
		if errors.As(err, &refused) && a.field != "" {
			// Refused before its MULTI (by fn, a claim or a guard):
			// nothing happened.
			s.rdb.HDel(ctx, s.intentsKey(), a.field)
		}
		if err != nil {
			// The transaction may still have happened (a timeout after it
			// was sent): the intent stays, and the reconciler settles it.
			return a.ch, wrap(err)
		}
		if a.field != "" {
			a.finish(ctx)
		}
		if k.changed != nil && a.ch.Before != a.ch.After {
			k.changed(s, ctx, a.ch)
		}
		return a.ch, nil
	}
	return Change[T]{}, &store.Error{Code: store.EUNAVAILABLE, Message: "too many people are changing this record at once; try again in a moment",
		Err: errors.New("too many concurrent writers")}
}

// writer is one write of record id: what every attempt shares.
type writer[T any] struct {
	s         *Store
	k         *kind[T]
	id        int64
	fn        func(cur *T) (*T, error)
	key, tomb string
	idText    string
	sharded   bool
	guard     guard
}

// A guard is a condition of one write on keys beside its record (in its
// slot), checked under the record's WATCH: reads queues its reads in the
// pipeline that reads the record, and the check it returns, given the
// record's hash as read, refuses the write with an error once fn has
// accepted it. A key written under that WATCH by someone else after the
// read must also touch the record, or the guard's read is stale.
//
// watch lists more keys (in the record's slot) the write WATCHes with
// the record: a guard whose condition is on keys that other records'
// writes change names them. also, when set, queues more commands (on keys
// in the record's slot) in the write's MULTI, when it changes the record.
type guard struct {
	key   string // the record key it is for
	reads func(ctx context.Context, p redis.Pipeliner) (check func(h map[string]string) error)
	watch []string
	also  func(ctx context.Context, p redis.Pipeliner)
	// revive lets the write bring back a record whose tombstone is there
	// (a restore); its history entry and event say "restored".
	revive bool
}

type guardKey struct{}

// and is g with o's conditions too: both reads, both checks (g's first),
// both watch lists and both MULTI additions.
func (g guard) and(o guard) guard {
	out := g
	out.watch = append(slices.Clip(g.watch), o.watch...)
	out.revive = g.revive || o.revive
	out.reads = func(ctx context.Context, p redis.Pipeliner) func(map[string]string) error {
		var checks []func(map[string]string) error
		for _, r := range []func(context.Context, redis.Pipeliner) func(map[string]string) error{g.reads, o.reads} {
			if r != nil {
				if c := r(ctx, p); c != nil {
					checks = append(checks, c)
				}
			}
		}
		return func(h map[string]string) error {
			for _, c := range checks {
				if err := c(h); err != nil {
					return err
				}
			}
			return nil
		}
	}
	out.also = func(ctx context.Context, p redis.Pipeliner) {
		for _, a := range []func(context.Context, redis.Pipeliner){g.also, o.also} {
			if a != nil {
				a(ctx, p)
			}
		}
	}
	return out
}

// guarded returns ctx with g: the write of g.key under it checks g (every
// attempt, under the WATCH).
func guarded(ctx context.Context, g guard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// writeAttempt is one attempt of a write: the change it makes, and on a
// Cluster the intent it recorded.
type writeAttempt[T any] struct {
	*writer[T]
	ch            Change[T]
	before, after []ixEntry
	// field and token name the intent (a Cluster); planned is the record
	// as the intent saw it, intentAt when it was recorded.
	field, token string
	planned      *T
	intentAt     time.Time
	// check is the writer's guard's check, read under this attempt's WATCH.
	check func(h map[string]string) error
}

// decode reads the record hash h; a damaged one is reported and missing.
func (w *writer[T]) decode(h map[string]string) *T {
	cur, ok := w.k.decode(w.id, h)
	if !ok {
		if len(h) > 0 {
			w.s.damaged(w.key, h)
		}
		return nil
	}
	return cur
}

// plan records the intent of a sharded write: the index entries the record
// has and will have. The intent is written before the WATCH, from a plain
// read: writing it inside would need a second connection while the WATCH
// holds one, and under load every connection of a node's pool can be held
// by writers waiting for another. done says the write is over (fn changed
// nothing, or failed).
func (a *writeAttempt[T]) plan(ctx context.Context) (done bool, err error) {
	s, k := a.s, a.k
	h, err := s.rdb.HGetAll(ctx, a.key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return true, wrap(err)
	}
	cur := a.decode(h)
	next, err := a.fn(cur)
	if err != nil {
		return true, wrap(err)
	}
	if next == cur {
		a.ch = Change[T]{Before: cur, After: cur}
		return true, nil
	}
	a.planned = cur
	a.before, a.after = entriesOrNil(s, k, cur), entriesOrNil(s, k, next)
	a.token = newToken()
	a.field = k.name + ":" + a.idText + ":" + a.token
	a.intentAt = time.Now()
	if err := s.recordIntent(ctx, a.field, a.before, a.after); err != nil {
		// It may have been written: the reconciler drops it harmlessly.
		return true, wrap(err)
	}
	return false, nil
}

// commit is the record's transaction: it reads the record under WATCH,
// checks that a sharded write's intent still holds, asks fn for the next
// state, checks the claims, and queues the record, its history entry, its
// claims, and (where they share the transaction) its index entries and
// its event.
func (a *writeAttempt[T]) commit(ctx context.Context) func(tx *redis.Tx) error {
	return func(tx *redis.Tx) error {
		h, gone, taken, tail, err := a.read(ctx, tx)
		if err != nil {
			return err
		}
		cur := a.decode(h)
		if a.sharded {
			if err := a.stillPlanned(cur, taken); err != nil {
				return err
			}
		}
		next, err := a.fn(cur)
		if err != nil {
			return err
		}
		if a.check != nil {
			if err := a.check(h); err != nil {
				return err
			}
		}
		a.ch = Change[T]{Before: cur, After: next}
		if next == cur {
			return nil
		}
		if cur == nil && next != nil && (len(h) > 0 || (gone && !a.guard.revive)) {
			// Ids are never reused: not over a damaged record, and not
			// for a record deleted within tombstoneTTL (a retried create,
			// a counter that went back).
			return errRecordExists
		}
		if !a.sharded {
			a.before, a.after = entriesOrNil(a.s, a.k, cur), entriesOrNil(a.s, a.k, next)
		}
		take, give, err := a.claims(ctx, tx, cur, next)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			a.queue(ctx, p, cur, next, tail, take, give)
			return nil
		})
		return err
	}
}

// read reads, under the WATCH, the record hash, whether its tombstone is
// there, whether the reconciler took this attempt's intent over (a
// Cluster), and its history's tail.
func (a *writeAttempt[T]) read(ctx context.Context, tx *redis.Tx) (h map[string]string, gone, taken bool, tail historyTail, err error) {
	var hc *redis.MapStringStringCmd
	var goneC, takenC *redis.IntCmd
	if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		hc, goneC = p.HGetAll(ctx, a.key), p.Exists(ctx, a.tomb)
		tail = readTail(ctx, p, a.key, false)
		if a.sharded {
			takenC = p.Exists(ctx, takenKey(a.key, a.token))
		}
		if a.guard.reads != nil {
			a.check = a.guard.reads(ctx, p)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, false, tail, err
	}
	if takenC != nil {
		taken = takenC.Val() > 0
	}
	return hc.Val(), goneC.Val() > 0, taken, tail, nil
}

// stillPlanned checks, on a Cluster, that the intent recorded by plan still
// names this transaction's change; redis.TxFailedErr starts over.
func (a *writeAttempt[T]) stillPlanned(cur *T, taken bool) error {
	if !sameVersion(a.k, a.planned, cur) {
		return redis.TxFailedErr // changed since the intent was written: again
	}
	if taken {
		// The reconciler took the intent over before this WATCH: it
		// settled the record as it was and deleted (or will delete) the
		// intent, so a transaction under it could be left with no intent.
		// A fresh one, then.
		return redis.TxFailedErr
	}
	if time.Since(a.intentAt) > watchWithin {
		// By this writer's own clock, whatever the others say: the taken
		// mark lives takenTTL, so a WATCH very late might no longer see
		// it. A fresh intent, then.
		return redis.TxFailedErr
	}
	return nil
}

// claims returns the claims next takes, watched and checked free (a
// writer that takes one first makes this EXEC fail, and the retry sees it
// taken), and the ones cur gives up.
func (a *writeAttempt[T]) claims(ctx context.Context, tx *redis.Tx, cur, next *T) (take, give []string, err error) {
	have, want := claimsOf(a.s, a.k, cur), claimsOf(a.s, a.k, next)
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
	if len(take) == 0 {
		return take, give, nil
	}
	if err := tx.Watch(ctx, take...).Err(); err != nil {
		return nil, nil, err
	}
	owners, err := tx.MGet(ctx, take...).Result()
	if err != nil {
		return nil, nil, err
	}
	for i, o := range owners {
		if o, ok := o.(string); ok && o != a.idText {
			owner, _ := store.ParseID(o)
			return nil, nil, a.k.claimTaken(next, take[i], owner)
		}
	}
	return take, give, nil
}

// queue queues the write in the transaction: the claims, the record (or
// its tombstone), its history entry, and where they share the transaction
// its index entries and its event.
func (a *writeAttempt[T]) queue(ctx context.Context, p redis.Pipeliner, cur, next *T, tail historyTail, take, give []string) {
	s, k := a.s, a.k
	for _, c := range take {
		p.Set(ctx, c, a.idText, 0)
	}
	for _, c := range give {
		p.Del(ctx, c)
	}
	// A whole new hash: fields the record no longer has (a cleared email,
	// dropped items, a damaged leftover) go.
	p.Del(ctx, a.key)
	if next != nil {
		p.HSet(ctx, a.key, k.encode(next)...)
	} else {
		p.Set(ctx, a.tomb, "1", tombstoneTTL)
		if !k.final {
			// Its values, for a restore within the undo window.
			u := undoKey(a.key)
			p.Del(ctx, u)
			p.HSet(ctx, u, k.encode(cur)...)
			p.PExpire(ctx, u, s.undoWindow)
		}
	}
	// The history entry, in the same transaction (its key has the
	// record's hash tag, and is watched): exactly one per change.
	e := changeEntry(ctx, k, cur, next, s.now())
	if a.restoring(cur, next) {
		e.Action, e.Changes, e.Items = store.ActionRestored, nil, nil
	}
	queueHistory(ctx, p, a.key, tail, e)
	if a.guard.also != nil {
		a.guard.also(ctx, p)
	}
	if !a.sharded {
		moveEntries(ctx, p, a.before, a.after)
		if k.beside != nil {
			k.beside(s, ctx, p, cur, next)
		}
		if moved := movedEntries(a.before, a.after); k.marks != nil && len(moved) > 0 {
			k.marks(s, ctx, p, moved)
		}
		// The event too, where the stream shares the transaction
		// (events.go).
		if action, data := changeEvent(k, cur, next, a.restoring(cur, next)); action != "" {
			queueEvent(ctx, p, k.eventsKey(s), action, data)
		}
	}
}

// finish settles a sharded write's index entries and adds its event, which
// the transaction could not hold, then deletes its intent. When the event
// cannot be added, the intent stays, and the reconciler that settles it
// adds the event of the record as it is.
func (a *writeAttempt[T]) finish(ctx context.Context) {
	s := a.s
	stale := append(a.before, a.after...)
	if err := settle(ctx, s, a.k, a.id, stale); err == nil {
		// The marks of what the moved entries derive, before the intent
		// goes: a crash in between leaves the intent, whose settle marks
		// them again.
		if markDerived(ctx, s, a.k, movedEntries(a.before, a.after)) == nil &&
			publishAfter(ctx, s, a.k, a.id, a.ch.Before, a.ch.After, a.restoring(a.ch.Before, a.ch.After)) == nil {
			s.rdb.HDel(ctx, s.intentsKey(), a.field)
		}
		return
	}
	// The write happened and the intent stays for the reconciler: the
	// write is still a success. But the reconciler may have taken the
	// intent over and deleted it while this settle was on its way, and
	// this settle may then have written entries of a state that is no
	// more: the intent again.
	_ = s.intentAgain(ctx, a.k.name, a.id, stale)
}

// restoring reports whether a change from cur to next brings back a
// deleted record (a restore's write).
func (w *writer[T]) restoring(cur, next *T) bool {
	return w.guard.revive && cur == nil && next != nil
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
const tombstoneTTL = store.IdempotencyTTL + time.Hour

// errRecordExists is what a create under an id that is taken (by a record,
// a damaged hash, or a recent delete) gets from write. An *Error, so the
// write path passes it through as it is.
var errRecordExists error = &store.Error{Code: store.ECONFLICT, Message: "the id is taken"}

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

// movedEntries are the entries a change from before to after removes or
// adds (a score changed counts as added).
func movedEntries(before, after []ixEntry) []ixEntry {
	var out []ixEntry
	for _, e := range before {
		if !hasMember(after, e) {
			out = append(out, e)
		}
	}
	for _, e := range after {
		if !hasEntry(before, e) {
			out = append(out, e)
		}
	}
	return out
}

// markDerived writes the marks k makes of entries (marks), in one round
// trip; none when k marks nothing.
func markDerived[T any](ctx context.Context, s *Store, k *kind[T], entries []ixEntry) error {
	if k.marks == nil || len(entries) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		k.marks(s, ctx, p, entries)
		return nil
	})
	return err
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

// intentAgain records an intent naming entries under a new token (the
// reconciler deletes only the fields it read), even past ctx's end: for a
// settle that failed after it may have written them, while someone else
// may have deleted the intent that named them (a writer and a reconciler
// that took its intent over settle side by side, and the first to succeed
// deletes it).
func (s *Store) intentAgain(ctx context.Context, name string, id int64, entries []ixEntry) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return s.recordIntent(rctx, name+":"+strconv.FormatInt(id, 10)+":"+newToken(), entries, nil)
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

// settle makes the index entries stale names (entries of states record id
// had or was meant to have: its intents') match the record as it is now:
// those it belongs in are added with their score, the others removed. It
// touches no other entry, so the intents that name stale name everything
// it may have written, even when it fails half way after a pipeline that
// landed late (the entries of a state a later write replaced and settled);
// the entries of the current state that stale does not name are its own
// writer's to add. It reads the version again after and goes round while
// the record keeps changing, so whichever settle runs last leaves the
// entries it names right: a write that lands after this one's check is
// settled by its own writer (or by the reconciler). It is idempotent.
func settle[T any](ctx context.Context, s *Store, k *kind[T], id int64, stale []ixEntry) error {
	_, err := settleEntries(ctx, s, k, id, stale, false)
	return err
}

// settleAll is settle that also adds every entry the record belongs in,
// named or not: Repair's, for entries missing with no intent to name them.
// When it fails it returns the entries it may have written.
func settleAll[T any](ctx context.Context, s *Store, k *kind[T], id int64, stale []ixEntry) ([]ixEntry, error) {
	return settleEntries(ctx, s, k, id, stale, true)
}

func settleEntries[T any](ctx context.Context, s *Store, k *kind[T], id int64, stale []ixEntry, all bool) ([]ixEntry, error) {
	if !k.sharded(s) {
		return stale, settleInOne(ctx, s, k, id, stale, all)
	}
	key := k.key(s, id)
	stale = slices.Clip(stale) // appended to below: never into the caller's array
	field := ""                // the intent naming what an all settle may write
	for range 20 {
		h, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return stale, err
		}
		// The raw version field, not the decoded one: a damaged record
		// (no entries wanted) still has a version to compare.
		version := h[k.versionField]
		var want []ixEntry
		if cur, ok := k.decode(id, h); ok {
			want = k.entries(s, cur)
			if !all {
				want = slices.DeleteFunc(want, func(e ixEntry) bool { return !hasMember(stale, e) })
			}
		}
		if all {
			// Named from now on: removed in a later round if the record
			// moves on, and returned if this one fails. And named in Redis
			// before they are written, as a writer names its entries: a
			// record deleted or changed between the read above and the
			// pipeline below leaves the entries of the state read, and
			// this process may not live to read the version again (a
			// repair killed, or cut off from Redis): the intent stays, and
			// the reconciler settles them.
			stale = append(stale, want...)
			if field == "" {
				field = k.name + ":" + strconv.FormatInt(id, 10) + ":" + newToken()
			}
			if err := s.recordIntent(ctx, field, stale, nil); err != nil {
				return stale, err
			}
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
			return stale, err
		}
		v, err := s.rdb.HGet(ctx, key, k.versionField).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return stale, err
		}
		if v == version {
			if field != "" {
				s.rdb.HDel(ctx, s.intentsKey(), field)
			}
			return stale, nil
		}
	}
	return stale, errors.New("the record kept changing while its index entries were settled")
}

// settleInOne is settleEntries where the record and its indexes share a
// transaction (a single Redis, or a kind kept to one slot): the entries
// change in one MULTI under a WATCH of the record, so they are those of
// the version read or nothing was written. A settle that fails half way,
// or a context cancelled between its writes and its check, must not leave
// the entries of a record deleted meanwhile: on a single Redis no intent
// names them, and they would dangle until the next repair.
func settleInOne[T any](ctx context.Context, s *Store, k *kind[T], id int64, stale []ixEntry, all bool) error {
	key := k.key(s, id)
	for range 20 {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			h, err := tx.HGetAll(ctx, key).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			var want []ixEntry
			if cur, ok := k.decode(id, h); ok {
				want = k.entries(s, cur)
				if !all {
					want = slices.DeleteFunc(want, func(e ixEntry) bool { return !hasMember(stale, e) })
				}
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, e := range stale {
					if !hasMember(want, e) {
						p.ZRem(ctx, e.Key, e.Member)
					}
				}
				for i := len(want) - 1; i >= 0; i-- {
					p.ZAdd(ctx, want[i].Key, redis.Z{Score: want[i].Score, Member: want[i].Member})
				}
				return nil
			})
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
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
// a WATCH on it then aborts the EXEC. The writer records its intent before
// its WATCH, so a writer of one of the intents being taken over may WATCH
// after the fence: the same MULTI marks each of their tokens taken
// (takenKey), and such a writer sees the mark under its WATCH and starts
// over with a fresh intent. Either way, once the reconciler has fenced a
// record, no writer of the intents it took over can change it any more:
// its settle sees every transaction of theirs, and it may delete them.
func (s *Store) fence(ctx context.Context, key string, tokens ...string) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "_fence", "1")
		p.HDel(ctx, key, "_fence")
		for _, t := range tokens {
			p.Set(ctx, takenKey(key, t), "1", takenTTL)
		}
		return nil
	})
	return err
}

// reconcileAge is how long the reconciler must have seen an intent before
// it takes it over from its writer, which normally deletes it within
// milliseconds: a little under its one-second interval, so that it takes
// over on the pass after the one that first saw it.
const reconcileAge = 900 * time.Millisecond

// intentsSeen remembers when this instance first saw each pending intent:
// an intent's age is measured by the reconciler's own clock. The time in
// the intent is its writer's clock: one ahead would make an intent left
// behind look young for as long as the skew (past the 5 s), one behind
// would make every fresh intent look old and be taken over while its
// writer is still at work.
type intentsSeen struct {
	mu sync.Mutex
	at map[string]time.Time
}

// since returns, for each field, how long ago this instance first saw it,
// and forgets the fields no longer pending.
func (x *intentsSeen) since(fields map[string]string) map[string]time.Duration {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := time.Now()
	if x.at == nil {
		x.at = map[string]time.Time{}
	}
	for f := range x.at {
		if _, ok := fields[f]; !ok {
			delete(x.at, f)
		}
	}
	out := make(map[string]time.Duration, len(fields))
	for f := range fields {
		at, ok := x.at[f]
		if !ok {
			at = now
			x.at[f] = now
		}
		out[f] = now.Sub(at)
	}
	return out
}

// Reconcile settles the intents that writers left behind, then places the
// customers left marked to place by their last order (last_order.go),
// every interval (a second when 0) until ctx ends. Only a Cluster leaves
// intents; marks are left on any Redis. Every app instance may run it
// (settling and placing are idempotent).
func (s *Store) Reconcile(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		// A pass at once too: the intents pending at start are seen then,
		// and taken over on the next pass.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if s.cluster {
			if _, err := s.reconcileOnce(rctx, reconcileAge); err != nil && ctx.Err() == nil {
				s.log.Warn("settling index intents", "err", err)
			}
		}
		if _, err := s.placePending(rctx, 0); err != nil && ctx.Err() == nil {
			s.log.Warn("placing customers by their last order", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
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
		tokens []string
		stale  []ixEntry
	}
	byRecord := map[string]*record{}
	seen := s.seen.since(all)
	for field, v := range all {
		var in intent
		name, rest, _ := strings.Cut(field, ":")
		idText, token, _ := strings.Cut(rest, ":")
		id, okID := store.ParseID(idText)
		_, okKind := kinds[name]
		if json.Unmarshal([]byte(v), &in) != nil || !okID || !okKind {
			s.log.Warn("dropping a damaged index intent", "field", field)
			s.rdb.HDel(ctx, s.intentsKey(), field)
			continue
		}
		if seen[field] < minAge {
			continue
		}
		key := s.recordKey(name, id)
		r := byRecord[key]
		if r == nil {
			r = &record{name: name, id: id}
			byRecord[key] = r
		}
		r.fields = append(r.fields, field)
		r.tokens = append(r.tokens, token)
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
				err := s.fence(ctx, key, r.tokens...)
				if err == nil {
					err = kinds[r.name].settleRecord(ctx, s, r.id, r.stale)
				}
				if err == nil {
					err = s.rdb.HDel(ctx, s.intentsKey(), r.fields...).Err()
				} else if s.intentsGone(ctx, r.fields) {
					// A writer that settled beside this settle deleted its
					// intent: this settle may have written entries it named.
					_ = s.intentAgain(ctx, r.name, r.id, r.stale)
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

// intentsGone reports whether any of fields is no longer in the intents
// hash (true when it cannot tell).
func (s *Store) intentsGone(ctx context.Context, fields []string) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	vs, err := s.rdb.HMGet(rctx, s.intentsKey(), fields...).Result()
	if err != nil {
		return true
	}
	for _, v := range vs {
		if v == nil {
			return true
		}
	}
	return false
}

// damaged reports a record hash that cannot be read: it is skipped (as if
// missing), never a crash.
func (s *Store) damaged(key string, h map[string]string) {
	s.log.Error("skipping a damaged record", "key", key, "fields", len(h))
}

// A write's event: the entry a change adds to its kind's stream (the
// feeds that read it are in events.go).

// eventsKey is the kind's event stream: in the kind's slot when it has one.
func (k *kind[T]) eventsKey(s *Store) string {
	if k.slot != "" {
		return s.prefix + k.name + ":{" + k.slot + "}:events"
	}
	return s.prefix + k.name + ":events"
}

// changeEvent is the event of a change from cur to next (nil, nil when
// the kind has no events); restored: a restore's.
func changeEvent[T any](k *kind[T], cur, next *T, restored bool) (action string, data []byte) {
	if k.event == nil {
		return "", nil
	}
	switch {
	case restored:
		return store.ActionRestored, k.event(next)
	case cur == nil:
		return store.ActionCreated, k.event(next)
	case next == nil:
		return store.ActionDeleted, k.event(cur)
	}
	return store.ActionUpdated, k.event(next)
}

// queueEvent queues the XADD of an event (in a transaction, or alone),
// with a token of its own (eventToken).
func queueEvent(ctx context.Context, p redis.Cmdable, key, action string, data []byte) *redis.StringCmd {
	return p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: store.EventsKept, Approx: true, ID: "*", Values: []any{"a", action, "d", data, "t", eventToken()}})
}

// eventToken is an entry's token: 64 random bits, so that an entry whose id
// a forgetful Redis handed out again is told from the one a client saw.
// Uniqueness is all it needs (no secret): the process's random source.
func eventToken() string { return strconv.FormatUint(rand.Uint64(), 36) }
