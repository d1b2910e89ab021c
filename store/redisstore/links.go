package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// An order links a customer (its customer_id) in slot o:{<id>} while the
// customer lives in {c}: on a Cluster no transaction holds both, so a
// delete of the customer and a write that links it cannot check each
// other in one. The customer's links (c:{c}:<id>:links, beside the
// customer) say which orders link it or are being linked to it:
//
//   - A write that makes an order link a customer first takes a hold
//     there (holdScript): refused when the customer is gone, otherwise an
//     entry "<token>:<unix ms>" under the order's id, and a touch of the
//     customer's hash. The write then commits only under a guard: the
//     hold's token is not taken (see below) and the hold is younger than
//     holdWithin by the writer's own clock. After a successful link the
//     entry stays, as long as the order links the customer. An update
//     that keeps its customer needs no hold (guarded by the order still
//     linking it).
//   - An entry is only ever dropped after its order was fenced with the
//     entry's tokens (fence: the order's hash touched, each token marked
//     taken in the order's slot) and then read not linking the customer:
//     a writer under such a hold either committed before the fence (and
//     the read sees the link) or can never commit. So while an order
//     links a customer, an entry names it.
//   - DeleteCustomer deletes only under a guard that the links are empty,
//     read under the customer's WATCH; a hold taken after that read
//     touches the customer and aborts the delete. When they are not, it
//     drops the entries whose orders do not link the customer (waiting up
//     to linkAge for young ones: their writers are at work) and tries
//     again, and refuses while any order links it.
//
// An entry left behind (a crash, a write that failed and could not drop
// it, an unlink whose drop failed) costs the next DeleteCustomer its
// check, and Repair drops it; Repair also adds the entry of an order that
// links a customer without one.

// customerLinks names the links of customer id: a hash, field an order id,
// value that order's holds, space-separated "<token>:<unix ms>" (the time
// by the writer's clock, only to tell a writer at work from one gone).
func (s *Store) customerLinks(id int64) string { return customerKind.key(s, id) + ":links" }

// The times of the protocol. A writer gives up a hold holdWithin after it
// took it, by its own clock, far within takenTTL (a taken mark outlives
// every writer that may still commit under its token). A hold younger than
// linkAge, whose order does not link the customer, is its writer's, who
// commits or drops it within milliseconds: a delete waits for it (up to
// linkAge) before it takes it over.
const (
	holdWithin = 10 * time.Second
	linkAge    = time.Second
	linkTries  = 10
)

// The guards' refusals; the callers take them as "again", and only a
// write that keeps meeting them answers with one (503).
var (
	errLinkTaken    error = &store.Error{Code: store.EUNAVAILABLE, Message: "the link to the customer was taken over; try again"}
	errNotLinked    error = &store.Error{Code: store.EUNAVAILABLE, Message: "the order no longer links that customer; try again"}
	errLinksChanged error = &store.Error{Code: store.EUNAVAILABLE, Message: "orders link this customer or are being linked to it; try again"}
)

// holdScript takes a hold: KEYS[1] the customer, KEYS[2] its links,
// ARGV[1] the order id, ARGV[2] the hold. 0: no such customer. The touch
// of the customer's hash (a field set and removed) makes a delete of it
// in flight start over and see the hold.
var holdScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local v = redis.call('HGET', KEYS[2], ARGV[1])
if v then v = v .. ' ' .. ARGV[2] else v = ARGV[2] end
redis.call('HSET', KEYS[2], ARGV[1], v)
redis.call('HSET', KEYS[1], '_link', '1')
redis.call('HDEL', KEYS[1], '_link')
return 1
`)

// dropScript drops holds: KEYS[1] the links, ARGV[1] the order id,
// ARGV[2…] the tokens of the holds to drop (the others stay).
var dropScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local drop = {}
for i = 2, #ARGV do drop[ARGV[i]] = true end
local keep = {}
for h in string.gmatch(v, '%S+') do
  if not drop[string.match(h, '^[^:]*')] then keep[#keep + 1] = h end
end
if #keep == 0 then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], table.concat(keep, ' ')) end
return 1
`)

// linkHold is a hold an order write took on its customer.
type linkHold struct {
	cid, oid int64
	token    string
	at       time.Time // by this process's clock, before it was taken
}

// holdLink takes a hold of order oid's link to customer cid; a customer
// that is not stored is customerExists's field error.
func (s *Store) holdLink(ctx context.Context, cid, oid int64, orderID *int64) (*linkHold, error) {
	h := &linkHold{cid: cid, oid: oid, token: newToken(), at: time.Now()}
	ok, err := s.addHold(ctx, h)
	if err != nil {
		return nil, wrap(err)
	}
	if !ok {
		return nil, s.noCustomer(ctx, cid, orderID)
	}
	return h, nil
}

// addHold runs holdScript for h; false: no such customer.
func (s *Store) addHold(ctx context.Context, h *linkHold) (bool, error) {
	n, err := holdScript.Run(ctx, s.rdb, []string{customerKind.key(s, h.cid), s.customerLinks(h.cid)},
		strconv.FormatInt(h.oid, 10), h.token+":"+strconv.FormatInt(h.at.UnixMilli(), 10)).Int()
	return n == 1, err
}

// guard is the condition of the write under h: its token not taken, and
// h younger than holdWithin.
func (h *linkHold) guard(s *Store) guard {
	key := s.orderKey(h.oid)
	return guard{key: key, reads: func(ctx context.Context, p redis.Pipeliner) func(map[string]string) error {
		taken := p.Exists(ctx, takenKey(key, h.token))
		return func(map[string]string) error {
			if taken.Val() > 0 || time.Since(h.at) > holdWithin {
				return errLinkTaken
			}
			return nil
		}
	}}
}

// stillLinked is the condition of an update of order oid that keeps its
// link to customer cid without a hold: the order links it as read.
func (s *Store) stillLinked(oid, cid int64) guard {
	want := strconv.FormatInt(cid, 10)
	return guard{key: s.orderKey(oid), reads: func(context.Context, redis.Pipeliner) func(map[string]string) error {
		return func(h map[string]string) error {
			if h[fCustomerID] != want {
				return errNotLinked
			}
			return nil
		}
	}}
}

// unlinked is the condition of customer cid's delete: its links are empty.
func (s *Store) unlinked(cid int64) guard {
	return guard{key: customerKind.key(s, cid), reads: func(ctx context.Context, p redis.Pipeliner) func(map[string]string) error {
		n := p.HLen(ctx, s.customerLinks(cid))
		return func(map[string]string) error {
			if n.Val() > 0 {
				return errLinksChanged
			}
			return nil
		}
	}}
}

// linking runs write, a create or update of order oid that links customer
// cid when it succeeds, under a hold of that link; a hold taken over is
// taken again. When the write fails or leaves the order not linking cid,
// its hold is dropped.
func (s *Store) linking(ctx context.Context, cid, oid int64, orderID *int64, write func(ctx context.Context) (*store.Order, error)) (*store.Order, error) {
	for range linkTries {
		h, err := s.holdLink(ctx, cid, oid, orderID)
		if err != nil {
			return nil, err
		}
		o, err := write(guarded(ctx, h.guard(s)))
		if err == errLinkTaken {
			continue
		}
		if err != nil || o.CustomerID != cid {
			s.releaseLink(ctx, cid, oid)
		}
		return o, err
	}
	return nil, unavailable(errors.New("the link to the customer kept being taken over"))
}

// releaseLink drops customer cid's entry of order oid unless the order
// links it: after a write that unlinked it, or failed. Best effort, even
// past ctx's end: an entry left behind is checked by the next delete of
// the customer, and by Repair.
func (s *Store) releaseLink(ctx context.Context, cid, oid int64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	v, err := s.rdb.HGet(rctx, s.customerLinks(cid), strconv.FormatInt(oid, 10)).Result()
	if err != nil {
		return // no entry, or no answer
	}
	if _, err := s.dropUnlinked(rctx, cid, oid, holdTokens(v)); err != nil {
		s.log.Warn("dropping a customer link", "customer", cid, "order", oid, "err", err)
	}
}

// dropUnlinked fences order oid with the tokens of customer cid's holds
// on it, then drops those holds unless the order links cid (linked: it
// does, and they stay).
func (s *Store) dropUnlinked(ctx context.Context, cid, oid int64, tokens []string) (linked bool, err error) {
	key := s.orderKey(oid)
	if err := s.fence(ctx, key, tokens...); err != nil {
		return false, wrap(err)
	}
	ci, err := s.rdb.HGet(ctx, key, fCustomerID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, wrap(err)
	}
	if ci == strconv.FormatInt(cid, 10) {
		return true, nil
	}
	args := []any{strconv.FormatInt(oid, 10)}
	for _, t := range tokens {
		args = append(args, t)
	}
	return false, wrap(dropScript.Run(ctx, s.rdb, []string{s.customerLinks(cid)}, args...).Err())
}

// holdTokens are the tokens of an entry's holds; holdsYoung says whether
// one was taken less than linkAge ago (by this clock).
func holdTokens(v string) []string {
	var out []string
	for _, h := range strings.Fields(v) {
		t, _, _ := strings.Cut(h, ":")
		out = append(out, t)
	}
	return out
}

func holdsYoung(v string, now time.Time) bool {
	for _, h := range strings.Fields(v) {
		_, at, _ := strings.Cut(h, ":")
		if ms, err := strconv.ParseInt(at, 10, 64); err != nil || now.Sub(time.UnixMilli(ms)) < linkAge {
			return true
		}
	}
	return false
}

// linkCheck is what a look at customer cid's links found: the orders that
// link it, and the entries of orders that do not, by order id (their
// holds), young or not.
type linkCheck struct {
	linked          int64
	unbacked, young map[int64]string
	junk            []string // fields no writer wrote (no order id)
}

// checkLinks reads the orders that holds (customer cid's links) name, in
// one pipelined round trip.
func (s *Store) checkLinks(ctx context.Context, cid int64, holds map[string]string) (linkCheck, error) {
	c := linkCheck{unbacked: map[int64]string{}, young: map[int64]string{}}
	ids := make([]int64, 0, len(holds))
	cmds := make([]*redis.StringCmd, 0, len(holds))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for f := range holds {
			if id, ok := store.ParseID(f); ok {
				ids = append(ids, id)
				cmds = append(cmds, p.HGet(ctx, s.orderKey(id), fCustomerID))
			} else {
				c.junk = append(c.junk, f)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return c, wrap(err)
	}
	want, now := strconv.FormatInt(cid, 10), time.Now()
	for i, id := range ids {
		v := holds[strconv.FormatInt(id, 10)]
		switch {
		case cmds[i].Val() == want:
			c.linked++
		case holdsYoung(v, now):
			c.young[id] = v
		default:
			c.unbacked[id] = v
		}
	}
	return c, nil
}

// linkedOrders is how many orders link customer cid, for its delete: the
// orders its links name that link it, or its orders index's count when
// that is more (an index entry still on its way). Entries whose orders do
// not link it are dropped (a young one once it is no longer, or linkAge
// from now).
func (s *Store) linkedOrders(ctx context.Context, cid int64) (int64, error) {
	deadline := time.Now().Add(linkAge)
	for {
		var holds *redis.MapStringStringCmd
		var indexed *redis.IntCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			holds = p.HGetAll(ctx, s.customerLinks(cid))
			indexed = p.ZCard(ctx, s.customerOrders(cid))
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, wrap(err)
		}
		c, err := s.checkLinks(ctx, cid, holds.Val())
		if err != nil {
			return 0, err
		}
		if len(c.young) > 0 && time.Now().Before(deadline) {
			if err := pause(ctx, 10*time.Millisecond); err != nil {
				return 0, wrap(err)
			}
			continue
		}
		if len(c.junk) > 0 {
			if err := s.rdb.HDel(ctx, s.customerLinks(cid), c.junk...).Err(); err != nil {
				return 0, wrap(err)
			}
		}
		for _, m := range []map[int64]string{c.unbacked, c.young} {
			for oid, v := range m {
				linked, err := s.dropUnlinked(ctx, cid, oid, holdTokens(v))
				if err != nil {
					return 0, err
				}
				if linked {
					c.linked++
				}
			}
		}
		return max(c.linked, indexed.Val()), nil
	}
}

// repairLinks checks the customers' links against the orders: an order
// that links a customer without an entry there is Missing (with fix, the
// entry is added); an entry older than linkAge whose order does not link
// the customer is a hold left behind, counted in Holds (with fix, dropped
// as a delete drops it). With
// fix, an order found linking a customer that is not stored is Dangling
// (and left alone).
func (s *Store) repairLinks(ctx context.Context, fix bool, r *RepairReport) error {
	pattern, idOf := orders.keyPattern(s)
	err := s.scanKeys(ctx, pattern, func(keys []string) error {
		ids := make([]int64, 0, len(keys))
		for _, key := range keys {
			if id, ok := idOf(key); ok {
				ids = append(ids, id)
			}
		}
		cis := make([]*redis.StringCmd, len(ids))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cis[i] = p.HGet(ctx, s.orderKey(id), fCustomerID)
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		there := make([]*redis.BoolCmd, len(ids))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				if cid, ok := store.ParseID(cis[i].Val()); ok {
					there[i] = p.HExists(ctx, s.customerLinks(cid), strconv.FormatInt(id, 10))
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for i, id := range ids {
			if there[i] == nil || there[i].Val() {
				continue
			}
			cid, _ := store.ParseID(cis[i].Val())
			if err := s.repairLink(ctx, cid, id, fix, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	prefix := s.prefix + "c:{c}:"
	return s.scanKeys(ctx, globEscape(prefix)+"*:links", func(keys []string) error {
		for _, key := range keys {
			cid, ok := store.ParseID(strings.TrimSuffix(strings.TrimPrefix(key, prefix), ":links"))
			if !ok {
				continue
			}
			holds, err := s.rdb.HGetAll(ctx, key).Result()
			if err != nil {
				return err
			}
			c, err := s.checkLinks(ctx, cid, holds)
			if err != nil {
				return err
			}
			for oid, v := range c.unbacked {
				if !fix {
					r.Holds++
					continue
				}
				linked, err := s.dropUnlinked(ctx, cid, oid, holdTokens(v))
				if err != nil {
					return err
				}
				if linked {
					r.InFlight++
				} else {
					r.Holds++
				}
			}
		}
		return nil
	})
}

// repairLink looks again at order oid, which linked customer cid when
// read while its links had no entry of it: in the order a writer works (an
// unlink drops the entry after its write), the order first.
func (s *Store) repairLink(ctx context.Context, cid, oid int64, fix bool, r *RepairReport) error {
	field := strconv.FormatInt(oid, 10)
	ci, err := s.rdb.HGet(ctx, s.orderKey(oid), fCustomerID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if there, err := s.rdb.HExists(ctx, s.customerLinks(cid), field).Result(); err != nil || there || ci != strconv.FormatInt(cid, 10) {
		return err
	}
	r.Missing++
	if !fix {
		return nil
	}
	ok, err := s.addHold(ctx, &linkHold{cid: cid, oid: oid, token: newToken(), at: time.Now()})
	if err != nil {
		return err
	}
	if ok {
		r.Fixed++
	} else {
		r.Missing-- // not stored: the order's link dangles
		r.Dangling++
	}
	return nil
}
