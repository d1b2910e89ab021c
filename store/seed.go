package store

import (
	"context"
	"math/rand/v2"
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
)

// Seed adds n demo orders (names, one to five items, mixed statuses, dates
// over the past year) in pipelined batches, and returns how many it wrote.
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
	now := s.now().UTC().Truncate(time.Second)
	year := int64(365 * 24 * 3600)
	const batch = 500
	written := 0
	for start := first; start <= last; start += batch {
		end := min(start+batch-1, last)
		orders := make([]Order, 0, end-start+1)
		for id := start; id <= end; id++ {
			// Older ids get older dates, so newest-first stays date order.
			age := year * (last - id) / max(int64(n), 1)
			created := now.Add(-time.Duration(age+rnd.Int64N(3600)) * time.Second)
			o := Order{
				ID:       id,
				Customer: firstNames[rnd.IntN(len(firstNames))] + " " + lastNames[rnd.IntN(len(lastNames))],
				Status:   seedStatuses[rnd.IntN(len(seedStatuses))],
				Currency: "USD",
				Version:  1,
			}
			o.Email = ""
			if rnd.IntN(3) > 0 {
				o.Email = lower(o.Customer) + "@example.com"
			}
			for k, n := 0, 1+rnd.IntN(5); k < n; k++ {
				p := products[rnd.IntN(len(products))]
				o.Items = append(o.Items, Item{SKU: p.sku, Name: p.name, Quantity: 1 + rnd.Int64N(4), UnitPrice: p.price})
			}
			o.derive()
			o.CreatedAt, o.UpdatedAt = created, created
			if o.Status != Pending {
				o.UpdatedAt = created.Add(time.Duration(rnd.Int64N(72*3600)) * time.Second)
				if o.UpdatedAt.After(now) {
					o.UpdatedAt = now
				}
			}
			orders = append(orders, o)
		}
		write := func(p redis.Pipeliner) error {
			for i := range orders {
				s.writeOrder(ctx, p, &orders[i], false)
				s.writeIndexes(ctx, p, nil, &orders[i])
			}
			return nil
		}
		if s.cluster {
			_, err = s.rdb.Pipelined(ctx, write)
		} else {
			_, err = s.rdb.TxPipelined(ctx, write)
		}
		if err != nil {
			return written, wrap(err)
		}
		written += len(orders)
	}
	return written, nil
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
