package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

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
