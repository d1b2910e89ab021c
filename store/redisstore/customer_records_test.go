package redisstore_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// TestCustomerLifecycle: a create, the email claim (case aside, naming
// the holder), a change, a change that changes nothing, the version
// checks, a delete that frees the email, the history and the events.
func TestCustomerLifecycle(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := store.WithActor(context.Background(), "carol", "web")
			sub, err := f.s.Feed(store.CustomerEvents).Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			c, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr(" Ada Lovelace "), Email: ptr("Ada@Example.com"),
				Address: store.AddressInput{City: ptr("London"), Country: ptr("gb")}})
			if err != nil {
				t.Fatal(err)
			}
			if c.ID != 1 || c.Name != "Ada Lovelace" || c.Address.Country != "GB" || c.Version != 1 {
				t.Errorf("created %+v", c)
			}
			if got, err := f.s.GetCustomer(ctx, c.ID); err != nil || !reflect.DeepEqual(got, c) {
				t.Errorf("GetCustomer: %+v, %v; want %+v", got, err, c)
			}
			_, err = f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("Other"), Email: ptr("ada@example.COM")})
			if e, ok := err.(*store.Error); !ok || e.Code != store.EINVALID || e.Fields["email"] != "is already the email of customer 1" {
				t.Errorf("a taken email: %v, want errors.email naming customer 1", err)
			}
			if _, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("No email")}); err != nil {
				t.Errorf("a second customer without an email: %v", err)
			}
			if _, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("No email either")}); err != nil {
				t.Errorf("a third customer without an email: %v", err)
			}
			u, err := f.s.UpdateCustomer(ctx, c.ID, store.CustomerInput{Phone: ptr("+44 20 1234"), Address: store.AddressInput{City: ptr("Cambridge")},
				Version: ptr(int64(1))}, 0)
			if err != nil || u.Version != 2 || u.Address.City != "Cambridge" || u.Address.Country != "GB" || u.Email != c.Email {
				t.Fatalf("UpdateCustomer: %+v, %v", u, err)
			}
			if same, err := f.s.UpdateCustomer(ctx, c.ID, store.CustomerInput{Phone: ptr("+44 20 1234")}, 0); err != nil || same.Version != 2 {
				t.Errorf("a change that changes nothing: %+v, %v, want version 2 kept", same, err)
			}
			_, err = f.s.UpdateCustomer(ctx, c.ID, store.CustomerInput{Name: ptr("Stale"), Version: ptr(int64(1))}, 0)
			if e, ok := err.(*store.Error); !ok || e.Code != store.ECONFLICT || e.Current.(*store.Customer).Version != 2 {
				t.Errorf("a stale version: %v, want ECONFLICT with the stored customer", err)
			}
			if _, err = f.s.UpdateCustomer(ctx, c.ID, store.CustomerInput{Name: ptr("Stale")}, 1); store.ErrorCode(err) != store.EPRECONDITION {
				t.Errorf("a stale If-Match: %v, want EPRECONDITION", err)
			}
			if _, err := f.s.AddCustomerNote(ctx, c.ID, "Met at the exhibition"); err != nil {
				t.Fatal(err)
			}
			h, err := f.s.CustomerHistory(ctx, c.ID, "", 0)
			if err != nil || len(h.Entries) != 3 {
				t.Fatalf("history: %+v, %v", h, err)
			}
			up := h.Entries[1]
			if up.Action != "updated" || up.Actor != "carol" || len(up.Changes) != 2 ||
				up.Changes["address.city"] != (store.FieldChange{From: "London", To: "Cambridge"}) ||
				up.Changes["phone"] != (store.FieldChange{From: "", To: "+44 20 1234"}) {
				t.Errorf("the update's entry: %+v", up)
			}
			if err := f.s.DeleteCustomer(ctx, c.ID, 0, 1); store.ErrorCode(err) != store.ECONFLICT {
				t.Errorf("a delete with a stale version: %v, want ECONFLICT", err)
			}
			if err := f.s.DeleteCustomer(ctx, c.ID, 0, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.GetCustomer(ctx, c.ID); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("after the delete: %v, want not found", err)
			}
			if _, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("Ada again"), Email: ptr("ada@example.com")}); err != nil {
				t.Errorf("the email after its holder was deleted: %v", err)
			}
			for _, w := range []string{"created 1 v1", "created 2 v1", "created 3 v1", "updated 1 v2", "deleted 1 v2", "created 4 v1"} {
				if d := describe(t, next(t, sub)); d != w {
					t.Errorf("event %s, want %s", d, w)
				}
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair: %v, %v", r, err)
			}
		})
	}
}

// TestCustomerEmailsStayUniqueUnderConcurrentCreates: sixteen clients
// create the same email at once, in different cases: one customer holds
// it, on a single Redis and on a Cluster alike.
func TestCustomerEmailsStayUniqueUnderConcurrentCreates(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won []int64
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					email := "ada@example.com"
					if i%2 == 1 {
						email = "ADA@example.com"
					}
					c, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr(fmt.Sprintf("Ada %d", i)), Email: ptr(email)})
					switch {
					case err == nil:
						mu.Lock()
						won = append(won, c.ID)
						mu.Unlock()
					case store.ErrorCode(err) != store.EINVALID:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("16 creates of one email: %v succeeded, want exactly one", won)
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair after the race: %v, %v", r, err)
			}
		})
	}
}

// TestCustomerListSearchesAndSorts: every sort, page by page, and the
// search by id, any word of the name or the company, the start of the
// email and the phone's digits, against a plain oracle.
func TestCustomerListSearchesAndSorts(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			first := []string{"Ada", "Grace", "Alan", "Édith", "Bob"}
			last := []string{"Lovelace", "Hopper", "Turing", "Piaf", "Ada"}
			companies := []string{"", "Navy", "Analytical Engines", "Bletchley Park"}
			var all []*store.Customer
			for i := range 23 {
				in := store.CustomerInput{Name: ptr(first[i%5] + " " + last[(i/5)%5]), Company: ptr(companies[i%4]),
					Phone: ptr(fmt.Sprintf("+1 (555) %04d", i))}
				if i%3 == 0 {
					in.Email = ptr(fmt.Sprintf("%s%d@example.com", strings.ToLower(first[i%5]), i))
				}
				c, err := f.s.CreateCustomer(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, c)
				f.clock.unix.Add(60)
			}
			list := func(q store.CustomerQuery) []int64 {
				var out []int64
				for page := 1; ; page++ {
					q.Page, q.PerPage = page, 5
					p, err := f.s.ListCustomers(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range p.Customers {
						out = append(out, c.ID)
					}
					if len(p.Customers) < 5 {
						if p.Total != int64(len(out)) {
							t.Errorf("%+v: total %d, listed %d", q, p.Total, len(out))
						}
						return out
					}
				}
			}
			byName := slices.Clone(all)
			slices.SortStableFunc(byName, func(a, b *store.Customer) int {
				if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
					return c
				}
				return int(b.ID - a.ID)
			})
			ids := func(cs []*store.Customer) []int64 {
				out := []int64{}
				for _, c := range cs {
					out = append(out, c.ID)
				}
				return out
			}
			want := map[store.Sort][]int64{"name": ids(byName), "created": ids(all)}
			want["-name"] = slices.Clone(want["name"])
			slices.Reverse(want["-name"])
			want["-created"] = slices.Clone(want["created"])
			slices.Reverse(want["-created"])
			// No customer has orders: by last order is by id.
			want["-last_order"] = ids(all)
			for _, s := range store.CustomerSorts {
				if got := list(store.CustomerQuery{Sort: s}); !slices.Equal(got, want[s]) {
					t.Errorf("sort %s: %v, want %v", s, got, want[s])
				}
			}
			matches := func(q string) []int64 {
				out := []int64{}
				for _, c := range all {
					words := strings.Fields(strings.ToLower(strings.ReplaceAll(c.Name+" "+c.Company, "É", "e")))
					hit := strings.HasPrefix(strings.ToLower(c.Email), q) || strings.HasPrefix(store.CustomerDigits(c.Phone), q) ||
						fmt.Sprint(c.ID) == q
					for _, w := range words {
						hit = hit || strings.HasPrefix(strings.ReplaceAll(w, "é", "e"), q)
					}
					if hit {
						out = append(out, c.ID)
					}
				}
				return out
			}
			for _, q := range []string{"ada", "lov", "analyt", "navy", "bletchley", "grace1", "edith", "1555001", "15550", "7", "nobody"} {
				got := list(store.CustomerQuery{Q: q})
				slices.Sort(got)
				if w := matches(q); !slices.Equal(got, w) {
					t.Errorf("q=%s: %v, want %v", q, got, w)
				}
			}
			// Several terms: each must match.
			got := list(store.CustomerQuery{Q: "ada lovelace"})
			slices.Sort(got)
			var w []int64
			for _, c := range all {
				if strings.HasPrefix(c.Name, "Ada Lovelace") {
					w = append(w, c.ID)
				}
			}
			if !slices.Equal(got, w) {
				t.Errorf("q=ada lovelace: %v, want %v", got, w)
			}
		})
	}
}

// TestOrdersLinkToCustomers: an order names an existing customer or none;
// the customer's orders come newest first, page by page, with the count,
// the last order and the totals per currency (cancelled orders aside); a
// customer with orders is not deleted; moving an order moves its entry.
func TestOrdersLinkToCustomers(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			ada, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("Ada")})
			if err != nil {
				t.Fatal(err)
			}
			bob, err := f.s.CreateCustomer(ctx, store.CustomerInput{Name: ptr("Bob")})
			if err != nil {
				t.Fatal(err)
			}
			item := func(price string) []store.ItemInput {
				return []store.ItemInput{{Name: "Widget", Quantity: "2", UnitPrice: price}}
			}
			if _, err := f.s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Nobody"), CustomerID: ptr("99")}); store.ErrorCode(err) != store.EINVALID ||
				!strings.Contains(err.(*store.Error).Fields["customer_id"], "no customer 99") {
				t.Errorf("an order for customer 99: %v, want errors.customer_id", err)
			}
			if _, err := f.s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Ada"), CustomerID: ptr("x")}); store.ErrorCode(err) != store.EINVALID {
				t.Errorf("customer_id x: %v, want EINVALID", err)
			}
			var ids []int64
			for i := range 7 {
				in := store.OrderInput{Customer: ptr("Ada"), CustomerID: ptr(fmt.Sprint(ada.ID)), Items: item("1.50"), HasItems: true}
				if i == 3 {
					in.Currency = ptr("EUR")
				}
				o, err := f.s.CreateOrder(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if o.CustomerID != ada.ID {
					t.Fatalf("created %+v, want customer_id %d", o, ada.ID)
				}
				ids = append(ids, o.ID)
				f.clock.unix.Add(3600)
			}
			if _, err := f.s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Walk-in")}); err != nil {
				t.Errorf("an order without a customer: %v", err)
			}
			if _, err := f.s.UpdateOrder(ctx, ids[0], store.OrderInput{Status: ptr("cancelled")}, 0); err != nil {
				t.Fatal(err)
			}
			_, err = f.s.UpdateOrder(ctx, ids[1], store.OrderInput{CustomerID: ptr("98")}, 0)
			if e, ok := err.(*store.Error); !ok || e.Code != store.EINVALID || e.Current == nil {
				t.Errorf("moving an order to customer 98: %v, want EINVALID with the stored order", err)
			}
			if _, err := f.s.UpdateOrder(ctx, ids[6], store.OrderInput{CustomerID: ptr(fmt.Sprint(bob.ID))}, 0); err != nil {
				t.Fatal(err)
			}
			c, err := f.s.GetCustomer(ctx, ada.ID)
			if err != nil {
				t.Fatal(err)
			}
			last := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(5 * time.Hour)
			wantTotals := []store.CurrencyTotal{{Currency: "EUR", Total: 300}, {Currency: "USD", Total: 1200}}
			if c.OrderCount != 6 || c.LastOrderAt == nil || !c.LastOrderAt.Equal(last) || !reflect.DeepEqual(c.Totals, wantTotals) {
				t.Errorf("Ada: %d orders, last %v, totals %v; want 6, %v, %v", c.OrderCount, c.LastOrderAt, c.Totals, last, wantTotals)
			}
			var got []int64
			for page := 1; page <= 3; page++ {
				p, err := f.s.CustomerOrders(ctx, ada.ID, page, 4)
				if err != nil || p.Total != 6 {
					t.Fatalf("page %d: %+v, %v", page, p, err)
				}
				for _, o := range p.Orders {
					got = append(got, o.ID)
				}
			}
			if want := []int64{ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
				t.Errorf("Ada's orders: %v, want %v", got, want)
			}
			err = f.s.DeleteCustomer(ctx, ada.ID, 0, 0)
			if store.ErrorCode(err) != store.ECONFLICT || !strings.Contains(err.Error(), "has 6 orders") {
				t.Errorf("deleting a customer with orders: %v, want ECONFLICT saying 6 orders", err)
			}
			for _, id := range ids[:6] {
				if err := f.s.DeleteOrder(ctx, id, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.s.DeleteCustomer(ctx, ada.ID, 0, 0); err != nil {
				t.Errorf("deleting a customer whose orders are gone: %v", err)
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair: %v, %v", r, err)
			}
		})
	}
}

// TestSeedMakesCustomersAndLinksTheDemoOrders: every demo name is a
// customer, and each demo order links the customer of its name.
func TestSeedMakesCustomersAndLinksTheDemoOrders(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			if _, err := f.s.Seed(ctx, 40, nil); err != nil {
				t.Fatal(err)
			}
			cs, err := f.s.ListCustomers(ctx, store.CustomerQuery{PerPage: 1})
			if err != nil || cs.Total < 100 {
				t.Fatalf("customers after the seed: %d, %v; want every demo name", cs.Total, err)
			}
			os, err := f.s.ListOrders(ctx, store.OrderQuery{PerPage: 40})
			if err != nil || len(os.Orders) != 40 {
				t.Fatalf("orders: %d, %v", len(os.Orders), err)
			}
			for _, o := range os.Orders[:5] {
				full, err := f.s.GetOrder(ctx, o.ID)
				if err != nil {
					t.Fatal(err)
				}
				c, err := f.s.GetCustomer(ctx, full.CustomerID)
				if err != nil || c.Name != full.Customer || c.OrderCount < 1 {
					t.Errorf("order %d (%s) links customer %d: %+v, %v", o.ID, full.Customer, full.CustomerID, c, err)
				}
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair: %v, %v", r, err)
			}
		})
	}
}
