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
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
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

// ackedProducts is what the product writers were told: the last
// acknowledged state of every product, acknowledged deletes, and products
// whose delete had an unknown outcome.
type ackedProducts struct {
	mu        sync.Mutex
	products  map[int64]productJSON
	deleted   map[int64]string // the SKU it had
	maybeGone map[int64]bool
	hot       []int64
	counts    map[string]int
	problems  []string
	// For the history check, as acked has them.
	versions    map[int64]map[int64]bool
	lost        map[int64]map[int64]bool
	lostCreates int
	delVersion  map[int64]int64
}

func newAckedProducts() *ackedProducts {
	return &ackedProducts{products: map[int64]productJSON{}, deleted: map[int64]string{}, maybeGone: map[int64]bool{}, counts: map[string]int{},
		versions: map[int64]map[int64]bool{}, lost: map[int64]map[int64]bool{}, delVersion: map[int64]int64{}}
}

// unknown records a write whose answer was lost: a create (id 0), or a
// write to product id carrying version.
func (a *ackedProducts) unknown(id, version int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts["unknown"]++
	if id == 0 {
		a.lostCreates++
		return
	}
	addTo(a.lost, id, version)
}

func (a *ackedProducts) count(what string) {
	a.mu.Lock()
	a.counts[what]++
	a.mu.Unlock()
}

func (a *ackedProducts) problem(what, format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts[what]++
	if len(a.problems) < 10 {
		a.problems = append(a.problems, fmt.Sprintf(format, args...))
	}
}

// ack records an acknowledged state of p (the highest version wins).
func (a *ackedProducts) ack(p productJSON) {
	a.mu.Lock()
	defer a.mu.Unlock()
	addTo(a.versions, p.ID, p.Version)
	if _, gone := a.deleted[p.ID]; gone {
		return
	}
	if cur, ok := a.products[p.ID]; ok && p.Version <= cur.Version {
		return
	}
	a.products[p.ID] = p
}

// catalogue is what checkCatalogue found: counts of what was checked and
// one count per kind of problem, each of which must be zero.
type catalogue struct {
	Exist, Listed, Live, Claims int
	Repair                      redisstore.RepairReport
	// httpOnly: the Redis was not reachable (the embedded one), so neither
	// its claims nor store.Repair were checked.
	httpOnly bool

	SharedSKU     int // two products with one SKU, case aside
	WrongTotal    int // a list's total is not the number of its rows
	Duplicate     int // a product twice in one list
	Missing       int // an existing product absent from a list it belongs in
	Dangling      int // a listed product that does not exist
	WrongList     int // a listed product that does not belong in that list
	StaleRow      int // a row that differs from GET /products/<id>
	Unreadable    int // an acknowledged product that does not exist
	OlderThanAck  int // a product older than its last acknowledged version
	DeletedExists int // an acknowledged delete that is readable
	SearchMissing int // q=<its SKU> does not find the product
	ClaimMissing  int // a product whose SKU claim is absent or names another id
	ClaimDangling int // a claim that names no product, or one with another SKU
	RepairFound   int // problems store.Repair reports in check mode
	LoadProblems  int // wrong answers the load got (a stale version accepted, ...)
	// History is what the products' histories say (history_test.go).
	History *histories

	mu      sync.Mutex
	details []string
}

func (c *catalogue) problems() int {
	return c.SharedSKU + c.WrongTotal + c.Duplicate + c.Missing + c.Dangling + c.WrongList + c.StaleRow + c.Unreadable +
		c.OlderThanAck + c.DeletedExists + c.SearchMissing + c.ClaimMissing + c.ClaimDangling + c.RepairFound + c.LoadProblems +
		c.History.problems()
}

func (c *catalogue) add(field *int, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*field++
	if len(c.details) < 30 {
		c.details = append(c.details, fmt.Sprintf(format, args...))
	}
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

// productPage is one page of GET /products as JSON.
type productPage struct {
	Products []productJSON `json:"products"`
	Total    int64         `json:"total"`
	Next     *string       `json:"next"`
}

// walkProducts reads every page of GET /products?per_page=100&<query>.
func walkProducts(base, query string) (rows []productJSON, totals []int64, err error) {
	next := "/products?per_page=100"
	if query != "" {
		next += "&" + query
	}
	for pages := 0; next != ""; pages++ {
		if pages > 1000 {
			return nil, nil, fmt.Errorf("GET /products?%s: more than 1,000 pages", query)
		}
		r, err := call(base, http.MethodGet, next, "", nil, testutil.HJSON)
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %v", next, err)
		}
		if r.Status != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %d %s, want 200", next, r.Status, testutil.Snippet(r.Body))
		}
		var p productPage
		if err := r.Decode(&p); err != nil {
			return nil, nil, fmt.Errorf("GET %s: %v in %s", next, err, testutil.Snippet(r.Body))
		}
		rows = append(rows, p.Products...)
		totals = append(totals, p.Total)
		next = ""
		if p.Next != nil {
			next = *p.Next
		}
	}
	return rows, totals, nil
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
	for _, k := range []string{"stale accepted", "both won", "bad body"} {
		c.LoadProblems += a.counts[k]
	}
	c.details = append(c.details, a.problems...)

	// Every product that exists: ids are handed out in sequence (a
	// refused create may skip one), so probe past the highest id seen
	// until 200 in a row do not exist.
	maxID := int64(0)
	for id := range a.products {
		maxID = max(maxID, id)
	}
	for id := range a.deleted {
		maxID = max(maxID, id)
	}
	records := map[int64]productJSON{}
	var mu sync.Mutex
	var failed []string
	probe := func(from, to int64) int64 {
		ids := make(chan int64)
		var wg sync.WaitGroup
		var highest int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range ids {
					r, err := call(base, http.MethodGet, "/products/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
					mu.Lock()
					switch {
					case err != nil:
						failed = append(failed, fmt.Sprintf("GET /products/%d: %v", id, err))
					case r.Status == http.StatusOK:
						var p productJSON
						if err := r.Decode(&p); err != nil || p.ID != id {
							failed = append(failed, fmt.Sprintf("GET /products/%d: %v %s", id, err, testutil.Snippet(r.Body)))
						} else {
							records[id] = p
							highest = max(highest, id)
						}
					case r.Status != http.StatusNotFound:
						failed = append(failed, fmt.Sprintf("GET /products/%d: %d %s, want 200 or 404", id, r.Status, testutil.Snippet(r.Body)))
					}
					mu.Unlock()
				}
			}()
		}
		for id := from; id <= to; id++ {
			ids <- id
		}
		close(ids)
		wg.Wait()
		return highest
	}
	for from, to := int64(1), maxID+200; ; {
		h := probe(from, to)
		if h <= to-200 {
			break
		}
		from, to = to+1, h+200
	}
	if len(failed) > 0 {
		t.Fatalf("reading every product failed:\n%s", strings.Join(failed[:min(len(failed), 10)], "\n"))
	}
	c.Exist = len(records)
	ids := make([]int64, 0, len(records))
	for id := range records {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })

	holders := map[string]int64{}
	for _, id := range ids {
		p := records[id]
		k := strings.ToLower(p.SKU)
		if other, ok := holders[k]; ok {
			c.add(&c.SharedSKU, "products %d and %d share the SKU %q / %q", other, id, records[other].SKU, p.SKU)
		}
		holders[k] = id
	}
	for id, want := range a.products {
		if a.maybeGone[id] {
			continue
		}
		c.Live++
		p, ok := records[id]
		switch {
		case !ok:
			c.add(&c.Unreadable, "acknowledged product %d (v%d, %s) does not exist", id, want.Version, want.SKU)
		case p.Version < want.Version:
			c.add(&c.OlderThanAck, "product %d is at v%d, acknowledged at v%d", id, p.Version, want.Version)
		}
	}
	for id, sku := range a.deleted {
		if p, ok := records[id]; ok {
			c.add(&c.DeletedExists, "deleted product %d (%s) is readable (v%d, %s)", id, sku, p.Version, p.SKU)
		}
	}

	// Every list: the whole catalogue, each filter, each sort.
	checkList := func(query string, belongs func(productJSON) bool) {
		rows, totals, err := walkProducts(base, query)
		if err != nil {
			t.Fatalf("list %s: %v", query, err)
		}
		for _, total := range totals {
			if total != int64(len(rows)) {
				c.add(&c.WrongTotal, "list ?%s says total %d, holds %d rows", query, total, len(rows))
				break
			}
		}
		seen := map[int64]bool{}
		for _, row := range rows {
			if seen[row.ID] {
				c.add(&c.Duplicate, "product %d twice in list ?%s", row.ID, query)
			}
			seen[row.ID] = true
			p, ok := records[row.ID]
			switch {
			case !ok:
				c.add(&c.Dangling, "list ?%s holds product %d, which does not exist", query, row.ID)
			case !belongs(p):
				c.add(&c.WrongList, "list ?%s holds product %d (%s, active %v)", query, row.ID, p.SKU, p.Active)
			case row != p:
				c.add(&c.StaleRow, "list ?%s shows product %d as %+v, it is %+v", query, row.ID, row, p)
			}
		}
		for _, id := range ids {
			if p := records[id]; belongs(p) && !seen[id] {
				c.add(&c.Missing, "product %d (v%d %s, active %v) is missing from list ?%s", id, p.Version, p.SKU, p.Active, query)
			}
		}
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
	current := map[int64]int64{}
	for id, p := range records {
		current[id] = p.Version
		maxID = max(maxID, id)
	}
	c.History = checkHistories(base, "/products", maxID, current, historyAcks{known: loaded, versions: a.versions, lost: a.lost,
		lostCreates: a.lostCreates, deleted: a.delVersion, maybeGone: a.maybeGone})
	for _, d := range c.History.details {
		if len(c.details) < 60 {
			c.details = append(c.details, "history: "+d)
		}
	}

	// Every SKU is held: a create of it, in another case, is refused and
	// names its holder (what a lost claim, after a restart from a
	// snapshot say, would let through). Refused, it changes nothing.
	for i, id := range ids {
		if i >= 50 {
			break
		}
		p := records[id]
		other := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'A'
			}
			if r >= 'A' && r <= 'Z' {
				return r - 'A' + 'a'
			}
			return r
		}, p.SKU)
		r, err := call(base, http.MethodPost, "/products", "application/json", jsonOf(map[string]any{"sku": other, "name": "Taken?", "unit_price": "1"}), testutil.HJSON)
		if err != nil {
			t.Fatalf("POST /products: %v", err)
		}
		var e struct {
			Errors map[string]string `json:"errors"`
		}
		_ = r.Decode(&e)
		if want := "is already the SKU of product " + strconv.FormatInt(id, 10); r.Status != http.StatusUnprocessableEntity || e.Errors["sku"] != want {
			c.add(&c.ClaimMissing, "a create of product %d's SKU as %q: %d %s, want 422 with sku %q", id, other, r.Status, testutil.Snippet(r.Body), want)
			if r.Status == http.StatusCreated {
				t.Fatalf("a second product holds product %d's SKU %s: %s", id, p.SKU, r.Body)
			}
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
	var keys []string
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
