package store

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	firstNames = []string{"Ada", "Alan", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances", "Edsger",
		"Radia", "Donald", "Hedy", "John", "Katherine", "Niklaus", "Shafi", "Tim", "Sophie", "Yukihiro"}
	lastNames = []string{"Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Thompson", "Liskov", "Ritchie",
		"Allen", "Dijkstra", "Perlman", "Knuth", "Lamarr", "Backus", "Johnson", "Wirth", "Goldwasser", "Berners-Lee",
		"Wilson", "Matsumoto"}
	products = []struct {
		sku, name string
		price     Money
	}{
		{"MUG-01", "Enamel mug", 1250}, {"TEE-M", "Cotton T-shirt, M", 1999}, {"TEE-L", "Cotton T-shirt, L", 1999},
		{"NB-A5", "A5 notebook", 799}, {"PEN-3", "Gel pens, pack of 3", 499}, {"BAG-T", "Canvas tote bag", 1599},
		{"CAP-1", "Baseball cap", 1800}, {"STK-10", "Sticker sheet", 300}, {"BTL-05", "Steel bottle 0.5 l", 2450},
		{"USB-C", "USB-C cable, 1 m", 899}, {"LMP-D", "Desk lamp", 4500}, {"KBD-60", "60% keyboard", 8900},
	}
	seedStatuses = []Status{Pending, Pending, Confirmed, Confirmed, Shipped, Delivered, Delivered, Delivered, Cancelled}
	// emails[first][last] is the demo address of a name, made once.
	emails = func() map[string]map[string]string {
		m := map[string]map[string]string{}
		for _, f := range firstNames {
			m[f] = map[string]string{}
			for _, l := range lastNames {
				m[f][l] = lower(f+" "+l) + "@example.com"
			}
		}
		return m
	}()
)

// Seed adds n demo orders (names, one to five items, mixed statuses, dates
// over the past year, older ids older) and returns how many it wrote. The
// same rnd gives the same orders.
//
// It is built for a million orders in well under 30 seconds on a small
// machine; Redis's own work is what limits it (docs/performance.md):
//
//   - Orders go in batches of seedBatch, each one plain pipeline (no MULTI),
//     written by seedWorkers goroutines at once, each on its own connection.
//   - A batch writes its hashes, then its id-index entries: one ZADD per
//     index with all the batch's members. Ids ascend, so each insertion lands
//     at the end of its skiplist, where the path is hot in Redis's cache.
//   - The name-index entries are written last, sorted by member, in large
//     ZADDs: inserting a million names at random places in a skiplist costs
//     Redis several times as much (a cache miss per level).
//
// So a reader may see a seeded order before it is listed, never an index
// entry without its order. On a Cluster, where one pipeline spans nodes,
// each batch's hashes go in a round trip of their own before its entries.
func (s *Store) Seed(ctx context.Context, n int, rnd *rand.Rand) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	last, err := s.rdb.IncrBy(ctx, s.seqKey(), int64(n)).Result()
	if err != nil {
		return 0, wrap(err)
	}
	first := last - int64(n) + 1
	g := seeder{s: s, first: first, last: last, now: s.now().UTC().Truncate(time.Second)}
	// Up to seedNameChunk orders at a time: their hashes and id entries,
	// then their name entries in member order.
	written := 0
	for start := first; start <= last; start += seedNameChunk {
		end := min(start+seedNameChunk-1, last)
		names, err := g.writeOrders(ctx, start, end, rnd)
		if err == nil {
			err = g.writeNames(ctx, names)
		}
		if err != nil {
			return written, wrap(err)
		}
		written += int(end - start + 1)
	}
	return written, nil
}

const (
	// seedBatch orders go in one pipeline.
	seedBatch = 1000
	// seedWorkers pipelines are in flight at once: enough to keep Redis
	// busy while the others build their next batch.
	seedWorkers = 4
	// seedNameChunk orders have their name entries sorted and written
	// together.
	seedNameChunk = 1 << 20
	// seedNameZAdd name entries go in one ZADD.
	seedNameZAdd = 2000
)

// seeder makes and writes demo orders.
type seeder struct {
	s           *Store
	first, last int64
	now         time.Time
}

// seedName is an order's entry in the name indexes.
type seedName struct {
	member string
	status Status
}

// writeOrders writes orders start to end (hashes and id indexes) with
// several goroutines, and returns their name entries.
func (g *seeder) writeOrders(ctx context.Context, start, end int64, rnd *rand.Rand) ([]seedName, error) {
	type job struct {
		start, end int64
		s1, s2     uint64
		names      []seedName
	}
	names := make([]seedName, end-start+1)
	jobs := make(chan job)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(seedWorkers, int((end-start)/seedBatch)+1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := g.worker()
			for j := range jobs {
				if err := w.write(ctx, j.start, j.end, rand.New(rand.NewPCG(j.s1, j.s2)), j.names); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
send:
	for b := start; b <= end; b += seedBatch {
		// Each batch's randomness is drawn here, in order: the orders do not
		// depend on which goroutine writes them.
		e := min(b+seedBatch-1, end)
		j := job{b, e, rnd.Uint64(), rnd.Uint64(), names[b-start : e-start+1]}
		select {
		case jobs <- j:
		case <-ctx.Done():
			break send
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return names, firstErr
}

// writeNames adds the name entries in member order, in large ZADDs, a few
// pipelines at a time.
func (g *seeder) writeNames(ctx context.Context, names []seedName) error {
	slices.SortFunc(names, func(a, b seedName) int { return strings.Compare(a.member, b.member) })
	s := g.s
	byStatus := map[Status][]redis.Z{}
	all := make([]redis.Z, 0, seedNameZAdd)
	p := s.rdb.Pipeline()
	flush := func(final bool) error {
		if len(all) == seedNameZAdd || (final && len(all) > 0) {
			p.ZAdd(ctx, s.nameIndex(""), all...)
			all = all[:0:0]
		}
		for st, zs := range byStatus {
			if len(zs) == seedNameZAdd || (final && len(zs) > 0) {
				p.ZAdd(ctx, s.nameIndex(st), zs...)
				byStatus[st] = nil
			}
		}
		if p.Len() >= 8 || (final && p.Len() > 0) {
			if _, err := p.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	for _, nm := range names {
		z := redis.Z{Member: nm.member}
		all = append(all, z)
		byStatus[nm.status] = append(byStatus[nm.status], z)
		if err := flush(false); err != nil {
			return err
		}
	}
	return flush(true)
}

// seedWorker is one goroutine's reusable buffers.
type seedWorker struct {
	*seeder
	orders []Order
	items  []Item
	args   []any
	ids    map[Status][]redis.Z
	buf    []byte
}

func (g *seeder) worker() *seedWorker {
	return &seedWorker{seeder: g, ids: map[Status][]redis.Z{}}
}

// order makes demo order id.
func (w *seedWorker) order(id int64, rnd *rand.Rand) Order {
	year := int64(365 * 24 * 3600)
	n := max(w.last-w.first+1, 1)
	// Older ids get older dates, so newest-first stays date order.
	age := year * (w.last - id) / n
	created := w.now.Add(-time.Duration(age+rnd.Int64N(3600)) * time.Second)
	first, last := firstNames[rnd.IntN(len(firstNames))], lastNames[rnd.IntN(len(lastNames))]
	o := Order{
		ID:       id,
		Customer: first + " " + last,
		Status:   seedStatuses[rnd.IntN(len(seedStatuses))],
		Currency: "USD",
		Version:  1,
	}
	if rnd.IntN(3) > 0 {
		o.Email = emails[first][last]
	}
	k := 1 + rnd.IntN(5)
	start := len(w.items)
	for range k {
		p := products[rnd.IntN(len(products))]
		w.items = append(w.items, Item{SKU: p.sku, Name: p.name, Quantity: 1 + rnd.Int64N(4), UnitPrice: p.price})
	}
	o.Items = w.items[start:len(w.items):len(w.items)]
	o.derive()
	o.CreatedAt, o.UpdatedAt = created, created
	if o.Status != Pending {
		o.UpdatedAt = created.Add(time.Duration(rnd.Int64N(72*3600)) * time.Second)
		if o.UpdatedAt.After(w.now) {
			o.UpdatedAt = w.now
		}
	}
	return o
}

// write makes orders start to end and writes their hashes and id-index
// entries in one pipeline (two on a Cluster); names receives their
// name-index entries.
func (w *seedWorker) write(ctx context.Context, start, end int64, rnd *rand.Rand, names []seedName) error {
	w.orders, w.items = w.orders[:0], w.items[:0]
	for id := start; id <= end; id++ {
		w.orders = append(w.orders, w.order(id, rnd))
	}
	for st := range w.ids {
		w.ids[st] = w.ids[st][:0]
	}
	s := w.s
	p := s.rdb.Pipeline()
	for i := range w.orders {
		o := &w.orders[i]
		w.args = orderArgs(w.args[:0], o)
		p.HSet(ctx, s.orderKey(o.ID), w.args...)
		idz := redis.Z{Score: float64(o.ID), Member: strconv.FormatInt(o.ID, 10)}
		w.ids[""] = append(w.ids[""], idz)
		w.ids[o.Status] = append(w.ids[o.Status], idz)
		w.buf = appendNameMember(w.buf[:0], o.Customer, o.ID)
		names[i] = seedName{string(w.buf), o.Status}
	}
	if s.cluster {
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	for st, zs := range w.ids {
		if len(zs) > 0 {
			p.ZAdd(ctx, s.idIndex(st), zs...)
		}
	}
	_, err := p.Exec(ctx)
	return err
}

// Count returns how many orders the collection holds.
func (s *Store) Count(ctx context.Context) (int64, error) {
	n, err := s.rdb.ZCard(ctx, s.idIndex("")).Result()
	return n, wrap(err)
}

func lower(name string) string {
	b := []byte(name)
	out := b[:0]
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			out = append(out, c+32)
		case c == ' ':
			out = append(out, '.')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}
