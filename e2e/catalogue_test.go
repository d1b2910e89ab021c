package e2e

// The product catalogue's invariants, checked from the
// outside after a concurrent or chaotic load: over HTTP, every product
// that exists is in every list it belongs in, once, as it is; no two
// products share a SKU, case aside; every acknowledged write is there;
// and in Redis (the keys docs/data.md names) the SKU claims agree with
// the products, and store.Repair in check mode finds nothing.

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

// productJSON is a product as its JSON representation shows it.
type productJSON struct {
	ID        int64       `json:"id"`
	SKU       string      `json:"sku"`
	Name      string      `json:"name"`
	UnitPrice store.Money `json:"unit_price"`
	Currency  string      `json:"currency"`
	Active    bool        `json:"active"`
	Version   int64       `json:"version"`
}

// ackedProducts is what the product writers were told (deleted holds
// the SKU a deleted product had).
type ackedProducts = ackedRecords[productJSON]

func newAckedProducts() *ackedProducts { return newAckedRecords[productJSON]() }

// catalogue is what checkCatalogue found: counts of what was checked and
// one count per kind of problem, each of which must be zero.
type catalogue struct {
	Exist, Listed, Live, Claims int
	Repair                      redisstore.RepairReport
	// httpOnly: the Redis was not reachable (the embedded one), so neither
	// its claims nor store.Repair were checked.
	httpOnly bool

	collectionFaults
	SharedSKU     int // two products with one SKU, case aside
	SearchMissing int // q=<its SKU> does not find the product
	ClaimMissing  int // a product whose SKU claim is absent or names another id
	ClaimDangling int // a claim that names no product, or one with another SKU
	RepairFound   int // problems store.Repair reports in check mode
}

func (c *catalogue) problems() int {
	return c.collectionProblems() + c.SharedSKU + c.SearchMissing + c.ClaimMissing + c.ClaimDangling + c.RepairFound
}

func (c *catalogue) String() string {
	redisChecks := fmt.Sprintf("%d SKU claims checked, repair check: %v", c.Claims, c.Repair)
	if c.httpOnly {
		redisChecks = "SKU claims checked over HTTP only"
	}
	return fmt.Sprintf("%d products exist, %d listed, %d acknowledged live products and %s; problems: "+
		"%d SKUs shared, %d wrong totals, %d duplicates, %d missing from a list, %d listed but missing, %d in the wrong list, %d stale rows, "+
		"%d acknowledged but unreadable, %d older than acknowledged, %d deleted but readable, %d not found by SKU, "+
		"%d claims missing, %d claims dangling, %d found by the repair check, %d wrong answers to the load; %v",
		c.Exist, c.Listed, c.Live, redisChecks, c.SharedSKU, c.WrongTotal, c.Duplicate, c.Missing, c.Dangling, c.WrongList,
		c.StaleRow, c.Unreadable, c.OlderThanAck, c.DeletedExists, c.SearchMissing, c.ClaimMissing, c.ClaimDangling, c.RepairFound, c.LoadProblems,
		c.History)
}

// wantCatalogue fails the test with the details when c found a problem.
func wantCatalogue(t *testing.T, c *catalogue) {
	t.Helper()
	if c.problems() > 0 {
		t.Errorf("the catalogue: %v\n%s", c, strings.Join(c.details, "\n"))
	}
}

// walkProducts reads every page of GET /products?per_page=100&<query>.
func walkProducts(base, query string) (rows []productJSON, totals []int64, err error) {
	return walkPages[productJSON](base, "/products", "products", query)
}

// checkCatalogue checks the products of the app at base, and of the store
// st over rdb (prefix: st's key prefix; st nil: HTTP only), against what a
// load acknowledged (a may be nil: the catalogue's own consistency only),
// their histories too (checkHistories).
func checkCatalogue(t *testing.T, base string, st *redisstore.Store, rdb redis.UniversalClient, prefix string, a *ackedProducts) *catalogue {
	t.Helper()
	c := &catalogue{}
	loaded := a != nil
	if a == nil {
		a = newAckedProducts()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var problems []string
	c.LoadProblems, problems = a.loadProblems()
	c.details = append(c.details, problems...)

	// Every product that exists.
	maxID := a.maxID()
	records, failed := probeRecords[productJSON](base, "/products", maxID)
	if len(failed) > 0 {
		t.Fatalf("reading every product failed:\n%s", strings.Join(failed, "\n"))
	}
	c.Exist = len(records)
	ids := sortedIDs(records)

	holders := map[string]int64{}
	for _, id := range ids {
		p := records[id]
		k := strings.ToLower(p.SKU)
		if other, ok := holders[k]; ok {
			c.add(&c.SharedSKU, "products %d and %d share the SKU %q / %q", other, id, records[other].SKU, p.SKU)
		}
		holders[k] = id
	}
	c.Live = checkAcked(&c.collectionFaults, "product", records, a)

	// Every list: the whole catalogue, each filter, each sort.
	checkList := func(query string, belongs func(productJSON) bool) {
		rows := checkListOf(t, &c.collectionFaults, base, "/products", "products", query, records, ids, belongs,
			func(row, p productJSON) bool { return row == p })
		if query == "" {
			c.Listed = len(rows)
		}
	}
	all := func(productJSON) bool { return true }
	for _, s := range append([]string{""}, "sort=-sku", "sort=name", "sort=-name", "sort=created", "sort=-created") {
		checkList(s, all)
		for _, active := range []bool{true, false} {
			q := "active=" + strconv.FormatBool(active)
			if s != "" {
				q += "&" + s
			}
			checkList(q, func(p productJSON) bool { return p.Active == active })
		}
	}
	// A search for its whole SKU finds each product (at most 300 of them).
	for i, id := range ids {
		if i >= 300 {
			break
		}
		p := records[id]
		rows, _, err := walkProducts(base, "q="+url.QueryEscape(p.SKU))
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		found := false
		for _, r := range rows {
			found = found || r.ID == id
		}
		if !found {
			c.add(&c.SearchMissing, "q=%s does not find product %d among %d rows", p.SKU, id, len(rows))
		}
	}

	// Every product's history, up to the highest id anyone saw.
	c.History = checkHistoriesOf(&c.collectionFaults, base, "/products", maxID, records, a.historyAcks(loaded))

	// Every SKU is held: a create of it, in another case, is refused and
	// names its holder (what a lost claim, after a restart from a
	// snapshot say, would let through). Refused, it changes nothing.
	for i, id := range ids {
		if i >= 50 {
			break
		}
		if msg := claimHeld(t, base, "/products", "sku", records[id].SKU, "is already the SKU of product "+strconv.FormatInt(id, 10), map[string]any{"name": "Taken?", "unit_price": "1"}); msg != "" {
			c.add(&c.ClaimMissing, "%s", msg)
		}
	}
	if st == nil {
		c.httpOnly = true
		return c // no way into the Redis: what HTTP shows only
	}
	// In Redis: every product holds the claim of its SKU, and every claim
	// is held by the product it names (docs/data.md: pu:{p}:sku:<sku
	// folded> holds the id).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claimPrefix := prefix + "pu:{p}:sku:"
	for _, id := range ids {
		p := records[id]
		got, err := rdb.Get(ctx, claimPrefix+strings.ToLower(p.SKU)).Result()
		if err != nil || got != strconv.FormatInt(id, 10) {
			c.add(&c.ClaimMissing, "product %d (%s): its claim holds %q (%v), want %d", id, p.SKU, got, err, id)
		}
	}
	var (
		keys []string
		mu   sync.Mutex // ForEachMaster scans the masters at once
	)
	scan := func(ctx context.Context, n redis.Cmdable) error {
		iter := n.Scan(ctx, 0, claimPrefix+"*", 1000).Iterator()
		var found []string
		for iter.Next(ctx) {
			found = append(found, iter.Val())
		}
		mu.Lock()
		keys = append(keys, found...)
		mu.Unlock()
		return iter.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		t.Fatalf("scanning the SKU claims: %v", err)
	}
	c.Claims = len(keys)
	for _, k := range keys {
		v, err := rdb.Get(ctx, k).Result()
		id, ok := store.ParseID(v)
		p, exists := records[id]
		if err != nil || !ok || !exists || strings.ToLower(p.SKU) != strings.TrimPrefix(k, claimPrefix) {
			c.add(&c.ClaimDangling, "claim %s holds %q (%v): no product %s with that SKU", k, v, err, v)
		}
	}
	r, err := st.Repair(ctx, false)
	if err != nil {
		t.Fatalf("store.Repair (check): %v", err)
	}
	c.Repair = r
	if n := r.Problems(); n > 0 {
		c.add(&c.RepairFound, "store.Repair in check mode: %v", r)
	}
	return c
}
