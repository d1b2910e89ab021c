package redisstore_test

// Search layout 5: the term sets split by status and merged for all
// statuses by unionScript, several terms drawn from the query's status,
// datedSorted, and the upgrade from layout 4 (docs/data.md "Search",
// "Reads", "Upgrades").

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// unionOracle is oracleSearch with the driver (the term whose matches set
// the match order) chosen as docs/data.md says: the term with the fewest
// matches in the query's status.

// anItem is the one item of the orders made here: an order moves past
// pending only with an item. It has no SKU, so it adds no search term.
var anItem = []store.ItemInput{{Name: "Part", Quantity: "1", UnitPrice: "1.50"}}

func unionOracle(all []*store.Order, q store.OrderQuery) []int64 {
	if q.Status == "" {
		return oracleSearch(all, q)
	}
	var in []*store.Order
	for _, o := range all {
		if o.Status == q.Status {
			in = append(in, o)
		}
	}
	// The hits are all in q.Status: the driver counted there orders them
	// as oracleSearch orders its hits.
	return oracleSearch(in, q)
}

// unionEvery reads every order up to seq (8 at a time).
func unionEvery(t *testing.T, f *fixture) []*store.Order {
	t.Helper()
	ctx := context.Background()
	last, err := f.tg.Client.Get(ctx, f.prefix+"seq").Int64()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]*store.Order, last)
	unionParallel(t, int(last), func(i int) error {
		o, err := f.s.GetOrder(ctx, int64(i+1))
		if err == nil {
			got[i] = o
		} else if store.ErrorCode(err) != store.ENOTFOUND {
			return err
		}
		return nil
	})
	return slices.DeleteFunc(got, func(o *store.Order) bool { return o == nil })
}

// unionParallel runs fn(i) for i in [0, n) on 8 goroutines.
func unionParallel(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if err := fn(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

// unionMove takes order id from pending to status st along the allowed
// transitions.
func unionMove(ctx context.Context, s *redisstore.Store, id int64, st store.Status) error {
	path := map[store.Status][]string{
		store.Pending:   nil,
		store.Confirmed: {"confirmed"},
		store.Shipped:   {"confirmed", "shipped"},
		store.Delivered: {"confirmed", "shipped", "delivered"},
		store.Cancelled: {"cancelled"},
	}[st]
	for _, s2 := range path {
		if _, err := s.UpdateOrder(ctx, id, store.OrderInput{Status: ptr(s2)}, 0); err != nil {
			return fmt.Errorf("move %d to %s: %w", id, s2, err)
		}
	}
	return nil
}

// unionCheckPage compares one page with the oracle's slice of it.
func unionCheckPage(t *testing.T, f *fixture, q store.OrderQuery, want []int64) bool {
	t.Helper()
	p := f.list(t, q)
	off := (q.Page - 1) * q.PerPage
	w := want[min(off, len(want)):min(off+q.PerPage, len(want))]
	if p.Total != int64(len(want)) || p.TotalIsLowerBound || !slices.Equal(ids(p), w) && !(len(w) == 0 && len(p.Orders) == 0) {
		t.Errorf("List(q=%q status=%q per_page=%d page=%d) (offset %d): %v total %d (lower bound %v);\nwant %v total %d",
			q.Q, q.Status, q.PerPage, q.Page, off, ids(p), p.Total, p.TotalIsLowerBound, w, len(want))
		return false
	}
	return true
}

// unionJoined pages through q at pp per page and compares the pages joined
// with want, and the total of every page.
func unionJoined(t *testing.T, f *fixture, q store.OrderQuery, want []int64, pp int) bool {
	t.Helper()
	q.PerPage = pp
	var got []int64
	for page := 1; page <= len(want)/pp+2; page++ {
		q.Page = page
		p := f.list(t, q)
		if p.Total != int64(len(want)) || p.TotalIsLowerBound {
			t.Errorf("List(q=%q status=%q per_page=%d page=%d): total %d (lower bound %v), want %d", q.Q, q.Status, pp, page, p.Total, p.TotalIsLowerBound, len(want))
			return false
		}
		got = append(got, ids(p)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List(q=%q status=%q per_page=%d), pages joined:\n got %v\nwant %v", q.Q, q.Status, pp, got, want)
		return false
	}
	return true
}

// unionData builds, in f, orders whose search terms stress the union:
//   - 400 seeded orders (every status; SKUs TEE-M and TEE-L share a prefix);
//   - 280 "q" orders, all cancelled (the other statuses' q sets are empty):
//     words Qa000..Qa279, SKUs QZ-1 and QZ-1<k> (a dup), every fifth an
//     email with '!' (the lowest byte a term can have after the NUL);
//   - 270 orders with words of bytes >= 0x80: Cyrillic "ж…", CJK Extension
//     B (four bytes, 0x80 continuation bytes), Hangul; in pending, confirmed
//     and delivered, with terms that are the start of another order's term
//     ("ж" ends at the NUL where "жа" goes on).
//
// Order 12 is renamed "12m Ann" (a "12" word) so that the digits term names
// it and also matches it as a word.
func unionData(t *testing.T, f *fixture) []*store.Order {
	t.Helper()
	ctx := context.Background()
	if _, err := f.s.Seed(ctx, 400, rand.New(rand.NewPCG(11, 12))); err != nil {
		t.Fatal(err)
	}
	cyr := []rune("абвгдежзиклмнопрстуфхцчшщъыьэюя") // no й, ё: they decompose
	unionParallel(t, 280, func(i int) error {
		in := store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(fmt.Sprintf("Quill Qa%03d", i))}
		if i%5 == 0 {
			in.Email = ptr(fmt.Sprintf("q!%d@ex.io", i))
		}
		attackSKUs("QZ-1", fmt.Sprintf("QZ-1%d", i%7))(&in)
		o, err := f.s.CreateOrder(ctx, in)
		if err != nil {
			return err
		}
		return unionMove(ctx, f.s, o.ID, store.Cancelled)
	})
	unionParallel(t, 270, func(i int) error {
		r := rand.New(rand.NewPCG(uint64(i), 3))
		w := "ж"
		for range r.IntN(3) {
			w += string(cyr[r.IntN(len(cyr))])
		}
		words := []string{w, []string{"𠀀", "𠀀𠀁", "𪛖", "힣", "жя"}[i%5], "Ann"}
		in := store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(strings.Join(words, " "))}
		o, err := f.s.CreateOrder(ctx, in)
		if err != nil {
			return err
		}
		return unionMove(ctx, f.s, o.ID, []store.Status{store.Pending, store.Confirmed, store.Delivered}[i%3])
	})
	// "fa fb": in pending fb has fewer matches (20 < 30), in delivered fa
	// (15 < 45), in all statuses fa (45 < 65). The words' numbers run in
	// opposite directions, so the driver decides the match order.
	unionParallel(t, 75, func(i int) error {
		name, st := fmt.Sprintf("Fa%02d Fb%02d", i, 99-i), store.Pending
		switch {
		case i >= 20 && i < 30:
			name = fmt.Sprintf("Fa%02d", i)
		case i >= 30 && i < 45:
			st = store.Delivered
		case i >= 45:
			name, st = fmt.Sprintf("Fb%02d", 99-i), store.Delivered
		}
		o, err := f.s.CreateOrder(ctx, store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(name)})
		if err != nil {
			return err
		}
		return unionMove(ctx, f.s, o.ID, st)
	})
	// Terms longer than 16 bytes (candidates from every status's sets,
	// sorted and read once per order) in four statuses.
	unionParallel(t, 24, func(i int) error {
		in := store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(fmt.Sprintf("Lo%02d", i))}
		if i%3 == 0 {
			in.Email = ptr(fmt.Sprintf("mechanicalkeyboardfan%d@ex.io", i))
		}
		attackSKUs("MECHANICAL-KEYBOARD-60", fmt.Sprintf("MECHANICAL-KEYBOARD-6%d", i%3))(&in)
		o, err := f.s.CreateOrder(ctx, in)
		if err != nil {
			return err
		}
		return unionMove(ctx, f.s, o.ID, store.Statuses[i%4])
	})
	f.update(t, 12, store.OrderInput{Customer: ptr("12m Ann")})
	return unionEvery(t, f)
}

// TestUnionPagesAgreeWithTheOracle: one term in every status and in
// each (unionScript and pageScript), at page sizes whose windows start and
// end around the 256th match (the shallow merge to the bisection), the last
// page and past it, over terms with bytes >= 0x80, terms ending where
// another goes on, an email with '!', dups in one status and across
// statuses, one status holding every match and the others' sets empty, and
// the digits term that names order 12 with and without a status.
func TestUnionPagesAgreeWithTheOracle(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			all := unionData(t, f)
			queries := []string{"t", "tee-", "tee-m", "a", "ann", "q", "qa1", "qz-1", "qz-13", "q!", "ж", "жя", "жа", "𠀀", "𪛖", "힣", "12", "1", "m",
				// Several terms: candidates from the query's status, exact
				// (the driver, the term with the fewest matches, may differ
				// between all statuses and one).
				"ann ж", "ж ann", "a t", "q qz-13", "ann 12", "12 ann", "жя 𠀀", "q!1", "tee-m ada", "fa fb", "fb fa", "fa0 fb",
				// Folded, and longer than 16 bytes.
				"Ж", "ЖЯ", "mechanical-keyboard", "mechanical-keyboard-6", "mechanical-keyboard-61", "mechanicalkeyboardfan1", "mechanical lo0"}
			for _, qs := range queries {
				for _, st := range append([]store.Status{""}, store.Statuses...) {
					q := store.OrderQuery{Q: qs, Status: st}
					want := unionOracle(all, q)
					if !unionJoined(t, f, q, want, 100) {
						continue
					}
					if len(want) <= 200 {
						continue
					}
					// Windows around the 256th: offset+count on both sides
					// of 256, offsets 254..258, the last page, past the end.
					for _, pp := range []int{1, 2, 3, 56, 57, 64, 85, 99} {
						for page := 1; (page-1)*pp < len(want)+pp; page++ {
							lo, hi := (page-1)*pp, page*pp
							near := (hi >= 250 && lo <= 262) || page == (len(want)+pp-1)/pp || lo >= len(want)
							if near {
								q.Page, q.PerPage = page, pp
								unionCheckPage(t, f, q, want)
							}
						}
					}
				}
			}
			if q := (store.OrderQuery{Q: "fa fb", Status: store.Pending}); slices.Equal(unionOracle(all, q), oracleSearch(all, q)) {
				t.Fatal("fa fb in pending: the driver in the status and in all statuses give the same order; the data does not test the status's driver")
			}
			if w := unionOracle(all, store.OrderQuery{Q: "q", Status: store.Cancelled}); len(w) < 280 {
				t.Fatalf("q in cancelled: %d matches, want them all there", len(w))
			}
			if w := unionOracle(all, store.OrderQuery{Q: "ж"}); len(w) < 260 {
				t.Fatalf("ж: %d matches, want past 256", len(w))
			}
		})
	}
}

// TestUnionDigitsTermWithAStatus: "12" names order 12 by id and is
// the start of 300 orders' words in three statuses. Order 12 comes first
// when it is in the query's status (and not at all when it is not), the
// others follow in match order, with exact totals, at every page size
// around the 256th match, whether order 12's own word comes first, in the
// middle, last, or is not a "12" word at all (counted by the id only), and
// in each status it moves through. Two terms ("12 bo", "bo 12") with a
// status are exact too.
func TestUnionDigitsTermWithAStatus(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			const n = 300
			unionParallel(t, n, func(i int) error {
				name := fmt.Sprintf("12%c%c%c Bo", 'a'+i/676, 'a'+i/26%26, 'a'+i%26)
				o, err := f.s.CreateOrder(ctx, store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(name)})
				if err != nil {
					return err
				}
				if o.ID == 12 {
					return nil
				}
				return unionMove(ctx, f.s, o.ID, []store.Status{store.Pending, store.Confirmed, store.Cancelled}[i%3])
			})
			for _, st := range []store.Status{store.Pending, store.Confirmed, store.Shipped} {
				if st != store.Pending {
					f.update(t, 12, store.OrderInput{Status: ptr(string(st))})
				}
				names := []string{"12 Bo", "12mmm Bo", "12zzz Bo", "Bo Other"}
				if st != store.Pending {
					names = []string{"12zzz Bo", "Bo Other"}
				}
				for _, name := range names {
					f.update(t, 12, store.OrderInput{Customer: ptr(name)})
					all := unionEvery(t, f)
					for _, qst := range append([]store.Status{""}, store.Statuses...) {
						for _, qs := range []string{"12", "12 bo", "bo 12"} {
							q := store.OrderQuery{Q: qs, Status: qst}
							want := unionOracle(all, q)
							if qs == "12" && (qst == "" || qst == st) {
								if len(want) == 0 || want[0] != 12 {
									t.Errorf("q=%q status=%q (order 12 %s, %q): order 12 is not first: %v", qs, qst, st, name, want[:min(3, len(want))])
								}
							}
							if !unionJoined(t, f, q, want, 100) {
								continue
							}
							if qst != "" || qs != "12" {
								continue
							}
							unionJoined(t, f, q, want, 7)
							for _, c := range []struct{ pp, page int }{{1, 254}, {1, 255}, {1, 256}, {1, 257}, {1, 258}, {1, 259}, {57, 4}, {57, 5}, {64, 4}, {64, 5}, {85, 3}, {85, 4}, {99, 3}, {100, 3}, {1, len(want)}, {1, len(want) + 1}} {
								q.Page, q.PerPage = c.page, c.pp
								unionCheckPage(t, f, q, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestUnionStatusChangesWhilePaging: an order that changes status
// moves its term entries from one status's sets to another's, but its
// members stay the same, so the union of the five (a term in every status)
// does not change: pages read while orders move must join to exactly the
// oracle's list, with the same exact total on every page, never repeating
// or skipping an order, shallow and deep. On a single Redis (and
// miniredis) the move is one transaction. On a Cluster the entries move
// in the settle after the record's transaction, so a page may miss an
// order for a moment; it must still never list one twice, and at rest
// agree.
func TestUnionStatusChangesWhilePaging(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			const n = 330
			unionParallel(t, n, func(i int) error {
				in := store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(fmt.Sprintf("Pa%c%c Lee", 'a'+i*7%26, 'a'+i%26))}
				if i%4 == 0 {
					attackSKUs("PA-1", "PA-12")(&in) // a dup in the same range
				}
				_, err := f.s.CreateOrder(ctx, in)
				return err
			})
			want := oracleSearch(unionEvery(t, f), store.OrderQuery{Q: "pa"})
			if len(want) != n {
				t.Fatalf("pa: %d matches, want %d", len(want), n)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var moves atomic.Int64
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(5, 5))
				next := map[string][]string{"pending": {"confirmed", "cancelled"}, "confirmed": {"shipped", "cancelled"}, "shipped": {"delivered"}}
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := int64(1 + rnd.IntN(n))
					o, err := f.s.GetOrder(ctx, id)
					if err != nil {
						t.Errorf("get %d: %v", id, err)
						return
					}
					to := next[string(o.Status)]
					if len(to) == 0 {
						continue
					}
					if _, err := f.s.UpdateOrder(ctx, id, store.OrderInput{Status: ptr(to[rnd.IntN(len(to))])}, 0); err != nil {
						t.Errorf("move %d: %v", id, err)
						return
					}
					moves.Add(1)
					time.Sleep(time.Millisecond) // spread the moves over the walks
				}
			}()
			var walks int
			deadline := time.Now().Add(2 * time.Second)
			for i := 0; time.Now().Before(deadline) || i < 4; i++ {
				pp := []int{1, 7, 57, 100}[i%4]
				if pp == 1 && i%8 != 0 {
					pp = 3
				}
				q := store.OrderQuery{Q: "pa", PerPage: pp}
				var got []int64
				for page := 1; page <= n/pp+1; page++ {
					q.Page = page
					p := f.list(t, q)
					seen := map[int64]bool{}
					for _, id := range ids(p) {
						if seen[id] {
							t.Errorf("per page %d page %d lists order %d twice: %v", pp, page, id, ids(p))
						}
						seen[id] = true
					}
					if !tg.Cluster && p.Total != n {
						t.Errorf("per page %d page %d: total %d, want %d", pp, page, p.Total, n)
					}
					got = append(got, ids(p)...)
				}
				walks++
				if !tg.Cluster && !slices.Equal(got, want) {
					t.Errorf("per page %d, pages read while statuses change, joined:\n got %v\nwant %v", pp, got, want)
					break
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d walks while %d status changes", walks, moves.Load())
			if moves.Load() < 20 {
				t.Errorf("only %d status changes happened during the walks", moves.Load())
			}
			if tg.Cluster {
				if _, err := f.s.Repair(ctx, true); err != nil {
					t.Fatal(err)
				}
			}
			all := unionEvery(t, f)
			for _, st := range append([]store.Status{""}, store.Statuses...) {
				q := store.OrderQuery{Q: "pa", Status: st}
				unionJoined(t, f, q, unionOracle(all, q), 57)
			}
		})
	}
}

// splitZAdd is a node hook that, once armed, sends a pipeline holding the
// ZADD of member to key in two parts, that ZADD ending the first, and
// calls between() in between: what a reader's script finds when it runs
// between two commands of a Cluster settle.
type splitZAdd struct {
	armed       atomic.Bool
	key, member string
	between     func()
}

func (h *splitZAdd) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *splitZAdd) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *splitZAdd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for i, c := range cmds {
			a := c.Args()
			if c.Name() == "zadd" && len(a) == 4 && fmt.Sprint(a[1]) == h.key && fmt.Sprint(a[3]) == h.member && i+1 < len(cmds) && h.armed.CompareAndSwap(true, false) {
				err1 := next(ctx, cmds[:i+1])
				h.between()
				return errors.Join(err1, next(ctx, cmds[i+1:]))
			}
		}
		return next(ctx, cmds)
	}
}

// TestUnionClusterSettleListsAnOrderTwice: on a Cluster an order's
// term entries move to its new status's sets in the settle after its
// transaction, one pipeline: the ZADD of each term entry, then those of its
// dup entries. Order X has SKUs KBD-60 and KBD-61: "kbd" must count it once
// (KBD-61's entry is in the dup sets). Between the ZADD of KBD-61's term
// entry and the ZADDs of its dups, a search for "kbd" counts X twice and its
// page lists X twice, in every status and in confirmed alone. The same
// window exists on every create of such an order; layout 5 opens it on
// every status change too. allows a list that lacks an entry or
// holds an old one for a moment, not a page that repeats an order.
func TestUnionClusterSettleListsAnOrderTwice(t *testing.T) {
	tg, addrs := clusterTarget(t)
	ctx := context.Background()
	f := fresh(t, tg)
	for i := range 5 {
		f.create(t, fmt.Sprintf("Other %d", i), attackSKUs("KBD-7"))
	}
	x := f.create(t, "Xavier", attackSKUs("KBD-60", "KBD-61"))
	var member string
	ms, err := tg.Client.ZRange(ctx, f.prefix+"ix:{w}:pending:k", 0, -1).Result()
	must(t, err)
	for _, m := range ms {
		if strings.HasPrefix(m, "kbd 61\x00") {
			member = m
		}
	}
	if member == "" {
		t.Fatalf("no entry for KBD-61 among %q", ms)
	}
	var pages []store.OrderPage
	h := &splitZAdd{key: f.prefix + "ix:{w}:confirmed:k", member: member, between: func() {
		for _, q := range []store.OrderQuery{{Q: "kbd"}, {Q: "kbd", Status: store.Confirmed}, {Q: "kbd", Page: 2, PerPage: 3}} {
			pages = append(pages, f.list(t, q))
		}
	}}
	h.armed.Store(true)
	hs := redisstore.New(hookedCluster(t, addrs, h), redisstore.Options{Prefix: f.prefix, Cluster: true})
	if _, err := hs.UpdateOrder(ctx, x.ID, store.OrderInput{Status: ptr("confirmed")}, 0); err != nil {
		t.Fatal(err)
	}
	if h.armed.Load() {
		t.Fatal("the hook did not see the settle's ZADD")
	}
	for i, p := range pages {
		n := 0
		for _, id := range ids(p) {
			if id == x.ID {
				n++
			}
		}
		if n > 1 || p.Total > 6 {
			t.Errorf("search %d during the settle: order %d listed %d times: %v (total %d, want at most 6)", i, x.ID, n, ids(p), p.Total)
		}
	}
	if p := f.list(t, store.OrderQuery{Q: "kbd"}); p.Total != 6 || len(p.Orders) != 6 {
		t.Errorf("at rest: %v total %d, want 6 orders", ids(p), p.Total)
	}
}

// TestUnionRoundTrips: a page of one term costs two round trips (the
// script with the HGETALL of the order digits name, then the page's
// orders), in every status and in one, shallow, at the 256th match and
// deep; several terms in one status one per term plus two or three.
func TestUnionRoundTrips(t *testing.T) {
	var tg testutil.Target
	for _, x := range testutil.Targets(t) {
		if x.Name == "redis" {
			tg = x
		}
	}
	if tg.Client == nil {
		testutil.Skip(t, testutil.NoRealRedis)
	}
	f := fresh(t, tg)
	seeded(t, f, 700, rand.New(rand.NewPCG(8, 9)))
	for i := range 30 { // "12" words: the digits term has a page to read
		o := f.create(t, fmt.Sprintf("12%c Lee", 'a'+i))
		if i%2 == 0 {
			f.update(t, o.ID, store.OrderInput{Status: ptr("confirmed")})
		}
	}
	c, n := testutil.CountingClient(t, tg)
	s := redisstore.New(c, redisstore.Options{Prefix: f.prefix})
	for _, c := range []struct {
		q   store.OrderQuery
		max int64
	}{
		{store.OrderQuery{Q: "t"}, 2}, {store.OrderQuery{Q: "t", Page: 11, PerPage: 25}, 2}, {store.OrderQuery{Q: "t", Page: 256, PerPage: 1}, 2},
		{store.OrderQuery{Q: "t", Page: 257, PerPage: 1}, 2}, {store.OrderQuery{Q: "t", Page: 4, PerPage: 100}, 2}, {store.OrderQuery{Q: "a", Page: 3, PerPage: 100}, 2},
		{store.OrderQuery{Q: "12"}, 2}, {store.OrderQuery{Q: "12", Page: 3, PerPage: 7}, 2}, {store.OrderQuery{Q: "t", Status: store.Delivered, Page: 3, PerPage: 100}, 2},
		{store.OrderQuery{Q: "12", Status: store.Confirmed, Page: 2, PerPage: 3}, 2}, {store.OrderQuery{Q: "12", Status: store.Delivered}, 2},
		{store.OrderQuery{Q: "t a", Status: store.Delivered, Page: 2}, 4}, {store.OrderQuery{Q: "12 t", Status: store.Delivered}, 5},
		{store.OrderQuery{Q: "t a m", Page: 3, PerPage: 10}, 5},
	} {
		n.Reset()
		p, err := s.ListOrders(context.Background(), c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Calls(); got > c.max {
			t.Errorf("List(q=%q status=%q page %d per page %d): %d round trips, want at most %d", c.q.Q, c.q.Status, c.q.Page, c.q.PerPage, got, c.max)
		}
		if c.q.Page > 1 && c.q.Q == "t" && c.q.Status == "" && len(p.Orders) == 0 {
			t.Errorf("List(q=t page %d per page %d): empty (total %d): the case does not test a deep page", c.q.Page, c.q.PerPage, p.Total)
		}
	}
}

// TestUnionDatedSortAtTenThousand: a created-date range with the
// customer, updated or total sort is exact when it holds at most 10,000
// orders (datedSorted), in the sort's order, to the last page; one more
// order in the range makes the total a lower bound (docs/data.md), never a
// wrong count, and page 1 still agrees.
func TestUnionDatedSortAtTenThousand(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			if _, err := f.s.Seed(context.Background(), store.MaxCandidates, rand.New(rand.NewPCG(21, 22))); err != nil {
				t.Fatal(err)
			}
			day0 := f.clock.Now()
			f.clock.Advance(30 * 24 * time.Hour)
			// Outside the first range, and first in the customer sort.
			f.create(t, "Aaron Aardvark")
			day1 := f.clock.Now()
			all := unionEvery(t, f)
			if len(all) != store.MaxCandidates+1 {
				t.Fatalf("%d orders", len(all))
			}
			check := func(q store.OrderQuery) {
				t.Helper()
				want := oracleSorted(all, q)
				p := f.list(t, q)
				off := (q.Page - 1) * q.PerPage
				w := want[min(off, len(want)):min(off+q.PerPage, len(want))]
				if p.Total != int64(len(want)) || p.TotalIsLowerBound || !slices.Equal(ids(p), w) && len(w)+len(p.Orders) > 0 {
					t.Errorf("List(sort %s status %q from %v to %v page %d per page %d): total %d (lower bound %v), %d orders; want total %d, %v",
						q.Sort, q.Status, q.From.Format(time.DateOnly), q.To.Format(time.DateOnly), q.Page, q.PerPage, p.Total, p.TotalIsLowerBound, len(p.Orders), len(want), w)
				}
			}
			check(store.OrderQuery{Sort: store.SortCustomer, To: day0, Page: 1, PerPage: 100})
			check(store.OrderQuery{Sort: store.SortCustomer, To: day0, Page: 100, PerPage: 100}) // the last: the 10,000th
			check(store.OrderQuery{Sort: store.SortCustomer, To: day0, Page: 101, PerPage: 100})
			check(store.OrderQuery{Sort: store.SortTotalDesc, To: day0, Page: 37, PerPage: 100})
			check(store.OrderQuery{Sort: store.SortUpdated, To: day0, Page: 400, PerPage: 25})
			check(store.OrderQuery{Sort: store.SortCustomerDesc, From: day0.AddDate(0, -3, 0), To: day0, Status: store.Delivered, Page: 2, PerPage: 100})

			// 10,001 in the range.
			q := store.OrderQuery{Sort: store.SortCustomer, To: day1, Page: 1, PerPage: 100}
			want := oracleSorted(all, q)
			p := f.list(t, q)
			if p.Total > int64(len(want)) || !p.TotalIsLowerBound && p.Total != int64(len(want)) {
				t.Errorf("10,001 in the range: total %d (lower bound %v), want %d or a lower bound", p.Total, p.TotalIsLowerBound, len(want))
			}
			if !slices.Equal(ids(p), want[:100]) {
				t.Errorf("10,001 in the range, page 1:\n got %v\nwant %v", ids(p), want[:100])
			}
		})
	}
}

// TestUnionUpgradeFromLayoutFour: a store written by layout 4 (the
// search sets for all statuses together: ix:{w}:<c> and ix:{w}:<c>:<L>,
// here made from layout 5's by merging each status's sets, as layout 4
// wrote them, plus entries of an order deleted since) is upgraded at start:
// every entry moves to its order's status's sets, the old sets go, the
// deleted order's entries go, Repair finds nothing, and every search
// agrees with the oracle in every status and in each.
func TestUnionUpgradeFromLayoutFour(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			words := []string{"Ann", "Anna", "Annie", "Bob", "жан", "жанна", "𠀀", "12", "120"}
			skus := []string{"KBD-60", "KBD-61", "KBD-6", "ANN-1", "12-X"}
			rnd := rand.New(rand.NewPCG(3, 1))
			for i := range 60 {
				in := store.OrderInput{Items: anItem, HasItems: true, Customer: ptr(words[rnd.IntN(len(words))] + " " + words[rnd.IntN(len(words))])}
				var its []string
				for range rnd.IntN(3) {
					its = append(its, skus[rnd.IntN(len(skus))])
				}
				if len(its) == 0 && store.Statuses[i%5].NeedsItems() {
					its = append(its, "") // an item without a SKU: only drafts may have none
				}
				attackSKUs(its...)(&in)
				if i%4 == 0 {
					in.Email = ptr(strings.ToLower(words[rnd.IntN(4)]) + "@ex.io")
				}
				o, err := f.s.CreateOrder(ctx, in)
				must(t, err)
				must(t, unionMove(ctx, f.s, o.ID, store.Statuses[i%5]))
			}
			// Order 7's entries, put back after it is deleted: the search
			// entries that go with it.
			searchEntries := func() []string {
				var out []string
				for _, k := range f.keys(t) {
					if strings.HasPrefix(k, "ix:{w}:") {
						ms, err := tg.Client.ZRange(ctx, f.prefix+k, 0, -1).Result()
						must(t, err)
						for _, m := range ms {
							out = append(out, k+"\x01"+m)
						}
					}
				}
				return out
			}
			before := searchEntries()
			must(t, f.s.DeleteOrder(ctx, 7, 0, 0))
			after := searchEntries()
			gone := slices.DeleteFunc(before, func(e string) bool { return slices.Contains(after, e) })

			// Layout 4: the status sets merged into ix:{w}:<c>[:<L>].
			moved := 0
			for _, k := range f.keys(t) {
				st, rest, ok := strings.Cut(strings.TrimPrefix(k, "ix:{w}:"), ":")
				if !strings.HasPrefix(k, "ix:{w}:") || !ok || !slices.Contains(store.Statuses, store.Status(st)) {
					continue
				}
				ms, err := tg.Client.ZRange(ctx, f.prefix+k, 0, -1).Result()
				must(t, err)
				for _, m := range ms {
					must(t, tg.Client.ZAdd(ctx, f.prefix+"ix:{w}:"+rest, redis.Z{Member: m}).Err())
					moved++
				}
				must(t, tg.Client.Del(ctx, f.prefix+k).Err())
			}
			for _, g := range gone {
				k, m, _ := strings.Cut(g, "\x01")
				_, rest, _ := strings.Cut(strings.TrimPrefix(k, "ix:{w}:"), ":")
				must(t, tg.Client.ZAdd(ctx, f.prefix+"ix:{w}:"+rest, redis.Z{Member: m}).Err())
			}
			must(t, tg.Client.Set(ctx, f.prefix+"layout", "4", 0).Err())
			if moved == 0 || len(gone) == 0 {
				t.Fatalf("moved %d entries, %d of order 7", moved, len(gone))
			}

			ran, r, err := f.s.Upgrade(ctx)
			if err != nil || !ran {
				t.Fatalf("Upgrade: ran %v, %v, %v", ran, r, err)
			}
			t.Logf("Upgrade: %v", r)
			if r.Stale == 0 || r.Missing == 0 || r.Dangling == 0 {
				t.Errorf("Upgrade's repair found %v; want the stale, missing and dangling entries of layout 4", r)
			}
			if v, _ := tg.Client.Get(ctx, f.prefix+"layout").Result(); v != redisstore.Layout {
				t.Errorf("layout %q after Upgrade, want %q", v, redisstore.Layout)
			}
			for _, k := range f.keys(t) {
				if st, _, ok := strings.Cut(strings.TrimPrefix(k, "ix:{w}:"), ":"); strings.HasPrefix(k, "ix:{w}:") && (!ok || !slices.Contains(store.Statuses, store.Status(st))) {
					n, _ := tg.Client.ZCard(ctx, f.prefix+k).Result()
					t.Errorf("after Upgrade the layout 4 set %q remains (%d entries)", k, n)
				}
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair(check) after Upgrade: %v, %v", r, err)
			}
			all := unionEvery(t, f)
			for _, qs := range []string{"a", "ann", "anna", "kbd", "kbd-6", "kbd-61", "ж", "жанн", "𠀀", "12", "1", "b", "ann kbd", "12 ann"} {
				for _, st := range append([]store.Status{""}, store.Statuses...) {
					q := store.OrderQuery{Q: qs, Status: st}
					unionJoined(t, f, q, unionOracle(all, q), 7)
				}
			}
		})
	}
}
