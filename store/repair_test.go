package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// TestStaleIndexEntriesAreSkippedAndRepaired: an order whose hash is gone
// while its index entries remain (what a crash between a Cluster's order
// transaction and its index writes leaves) is never listed, and reading a
// page that meets such entries removes them.
func TestStaleIndexEntriesAreSkippedAndRepaired(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			f.create(t, "Grace Hopper")
			gone := f.create(t, "Grace Murray")
			f.create(t, "Alan Turing")
			// The order's hash disappears; its four index entries stay.
			if err := tg.Client.Del(ctx, f.prefix+"o:{"+strconv.FormatInt(gone.ID, 10)+"}").Err(); err != nil {
				t.Fatal(err)
			}
			// Each query meets the entries of one or more indexes: by created
			// time, name, updated time, total, and the search terms.
			var queries []store.Query
			for _, sort := range store.Sorts {
				queries = append(queries, store.Query{Sort: sort}, store.Query{Sort: sort, Status: store.Pending})
			}
			queries = append(queries, store.Query{Q: "grace"}, store.Query{Q: "murray"}, store.Query{Q: "grace", Status: store.Pending})
			for _, q := range queries {
				p := f.list(t, q)
				for _, o := range p.Orders {
					if o.ID == gone.ID {
						t.Errorf("List(%+v) lists order %d, whose hash is gone", q, gone.ID)
					}
				}
			}
			// The repair runs in the background; give it a moment.
			var left []string
			for i := 0; i < 50; i++ {
				left = left[:0]
				for _, key := range []string{"ix:{id}:pending", "ix:name", "ix:name:pending",
					"ix:{up}:pending", "ix:{tot}:pending", "ix:{w}:g", "ix:{w}:m"} {
					ms, err := tg.Client.ZRange(ctx, f.prefix+key, 0, -1).Result()
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range ms {
						if m == strconv.FormatInt(gone.ID, 10) || strings.HasPrefix(m, "grace murray\x00") ||
							m == "grace\x00yx" || m == "murray\x00yx" {
							left = append(left, key+" "+m)
						}
					}
				}
				if len(left) == 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("index entries of the missing order were not repaired: %q", left)
			}
			if n, _ := f.s.Count(ctx); n != 2 {
				t.Errorf("Count after repair = %d, want 2", n)
			}
			if p := f.list(t, store.Query{Q: "grace"}); p.Total != 1 || len(p.Orders) != 1 {
				t.Errorf("search 'grace' after repair: total %d, %d orders; want 1 and 1", p.Total, len(p.Orders))
			}
		})
	}
}

// TestRepairWalksEveryIndexAWriteUses: every index key a write puts an
// order's or a product's entries in (any status, any active state, terms
// in any script) is one Repair walks, so a layout change cannot leave an
// index Repair never checks.
func TestRepairWalksEveryIndexAWriteUses(t *testing.T) {
	s := store.New(nil, store.Options{Prefix: "t[1]*:"})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, st := range store.Statuses {
		o := &store.Order{ID: 7, Customer: "Ada Łovelace 张伟 O'Brien", Email: "ada@example.com", Status: st,
			Items: []store.Item{{SKU: "KBD-60", Name: "k"}, {SKU: "KBD-61", Name: "k"}}, CreatedAt: at, UpdatedAt: at}
		for _, active := range []bool{true, false} {
			p := &store.Product{ID: 3, SKU: "KBD-60", Name: "Клавиатура 60%", Active: active, CreatedAt: at, UpdatedAt: at}
			if keys := s.UncoveredIndexKeys(o, p); len(keys) > 0 {
				t.Errorf("status %s, active %v: Repair walks none of %q", st, active, keys)
			}
		}
	}
}
