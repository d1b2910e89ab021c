package redisstore_test

import (
	"context"
	"testing"

	"orders/store"
	"orders/testutil"
)

// TestSeedLinksDemoOrdersToTheirCustomers: -seed makes customers, and each
// demo order is linked to the customer of its name, whose page then counts it.
func TestSeedLinksDemoOrdersToTheirCustomers(t *testing.T) {
	f := fresh(t, testutil.Miniredis(t))
	ctx := context.Background()
	if _, err := f.s.Seed(ctx, 50, nil); err != nil {
		t.Fatal(err)
	}
	p, err := f.s.ListOrders(ctx, store.OrderQuery{PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	linked := 0
	for _, o := range p.Orders {
		if o.CustomerID == 0 {
			continue
		}
		linked++
		c, err := f.s.GetCustomer(ctx, o.CustomerID)
		if err != nil || c.Name != o.Customer {
			t.Errorf("order %d (%s) links customer %d: %+v, %v", o.ID, o.Customer, o.CustomerID, c, err)
		}
	}
	if linked != len(p.Orders) {
		t.Errorf("%d of %d demo orders link their customer", linked, len(p.Orders))
	}
}
