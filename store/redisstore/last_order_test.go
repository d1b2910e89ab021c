package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/testutil"
)

// TestCustomersSortByLastOrder: the List's -last_order puts the customer
// whose newest order is newest first and the customers without orders
// last, lowest id first; linking, moving, unlinking and deleting orders
// move a customer, and so do a customer's create and delete.
func TestCustomersSortByLastOrder(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			ids := createCustomers(t, f, "Ada", "Bob", "Cy", "Di")
			ada, bob, cy, di := ids[0], ids[1], ids[2], ids[3]
			order := func(customer int64) int64 {
				t.Helper()
				o := f.create(t, "Someone", func(in *store.OrderInput) { in.CustomerID = ptr(fmt.Sprint(customer)) })
				f.clock.unix.Add(60)
				return o.ID
			}
			want := func(step string, want ...int64) {
				t.Helper()
				wantLastOrder(t, f, step, want)
			}
			want("no orders yet", ada, bob, cy, di)
			o1 := order(bob)
			o2 := order(ada)
			o3 := order(cy)
			want("an order each for Bob, Ada, Cy", cy, ada, bob, di)
			f.update(t, o3, store.OrderInput{CustomerID: ptr(fmt.Sprint(bob))})
			want("Cy's order moved to Bob", bob, ada, cy, di)
			f.update(t, o2, store.OrderInput{CustomerID: ptr("")})
			want("Ada's order unlinked", bob, ada, cy, di)
			o4 := order(di)
			want("an order for Di", di, bob, ada, cy)
			if err := f.s.DeleteOrder(ctx, o4, 0, 0); err != nil {
				t.Fatal(err)
			}
			want("Di's order deleted", bob, ada, cy, di)
			f.update(t, o2, store.OrderInput{CustomerID: ptr(fmt.Sprint(ada))})
			want("Ada's order linked again", bob, ada, cy, di)
			if err := f.s.DeleteOrder(ctx, o3, 0, 0); err != nil {
				t.Fatal(err)
			}
			want("Bob's newest order deleted", ada, bob, cy, di)
			f.update(t, o1, store.OrderInput{Status: ptr("cancelled")})
			want("a change that keeps the link", ada, bob, cy, di)
			ed, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("Ed")})
			if err != nil {
				t.Fatal(err)
			}
			want("a new customer", ada, bob, cy, di, ed.ID)
			if err := f.s.DeleteCustomer(ctx, cy, 0, 0); err != nil {
				t.Fatal(err)
			}
			want("Cy deleted", ada, bob, di, ed.ID)
			p, err := f.s.ListCustomers(ctx, store.CustomerQuery{Sort: "-last_order", Page: 2, PerPage: 3})
			if err != nil || p.Total != 4 || len(p.Customers) != 1 || p.Customers[0].ID != ed.ID {
				t.Errorf("page 2 of 3: %+v, %v; want customer %d alone, of 4", p, err, ed.ID)
			}
		})
	}
}

// TestRepairRebuildsTheCustomersByLastOrder: Repair finds the
// customers-by-last-order index gone, or naming a customer that is not
// stored, or out of date, with no placement pending: damage, which with
// fix it rebuilds from the orders.
func TestRepairRebuildsTheCustomersByLastOrder(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			ids := createCustomers(t, f, "Ada", "Bob", "Cy")
			for _, c := range []int64{ids[2], ids[0]} {
				f.create(t, "Someone", func(in *store.OrderInput) { in.CustomerID = ptr(fmt.Sprint(c)) })
				f.clock.unix.Add(60)
			}
			want := []int64{ids[0], ids[2], ids[1]}
			wantLastOrder(t, f, "before the damage", want)
			key := f.prefix + "cx:{c}:last_order"
			if err := f.tg.Client.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := f.tg.Client.ZAdd(ctx, key, redis.Z{Score: 1, Member: "77"}).Err(); err != nil {
				t.Fatal(err)
			}
			r, err := f.s.Repair(ctx, false)
			if err != nil || r.Missing != 3 || r.Dangling != 1 || r.Problems() != 4 || r.Unplaced != 0 || r.Fixed != 0 {
				t.Errorf("Repair without fix: %s, %v; want 3 missing, 1 dangling, none fixed", r, err)
			}
			r, err = f.s.Repair(ctx, true)
			if err != nil || r.Missing != 3 || r.Dangling != 1 || r.Fixed != 4 {
				t.Errorf("Repair: %s, %v; want 3 missing, 1 dangling, 4 fixed", r, err)
			}
			wantLastOrder(t, f, "after Repair", want)
			if err := f.tg.Client.ZAdd(ctx, key, redis.Z{Score: -float64(ids[0]), Member: fmt.Sprint(ids[0])}).Err(); err != nil {
				t.Fatal(err)
			}
			if r, err := f.s.Repair(ctx, true); err != nil || r.Missing != 1 || r.Problems() != 1 || r.Fixed != 1 {
				t.Errorf("Repair of a score out of date: %s, %v; want 1 missing, 1 fixed", r, err)
			}
			wantLastOrder(t, f, "after the second Repair", want)
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 || r.Unplaced != 0 {
				t.Errorf("Repair after the fix: %s, %v; want no problems", r, err)
			}
		})
	}
}

// wantLastOrder checks the customer List by last order, all on one page.
func wantLastOrder(t *testing.T, f *fixture, step string, want []int64) {
	t.Helper()
	p, err := f.s.ListCustomers(context.Background(), store.CustomerQuery{Sort: "-last_order", PerPage: 100})
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	var got []int64
	for _, c := range p.Customers {
		got = append(got, c.ID)
	}
	if !slices.Equal(got, want) || p.Total != int64(len(want)) {
		t.Errorf("%s: customers by last order %v (of %d), want %v", step, got, p.Total, want)
	}
}

// createCustomers creates a customer of each name and returns their ids.
func createCustomers(t *testing.T, f *fixture, names ...string) []int64 {
	t.Helper()
	var ids []int64
	for _, name := range names {
		c, err := f.s.CreateCustomer(context.Background(), store.CustomerInput{Name: ptr(name)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	return ids
}

// TestConcurrentOrderWritesLeaveTheLastOrderRight: orders created, moved
// between two customers and deleted by writers side by side leave every
// customer placed by its newest order, as Repair finds it.
func TestConcurrentOrderWritesLeaveTheLastOrderRight(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			ids := createCustomers(t, f, "Ada", "Bob")
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 5 {
						o, err := f.s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Someone"), CustomerID: ptr(fmt.Sprint(ids[w%2]))})
						if err != nil {
							t.Error(err)
							return
						}
						f.clock.unix.Add(1)
						if _, err := f.s.UpdateOrder(ctx, o.ID, store.OrderInput{CustomerID: ptr(fmt.Sprint(ids[(w+1)%2]))}, 0); err != nil {
							t.Error(err)
						}
						if i%2 == 0 {
							if err := f.s.DeleteOrder(ctx, o.ID, 0, 0); err != nil {
								t.Error(err)
							}
						}
					}
				}()
			}
			wg.Wait()
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 || r.Unplaced != 0 {
				t.Errorf("Repair after the writers: %s, %v; want no problems", r, err)
			}
		})
	}
}

// TestRepairPlacesMarkedCustomersApartFromDamage: a customer left marked
// to place (its writer killed before its placement) is not damage: Repair
// counts it apart, and with fix places it, whatever its entry said.
func TestRepairPlacesMarkedCustomersApartFromDamage(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			ids := createCustomers(t, f, "Ada", "Bob")
			f.clock.unix.Add(60)
			f.create(t, "Someone", func(in *store.OrderInput) { in.CustomerID = ptr(fmt.Sprint(ids[1])) })
			want := []int64{ids[1], ids[0]}
			// What a writer killed after its transaction leaves: Bob's
			// entry as before his order, and his mark.
			key, marks := f.prefix+"cx:{c}:last_order", f.prefix+"cx:{c}:to_place"
			must(t, f.tg.Client.ZAdd(ctx, key, redis.Z{Score: -float64(ids[1]), Member: fmt.Sprint(ids[1])}).Err())
			must(t, f.tg.Client.HSet(ctx, marks, fmt.Sprint(ids[1]), "t0").Err())
			if r, err := f.s.Repair(ctx, false); err != nil || r.Unplaced != 1 || r.Problems() != 0 || r.Fixed != 0 {
				t.Errorf("Repair without fix: %s, %v; want 1 left to place, no damage", r, err)
			}
			if n, _ := f.tg.Client.HLen(ctx, marks).Result(); n != 1 {
				t.Errorf("Repair without fix left %d marks, want the 1 it found", n)
			}
			if r, err := f.s.Repair(ctx, true); err != nil || r.Unplaced != 1 || r.Problems() != 0 {
				t.Errorf("Repair: %s, %v; want 1 left to place, placed, no damage", r, err)
			}
			if n, _ := f.tg.Client.HLen(ctx, marks).Result(); n != 0 {
				t.Errorf("Repair left %d marks, want none", n)
			}
			wantLastOrder(t, f, "after Repair", want)
		})
	}
}
