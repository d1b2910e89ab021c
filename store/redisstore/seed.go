package redisstore

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

var (
	firstNames = []string{"Ada", "Alan", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances", "Edsger",
		"Radia", "Donald", "Hedy", "John", "Katherine", "Niklaus", "Shafi", "Tim", "Sophie", "Yukihiro"}
	lastNames = []string{"Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Thompson", "Liskov", "Ritchie",
		"Allen", "Dijkstra", "Perlman", "Knuth", "Lamarr", "Backus", "Johnson", "Wirth", "Goldwasser", "Berners-Lee",
		"Wilson", "Matsumoto"}
	demoProducts = []struct {
		sku, name string
		price     store.Money
	}{
		{"MUG-01", "Enamel mug", 1250}, {"TEE-M", "Cotton T-shirt, M", 1999}, {"TEE-L", "Cotton T-shirt, L", 1999},
		{"NB-A5", "A5 notebook", 799}, {"PEN-3", "Gel pens, pack of 3", 499}, {"BAG-T", "Canvas tote bag", 1599},
		{"CAP-1", "Baseball cap", 1800}, {"STK-10", "Sticker sheet", 300}, {"BTL-05", "Steel bottle 0.5 l", 2450},
		{"USB-C", "USB-C cable, 1 m", 899}, {"LMP-D", "Desk lamp", 4500}, {"KBD-60", "60% keyboard", 8900},
	}
	seedStatuses = []store.Status{store.Pending, store.Pending, store.Confirmed, store.Confirmed, store.Shipped, store.Delivered, store.Delivered, store.Delivered, store.Cancelled}
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

// Seed adds n demo orders (names, one to five different items, mixed
// statuses, created over the past year in id order) and returns how many it
// wrote. The same rnd gives the same orders.
//
// It is built for a million orders in well under 30 seconds on a small
// machine; Redis's own work is what limits it (docs/performance.md):
//
//   - Orders go in batches of seedBatch, each one plain pipeline of HSETs
//     (no MULTI), written by seedWorkers goroutines at once, each on its own
//     connection.
//   - Their index entries are the write path's own (orderEntries), gathered
//     for seedChunk orders at a time, sorted per index and written in large
//     ZADDs after the chunk's hashes: inserting entries at random places in
//     a big skiplist costs Redis several times as much (a cache miss per
//     level) as inserting them in order.
//
// So a reader may see a seeded order before it is listed, never an index
// entry without its order.
func (s *Store) Seed(ctx context.Context, n int, rnd *rand.Rand) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(1, 2))
	}
	for _, k := range registry {
		if err := k.seedDemo(ctx, s); err != nil {
			return 0, err
		}
	}
	last, err := s.rdb.IncrBy(ctx, s.seqKey(), int64(n)).Result()
	if err != nil {
		return 0, wrap(err)
	}
	first := last - int64(n) + 1
	rdb, done := patientClient(s.rdb)
	defer done()
	customers, err := s.customersByName(ctx)
	if err != nil {
		return 0, err
	}
	linked := make([]int64, 0, len(customers))
	for _, id := range customers {
		linked = append(linked, id)
	}
	// Marked before any order links them, placed after (last_order.go).
	tokens, err := s.markAll(ctx, linked)
	if err != nil {
		return 0, err
	}
	g := seeder{s: s, rdb: rdb, first: first, last: last, now: s.now().UTC().Truncate(time.Second), customers: customers}
	written := 0
	for start := first; start <= last; start += seedChunk {
		end := min(start+seedChunk-1, last)
		entries, err := g.writeOrders(ctx, start, end, rnd)
		if err == nil {
			err = g.writeEntries(ctx, entries)
		}
		if err != nil {
			return written, wrap(err)
		}
		written += int(end - start + 1)
	}
	return written, s.placeAllByLastOrder(ctx, tokens)
}

// seedLockTTL bounds how long a seed keeps other instances from seeding.
const seedLockTTL = 10 * time.Minute

// SeedIfEmpty seeds n demo orders when the store holds none (main's -seed),
// once among the instances that start together on one empty Redis: each
// would see it empty and seed its own n. The first takes a lock (kept
// seedLockTTL, or until its seed ends); the others leave the seeding to
// it: seeding is false for them, and for a store that holds orders.
func (s *Store) SeedIfEmpty(ctx context.Context, n int) (seeded bool, wrote int, err error) {
	if n <= 0 {
		return false, 0, nil
	}
	lock := s.prefix + "seeding"
	ok, err := s.rdb.SetNX(ctx, lock, "1", seedLockTTL).Result()
	if err != nil || !ok {
		return false, 0, wrap(err)
	}
	defer s.rdb.Del(context.WithoutCancel(ctx), lock)
	have, err := s.CountOrders(ctx)
	if err != nil || have > 0 {
		return false, 0, err
	}
	wrote, err = s.Seed(ctx, n, nil)
	return true, wrote, err
}

const (
	// seedBatch orders go in one pipeline.
	seedBatch = 1000
	// seedWorkers pipelines are in flight at once: enough to keep Redis
	// busy while the others build their next batch.
	seedWorkers = 4
	// seedChunk orders have their index entries sorted and written together.
	seedChunk = 250_000
	// seedZAdd entries go in one ZADD.
	seedZAdd = 2000
)

// patientClient returns a client like rdb whose reads and writes may take
// a minute: a seed's large pipelines keep Redis busy for longer than the
// app's request timeouts allow one call (500 ms). Other clients are
// returned as they are.
func patientClient(rdb redis.UniversalClient) (redis.UniversalClient, func()) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := *c.Options()
		o.ReadTimeout, o.WriteTimeout = time.Minute, time.Minute
		n := redis.NewClient(&o)
		return n, func() { n.Close() }
	case *redis.ClusterClient:
		o := *c.Options()
		o.ReadTimeout, o.WriteTimeout = time.Minute, time.Minute
		n := redis.NewClusterClient(&o)
		return n, func() { n.Close() }
	}
	return rdb, func() {}
}

// seeder makes and writes demo orders.
type seeder struct {
	s           *Store
	rdb         redis.UniversalClient
	first, last int64
	now         time.Time
	// customers are the stored customers' ids by folded name: a demo
	// order of that name links it.
	customers map[string]int64
}

// seedEntry is one index entry: a plain struct, not a redis.Z, so that a
// million orders' ten million entries are not ten million boxed members for
// the collector to scan.
type seedEntry struct {
	score  float64
	member string
}

// seedEntries are index entries by index key.
type seedEntries map[string][]seedEntry

// writeOrders writes the hashes of orders start to end with several
// goroutines, and returns their index entries.
func (g *seeder) writeOrders(ctx context.Context, start, end int64, rnd *rand.Rand) (seedEntries, error) {
	type job struct {
		start, end int64
		s1, s2     uint64
	}
	jobs := make(chan job)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errOnce  sync.Once
		firstErr error
		parts    []seedEntries // each worker's entries
	)
	for range min(seedWorkers, int((end-start)/seedBatch)+1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := g.worker()
			for j := range jobs {
				if err := w.write(ctx, j.start, j.end, rand.New(rand.NewPCG(j.s1, j.s2))); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
			mu.Lock()
			parts = append(parts, w.entries)
			mu.Unlock()
		}()
	}
send:
	for b := start; b <= end; b += seedBatch {
		// Each batch's randomness is drawn here, in order: the orders do not
		// depend on which goroutine writes them.
		j := job{b, min(b+seedBatch-1, end), rnd.Uint64(), rnd.Uint64()}
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
	// One exactly sized slice per index: appending the workers' slices one
	// after another would copy each entry several times over.
	size := map[string]int{}
	for _, p := range parts {
		for k, es := range p {
			size[k] += len(es)
		}
	}
	all := make(seedEntries, len(size))
	for k, n := range size {
		all[k] = make([]seedEntry, 0, n)
	}
	for _, p := range parts {
		for k, es := range p {
			all[k] = append(all[k], es...)
		}
	}
	return all, firstErr
}

// writeEntries adds entries to their indexes, each index's in order (by
// score, then member), in large ZADDs, one goroutine per index at a time.
func (g *seeder) writeEntries(ctx context.Context, entries seedEntries) error {
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	work := make(chan string)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range work {
				es := entries[key]
				slices.SortFunc(es, func(a, b seedEntry) int {
					if a.score != b.score {
						return cmp.Compare(a.score, b.score)
					}
					return strings.Compare(a.member, b.member)
				})
				p := g.rdb.Pipeline()
				for i := 0; i < len(es); i += seedZAdd {
					batch := es[i:min(i+seedZAdd, len(es))]
					// A fresh slice for each command: the pipeline keeps it.
					args := make([]any, 0, 2+2*len(batch))
					args = append(args, "zadd", key)
					for _, e := range batch {
						args = append(args, scoreArgOf(e.score), e.member)
					}
					p.Do(ctx, args...)
					if p.Len() >= 8 || i+seedZAdd >= len(es) {
						if _, err := p.Exec(ctx); err != nil {
							errOnce.Do(func() { firstErr = err; cancel() })
							break
						}
					}
				}
			}
		}()
	}
	for _, k := range keys {
		select {
		case work <- k:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return firstErr
}

// seedWorker is one goroutine's reusable buffers and the index entries of
// the orders it wrote.
type seedWorker struct {
	*seeder
	orders  []store.Order
	items   []store.Item
	args    []any
	entries seedEntries
	keys    map[string]string // one copy of each index key
}

func (g *seeder) worker() *seedWorker {
	return &seedWorker{seeder: g, entries: seedEntries{}, keys: map[string]string{}}
}

// order makes demo order id.
func (w *seedWorker) order(id int64, rnd *rand.Rand) store.Order {
	year := int64(365 * 24 * 3600)
	n := max(w.last-w.first+1, 1)
	// Created in id order over the past year, as at a real desk.
	age := year * (w.last - id) / n
	created := w.now.Add(-time.Duration(age) * time.Second)
	first, last := firstNames[rnd.IntN(len(firstNames))], lastNames[rnd.IntN(len(lastNames))]
	o := store.Order{
		ID:       id,
		Customer: first + " " + last,
		Status:   seedStatuses[rnd.IntN(len(seedStatuses))],
		Currency: "USD",
		Version:  1,
	}
	if rnd.IntN(3) > 0 {
		o.Email = emails[first][last]
	}
	o.CustomerID = w.customers[string(appendFold(nil, o.Customer))]
	// One to five different products.
	k := 1 + rnd.IntN(5)
	var picked [64]bool // more than len(demoProducts)
	start := len(w.items)
	for len(w.items)-start < k {
		i := rnd.IntN(len(demoProducts))
		if picked[i] {
			continue
		}
		picked[i] = true
		p := demoProducts[i]
		w.items = append(w.items, store.Item{SKU: p.sku, Name: p.name, Quantity: 1 + rnd.Int64N(4), UnitPrice: p.price})
	}
	o.Items = w.items[start:len(w.items):len(w.items)]
	o.Derive()
	o.CreatedAt, o.UpdatedAt = created, created
	if o.Status != store.Pending {
		o.UpdatedAt = created.Add(time.Duration(rnd.Int64N(72*3600)) * time.Second)
		if o.UpdatedAt.After(w.now) {
			o.UpdatedAt = w.now
		}
	}
	return o
}

// write makes orders start to end, writes their hashes in one pipeline and
// keeps their index entries.
func (w *seedWorker) write(ctx context.Context, start, end int64, rnd *rand.Rand) error {
	w.orders, w.items = w.orders[:0], w.items[:0]
	for id := start; id <= end; id++ {
		w.orders = append(w.orders, w.order(id, rnd))
	}
	s := w.s
	p := w.rdb.Pipeline()
	for i := range w.orders {
		o := &w.orders[i]
		w.args = orderArgs(w.args[:0], o)
		p.HSet(ctx, s.orderKey(o.ID), w.args...)
		if o.CustomerID != 0 {
			// Its entry in the customer's links (links.go), as a hold
			// taken when it was created.
			p.HSet(ctx, s.customerLinks(o.CustomerID), strconv.FormatInt(o.ID, 10), "seed:"+strconv.FormatInt(o.CreatedAt.UnixMilli(), 10))
		}
		for _, e := range s.orderEntries(o) {
			key, ok := w.keys[e.Key]
			if !ok {
				key = e.Key
				w.keys[key] = key
			}
			w.entries[key] = append(w.entries[key], seedEntry{e.Score, e.Member})
		}
	}
	_, err := p.Exec(ctx)
	return err
}

// seedProducts puts the demo orders' products in the catalogue, unless it
// has ever held any.
func (s *Store) seedProducts(ctx context.Context) error {
	n, err := s.rdb.Exists(ctx, s.prefix+"seq:{p}").Result()
	if err != nil || n > 0 {
		return wrap(err)
	}
	for _, p := range demoProducts {
		price := p.price.String()
		if _, err := s.CreateProduct(ctx, store.ProductInput{SKU: &p.sku, Name: &p.name, UnitPrice: &price}); err != nil {
			return err
		}
	}
	return nil
}

// zeroScore is the score of every lexicographic index's entries, boxed once.
var zeroScore any = "0"

// scoreArgOf is a ZADD score argument. Every index score is a whole number
// below 2^53 (timeScore, totalScore), which go-redis writes as an integer, several times
// faster than the shortest decimal of a float64.
func scoreArgOf(f float64) any {
	switch {
	case f == 0:
		return zeroScore
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return int64(f)
	}
	return f
}

// CountOrders returns how many orders the collection holds.
func (s *Store) CountOrders(ctx context.Context) (int64, error) {
	cmds := make([]*redis.IntCmd, len(store.Statuses))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range store.Statuses {
			cmds[i] = p.ZCard(ctx, s.idIndex(st))
		}
		return nil
	})
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
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
