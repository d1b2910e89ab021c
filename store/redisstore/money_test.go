package redisstore_test

import (
	"context"
	"testing"

	"orders/store"
	"orders/testutil"
)

// Amounts keep their currency's decimals through Redis on every target:
// a BHD order's 1.234 reads back as 1.234, a JPY one's 350 as 350; a BHD
// order written before currencies had their own decimals (its amounts in
// hundredths, no ms field) reads as the same amount; a record in a code
// no longer accepted still reads and takes changes.
func TestAmountsKeepTheirCurrencysDecimalsInRedis(t *testing.T) {
	ctx := context.Background()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			bhd := f.create(t, "Bea", func(in *store.OrderInput) {
				in.Currency = ptr("BHD")
				in.Items = []store.ItemInput{{Name: "Oud", Quantity: "3", UnitPrice: "1.234"}}
			})
			jpy := f.create(t, "Jun", func(in *store.OrderInput) {
				in.Currency = ptr("JPY")
				in.Items = []store.ItemInput{{Name: "Tea", Quantity: "2", UnitPrice: "350"}}
			})
			for _, tt := range []struct {
				id          int64
				code, total string
			}{{bhd.ID, "BHD", "3.702"}, {jpy.ID, "JPY", "700"}} {
				o, err := f.s.GetOrder(ctx, tt.id)
				if err != nil || o.Total.In(tt.code) != tt.total {
					t.Errorf("order %d in %s: total %v, %v; want %s", tt.id, tt.code, o, err, tt.total)
				}
			}
			p, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr("OUD"), Name: ptr("Oud"), UnitPrice: ptr("1.234"), Currency: ptr("BHD")})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := f.s.GetProduct(ctx, p.ID); got == nil || got.UnitPrice.In("BHD") != "1.234" {
				t.Errorf("BHD product read back as %+v, want 1.234", got)
			}

			// Written before: hundredths and no ms field.
			key := f.prefix + "o:{900}"
			if err := tg.Client.HSet(ctx, key, "c", "Old", "s", "p", "v", 1, "ca", 1, "ua", 1, "cu", "BHD", "0", "2 1250  Oud").Err(); err != nil {
				t.Fatal(err)
			}
			old, err := f.s.GetOrder(ctx, 900)
			if err != nil || old.Items[0].UnitPrice.In("BHD") != "12.500" || old.Total.In("BHD") != "25.000" {
				t.Fatalf("an older BHD order: %+v, %v; want 12.500 each, 25.000 in all", old, err)
			}
			legacy := f.prefix + "o:{901}"
			if err := tg.Client.HSet(ctx, legacy, "c", "Odd", "s", "p", "v", 1, "ca", 1, "ua", 1, "cu", "XYZ", "0", "1 1234  Thing").Err(); err != nil {
				t.Fatal(err)
			}
			odd, err := f.s.UpdateOrder(ctx, 901, store.OrderInput{Notes: ptr("still editable"), Currency: ptr("XYZ")}, 0)
			if err != nil || odd.Currency != "XYZ" || odd.Total.In("XYZ") != "12.34" || odd.Notes != "still editable" {
				t.Errorf("an XYZ order edited: %+v, %v; want XYZ 12.34 with the note", odd, err)
			}
		})
	}
}
