package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Products are the catalogue that fills order items: a second resource,
// stored through the same write path as orders (write.go) with two differences
// the kind declares:
//
//   - Every product key carries the hash tag {p}: the catalogue lives in
//     one Cluster slot, so a product, its index entries and its SKU claim
//     change in one transaction on a Cluster too. A catalogue stays small
//     (the demo has 12; a large shop's 100,000 are about 50 MB).
//   - The SKU is unique (case aside): the record claims pu:{p}:sku:<sku>.
//
// Keys (with the store's prefix):
//
//	p:{p}:<id>              hash: k sku, n name, pr price (in hundredths, or ms decimals), cu currency (absent when USD), ms (absent when 2), a "1" when active, v, ca, ua
//	seq:{p}                 the id counter
//	pu:{p}:sku:<sku folded> the id that holds the SKU
//	px:{p}:created[:part]   by created time, score timeScore, member the id
//	px:{p}:sku[:part]       by SKU, member "sku NUL inverted-id" (lex)
//	px:{p}:name[:part]      by name, member "name NUL inverted-id" (lex)
//	px:{p}:w[:part]:<c>     search terms (the words of the name, the SKU), as orders' (search.go)
//	px:{p}:w[:part]:<c>:<L> and their dup sets
//
// part is "" (every product), "active" or "inactive": each list filter is
// one set, so every sort and a search of one term are O(log N + page) and
// exact with or without the filter.

// Product hash fields.
const (
	pfSKU      = "k"
	pfName     = "n"
	pfPrice    = "pr"
	pfCurrency = "cu" // absent when USD
	pfActive   = "a"  // "1" or "0"
	pfVersion  = "v"
	pfCreated  = "ca"
	pfUpdated  = "ua"
)

func encodeProduct(p *store.Product) []any {
	active := "0"
	if p.Active {
		active = "1"
	}
	args := []any{pfSKU, p.SKU, pfName, p.Name, pfPrice, int64(p.UnitPrice), pfActive, active,
		pfVersion, p.Version, pfCreated, p.CreatedAt.Unix(), pfUpdated, p.UpdatedAt.Unix()}
	if p.Currency != "USD" {
		args = append(args, pfCurrency, p.Currency)
	}
	return appendScale(args, p.Currency)
}

func decodeProduct(id int64, h map[string]string) (*store.Product, bool) {
	if len(h) == 0 {
		return nil, false
	}
	p := &store.Product{ID: id, SKU: h[pfSKU], Name: h[pfName], Currency: h[pfCurrency], Active: h[pfActive] == "1"}
	if p.Currency == "" {
		p.Currency = "USD"
	}
	price, err1 := strconv.ParseInt(h[pfPrice], 10, 64)
	v, err2 := strconv.ParseInt(h[pfVersion], 10, 64)
	ca, err3 := strconv.ParseInt(h[pfCreated], 10, 64)
	ua, err4 := strconv.ParseInt(h[pfUpdated], 10, 64)
	if errors.Join(err1, err2, err3, err4) != nil || p.SKU == "" || p.Name == "" || v < 1 {
		return nil, false
	}
	p.UnitPrice, p.Version = readScale(h, p.Currency)(store.Money(price)), v
	p.CreatedAt, p.UpdatedAt = time.Unix(ca, 0).UTC(), time.Unix(ua, 0).UTC()
	return p, true
}

// productParts are the list filters a product is in: every product, and
// active or inactive.
func productParts(p *store.Product) [2]string {
	if p.Active {
		return [2]string{"", "active"}
	}
	return [2]string{"", "inactive"}
}

// productIndex names a product index ("created", "sku", "name", "w") for a
// part ("", "active", "inactive").
func (s *Store) productIndex(ix, part string) string {
	k := s.prefix + "px:{p}:" + ix
	if part != "" {
		k += ":" + part
	}
	return k
}

// productTermSet and productDupSet name the search sets of a part for the
// terms that start like t.
func (s *Store) productTermSet(t, part string) string {
	_, n := utf8.DecodeRuneInString(t)
	return s.productIndex("w", part) + ":" + t[:n]
}

func (s *Store) productDupSet(t, part string, depth int) string {
	return s.productTermSet(t, part) + ":" + strconv.Itoa(depth)
}

// productTerms are the search terms of p: the words of its name
// (wordTerms) and its SKU (codeTerm), folded.
func productTerms(p *store.Product) []string {
	return distinctTerms(append(wordTerms(nil, p.Name), codeTerm(p.SKU)))
}

func (s *Store) productEntries(p *store.Product) []ixEntry {
	idm := strconv.FormatInt(p.ID, 10)
	var out []ixEntry
	terms := productTerms(p)
	for _, part := range productParts(p) {
		out = append(out,
			ixEntry{s.productIndex("created", part), idm, timeScore(p.CreatedAt, p.ID)},
			ixEntry{s.productIndex("sku", part), nameMember(p.SKU, p.ID), 0},
			ixEntry{s.productIndex("name", part), nameMember(p.Name, p.ID), 0})
		out = appendTermEntries(out, terms, p.ID,
			func(t string) string { return s.productTermSet(t, part) },
			func(t string, d int) string { return s.productDupSet(t, part, d) })
	}
	return out
}

// skuClaim is the key that holds a SKU for one product.
func (s *Store) skuClaim(sku string) string { return s.prefix + "pu:{p}:sku:" + strings.ToLower(sku) }

// productKind is how products are stored.
var productKind = register(&kind[store.Product]{
	name:           store.ProductEvents,
	noun:           "product",
	seq:            "seq:{p}",
	slot:           "p",
	versionField:   pfVersion,
	decode:         decodeProduct,
	encode:         encodeProduct,
	meta:           func(p *store.Product) recordMeta { return recordMeta{&p.ID, &p.Version, &p.CreatedAt, &p.UpdatedAt} },
	same:           func(a, b *store.Product) bool { return *a == *b },
	entries:        (*Store).productEntries,
	deleteConflict: "someone else changed this product; review the current values",
	fields: []recordField[store.Product]{
		{"sku", func(p *store.Product) any { return p.SKU }},
		{"name", func(p *store.Product) any { return p.Name }},
		{"unit_price", func(p *store.Product) any { return p.UnitPrice.In(p.Currency) }},
		{"currency", func(p *store.Product) any { return p.Currency }},
		{"active", func(p *store.Product) any { return p.Active }},
	},
	event: func(p *store.Product) []byte {
		b, _ := json.Marshal(struct {
			ID      int64 `json:"id"`
			Version int64 `json:"version"`
			Active  bool  `json:"active"`
		}{p.ID, p.Version, p.Active})
		return b
	},
	indexes: func(s *Store) []indexKey {
		byID := func(m string) (int64, bool) { return store.ParseID(m) }
		var keys []indexKey
		for _, part := range []string{"", "active", "inactive"} {
			keys = append(keys, indexKey{s.productIndex("created", part), byID},
				indexKey{s.productIndex("sku", part), memberID}, indexKey{s.productIndex("name", part), memberID})
		}
		return keys
	},
	indexPattern: func(s *Store) string { return globEscape(s.prefix+"px:{p}:w") + "*" },
	claims:       func(s *Store, p *store.Product) []string { return []string{s.skuClaim(p.SKU)} },
	claimTaken: func(p *store.Product, _ string, owner int64) error {
		return &store.Error{Code: store.EINVALID, Message: "the product has invalid values",
			Fields: map[string]string{"sku": "is already the SKU of product " + strconv.FormatInt(owner, 10)}}
	},
	example: func(n int) (store.Product, map[string]string) {
		sku, name, price := "SKU-"+strconv.Itoa(n), "Product "+strconv.Itoa(n), "1.50"
		return store.ApplyProduct(nil, store.ProductInput{SKU: &sku, Name: &name, UnitPrice: &price})
	},
})

// The demo catalogue (seed.go) is written through CreateProduct, which
// refers to productKind: set apart from its literal.
func init() { productKind.seed = (*Store).seedProducts }

// ProductsBySKU finds the products that hold skus, case aside.
func (s *Store) ProductsBySKU(ctx context.Context, skus []string) (map[string]*store.Product, error) {
	out := make(map[string]*store.Product, len(skus))
	// Two pipelined round trips per batch whatever its size: the claims
	// name the ids, then the hashes are read. A claim whose product does
	// not hold the SKU (a moment inside another write) is not an answer.
	const batch = 1000
	for lo := 0; lo < len(skus); lo += batch {
		part := skus[lo:min(lo+batch, len(skus))]
		pipe := s.rdb.Pipeline()
		claims := make([]*redis.StringCmd, len(part))
		for i, sku := range part {
			claims[i] = pipe.Get(ctx, s.skuClaim(sku))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap(err)
		}
		ids := make([]int64, len(part))
		hashes := make([]*redis.MapStringStringCmd, len(part))
		pipe = s.rdb.Pipeline()
		for i, c := range claims {
			id, err := strconv.ParseInt(c.Val(), 10, 64)
			if err != nil || id < 1 {
				continue
			}
			ids[i] = id
			hashes[i] = pipe.HGetAll(ctx, productKind.key(s, id))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap(err)
		}
		for i, h := range hashes {
			if h == nil {
				continue
			}
			if p, ok := decodeProduct(ids[i], h.Val()); ok && strings.EqualFold(p.SKU, part[i]) {
				out[part[i]] = p
			}
		}
	}
	return out, nil
}

// GetProduct reads one product.
func (s *Store) GetProduct(ctx context.Context, id int64) (*store.Product, error) {
	p, err := getRecord(ctx, s, s.rdb, productKind, id)
	return p, wrap(err)
}

// CreateProduct validates in and stores it as a new product with a fresh
// id. A SKU another product has (case aside) is a field error naming it.
func (s *Store) CreateProduct(ctx context.Context, in store.ProductInput) (*store.Product, error) {
	p, errs := store.ApplyProduct(nil, in)
	if errs != nil {
		return nil, productKind.invalid(errs, nil)
	}
	return createRecord(ctx, s, productKind, p)
}

// UpdateProduct applies in to product id, with the same version checks as
// UpdateOrder; a change that changes nothing keeps the version.
func (s *Store) UpdateProduct(ctx context.Context, id int64, in store.ProductInput, ifMatch int64) (*store.Product, error) {
	return updateRecord(ctx, s, productKind, id, ifMatch, in.Version, func(cur *store.Product) (store.Product, map[string]string) {
		return store.ApplyProduct(cur, in)
	})
}

// DeleteProduct removes product id (its SKU is free again). Orders keep
// their own copies of what they were sold with.
func (s *Store) DeleteProduct(ctx context.Context, id int64, ifMatch, version int64) error {
	return deleteRecord(ctx, s, productKind, id, ifMatch, version)
}

// RestoreProduct brings back product id deleted within the undo window
// (restoreRecord); a SKU another product took meanwhile refuses it.
func (s *Store) RestoreProduct(ctx context.Context, id int64) (*store.Product, error) {
	return restoreRecord(ctx, s, productKind, id, nil)
}

// ProductHistory is a page of product id's history, newest first, before
// the entry named by cursor ("": from the newest); perPage 0 is 25.
func (s *Store) ProductHistory(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return historyOf(ctx, s, productKind, id, cursor, perPage)
}

// AddProductNote appends a note to product id's history.
func (s *Store) AddProductNote(ctx context.Context, id int64, note string) (*store.HistoryEntry, error) {
	return noteOn(ctx, s, productKind, id, note)
}

// ListProducts answers one page of the product list. Every sort, with or
// without the active filter, and one term of at most dupDepth bytes are
// O(log N + page) with an exact total (each filter value has its own sets);
// several terms examine at most MaxCandidates products.
func (s *Store) ListProducts(ctx context.Context, q store.ProductQuery) (store.ProductPage, error) {
	part := map[string]string{"true": "active", "false": "inactive"}[q.Active]
	keep := func(p *store.Product) bool { return part == "" || p.Active == (part == "active") }
	l := termList[store.Product]{k: productKind, sorts: store.ProductSorts,
		sorted:  func(field string) string { return s.productIndex(field, part) },
		termSet: func(t string) string { return s.productTermSet(t, part) },
		dupSet:  func(t string, d int) string { return s.productDupSet(t, part, d) },
		terms:   productTerms, keep: keep,
		load: func(ctx context.Context, ids []int64, keep func(*store.Product) bool) ([]store.Product, error) {
			return readRecords(ctx, s, productKind, ids, keep)
		}}
	p, err := l.list(ctx, s, q.Q, q.Sort, q.Page, q.PerPage)
	return store.ProductPage{Products: p.Rows, Page: p.Page, PerPage: p.PerPage, Total: p.Total,
		TotalIsLowerBound: p.TotalIsLowerBound, MatchOrder: p.MatchOrder}, err
}
