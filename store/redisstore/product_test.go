package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

func boolPtr(b bool) *bool { return &b }

// TestProductLifecycle: create with defaults, the field rules, a change, a
// change that changes nothing, the version checks, a delete that frees the
// SKU.
func TestProductLifecycle(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			p, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr(" KBD-60 "), Name: ptr("60% keyboard"), UnitPrice: ptr("89.00")})
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != 1 || p.SKU != "KBD-60" || p.Currency != "USD" || !p.Active || p.Version != 1 || p.UnitPrice != 8900 {
				t.Errorf("created %+v, want id 1, SKU KBD-60, USD, active, version 1, 89.00", p)
			}
			if got, err := f.s.GetProduct(ctx, p.ID); err != nil || *got != *p {
				t.Errorf("GetProduct after the create: %+v, %v; want %+v", got, err, p)
			}
			eur, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr("EU-1"), Name: ptr("Euro thing"), UnitPrice: ptr("0"), Currency: ptr("eur"), Active: boolPtr(false)})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := f.s.GetProduct(ctx, eur.ID); err != nil || *got != *eur || got.Currency != "EUR" || got.Active {
				t.Errorf("GetProduct of an inactive EUR product: %+v, %v; want %+v", got, err, eur)
			}
			for _, c := range []struct {
				in    store.ProductInput
				field string
			}{
				{store.ProductInput{Name: ptr("x"), UnitPrice: ptr("1")}, "sku"},
				{store.ProductInput{SKU: ptr("A B"), Name: ptr("x"), UnitPrice: ptr("1")}, "sku"},
				{store.ProductInput{SKU: ptr(strings.Repeat("a", 65)), Name: ptr("x"), UnitPrice: ptr("1")}, "sku"},
				{store.ProductInput{SKU: ptr("A1"), Name: ptr("  "), UnitPrice: ptr("1")}, "name"},
				{store.ProductInput{SKU: ptr("A1"), Name: ptr("x"), UnitPrice: ptr("1.234")}, "unit_price"},
				{store.ProductInput{SKU: ptr("A1"), Name: ptr("x")}, "unit_price"},
				{store.ProductInput{SKU: ptr("A1"), Name: ptr("x"), UnitPrice: ptr("1"), Currency: ptr("dollars")}, "currency"},
				{store.ProductInput{SKU: ptr("kbd-60"), Name: ptr("x"), UnitPrice: ptr("1")}, "sku"}, // taken, case aside
			} {
				_, err := f.s.CreateProduct(ctx, c.in)
				var e *store.Error
				if !errors.As(err, &e) || e.Code != store.EINVALID || e.Fields[c.field] == "" {
					t.Errorf("CreateProduct(%+v): %v, want a message for %s", c.in, err, c.field)
				}
			}
			if _, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr("kbd-60"), Name: ptr("x"), UnitPrice: ptr("1")}); err == nil ||
				!strings.Contains(err.(*store.Error).Fields["sku"], "product 1") {
				t.Errorf("a taken SKU: %v, want errors.sku naming product 1", err)
			}
			u, err := f.s.UpdateProduct(ctx, p.ID, store.ProductInput{Name: ptr("Keyboard 60%"), Version: ptr(int64(1))}, 0)
			if err != nil || u.Version != 2 || u.Name != "Keyboard 60%" || u.SKU != "KBD-60" {
				t.Fatalf("UpdateProduct: %+v, %v", u, err)
			}
			same, err := f.s.UpdateProduct(ctx, p.ID, store.ProductInput{Name: ptr("Keyboard 60%")}, 0)
			if err != nil || same.Version != 2 {
				t.Errorf("a change that changes nothing: %+v, %v, want version 2 kept", same, err)
			}
			_, err = f.s.UpdateProduct(ctx, p.ID, store.ProductInput{Name: ptr("Stale"), Version: ptr(int64(1))}, 0)
			if e, ok := err.(*store.Error); !ok || e.Code != store.ECONFLICT || e.Current.(*store.Product).Version != 2 {
				t.Errorf("a stale version: %v, want ECONFLICT with the stored product", err)
			}
			if _, err = f.s.UpdateProduct(ctx, p.ID, store.ProductInput{Name: ptr("Stale")}, 1); store.ErrorCode(err) != store.EPRECONDITION {
				t.Errorf("a stale If-Match: %v, want EPRECONDITION", err)
			}
			if err := f.s.DeleteProduct(ctx, p.ID, 0, 1); store.ErrorCode(err) != store.ECONFLICT {
				t.Errorf("a delete with a stale version: %v, want ECONFLICT", err)
			}
			if err := f.s.DeleteProduct(ctx, p.ID, 0, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.GetProduct(ctx, p.ID); store.ErrorCode(err) != store.ENOTFOUND {
				t.Errorf("after the delete: %v, want not found", err)
			}
			if q, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr("kbd-60"), Name: ptr("Again"), UnitPrice: ptr("1")}); err != nil || q.ID <= eur.ID {
				t.Errorf("the SKU after its product was deleted: %+v, %v, want a new product", q, err)
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair: %v, %v", r, err)
			}
		})
	}
}

// TestProductSKUsStayUniqueUnderConcurrentCreates: sixteen clients create
// the same SKU at once, in different cases, and renames race for another:
// one product holds each SKU, on a single Redis and on a Cluster alike.
func TestProductSKUsStayUniqueUnderConcurrentCreates(t *testing.T) {
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
					sku := "MUG-01"
					if i%2 == 1 {
						sku = "mug-01"
					}
					p, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr(sku), Name: ptr("Mug " + strconv.Itoa(i)), UnitPrice: ptr("12.50")})
					switch {
					case err == nil:
						mu.Lock()
						won = append(won, p.ID)
						mu.Unlock()
					case store.ErrorCode(err) != store.EINVALID:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("16 creates of MUG-01: %v succeeded, want exactly one", won)
			}
			// Renames of eight other products race for one SKU.
			var others []int64
			for i := range 8 {
				p, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr(fmt.Sprintf("TEE-%d", i)), Name: ptr("Tee"), UnitPrice: ptr("19.99")})
				if err != nil {
					t.Fatal(err)
				}
				others = append(others, p.ID)
			}
			var renamed []int64
			for _, id := range others {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := f.s.UpdateProduct(ctx, id, store.ProductInput{SKU: ptr("TEE-L")}, 0); err == nil {
						mu.Lock()
						renamed = append(renamed, id)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(renamed) != 1 {
				t.Fatalf("8 renames to TEE-L: %v succeeded, want exactly one", renamed)
			}
			p := f.listProducts(t, store.ProductQuery{Q: "tee-l"})
			if len(p.Products) != 1 || p.Products[0].ID != renamed[0] {
				t.Errorf("q=tee-l: %v, want product %d alone", productIDs(p), renamed[0])
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair after the races: %v, %v", r, err)
			}
		})
	}
}

func (f *fixture) listProducts(t *testing.T, q store.ProductQuery) store.ProductPage {
	t.Helper()
	p, err := f.s.ListProducts(context.Background(), q)
	if err != nil {
		t.Fatalf("ListProducts(%+v): %v", q, err)
	}
	return p
}

func productIDs(p store.ProductPage) []int64 {
	out := []int64{}
	for _, x := range p.Products {
		out = append(out, x.ID)
	}
	return out
}

// TestProductListAgreesWithTheOracle: every sort with and without the
// active filter, and searches by id, SKU prefix and any word of the name
// (one term and several), page by page, against a plain oracle.
func TestProductListAgreesWithTheOracle(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			rnd := rand.New(rand.NewPCG(9, 10))
			words := []string{"Mug", "Mugs", "Tee", "Teal", "Cap", "Canvas", "Bag", "Lamp", "12", "Über"}
			var all []*store.Product
			for i := range 70 {
				f.clock.Advance(time.Duration(1+rnd.IntN(3600)) * time.Second)
				in := store.ProductInput{
					SKU:       ptr(fmt.Sprintf("%s-%d", strings.ToUpper(words[rnd.IntN(len(words)-2)][:3]), i)),
					Name:      ptr(words[rnd.IntN(len(words))] + " " + words[rnd.IntN(len(words))]),
					UnitPrice: ptr(strconv.Itoa(rnd.IntN(50)) + ".99"),
					Active:    boolPtr(rnd.IntN(3) > 0),
				}
				p, err := f.s.CreateProduct(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, p)
			}
			// A few changes and deletes.
			for range 10 {
				p := all[rnd.IntN(len(all))]
				if p == nil {
					continue
				}
				u, err := f.s.UpdateProduct(ctx, p.ID, store.ProductInput{Active: boolPtr(!p.Active), Name: ptr(words[rnd.IntN(len(words))] + " lamp")}, 0)
				if err != nil {
					t.Fatal(err)
				}
				all[p.ID-1] = u
			}
			for _, id := range []int64{5, 17} {
				if err := f.s.DeleteProduct(ctx, id, 0, 0); err != nil {
					t.Fatal(err)
				}
				all[id-1] = nil
			}
			all = slices.DeleteFunc(all, func(p *store.Product) bool { return p == nil })

			check := func(q store.ProductQuery, want []int64) {
				t.Helper()
				for _, pp := range []int{1, 7, 100} {
					var got []int64
					for page := 1; page <= len(want)/pp+2; page++ {
						q.Page, q.PerPage = page, pp
						p := f.listProducts(t, q)
						if p.Total != int64(len(want)) || p.TotalIsLowerBound {
							t.Fatalf("%+v: total %d (lower bound %v), want %d", q, p.Total, p.TotalIsLowerBound, len(want))
						}
						got = append(got, productIDs(p)...)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%+v per_page %d, pages joined:\n got %v\nwant %v", q, pp, got, want)
					}
				}
			}
			for _, active := range []string{"", "true", "false"} {
				for _, sort := range store.ProductSorts {
					check(store.ProductQuery{Sort: sort, Active: active}, oracleProducts(all, "", active, sort))
				}
				for _, q := range []string{"m", "mu", "mug", "mugs", "t", "tea", "cap-", "mug-1", "uber", "ÜBER", "12", "3", "mug lamp", "t c", "zz"} {
					check(store.ProductQuery{Q: q, Active: active}, oracleProducts(all, q, active, ""))
				}
			}
		})
	}
}

// oracleProducts lists the products a query answers, in its order: for q,
// the product the digits of the one term name first, then by the first
// matching term of the most selective term, newest first; else by sort.
func oracleProducts(all []*store.Product, q, active string, sort store.Sort) []int64 {
	var hits []*store.Product
	terms := oracleQueryTerms(foldProduct(q))
	termsOf := func(p *store.Product) []string {
		ts := append(oracleRuns(foldProduct(p.Name)), strings.Join(oracleWords(foldProduct(p.SKU)), " "))
		slices.Sort(ts)
		// A term that starts another is listed under the longer one.
		return slices.DeleteFunc(ts, func(t string) bool {
			return slices.ContainsFunc(ts, func(u string) bool { return u != t && strings.HasPrefix(u, t) })
		})
	}
	first := func(p *store.Product, t string) string {
		for _, pt := range termsOf(p) {
			if strings.HasPrefix(pt, t) {
				return pt
			}
		}
		return ""
	}
	matches := func(p *store.Product, t string) bool {
		return strconv.FormatInt(p.ID, 10) == t || first(p, t) != ""
	}
	for _, p := range all {
		if active != "" && p.Active != (active == "true") {
			continue
		}
		ok := true
		for _, t := range terms {
			ok = ok && matches(p, t)
		}
		if ok {
			hits = append(hits, p)
		}
	}
	if q != "" {
		driver, best := 0, -1
		for i, t := range terms {
			n := 0
			for _, p := range all {
				if (active == "" || p.Active == (active == "true")) && first(p, t) != "" {
					n++
				}
			}
			if best < 0 || n < best {
				driver, best = i, n
			}
		}
		if len(terms) == 0 {
			return []int64{}
		}
		d := terms[driver]
		slices.SortFunc(hits, func(a, b *store.Product) int {
			return matchOrder(d, a.ID, b.ID, first(a, d), first(b, d))
		})
	} else {
		cmp := map[string]func(a, b *store.Product) int{
			"sku": func(a, b *store.Product) int { return strings.Compare(strings.ToLower(a.SKU), strings.ToLower(b.SKU)) },
			"name": func(a, b *store.Product) int {
				return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
			},
			"created": func(a, b *store.Product) int {
				if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
					return c
				}
				return int(a.ID - b.ID)
			},
		}[sort.Field()]
		slices.SortFunc(hits, func(a, b *store.Product) int {
			c := cmp(a, b)
			if c == 0 && sort.Field() != "created" {
				c = int(b.ID - a.ID) // equal names: newest first
			}
			if sort.Desc() {
				return -c
			}
			return c
		})
	}
	out := []int64{}
	for _, p := range hits {
		out = append(out, p.ID)
	}
	return out
}

// foldProduct folds like the store for the words this test uses.
func foldProduct(s string) string {
	return strings.NewReplacer("ü", "u", "Ü", "u").Replace(strings.ToLower(s))
}

// TestSeedFillsTheCatalogue: -seed puts the demo orders' products in the
// catalogue (once), and every seeded item's SKU is one of them.
func TestSeedFillsTheCatalogue(t *testing.T) {
	tg := testutil.Targets(t)[0]
	ctx := context.Background()
	f := fresh(t, tg)
	all := seeded(t, f, 40, rand.New(rand.NewPCG(1, 1)))
	if _, err := f.s.Seed(ctx, 5, nil); err != nil {
		t.Fatal(err)
	}
	p := f.listProducts(t, store.ProductQuery{PerPage: 100})
	if p.Total != 12 || len(p.Products) != 12 {
		t.Fatalf("after two seeds the catalogue has %d products, want the 12 demo ones", p.Total)
	}
	skus := map[string]bool{}
	for _, x := range p.Products {
		skus[x.SKU] = true
	}
	for _, o := range all {
		for _, it := range o.Items {
			if !skus[it.SKU] {
				t.Errorf("order %d's item %s is not in the catalogue", o.ID, it.SKU)
			}
		}
	}
}

// TestSeedIfEmptyOnceAmongInstances: instances started together on one
// empty store each ask to seed (main's -seed): the demo orders are written
// once, not once per instance; a store that holds orders is not seeded.
func TestSeedIfEmptyOnceAmongInstances(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			var wg sync.WaitGroup
			var mu sync.Mutex
			seeders := 0
			for range 4 {
				wg.Go(func() {
					s := redisstore.New(tg.Client, redisstore.Options{Prefix: f.prefix, Cluster: tg.Cluster})
					ok, _, err := s.SeedIfEmpty(ctx, 30)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						seeders++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if n, err := f.s.CountOrders(ctx); err != nil || n != 30 || seeders != 1 {
				t.Errorf("four instances seeding 30 at once: %d orders stored (%v) by %d seeders, want 30 by one", n, err, seeders)
			}
			if ok, _, err := f.s.SeedIfEmpty(ctx, 30); ok || err != nil {
				t.Errorf("a store with orders seeded again: %v, %v", ok, err)
			}
		})
	}
}

// TestProductsBySKUFindsEachHolderCaseAside: SKUs as given, in any case,
// map to their products; unknown, deleted and renamed-away SKUs are absent;
// a batch larger than one round trip's holds them all.
func TestProductsBySKUFindsEachHolderCaseAside(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			var want []string
			for i := range 1205 {
				sku := fmt.Sprintf("SKU-%d", i)
				if _, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr(sku), Name: ptr("P"), UnitPrice: ptr("1")}); err != nil {
					t.Fatal(err)
				}
				want = append(want, sku)
			}
			if err := f.s.DeleteProduct(ctx, 3, 0, 0); err != nil { // SKU-2
				t.Fatal(err)
			}
			if _, err := f.s.UpdateProduct(ctx, 4, store.ProductInput{SKU: ptr("MOVED-3")}, 0); err != nil { // SKU-3
				t.Fatal(err)
			}
			asked := append([]string{"sku-0", "Sku-1", "SKU-2", "SKU-3", "moved-3", "NONE"}, want[4:]...)
			got, err := f.s.ProductsBySKU(ctx, asked)
			if err != nil {
				t.Fatal(err)
			}
			for _, sku := range []string{"SKU-2", "SKU-3", "NONE"} {
				if p := got[sku]; p != nil {
					t.Errorf("%s: found product %d (%s), want none", sku, p.ID, p.SKU)
				}
			}
			if p := got["sku-0"]; p == nil || p.ID != 1 || p.SKU != "SKU-0" {
				t.Errorf("sku-0: %+v, want product 1 SKU-0", p)
			}
			if p := got["moved-3"]; p == nil || p.ID != 4 {
				t.Errorf("moved-3: %+v, want product 4", p)
			}
			if n := len(got); n != 3+len(want)-4 {
				t.Errorf("%d found, want %d", n, 3+len(want)-4)
			}
		})
	}
}
