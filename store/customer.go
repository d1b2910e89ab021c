package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"golang.org/x/text/language"
)

// Customers are the people and companies orders are for. A customer has a
// name, optional contact details and an optional postal address; its email,
// when given, is unique regardless of case. What a customer has ordered
// (how many orders, the last one, the totals per currency) is derived from
// its orders, never typed.
//
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
//	cx:{c}:w:<c>, cx:{c}:w:<c>:<L> search terms (the words of the name and the company, the email, the phone's digits) and their dup sets, as orders' (search.go)

// Customer limits.
const (
	MaxCustomerName    = 120
	MaxCustomerCompany = 120
	MaxPhone           = 32
	MaxAddressLine     = 120
	MaxCity            = 80
	MaxRegion          = 80
	MaxPostalCode      = 20
)

// Address is a postal address. Country is an ISO 3166-1 alpha-2 code in
// capitals ("DE"), or empty.
type Address struct {
	Line1      string `json:"line1"`
	Line2      string `json:"line2"`
	City       string `json:"city"`
	Region     string `json:"region"`
	PostalCode string `json:"postal_code"`
	Country    string `json:"country"`
}

// Customer is one member of the customer collection.
type Customer struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	Phone     string    `json:"phone"`
	Company   string    `json:"company"`
	Address   Address   `json:"address"`
	Notes     string    `json:"notes"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// What the customer has ordered, derived from the orders that link it
	// (GetCustomer; a List entry has the count and the last order): how
	// many, when the last was created, and the totals per currency of
	// those not cancelled.
	OrderCount  int64           `json:"order_count"`
	LastOrderAt *time.Time      `json:"last_order_at"`
	Totals      []CurrencyTotal `json:"totals,omitempty"`
	// Recent are its newest orders, when a reader asked for them
	// (CustomerOrders): the customer's page lists them.
	Recent []Order `json:"-"`
}

// CurrencyTotal is an amount in one currency.
type CurrencyTotal struct {
	Currency string `json:"currency"`
	Total    Money  `json:"total"`
}

// AddressInput is an address as sent: nil fields were not sent.
type AddressInput struct {
	Line1, Line2, City, Region, PostalCode, Country *string
}

// CustomerInput is a create or a change: nil fields were not sent (a change
// keeps them; a create leaves them empty or says the field is required).
type CustomerInput struct {
	Name    *string
	Email   *string
	Phone   *string
	Company *string
	Address AddressInput
	Notes   *string
	Version *int64
}

// applyCustomer validates in against the stored customer cur (nil on
// create) and returns the resulting customer, or the field errors (keyed
// by the JSON names; address fields as address.city).
func applyCustomer(cur *Customer, in CustomerInput) (Customer, map[string]string) {
	errs := map[string]string{}
	var c Customer
	if cur != nil {
		c = *cur
	}
	text := func(field string, p *string, max int, required, newlines bool, dst *string) {
		if p == nil {
			if cur == nil && required {
				errs[field] = "is required"
			}
			return
		}
		v, msg := checkText(*p, max, required, newlines)
		if msg != "" {
			errs[field] = msg
			return
		}
		*dst = v
	}
	text("name", in.Name, MaxCustomerName, true, false, &c.Name)
	text("company", in.Company, MaxCustomerCompany, false, false, &c.Company)
	text("notes", in.Notes, MaxNotes, false, true, &c.Notes)
	if in.Email != nil {
		if v, msg := checkEmail(*in.Email); msg != "" {
			errs["email"] = msg
		} else {
			c.Email = v
		}
	}
	if in.Phone != nil {
		if v, msg := checkPhone(*in.Phone); msg != "" {
			errs["phone"] = msg
		} else {
			c.Phone = v
		}
	}
	a := in.Address
	text("address.line1", a.Line1, MaxAddressLine, false, false, &c.Address.Line1)
	text("address.line2", a.Line2, MaxAddressLine, false, false, &c.Address.Line2)
	text("address.city", a.City, MaxCity, false, false, &c.Address.City)
	text("address.region", a.Region, MaxRegion, false, false, &c.Address.Region)
	text("address.postal_code", a.PostalCode, MaxPostalCode, false, false, &c.Address.PostalCode)
	if a.Country != nil {
		if v, msg := checkCountry(*a.Country); msg != "" {
			errs["address.country"] = msg
		} else {
			c.Address.Country = v
		}
	}
	if len(errs) > 0 {
		return Customer{}, errs
	}
	return c, nil
}

// checkEmail reads an optional email address: one bare address, like
// name@example.com, or nothing.
func checkEmail(raw string) (string, string) {
	v, msg := checkText(raw, MaxEmail, false, false)
	if msg != "" || v == "" {
		return v, msg
	}
	if a, err := mail.ParseAddress(v); err != nil || a.Address != v || a.Name != "" {
		return "", "must be one email address, like name@example.com"
	}
	return v, ""
}

// checkPhone reads an optional phone number: digits, spaces and + - ( ) .
// with at least one digit, at most MaxPhone characters.
func checkPhone(raw string) (string, string) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return "", ""
	}
	digits := 0
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune(" +-().", r):
		default:
			return "", "must be digits, spaces and + - ( ) . only, like +49 30 1234567"
		}
	}
	switch {
	case len(v) > MaxPhone:
		return "", "must be at most 32 characters"
	case digits == 0:
		return "", "must contain digits, like +49 30 1234567"
	}
	return v, ""
}

// checkCountry reads an optional country: an ISO 3166-1 alpha-2 code in
// any case ("de" is DE). Codes that are not countries (EU, ZZ, 419) and
// replaced ones (UK for GB, DD for DE) are refused.
func checkCountry(raw string) (string, string) {
	v := strings.ToUpper(strings.TrimSpace(raw))
	if v == "" {
		return "", ""
	}
	const msg = "must be a two-letter ISO 3166-1 country code, like DE or US"
	if len(v) != 2 || v[0] < 'A' || v[0] > 'Z' || v[1] < 'A' || v[1] > 'Z' {
		return "", msg
	}
	r, err := language.ParseRegion(v)
	if err != nil || !r.IsCountry() || r.Canonicalize() != r || r.String() != v {
		return "", msg
	}
	return v, ""
}

// CustomerDigits are the digits of a phone number, as the search matches
// them: "+49 (30) 123" is 4930123.
func CustomerDigits(phone string) string {
	var b strings.Builder
	for _, r := range phone {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

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
func customerText(c *Customer) [][2]any {
	a := &c.Address
	return [][2]any{{cfName, &c.Name}, {cfEmail, &c.Email}, {cfPhone, &c.Phone}, {cfCompany, &c.Company},
		{cfLine1, &a.Line1}, {cfLine2, &a.Line2}, {cfCity, &a.City}, {cfRegion, &a.Region},
		{cfPostal, &a.PostalCode}, {cfCountry, &a.Country}, {cfNotes, &c.Notes}}
}

func encodeCustomer(c *Customer) []any {
	args := []any{cfVersion, c.Version, cfCreated, c.CreatedAt.Unix(), cfUpdated, c.UpdatedAt.Unix()}
	for _, f := range customerText(c) {
		if v := *f[1].(*string); v != "" {
			args = append(args, f[0], v)
		}
	}
	return args
}

func decodeCustomer(id int64, h map[string]string) (*Customer, bool) {
	if len(h) == 0 {
		return nil, false
	}
	c := &Customer{ID: id}
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

// customerTerms are the search terms of c: the words of its name and its
// company, its email and its phone's digits, folded.
func customerTerms(c *Customer) []string {
	terms := append(wordsOf(foldTerm(c.Name)), wordsOf(foldTerm(c.Company))...)
	if c.Email != "" {
		terms = append(terms, foldTerm(c.Email))
	}
	if d := CustomerDigits(c.Phone); d != "" {
		terms = append(terms, d)
	}
	return distinctTerms(terms)
}

func (s *Store) customerEntries(c *Customer) []ixEntry {
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

// CustomerEvents names the customers' event feed (Store.Feed).
const CustomerEvents = "c"

// customerKind is how customers are stored.
var customerKind = register(&kind[Customer]{
	name:           CustomerEvents,
	noun:           "customer",
	seq:            "seq:{c}",
	slot:           "c",
	versionField:   cfVersion,
	decode:         decodeCustomer,
	encode:         encodeCustomer,
	meta:           func(c *Customer) recordMeta { return recordMeta{&c.ID, &c.Version, &c.CreatedAt, &c.UpdatedAt} },
	same:           sameCustomer,
	entries:        (*Store).customerEntries,
	deleteConflict: "someone else changed this customer; review the current values",
	fields: []recordField[Customer]{
		{"name", func(c *Customer) any { return c.Name }},
		{"email", func(c *Customer) any { return c.Email }},
		{"phone", func(c *Customer) any { return c.Phone }},
		{"company", func(c *Customer) any { return c.Company }},
		{"address.line1", func(c *Customer) any { return c.Address.Line1 }},
		{"address.line2", func(c *Customer) any { return c.Address.Line2 }},
		{"address.city", func(c *Customer) any { return c.Address.City }},
		{"address.region", func(c *Customer) any { return c.Address.Region }},
		{"address.postal_code", func(c *Customer) any { return c.Address.PostalCode }},
		{"address.country", func(c *Customer) any { return c.Address.Country }},
		{"notes", func(c *Customer) any { return c.Notes }},
	},
	event: func(c *Customer) []byte {
		b, _ := json.Marshal(struct {
			ID      int64 `json:"id"`
			Version int64 `json:"version"`
		}{c.ID, c.Version})
		return b
	},
	indexes: func(s *Store) []indexKey {
		return []indexKey{{s.customerIndex("created"), func(m string) (int64, bool) { return ParseID(m) }},
			{s.customerIndex("name"), memberID}}
	},
	indexPattern: func(s *Store) string { return globEscape(s.customerIndex("w")) + "*" },
	claims: func(s *Store, c *Customer) []string {
		if c.Email == "" {
			return nil
		}
		return []string{s.emailClaim(c.Email)}
	},
	claimTaken: func(c *Customer, _ string, owner int64) error {
		return &Error{Code: EINVALID, Message: "the customer has invalid values",
			Fields: map[string]string{"email": "is already the email of customer " + strconv.FormatInt(owner, 10)}}
	},
	example: func(n int) (Customer, map[string]string) {
		name, email := "Customer "+strconv.Itoa(n), "c"+strconv.Itoa(n)+"@example.com"
		return applyCustomer(nil, CustomerInput{Name: &name, Email: &email})
	},
})

// sameCustomer reports whether a and b store the same values (what is
// derived from the orders aside).
func sameCustomer(a, b *Customer) bool {
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
func (s *Store) GetCustomer(ctx context.Context, id int64) (*Customer, error) {
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
func (s *Store) ordered(ctx context.Context, c *Customer) error {
	if err := s.orderFacts(ctx, []*Customer{c}); err != nil {
		return err
	}
	members, err := s.rdb.ZRange(ctx, s.customerOrders(c.ID), 0, -1).Result()
	if err != nil {
		return wrap(err)
	}
	os, err := s.loadMany(ctx, sortedIDs(members, true), members, false, func(o *Order) bool { return o.Status != Cancelled })
	if err != nil {
		return err
	}
	sums := map[string]Money{}
	for _, o := range os {
		if _, ok := sums[o.Currency]; !ok {
			c.Totals = append(c.Totals, CurrencyTotal{Currency: o.Currency})
		}
		sums[o.Currency] += o.Total
	}
	for i := range c.Totals {
		c.Totals[i].Total = sums[c.Totals[i].Currency]
	}
	slices.SortFunc(c.Totals, func(a, b CurrencyTotal) int { return strings.Compare(a.Currency, b.Currency) })
	return nil
}

// customerOrders names the index of a customer's orders: one entry per
// order that links the customer (an index entry of the order), member
// "created time NUL inverted order id", so its order is the orders' by
// created time.
func (s *Store) customerOrders(id int64) string {
	return s.prefix + "ix:{w}:customer:" + strconv.FormatInt(id, 10)
}

// customerOrderMember is order o's entry in its customer's orders index.
func customerOrderMember(o *Order) string {
	b := make([]byte, 0, 24)
	b = append(b, fmt.Sprintf("%012d", o.CreatedAt.Unix())...)
	b = append(b, 0)
	return string(appendInvID(b, o.ID))
}

// customerRef is a customer id as an order's history shows it ("" for none).
func customerRef(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// orderFacts sets the order count and the last order's time of each
// customer: two commands each, in one pipelined round trip.
func (s *Store) orderFacts(ctx context.Context, cs []*Customer) error {
	if len(cs) == 0 {
		return nil
	}
	counts := make([]*redis.IntCmd, len(cs))
	newest := make([]*redis.StringSliceCmd, len(cs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cs {
			counts[i] = p.ZCard(ctx, s.customerOrders(c.ID))
			newest[i] = p.ZRevRange(ctx, s.customerOrders(c.ID), 0, 0)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return wrap(err)
	}
	for i, c := range cs {
		c.OrderCount = counts[i].Val()
		if m := newest[i].Val(); len(m) == 1 {
			if at, err := strconv.ParseInt(m[0][:min(12, len(m[0]))], 10, 64); err == nil {
				t := time.Unix(at, 0).UTC()
				c.LastOrderAt = &t
			}
		}
	}
	return nil
}

// CustomerOrders is a page of customer id's orders, newest first (page
// from 1), and how many it has: O(log N + page) in its orders index.
func (s *Store) CustomerOrders(ctx context.Context, id int64, page, perPage int) (OrderPage, error) {
	page, perPage = max(page, 1), min(max(perPage, 1), MaxPerPage)
	out := OrderPage{Page: page, PerPage: perPage, Orders: []Order{}}
	key := s.customerOrders(id)
	var n *redis.IntCmd
	var members *redis.StringSliceCmd
	start := int64(page-1) * int64(perPage)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		n = p.ZCard(ctx, key)
		members = p.ZRevRange(ctx, key, start, start+int64(perPage)-1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return out, wrap(err)
	}
	out.Total = n.Val()
	out.Orders, err = s.loadMany(ctx, sortedIDs(members.Val(), true), members.Val(), false, func(*Order) bool { return true })
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
func (s *Store) CreateCustomer(ctx context.Context, in CustomerInput) (*Customer, error) {
	c, errs := applyCustomer(nil, in)
	if errs != nil {
		return nil, customerKind.invalid(errs, nil)
	}
	return createRecord(ctx, s, customerKind, c)
}

// UpdateCustomer applies in to customer id, with the same version checks
// as every record; a change that changes nothing keeps the version. The
// customer it returns has what it has ordered, as GetCustomer's does.
func (s *Store) UpdateCustomer(ctx context.Context, id int64, in CustomerInput, ifMatch int64) (*Customer, error) {
	c, err := updateRecord(ctx, s, customerKind, id, ifMatch, in.Version, func(cur *Customer) (Customer, map[string]string) {
		return applyCustomer(cur, in)
	})
	if err != nil {
		return nil, err
	}
	return c, s.ordered(ctx, c)
}

// DeleteCustomer removes customer id (its email is free again). A
// customer whose orders link it is not deleted (ECONFLICT saying how
// many).
func (s *Store) DeleteCustomer(ctx context.Context, id int64, ifMatch, version int64) error {
	n, err := s.rdb.ZCard(ctx, s.customerOrders(id)).Result()
	if err != nil {
		return wrap(err)
	}
	if n > 0 {
		cur, err := s.GetCustomer(ctx, id)
		if err != nil {
			return err
		}
		return &Error{Code: ECONFLICT, Current: cur,
			Message: fmt.Sprintf("customer %d has %s; a customer with orders cannot be deleted", id, plural(n, "order", "orders"))}
	}
	return deleteRecord(ctx, s, customerKind, id, ifMatch, version)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// CustomerHistory is a page of customer id's history, newest first,
// before the entry named by cursor ("": from the newest); perPage 0 is 25.
func (s *Store) CustomerHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error) {
	return historyOf(ctx, s, customerKind, id, cursor, perPage)
}

// AddCustomerNote appends a note to customer id's history.
func (s *Store) AddCustomerNote(ctx context.Context, id int64, note string) (*HistoryEntry, error) {
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
			if _, err := s.CreateCustomer(ctx, CustomerInput{Name: &name, Email: &email}); err != nil {
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
