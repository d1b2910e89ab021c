package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// idemKey is where a key's claim lives: "<fingerprint> <id> <p|d>", p while
// the create may not have happened yet, d once it has.
func (s *Store) idemKey(kindName, key string) string {
	h := sha256.Sum256([]byte(key))
	return s.prefix + "idem:" + kindName + ":" + hex.EncodeToString(h[:16])
}

// CreateOrderOnce is Create for a request that carries an Idempotency-Key. The
// first request with a key claims it together with a fresh id, then creates
// the order under that id; a later request with the same key and the same
// fingerprint (a hash of the request body) gets that same order, even when
// the first one failed half way (it then completes the create itself, with
// the same id, so there is never a second order). The same key with another
// fingerprint is EINVALID. Keys are forgotten after IdempotencyTTL.
func (s *Store) CreateOrderOnce(ctx context.Context, key, fingerprint string, in store.OrderInput) (*store.Order, error) {
	o, errs := store.ApplyOrder(nil, in)
	if errs != nil {
		return nil, invalid(errs, nil)
	}
	if err := s.customerExists(ctx, o.CustomerID, nil); err != nil {
		return nil, err
	}
	k := s.idemKey(orders.name, key)
	for range 3 {
		v, err := s.rdb.Get(ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			id, err := s.nextID(ctx, orders.counter)
			if err != nil {
				return nil, wrap(err)
			}
			claimed, err := s.rdb.SetNX(ctx, k, fingerprint+" "+strconv.FormatInt(id, 10)+" p", store.IdempotencyTTL).Result()
			if err != nil {
				return nil, wrap(err)
			}
			if !claimed {
				continue // another request with this key got in first
			}
			created, err := s.createClaimed(ctx, k, fingerprint, id, o)
			if err == errClaimMoved {
				continue
			}
			return created, err
		}
		if err != nil {
			return nil, wrap(err)
		}
		fp, rest, _ := strings.Cut(v, " ")
		idText, state, _ := strings.Cut(rest, " ")
		id, ok := store.ParseID(idText)
		if !ok {
			return nil, &store.Error{Code: store.EINTERNAL, Message: "an idempotency record is damaged", Err: errors.New(v)}
		}
		if fp != fingerprint {
			return nil, &store.Error{Code: store.EINVALID, Message: "this Idempotency-Key was already used with a different request",
				Fields: map[string]string{"idempotency_key": "was already used with a different request"}}
		}
		cur, err := s.GetOrder(ctx, id)
		switch {
		case err == nil && madeFor(cur.Idem, k, fingerprint):
			return cur, nil
		case err == nil:
			// Another request's order holds the claimed id (the counter went
			// back after a failover): createClaimed moves the claim.
		default:
			if store.ErrorCode(err) != store.ENOTFOUND {
				return nil, err
			}
			if state == "d" {
				return nil, store.Errorf(store.ENOTFOUND, "order %d, created with this Idempotency-Key, has since been deleted", id)
			}
			// The first request claimed the key but its create did not
			// happen (yet): this one makes it, under the claimed id.
		}
		created, err := s.createClaimed(ctx, k, fingerprint, id, o)
		if err == errClaimMoved {
			continue // read the claim again: it names the mover's order
		}
		return created, err
	}
	return nil, unavailable(errors.New("the idempotency key kept changing"))
}

func (s *Store) createClaimed(ctx context.Context, k, fingerprint string, id int64, o store.Order) (*store.Order, error) {
	o.Idem = idemMark(k, fingerprint)
	created, err := s.createAs(ctx, id, o)
	if err == errIDTaken {
		// A racing retry with this key made it first: that is the answer;
		// unless the order has been deleted since (its id is a tombstone).
		created, err = s.GetOrder(ctx, id)
		if store.ErrorCode(err) == store.ENOTFOUND {
			return nil, store.Errorf(store.ENOTFOUND, "order %d, created with this Idempotency-Key, has since been deleted", id)
		}
		if err == nil && !madeFor(created.Idem, k, fingerprint) {
			// Another request's order holds the claimed id (the counter went
			// back after a failover): this key's order gets a fresh id.
			newID, err := s.nextID(ctx, orders.counter)
			if err != nil {
				return nil, wrap(err)
			}
			if err := s.moveClaim(ctx, k, fingerprint, id, newID); err != nil {
				return nil, err
			}
			return s.createClaimed(ctx, k, fingerprint, newID, o)
		}
	}
	if err != nil {
		return nil, err
	}
	// Best effort: a claim left at "p" only means a retry reads the order.
	// (The id is this key's for good: only a claim naming another
	// request's order is ever moved.)
	s.rdb.SetArgs(ctx, k, fingerprint+" "+strconv.FormatInt(id, 10)+" d", redis.SetArgs{Mode: "XX", KeepTTL: true})
	return created, nil
}

// errClaimMoved: the key's claim no longer names the id the request was
// creating under; another request with the key moved it (CreateOnce reads
// the claim again, and answers that request's order).
var errClaimMoved = errors.New("the idempotency claim was moved by another request")

// moveClaim points the key's claim from id (another request's order holds
// it) to newID, only if it still names id: two requests with the key that
// both find id taken must not each move it, or the key would name two
// orders, the first one already answered.
func (s *Store) moveClaim(ctx context.Context, k, fingerprint string, id, newID int64) error {
	err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		fp, rest, _ := strings.Cut(v, " ")
		idText, _, _ := strings.Cut(rest, " ")
		if fp != fingerprint || idText != strconv.FormatInt(id, 10) {
			return errClaimMoved
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, k, fingerprint+" "+strconv.FormatInt(newID, 10)+" p", redis.SetArgs{Mode: "XX", KeepTTL: true})
			return nil
		})
		return err
	}, k)
	switch {
	case errors.Is(err, redis.TxFailedErr):
		return errClaimMoved
	case err != nil && err != errClaimMoved:
		return wrap(err)
	}
	return err
}

// idemMark is what an order created for a key keeps (its idem field): the
// request's fingerprint and the key's claim. Two keys may carry the same
// request (a client that sends one body twice, meaning two orders): after
// the counter went back, the second key's claim can name the first key's
// order, which must not then be its answer.
func idemMark(k, fingerprint string) string {
	return fingerprint + "@" + k[strings.LastIndexByte(k, ':')+1:]
}

// madeFor reports whether an order's idem field says it was created for
// key claim k with this fingerprint (or, as orders created before the mark
// named the key, with this fingerprint alone).
func madeFor(idem, k, fingerprint string) bool {
	return idem == idemMark(k, fingerprint) || idem == fingerprint
}
