package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store keeps orders in Redis. Each order is a hash ("o:{42}") and its items
// a second hash ("o:{42}:i"); both share the hash tag {42}, so they live in
// one Cluster slot and change in one MULTI/EXEC. Sorted sets index the
// collection: by id (newest first), by status, and by lower-cased customer
// name (for prefix search), each also per status.
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	cluster bool
	now     func() time.Time
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
}

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opt Options) *Store {
	s := &Store{rdb: rdb, prefix: opt.Prefix, cluster: opt.Cluster, now: opt.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Order hash fields are short: they are repeated in every order.
const (
	fCustomer = "c"
	fEmail    = "e"
	fStatus   = "s"
	fCurrency = "cu"
	fNotes    = "n"
	fVersion  = "v"
	fCreated  = "ca"
	fUpdated  = "ua"
	fCount    = "ic"
	fTotal    = "t"
)

func (s *Store) orderKey(id int64) string {
	return s.prefix + "o:{" + strconv.FormatInt(id, 10) + "}"
}
func (s *Store) itemsKey(id int64) string { return s.orderKey(id) + ":i" }
func (s *Store) seqKey() string           { return s.prefix + "seq" }
func (s *Store) idIndex(st Status) string {
	if st == "" {
		return s.prefix + "ix:id"
	}
	return s.prefix + "ix:id:" + string(st)
}
func (s *Store) nameIndex(st Status) string {
	if st == "" {
		return s.prefix + "ix:name"
	}
	return s.prefix + "ix:name:" + string(st)
}

// nameMember is an order's entry in a name index: the folded name, a NUL,
// then the id inverted and zero-padded so that equal names sort newest first.
func nameMember(customer string, id int64) string {
	inv := strconv.FormatInt(1e18-id, 10)
	return foldName(customer) + "\x00" + strings.Repeat("0", 18-len(inv)) + inv
}

func memberID(m string) (int64, bool) {
	i := strings.LastIndexByte(m, 0)
	if i < 0 {
		return 0, false
	}
	inv, err := strconv.ParseInt(m[i+1:], 10, 64)
	if err != nil {
		return 0, false
	}
	return 1e18 - inv, true
}

// foldName is the case-insensitive form of a name used by search.
func foldName(s string) string { return strings.ToLower(s) }

func orderFields(o *Order) map[string]any {
	return map[string]any{
		fCustomer: o.Customer,
		fEmail:    o.Email,
		fStatus:   string(o.Status),
		fCurrency: o.Currency,
		fNotes:    o.Notes,
		fVersion:  o.Version,
		fCreated:  o.CreatedAt.Unix(),
		fUpdated:  o.UpdatedAt.Unix(),
		fCount:    o.ItemCount,
		fTotal:    int64(o.Total),
	}
}

func itemFields(items []Item) map[string]any {
	m := make(map[string]any, len(items)*4)
	for i, it := range items {
		n := strconv.Itoa(i) + "."
		if it.SKU != "" {
			m[n+"k"] = it.SKU
		}
		m[n+"n"] = it.Name
		m[n+"q"] = it.Quantity
		m[n+"p"] = int64(it.UnitPrice)
	}
	return m
}

// decodeOrder reads an order hash; ok is false when the hash is empty
// (the order does not exist) or damaged.
func decodeOrder(id int64, h map[string]string) (Order, bool) {
	if len(h) == 0 || h[fVersion] == "" {
		return Order{}, false
	}
	num := func(f string) int64 { v, _ := strconv.ParseInt(h[f], 10, 64); return v }
	o := Order{
		ID:        id,
		Customer:  h[fCustomer],
		Email:     h[fEmail],
		Status:    Status(h[fStatus]),
		Currency:  h[fCurrency],
		Notes:     h[fNotes],
		Version:   num(fVersion),
		CreatedAt: time.Unix(num(fCreated), 0).UTC(),
		UpdatedAt: time.Unix(num(fUpdated), 0).UTC(),
		ItemCount: int(num(fCount)),
		Total:     Money(num(fTotal)),
	}
	return o, true
}

func decodeItems(h map[string]string, count int) []Item {
	items := make([]Item, 0, count)
	for i := 0; ; i++ {
		n := strconv.Itoa(i) + "."
		name, ok := h[n+"n"]
		if !ok {
			break
		}
		q, _ := strconv.ParseInt(h[n+"q"], 10, 64)
		p, _ := strconv.ParseInt(h[n+"p"], 10, 64)
		it := Item{SKU: h[n+"k"], Name: name, Quantity: q, UnitPrice: Money(p)}
		it.LineTotal = it.UnitPrice.Times(it.Quantity)
		items = append(items, it)
	}
	return items
}

// wrap turns a failure to reach Redis into EUNAVAILABLE, and an error
// Redis answered with into EINTERNAL (it means a bug or a damaged key),
// leaving *Error values alone. Transient server states count as unreachable.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.Nil) {
		msg := re.Error()
		for _, transient := range []string{"LOADING", "READONLY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "MOVED", "ASK"} {
			if strings.HasPrefix(msg, transient) {
				return unavailable(err)
			}
		}
		if !strings.Contains(msg, "connection") && !strings.Contains(msg, "timeout") {
			return &Error{Code: EINTERNAL, Message: "the order store answered with an error", Err: err}
		}
	}
	return unavailable(err)
}

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap(s.rdb.Ping(ctx).Err())
}

// Get reads one order with its items in one round trip.
func (s *Store) Get(ctx context.Context, id int64) (*Order, error) {
	o, err := s.load(ctx, s.rdb, id)
	return o, wrap(err)
}

func (s *Store) load(ctx context.Context, c redis.Cmdable, id int64) (*Order, error) {
	var oc, ic *redis.MapStringStringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		oc = p.HGetAll(ctx, s.orderKey(id))
		ic = p.HGetAll(ctx, s.itemsKey(id))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	o, ok := decodeOrder(id, oc.Val())
	if !ok {
		return nil, notFound(id)
	}
	o.Items = decodeItems(ic.Val(), o.ItemCount)
	return &o, nil
}

// Create validates in and stores it as a new pending order with a fresh id.
func (s *Store) Create(ctx context.Context, in Input) (*Order, error) {
	o, errs := apply(nil, in)
	if errs != nil {
		return nil, &Error{Code: EINVALID, Message: "the order has invalid values", Fields: errs}
	}
	id, err := s.rdb.Incr(ctx, s.seqKey()).Result()
	if err != nil {
		return nil, wrap(err)
	}
	now := s.now().UTC().Truncate(time.Second)
	o.ID, o.Version, o.CreatedAt, o.UpdatedAt = id, 1, now, now
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.writeOrder(ctx, p, &o, false)
		if !s.cluster {
			s.writeIndexes(ctx, p, nil, &o)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	if s.cluster {
		// Added after the order exists: a reader never finds an entry for an
		// order that was never written (it may briefly miss a new order).
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			s.writeIndexes(ctx, p, nil, &o)
			return nil
		}); err != nil {
			return nil, wrap(err)
		}
	}
	return &o, nil
}

func (s *Store) writeOrder(ctx context.Context, p redis.Pipeliner, o *Order, replaceItems bool) {
	p.HSet(ctx, s.orderKey(o.ID), orderFields(o))
	if replaceItems {
		p.Del(ctx, s.itemsKey(o.ID))
	}
	if len(o.Items) > 0 {
		p.HSet(ctx, s.itemsKey(o.ID), itemFields(o.Items))
	}
}

// writeIndexes moves o's index entries from what old had to what o has.
// old nil: a new order; o nil: a deleted one.
func (s *Store) writeIndexes(ctx context.Context, p redis.Pipeliner, old, o *Order) {
	if old != nil && (o == nil || old.Status != o.Status || old.Customer != o.Customer) {
		idm := strconv.FormatInt(old.ID, 10)
		nm := nameMember(old.Customer, old.ID)
		if o == nil {
			p.ZRem(ctx, s.idIndex(""), idm)
		}
		if o == nil || old.Status != o.Status {
			p.ZRem(ctx, s.idIndex(old.Status), idm)
		}
		p.ZRem(ctx, s.nameIndex(""), nm)
		p.ZRem(ctx, s.nameIndex(old.Status), nm)
	}
	if o == nil || (old != nil && old.Status == o.Status && old.Customer == o.Customer) {
		return
	}
	idz := redis.Z{Score: float64(o.ID), Member: strconv.FormatInt(o.ID, 10)}
	nz := redis.Z{Member: nameMember(o.Customer, o.ID)}
	if old == nil {
		p.ZAdd(ctx, s.idIndex(""), idz)
	}
	p.ZAdd(ctx, s.idIndex(o.Status), idz)
	p.ZAdd(ctx, s.nameIndex(""), nz)
	p.ZAdd(ctx, s.nameIndex(o.Status), nz)
}

// maxRetries bounds how often a write retries after another writer changed
// the same order between its read and its EXEC.
const maxRetries = 50

// Update applies in to order id. ifMatch, when not 0, is the version an
// If-Match header requires (EPRECONDITION otherwise); in.Version is the
// version a form or JSON body carries (ECONFLICT otherwise). The check and
// the write are one optimistic transaction (WATCH, MULTI/EXEC), retried when
// another writer got in between.
func (s *Store) Update(ctx context.Context, id int64, in Input, ifMatch int64) (*Order, error) {
	key := s.orderKey(id)
	var next, cur *Order
	for attempt := 0; attempt < maxRetries; attempt++ {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var err error
			cur, err = s.load(ctx, tx, id)
			if err != nil {
				return err
			}
			if ifMatch != 0 && cur.Version != ifMatch {
				return &Error{Code: EPRECONDITION, Message: "the order has changed since the version you named", Current: cur}
			}
			if in.Version != nil && *in.Version != cur.Version {
				return &Error{Code: ECONFLICT, Message: "someone else changed this order; review the current values", Current: cur}
			}
			o, errs := apply(cur, in)
			if errs != nil {
				return &Error{Code: EINVALID, Message: "the order has invalid values", Fields: errs, Current: cur}
			}
			o.Version = cur.Version + 1
			o.UpdatedAt = s.now().UTC().Truncate(time.Second)
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				s.writeOrder(ctx, p, &o, in.HasItems)
				if !s.cluster {
					s.writeIndexes(ctx, p, cur, &o)
				}
				return nil
			})
			next = &o
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return nil, wrap(err)
		}
		if s.cluster {
			// Entries for the new name or status are added after the order
			// changed; stale ones are skipped by readers.
			if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				s.writeIndexes(ctx, p, cur, next)
				return nil
			}); err != nil {
				return nil, wrap(err)
			}
		}
		return next, nil
	}
	return nil, unavailable(errors.New("too many concurrent writers"))
}

// Delete removes order id, its items and its index entries. ifMatch, when
// not 0, must equal the stored version (EPRECONDITION); so must version, the
// one a form or JSON body carries (ECONFLICT).
func (s *Store) Delete(ctx context.Context, id int64, ifMatch, version int64) error {
	key := s.orderKey(id)
	for attempt := 0; attempt < maxRetries; attempt++ {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			cur, err := s.load(ctx, tx, id)
			if err != nil {
				return err
			}
			if ifMatch != 0 && cur.Version != ifMatch {
				return &Error{Code: EPRECONDITION, Message: "the order has changed since the version you named", Current: cur}
			}
			if version != 0 && cur.Version != version {
				return &Error{Code: ECONFLICT, Message: "someone else changed this order since you saw it; it was not deleted", Current: cur}
			}
			if s.cluster {
				// Index entries go before the order, so none points nowhere.
				if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					s.writeIndexes(ctx, p, cur, nil)
					return nil
				}); err != nil {
					return err
				}
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, key, s.itemsKey(id))
				if !s.cluster {
					s.writeIndexes(ctx, p, cur, nil)
				}
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		return wrap(err)
	}
	return unavailable(errors.New("too many concurrent writers"))
}
