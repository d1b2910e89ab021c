package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Every customer key carries the hash tag {c}, so a customer, its index
// entries and its email claim change in one transaction on a Cluster too.
//
// Keys (with the store's prefix):
//
//	c:{c}:<id>                 hash: n name, e email, ph phone, co company, l1 l2 ci re pc cy address, no notes, v, ca, ua (empty values absent)
//	seq:{c}                    the id counter
//	cu:{c}:email:<email lower> the id that holds the email
//	cx:{c}:created             by created time, score timeScore, member the id
//	cx:{c}:name                by name, member "name NUL inverted-id" (lex)
//	cx:{c}:last_order          by last order, score its newest order's timeScore (last_order.go)
//	cx:{c}:to_place            hash: the customers whose place in cx:{c}:last_order is to be set again, value a token (last_order.go)
//	c:{c}:<id>:links           hash: the orders that link the customer or are being linked to it (links.go)
//	cx:{c}:w:<c>, cx:{c}:w:<c>:<L> search terms (the words of the name and the company, the email, the phone's digits) and their dup sets, as orders' (search.go)

// Customer hash fields.
const (
	cfName    = "n"
	cfEmail   = "e"
	cfPhone   = "ph"
	cfCompany = "co"
	cfLine1   = "l1"
	cfLine2   = "l2"
	cfCity    = "ci"
	cfRegion  = "re"
	cfPostal  = "pc"
	cfCountry = "cy"
	cfNotes   = "no"
	cfVersion = "v"
	cfCreated = "ca"
	cfUpdated = "ua"
)

// customerText are the customer's text values by hash field.
func customerText(c *store.Customer) [][2]any {
	a := &c.Address
	return [][2]any{{cfName, &c.Name}, {cfEmail, &c.Email}, {cfPhone, &c.Phone}, {cfCompany, &c.Company},
		{cfLine1, &a.Line1}, {cfLine2, &a.Line2}, {cfCity, &a.City}, {cfRegion, &a.Region},
		{cfPostal, &a.PostalCode}, {cfCountry, &a.Country}, {cfNotes, &c.Notes}}
}

func encodeCustomer(c *store.Customer) []any {
	args := []any{cfVersion, c.Version, cfCreated, c.CreatedAt.Unix(), cfUpdated, c.UpdatedAt.Unix()}
	for _, f := range customerText(c) {
		if v := *f[1].(*string); v != "" {
			args = append(args, f[0], v)
		}
	}
	return args
}

func decodeCustomer(id int64, h map[string]string) (*store.Customer, bool) {
	if len(h) == 0 {
		return nil, false
	}
	c := &store.Customer{ID: id}
	for _, f := range customerText(c) {
		*f[1].(*string) = h[f[0].(string)]
	}
	v, err1 := strconv.ParseInt(h[cfVersion], 10, 64)
	ca, err2 := strconv.ParseInt(h[cfCreated], 10, 64)
	ua, err3 := strconv.ParseInt(h[cfUpdated], 10, 64)
	if errors.Join(err1, err2, err3) != nil || c.Name == "" || v < 1 {
		return nil, false
	}
	c.Version = v
	c.CreatedAt, c.UpdatedAt = time.Unix(ca, 0).UTC(), time.Unix(ua, 0).UTC()
	return c, true
}

// customerIndex names a customer index ("created", "name", "w").
func (s *Store) customerIndex(ix string) string { return s.prefix + "cx:{c}:" + ix }

// customerTermSet and customerDupSet name the search sets for the terms
// that start like t.
func (s *Store) customerTermSet(t string) string {
	_, n := utf8.DecodeRuneInString(t)
	return s.customerIndex("w") + ":" + t[:n]
}

func (s *Store) customerDupSet(t string, depth int) string {
	return s.customerTermSet(t) + ":" + strconv.Itoa(depth)
}

// customerTerms are the search terms of c: the words of its name, its
// company and its email (wordTerms), and its phone's digits, folded.
func customerTerms(c *store.Customer) []string {
	terms := wordTerms(wordTerms(wordTerms(nil, c.Name), c.Company), c.Email)
	if d := store.CustomerDigits(c.Phone); d != "" {
		terms = append(terms, d)
	}
	return distinctTerms(terms)
}

func (s *Store) customerEntries(c *store.Customer) []ixEntry {
	out := []ixEntry{
		{s.customerIndex("created"), strconv.FormatInt(c.ID, 10), timeScore(c.CreatedAt, c.ID)},
		{s.customerIndex("name"), nameMember(c.Name, c.ID), 0},
	}
	return appendTermEntries(out, customerTerms(c), c.ID, s.customerTermSet, s.customerDupSet)
}

// emailClaim is the key that holds an email for one customer.
func (s *Store) emailClaim(email string) string {
	return s.prefix + "cu:{c}:email:" + strings.ToLower(email)
}

// customerKind is how customers are stored.
var customerKind = register(&kind[store.Customer]{
	name:           store.CustomerEvents,
	noun:           "customer",
	seq:            "seq:{c}",
	slot:           "c",
	versionField:   cfVersion,
	decode:         decodeCustomer,
	encode:         encodeCustomer,
	meta:           func(c *store.Customer) recordMeta { return recordMeta{&c.ID, &c.Version, &c.CreatedAt, &c.UpdatedAt} },
	same:           sameCustomer,
	entries:        (*Store).customerEntries,
	deleteConflict: "someone else changed this customer; review the current values",
	fields: []recordField[store.Customer]{
		{"name", func(c *store.Customer) any { return c.Name }},
		{"email", func(c *store.Customer) any { return c.Email }},
		{"phone", func(c *store.Customer) any { return c.Phone }},
		{"company", func(c *store.Customer) any { return c.Company }},
		{"address.line1", func(c *store.Customer) any { return c.Address.Line1 }},
		{"address.line2", func(c *store.Customer) any { return c.Address.Line2 }},
		{"address.city", func(c *store.Customer) any { return c.Address.City }},
		{"address.region", func(c *store.Customer) any { return c.Address.Region }},
		{"address.postal_code", func(c *store.Customer) any { return c.Address.PostalCode }},
		{"address.country", func(c *store.Customer) any { return c.Address.Country }},
		{"notes", func(c *store.Customer) any { return c.Notes }},
	},
	event: func(c *store.Customer) []byte {
		b, _ := json.Marshal(struct {
			ID      int64 `json:"id"`
			Version int64 `json:"version"`
		}{c.ID, c.Version})
		return b
	},
	indexes: func(s *Store) []indexKey {
		return []indexKey{{s.customerIndex("created"), func(m string) (int64, bool) { return store.ParseID(m) }},
			{s.customerIndex("name"), memberID}}
	},
	indexPattern: func(s *Store) string { return globEscape(s.customerIndex("w")) + "*" },
	claims: func(s *Store, c *store.Customer) []string {
		if c.Email == "" {
			return nil
		}
		return []string{s.emailClaim(c.Email)}
	},
	claimTaken: func(c *store.Customer, _ string, owner int64) error {
		return &store.Error{Code: store.EINVALID, Message: "the customer has invalid values",
			Fields: map[string]string{"email": "is already the email of customer " + strconv.FormatInt(owner, 10)}}
	},
	example: func(n int) (store.Customer, map[string]string) {
		name, email := "Customer "+strconv.Itoa(n), "c"+strconv.Itoa(n)+"@example.com"
		return store.ApplyCustomer(nil, store.CustomerInput{Name: &name, Email: &email})
	},
})

// sameCustomer reports whether a and b store the same values (what is
// derived from the orders aside).
func sameCustomer(a, b *store.Customer) bool {
	x, y := customerText(a), customerText(b)
	for i := range x {
		if *x[i][1].(*string) != *y[i][1].(*string) {
			return false
		}
	}
	return true
}

// The demo customers (seed.go) are written through CreateCustomer, which
// refers to customerKind: set apart from its literal.
func init() { customerKind.seed = (*Store).seedCustomers }

// GetCustomer reads one customer with what it has ordered: its orders
// index's count and newest entry, and the totals, which read every order
// of the customer (one pipelined round trip of one HGETALL per order).
func (s *Store) GetCustomer(ctx context.Context, id int64) (*store.Customer, error) {
	c, err := getRecord(ctx, s, s.rdb, customerKind, id)
	if err != nil {
		return nil, wrap(err)
	}
	if err := s.ordered(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// ordered sets what customer c has ordered: the order count, the last
// order's time and the totals per currency (GetCustomer's cost).
func (s *Store) ordered(ctx context.Context, c *store.Customer) error {
	if err := s.orderFacts(ctx, []*store.Customer{c}); err != nil {
		return err
	}
	members, err := s.rdb.ZRange(ctx, s.customerOrders(c.ID), 0, -1).Result()
	if err != nil {
		return wrap(err)
	}
	os, err := s.loadMany(ctx, sortedIDs(members, true), members, false, func(o *store.Order) bool { return o.Status != store.Cancelled })
	if err != nil {
		return err
	}
	sums := map[string]store.Money{}
	for _, o := range os {
		if _, ok := sums[o.Currency]; !ok {
			c.Totals = append(c.Totals, store.CurrencyTotal{Currency: o.Currency})
		}
		sums[o.Currency] += o.Total
	}
	for i := range c.Totals {
		c.Totals[i].Total = sums[c.Totals[i].Currency]
	}
	slices.SortFunc(c.Totals, func(a, b store.CurrencyTotal) int { return strings.Compare(a.Currency, b.Currency) })
	return nil
}

// customerOrders names the index of a customer's orders: one entry per
// order that links the customer (an index entry of the order), member
// "inverted created time NUL inverted order id", so that the index in
// ascending order is the orders newest first, those of one second by id,
// highest first.
func (s *Store) customerOrders(id int64) string {
	return s.customerOrdersPrefix() + strconv.FormatInt(id, 10)
}

// customerOrdersPrefix is what every customer's orders index starts with.
func (s *Store) customerOrdersPrefix() string { return s.prefix + "ix:{w}:customer:" }

// customerOrderMember is order o's entry in its customer's orders index:
// the created time as invertedTime minus its Unix seconds, in 12 digits.
func customerOrderMember(o *store.Order) string {
	b := make([]byte, 0, 24)
	b = append(b, fmt.Sprintf("%012d", invertedTime-o.CreatedAt.Unix())...)
	b = append(b, 0)
	return string(appendInvID(b, o.ID))
}

// invertedTime is the Unix second the customer orders index counts back
// from (in the year 33658).
const invertedTime = 999999999999

// customerOrderTime is the created time of the order whose entry in a
// customer's orders index is m.
func customerOrderTime(m string) (time.Time, bool) {
	v, err := strconv.ParseInt(m[:min(12, len(m))], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(invertedTime-v, 0).UTC(), true
}

// orderFacts sets the order count and the last order's time of each
// customer: two commands each, in one pipelined round trip.
func (s *Store) orderFacts(ctx context.Context, cs []*store.Customer) error {
	if len(cs) == 0 {
		return nil
	}
	counts := make([]*redis.IntCmd, len(cs))
	newest := make([]*redis.StringSliceCmd, len(cs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cs {
			counts[i] = p.ZCard(ctx, s.customerOrders(c.ID))
			newest[i] = p.ZRange(ctx, s.customerOrders(c.ID), 0, 0)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return wrap(err)
	}
	for i, c := range cs {
		c.OrderCount = counts[i].Val()
		if m := newest[i].Val(); len(m) == 1 {
			if t, ok := customerOrderTime(m[0]); ok {
				c.LastOrderAt = &t
			}
		}
	}
	return nil
}

// CustomerOrders is a page of customer id's orders, newest first (page
// from 1), and how many it has: O(log N + page) in its orders index.
func (s *Store) CustomerOrders(ctx context.Context, id int64, page, perPage int) (store.OrderPage, error) {
	page, perPage = max(page, 1), min(max(perPage, 1), store.MaxPerPage)
	out := store.OrderPage{Page: page, PerPage: perPage, Orders: []store.Order{}}
	key := s.customerOrders(id)
	var n *redis.IntCmd
	var members *redis.StringSliceCmd
	start := int64(page-1) * int64(perPage)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		n = p.ZCard(ctx, key)
		members = p.ZRange(ctx, key, start, start+int64(perPage)-1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return out, wrap(err)
	}
	out.Total = n.Val()
	out.Orders, err = s.loadMany(ctx, sortedIDs(members.Val(), true), members.Val(), false, func(*store.Order) bool { return true })
	return out, err
}

// customerExists refuses an order's link to a customer that is not
// stored: a field error of customer_id (with the stored order orderID,
// when a change of it asks).
func (s *Store) customerExists(ctx context.Context, id int64, orderID *int64) error {
	if id == 0 {
		return nil
	}
	n, err := s.rdb.Exists(ctx, customerKind.key(s, id)).Result()
	if err != nil {
		return wrap(err)
	}
	if n > 0 {
		return nil
	}
	return s.noCustomer(ctx, id, orderID)
}

// noCustomer is customerExists's error for customer id.
func (s *Store) noCustomer(ctx context.Context, id int64, orderID *int64) error {
	e := invalid(map[string]string{"customer_id": "names no customer: there is no customer " + strconv.FormatInt(id, 10)}, nil)
	if orderID != nil {
		cur, err := s.GetOrder(ctx, *orderID)
		if err != nil {
			return err
		}
		e.Current = cur
	}
	return e
}

// CreateCustomer validates in and stores it as a new customer with a
// fresh id. An email another customer has (case aside) is a field error
// naming it.
func (s *Store) CreateCustomer(ctx context.Context, in store.CustomerInput) (*store.Customer, error) {
	c, errs := store.ApplyCustomer(nil, in)
	if errs != nil {
		return nil, customerKind.invalid(errs, nil)
	}
	return createRecord(ctx, s, customerKind, c)
}

// UpdateCustomer applies in to customer id, with the same version checks
// as every record; a change that changes nothing keeps the version. The
// customer it returns has what it has ordered, as GetCustomer's does.
func (s *Store) UpdateCustomer(ctx context.Context, id int64, in store.CustomerInput, ifMatch int64) (*store.Customer, error) {
	c, err := updateRecord(ctx, s, customerKind, id, ifMatch, in.Version, func(cur *store.Customer) (store.Customer, map[string]string) {
		return store.ApplyCustomer(cur, in)
	})
	if err != nil {
		return nil, err
	}
	return c, s.ordered(ctx, c)
}

// RestoreCustomer brings back customer id deleted within the undo window
// (restoreRecord); an email another customer took meanwhile refuses it.
func (s *Store) RestoreCustomer(ctx context.Context, id int64) (*store.Customer, error) {
	c, err := restoreRecord(ctx, s, customerKind, id, nil)
	if err != nil {
		return nil, err
	}
	return c, s.ordered(ctx, c)
}

// DeleteCustomer removes customer id (its email is free again). The
// version checks come first, as every delete's; then a customer that
// orders link is not deleted (ECONFLICT saying how many). The delete
// commits only while its links are empty (links.go); when they are not,
// or its orders index has entries, it looks at the orders they name.
func (s *Store) DeleteCustomer(ctx context.Context, id int64, ifMatch, version int64) error {
	// An orders index with entries and no links: an index entry on its
	// way, or orders linked before the links were kept (Repair adds them).
	indexed, err := s.rdb.ZCard(ctx, s.customerOrders(id)).Result()
	if err != nil {
		return wrap(err)
	}
	for range linkTries {
		if indexed == 0 {
			err := deleteRecord(guarded(ctx, s.unlinked(id)), s, customerKind, id, ifMatch, version)
			if err != errLinksChanged {
				return err
			}
		} else if err := s.deletable(ctx, id, ifMatch, version); err != nil {
			return err
		}
		n, err := s.linkedOrders(ctx, id)
		if err != nil {
			return err
		}
		if n > 0 {
			cur, err := s.GetCustomer(ctx, id)
			if err != nil {
				return err
			}
			return &store.Error{Code: store.ECONFLICT, Current: cur,
				Message: fmt.Sprintf("customer %d has %s; a customer with orders cannot be deleted", id, plural(n, "order", "orders"))}
		}
		indexed = 0
	}
	return unavailable(errors.New("orders kept being linked to the customer while it was being deleted"))
}

// deletable is the delete's version checks of customer id, as they stand.
func (s *Store) deletable(ctx context.Context, id, ifMatch, version int64) error {
	cur, err := getRecord(ctx, s, s.rdb, customerKind, id)
	if err != nil {
		return wrap(err)
	}
	var v *int64
	if version != 0 {
		v = &version
	}
	return checkVersions(customerKind, cur, id, ifMatch, v, true)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// CustomerHistory is a page of customer id's history, newest first,
// before the entry named by cursor ("": from the newest); perPage 0 is 25.
func (s *Store) CustomerHistory(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return historyOf(ctx, s, customerKind, id, cursor, perPage)
}

// AddCustomerNote appends a note to customer id's history.
func (s *Store) AddCustomerNote(ctx context.Context, id int64, note string) (*store.HistoryEntry, error) {
	return noteOn(ctx, s, customerKind, id, note)
}

// seedCustomers makes a customer of every demo name (seed.go), unless the
// store has ever held customers; the demo orders of a name link its
// customer.
func (s *Store) seedCustomers(ctx context.Context) error {
	n, err := s.rdb.Exists(ctx, s.prefix+customerKind.seq).Result()
	if err != nil || n > 0 {
		return wrap(err)
	}
	for _, f := range firstNames {
		for _, l := range lastNames {
			name, email := f+" "+l, emails[f][l]
			if _, err := s.CreateCustomer(ctx, store.CustomerInput{Name: &name, Email: &email}); err != nil {
				return err
			}
		}
	}
	return nil
}

// customersByName are the first customerSeedScan customers by name, their
// ids by folded name (of customers who share a name, one).
func (s *Store) customersByName(ctx context.Context) (map[string]int64, error) {
	members, err := s.rdb.ZRange(ctx, s.customerIndex("name"), 0, customerSeedScan-1).Result()
	if err != nil {
		return nil, wrap(err)
	}
	out := make(map[string]int64, len(members))
	for _, m := range members {
		i := strings.LastIndexByte(m, 0)
		if id, ok := memberID(m); ok && i > 0 {
			if _, dup := out[m[:i]]; !dup {
				out[m[:i]] = id
			}
		}
	}
	return out, nil
}

// customerSeedScan bounds the customers the demo orders may link.
const customerSeedScan = 10000

// ListCustomers answers one page of the customer list. Every sort and one
// term of at most dupDepth bytes are O(log N + page) with an exact total;
// several terms examine at most MaxCandidates customers. Each customer
// has its order count and last order.
func (s *Store) ListCustomers(ctx context.Context, q store.CustomerQuery) (store.CustomerPage, error) {
	if q.Sort.Field() == "last_order" && q.Q == "" {
		// The placements a crash left undone, before the list is read.
		if _, err := s.placePending(ctx, readerPlaces); err != nil {
			return store.CustomerPage{}, err
		}
	}
	l := termList[store.Customer]{k: customerKind, sorts: store.CustomerSorts, sorted: s.customerIndex, scored: []string{"last_order"},
		termSet: s.customerTermSet, dupSet: s.customerDupSet, terms: customerTerms,
		keep: func(*store.Customer) bool { return true }, load: s.loadCustomers}
	p, err := l.list(ctx, s, q.Q, q.Sort, q.Page, q.PerPage)
	return store.CustomerPage{Customers: p.Rows, Page: p.Page, PerPage: p.PerPage, Total: p.Total,
		TotalIsLowerBound: p.TotalIsLowerBound, MatchOrder: p.MatchOrder}, err
}

// loadCustomers reads customers in one pipelined round trip, in order,
// without those missing or refused by keep, then their order counts and
// last orders in another.
func (s *Store) loadCustomers(ctx context.Context, ids []int64, keep func(*store.Customer) bool) ([]store.Customer, error) {
	out, err := readRecords(ctx, s, customerKind, ids, keep)
	if err != nil {
		return nil, err
	}
	cs := make([]*store.Customer, len(out))
	for i := range out {
		cs[i] = &out[i]
	}
	return out, s.orderFacts(ctx, cs)
}
