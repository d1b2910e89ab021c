package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Order hash fields are short: they are repeated in every order. Items are
// the fields "0", "1", … (digits only), so no order field may be all digits.
const (
	fCustomer   = "c"
	fEmail      = "e"  // absent when empty
	fStatus     = "s"  // one letter: statusCode
	fCurrency   = "cu" // absent when USD
	fNotes      = "n"  // absent when empty
	fVersion    = "v"
	fCreated    = "ca"
	fUpdated    = "ua"
	fIdem       = "ik" // absent unless created with an Idempotency-Key
	fCustomerID = "ci" // absent when the order names no customer
)

// defaultCurrency is the currency of an order hash without a cu field.
const defaultCurrency = "USD"

// statusCode is the one-letter form of a status in an order hash.
var statusCode = map[store.Status]string{store.Pending: "p", store.Confirmed: "c", store.Shipped: "s", store.Delivered: "d", store.Cancelled: "x"}

var statusOfCode = func() map[string]store.Status {
	m := make(map[string]store.Status, len(statusCode))
	for st, c := range statusCode {
		m[c] = st
	}
	return m
}()

func (s *Store) orderKey(id int64) string {
	return s.prefix + "o:{" + strconv.FormatInt(id, 10) + "}"
}
func (s *Store) seqKey() string { return s.prefix + "seq" }

// indexName returns m[st], or makes the name of a status m does not know.
func indexName(m map[store.Status]string, st store.Status, prefix, base string) string {
	if k, ok := m[st]; ok {
		return k
	}
	if st == "" {
		return prefix + base
	}
	return prefix + base + ":" + string(st)
}

// The created (ix:{id}:<status>), updated and total indexes exist per status
// only: each sort's five sets share a hash tag, and a page of all statuses
// merges them (mergeScript, list.go). Their members are decimal ids.
func (s *Store) idIndex(st store.Status) string { return indexName(s.keys.id, st, s.prefix, "ix:{id}") }
func (s *Store) updatedIndex(st store.Status) string {
	return indexName(s.keys.up, st, s.prefix, "ix:{up}")
}
func (s *Store) totalIndex(st store.Status) string {
	return indexName(s.keys.tot, st, s.prefix, "ix:{tot}")
}
func (s *Store) nameIndex(st store.Status) string {
	return indexName(s.keys.name, st, s.prefix, "ix:name")
}

// timeScore is a time's score in the created and updated indexes: Unix
// seconds times 2^21 plus the id's low 21 bits, so that orders of the same
// second sort by id (exact in a float64 until the year 2106).
func timeScore(t time.Time, id int64) float64 {
	return float64(t.Unix()<<21 | id&(1<<21-1))
}

// totalScore is a total's score in the total indexes, an integer below 2^53
// (mergeScript's binary search needs that): below 2^32 cents
// (42,949,672.96), cents times 2^20 plus the id's low 20 bits, so that
// equal totals sort by id; from there up to the largest total (10^16 cents)
// 2^52 plus a quarter of the cents above 2^32: totals sort to within 4 cents.
// Equal scores sort by member (the id as text).
func totalScore(m store.Money, id int64) float64 {
	if m < 1<<32 {
		return float64(int64(m)<<20 | id&(1<<20-1))
	}
	return float64(1<<52 + (int64(m)-1<<32)/4)
}

// dayScores are the scores of the first and last instants of the days
// from and to, each in its own location (either zero: open).
func dayScores(from, to time.Time) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if !from.IsZero() {
		lo = float64(midnight(from, 0).Unix() << 21)
	}
	if !to.IsZero() {
		hi = float64(midnight(to, 1).Unix()<<21 - 1)
	}
	return lo, hi
}

// midnight is the start of the day days after t's calendar date, in t's own
// location: a date written in a person's zone starts at that zone's
// midnight, and a day across a clock change is 23 or 25 hours long.
func midnight(t time.Time, days int) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d+days, 0, 0, 0, 0, t.Location())
}

// idDigits are 64 ASCII characters in ascending byte order: the digits of
// the inverted ids that end name-index members.
const idDigits = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

var idDigitValue = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := 0; i < len(idDigits); i++ {
		v[idDigits[i]] = int8(i)
	}
	return v
}()

// nameMember is an order's entry in a name index: the folded name, a NUL,
// then the id inverted so that equal names sort newest first: one character
// for the number of base-64 digits (more digits sort first), then each
// digit d written as idDigits[63-d]. Id 1 is "yy", id 64 "xyz" (sorts
// before "yy"); an id below 2^60 takes at most 11 characters (1,000,000
// takes 5), where a zero-padded decimal took 18.
func nameMember(customer string, id int64) string {
	return string(appendNameMember(nil, customer, id))
}

func appendNameMember(b []byte, customer string, id int64) []byte {
	b = appendFold(b, customer)
	b = append(b, 0)
	return appendInvID(b, id)
}

// appendInvID appends id inverted, as described at nameMember.
func appendInvID(b []byte, id int64) []byte {
	var d [11]byte
	n := 0
	for x := id; x > 0 && n < len(d); x >>= 6 {
		d[n] = idDigits[63-x&63]
		n++
	}
	b = append(b, idDigits[63-n])
	for i := n - 1; i >= 0; i-- {
		b = append(b, d[i])
	}
	return b
}

// memberID reads the id back from a name-index member.
func memberID(m string) (int64, bool) {
	i := strings.LastIndexByte(m, 0)
	if i < 0 || i+2 > len(m) {
		return 0, false
	}
	digits := m[i+1:]
	n := 63 - int(idDigitValue[digits[0]])
	if idDigitValue[digits[0]] < 0 || n != len(digits)-1 || n < 1 || n > 10 {
		return 0, false
	}
	var id int64
	for j := 1; j < len(digits); j++ {
		v := idDigitValue[digits[j]]
		if v < 0 {
			return 0, false
		}
		id = id<<6 | int64(63-v)
	}
	return id, id > 0
}

// foldName is the case-insensitive form of a name used by search.
func foldName(s string) string { return strings.ToLower(s) }

// appendFold appends foldName(s) to b, without allocating for ASCII names.
func appendFold(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return append(b, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// orderArgs appends o's hash as HSET field-value arguments: the order's
// fields (empty optional ones left out) and one field per item.
func orderArgs(args []any, o *store.Order) []any {
	args = append(args,
		fCustomer, o.Customer,
		fStatus, statusCodeOf(o.Status),
		fVersion, o.Version,
		fCreated, o.CreatedAt.Unix(),
		fUpdated, o.UpdatedAt.Unix())
	if o.Email != "" {
		args = append(args, fEmail, o.Email)
	}
	if o.Currency != "" && o.Currency != defaultCurrency {
		args = append(args, fCurrency, o.Currency)
	}
	if o.Notes != "" {
		args = append(args, fNotes, o.Notes)
	}
	if o.Idem != "" {
		args = append(args, fIdem, o.Idem)
	}
	if o.CustomerID != 0 {
		args = append(args, fCustomerID, o.CustomerID)
	}
	for i := range o.Items {
		args = append(args, itemField(i), string(appendItem(nil, &o.Items[i])))
	}
	return appendScale(args, o.Currency)
}

func statusCodeOf(st store.Status) string {
	if c, ok := statusCode[st]; ok {
		return c
	}
	return string(st)
}

// itemFields holds the field names of the first items, to spare an
// allocation per item.
var itemFields = func() (f [store.MaxItems]string) {
	for i := range f {
		f[i] = strconv.Itoa(i)
	}
	return f
}()

func itemField(i int) string {
	if i < len(itemFields) {
		return itemFields[i]
	}
	return strconv.Itoa(i)
}

// appendItem appends an item's value: "quantity unit_price sku name", the
// price in cents and the SKU empty when there is none (a SKU has no spaces,
// so the name is everything after the third space).
func appendItem(b []byte, it *store.Item) []byte {
	b = strconv.AppendInt(b, it.Quantity, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(it.UnitPrice), 10)
	b = append(b, ' ')
	b = append(b, it.SKU...)
	b = append(b, ' ')
	return append(b, it.Name...)
}

func parseItem(v string) (store.Item, bool) {
	q, rest, ok1 := strings.Cut(v, " ")
	p, rest, ok2 := strings.Cut(rest, " ")
	sku, name, ok3 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !ok3 {
		return store.Item{}, false
	}
	qn, err1 := strconv.ParseInt(q, 10, 64)
	pn, err2 := strconv.ParseInt(p, 10, 64)
	if err1 != nil || err2 != nil {
		return store.Item{}, false
	}
	it := store.Item{SKU: sku, Name: name, Quantity: qn, UnitPrice: store.Money(pn)}
	it.LineTotal = it.UnitPrice.Times(it.Quantity)
	return it, true
}

// decodeOrder reads an order hash; ok is false when the hash is empty
// (the order does not exist) or damaged. The item count and total are
// derived from the items; withItems keeps the items themselves.
func decodeOrder(id int64, h map[string]string, withItems bool) (store.Order, bool) {
	if len(h) == 0 || h[fVersion] == "" {
		return store.Order{}, false
	}
	damaged := false
	num := func(f string) int64 {
		v, err := strconv.ParseInt(h[f], 10, 64)
		damaged = damaged || err != nil
		return v
	}
	o := store.Order{
		ID:        id,
		Customer:  h[fCustomer],
		Email:     h[fEmail],
		Status:    store.Status(h[fStatus]),
		Currency:  h[fCurrency],
		Notes:     h[fNotes],
		Idem:      h[fIdem],
		Version:   num(fVersion),
		CreatedAt: time.Unix(num(fCreated), 0).UTC(),
		UpdatedAt: time.Unix(num(fUpdated), 0).UTC(),
	}
	if st, ok := statusOfCode[h[fStatus]]; ok {
		o.Status = st
	}
	if damaged || o.Version < 1 || o.Customer == "" || !o.Status.Valid() {
		// A hash that is not a whole order: skipped (and reported by the
		// callers), never half-read.
		return store.Order{}, false
	}
	if o.Currency == "" {
		o.Currency = defaultCurrency
	}
	if v, ok := h[fCustomerID]; ok {
		if o.CustomerID, ok = store.ParseID(v); !ok {
			return store.Order{}, false
		}
	}
	scale := readScale(h, o.Currency)
	items := make([]store.Item, 0, max(len(h)-5, 0))
	for i := 0; ; i++ {
		v, ok := h[itemField(i)]
		if !ok {
			break
		}
		if it, ok := parseItem(v); ok {
			it.UnitPrice = scale(it.UnitPrice)
			items = append(items, it)
		}
	}
	o.Items = items
	o.Derive()
	if !withItems {
		o.Items = nil
	}
	return o, true
}

// wrap turns a failure to reach Redis into EUNAVAILABLE, and an error
// Redis answered with into EINTERNAL (it means a bug or a damaged key),
// leaving *Error values alone. Transient server states count as unreachable.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var e *store.Error
	if errors.As(err, &e) {
		return err
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.Nil) {
		msg := re.Error()
		// Replies of a Redis that cannot take the command now: starting,
		// failing over, busy, full (OOM: maxmemory under noeviction), or a
		// MULTI one of whose queued commands was refused so (EXECABORT).
		for _, transient := range []string{"LOADING", "READONLY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "MOVED", "ASK",
			"OOM", "EXECABORT", "NOREPLICAS"} {
			if strings.HasPrefix(msg, transient) {
				return unavailable(err)
			}
		}
		if !strings.Contains(msg, "connection") && !strings.Contains(msg, "timeout") {
			return &store.Error{Code: store.EINTERNAL, Message: "the order store answered with an error", Err: err}
		}
	}
	return unavailable(err)
}

// Ping reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap(s.rdb.Ping(ctx).Err())
}

// GetOrder reads one order with its items: one HGETALL.
func (s *Store) GetOrder(ctx context.Context, id int64) (*store.Order, error) {
	o, err := s.load(ctx, s.rdb, id)
	return o, wrap(err)
}

func (s *Store) load(ctx context.Context, c redis.Cmdable, id int64) (*store.Order, error) {
	return getRecord(ctx, s, c, orders, id)
}

// orders is how orders are stored: one hash each (o:{42}), in the id and
// name indexes, each also per status.
var orders = register(&kind[store.Order]{
	name:         store.OrderEvents,
	noun:         "order",
	seq:          "seq",
	newest:       (*Store).newestOrderID,
	versionField: fVersion,
	decode: func(id int64, h map[string]string) (*store.Order, bool) {
		o, ok := decodeOrder(id, h, true)
		return &o, ok
	},
	encode:         func(o *store.Order) []any { return orderArgs(make([]any, 0, 16+2*len(o.Items)), o) },
	meta:           func(o *store.Order) recordMeta { return recordMeta{&o.ID, &o.Version, &o.CreatedAt, &o.UpdatedAt} },
	same:           sameOrder,
	entries:        (*Store).orderEntries,
	deleteConflict: "someone else changed this order since you saw it; it was not deleted",
	fields: []recordField[store.Order]{
		{"customer", func(o *store.Order) any { return o.Customer }},
		{"email", func(o *store.Order) any { return o.Email }},
		{"status", func(o *store.Order) any { return string(o.Status) }},
		{"currency", func(o *store.Order) any { return o.Currency }},
		{"notes", func(o *store.Order) any { return o.Notes }},
		{"customer_id", func(o *store.Order) any { return customerRef(o.CustomerID) }},
	},
	rows: func(o *store.Order) []store.Item { return o.Items },
	event: func(o *store.Order) []byte {
		b, _ := json.Marshal(struct {
			ID      int64        `json:"id"`
			Version int64        `json:"version"`
			Status  store.Status `json:"status"`
		}{o.ID, o.Version, o.Status})
		return b
	},
	indexes: func(s *Store) []indexKey {
		byID := func(m string) (int64, bool) { return store.ParseID(m) }
		keys := []indexKey{{s.nameIndex(""), memberID}}
		for _, st := range store.Statuses {
			keys = append(keys, indexKey{s.idIndex(st), byID}, indexKey{s.nameIndex(st), memberID},
				indexKey{s.updatedIndex(st), byID}, indexKey{s.totalIndex(st), byID})
		}
		return keys
	},
	indexPattern: (*Store).termPattern,
	example: func(n int) (store.Order, map[string]string) {
		customer := "Customer " + strconv.Itoa(n)
		return store.ApplyOrder(nil, store.OrderInput{Customer: &customer, HasItems: true,
			Items: []store.ItemInput{{Name: "Widget", Quantity: "2", UnitPrice: "1.50"}}})
	},
})

// newestOrderID is the highest id in the created indexes.
func (s *Store) newestOrderID(ctx context.Context) (int64, error) {
	var newest int64
	for _, st := range store.Statuses {
		top, err := s.rdb.ZRevRange(ctx, s.idIndex(st), 0, 0).Result()
		if err != nil {
			return 0, err
		}
		for _, m := range top {
			if id, err := strconv.ParseInt(m, 10, 64); err == nil && id > newest {
				newest = id
			}
		}
	}
	return newest, nil
}

// orderEntries lists the index entries of o: in its status, by created
// time, updated time and total; by name, in its status and in the whole
// collection; and its search terms (search.go).
func (s *Store) orderEntries(o *store.Order) []ixEntry {
	idm := strconv.FormatInt(o.ID, 10)
	nm := nameMember(o.Customer, o.ID)
	out := make([]ixEntry, 0, 16)
	out = append(out,
		ixEntry{s.idIndex(o.Status), idm, timeScore(o.CreatedAt, o.ID)},
		ixEntry{s.updatedIndex(o.Status), idm, timeScore(o.UpdatedAt, o.ID)},
		ixEntry{s.totalIndex(o.Status), idm, totalScore(o.Total, o.ID)},
		ixEntry{s.nameIndex(""), nm, 0},
		ixEntry{s.nameIndex(o.Status), nm, 0},
	)
	if o.CustomerID != 0 {
		out = append(out, ixEntry{s.customerOrders(o.CustomerID), customerOrderMember(o), 0})
	}
	return s.termEntries(o, out)
}

// CreateOrder validates in and stores it as a new pending order with a fresh id.
func (s *Store) CreateOrder(ctx context.Context, in store.OrderInput) (*store.Order, error) {
	o, errs := store.ApplyOrder(nil, in)
	if errs != nil {
		return nil, invalid(errs, nil)
	}
	if o.CustomerID == 0 {
		return createRecord(ctx, s, orders, o)
	}
	// Its link is held under the id, drawn first; a customer that is not
	// stored is refused before an id is drawn (a refused create changes
	// nothing). One deleted in between is refused by the hold.
	if err := s.customerExists(ctx, o.CustomerID, nil); err != nil {
		return nil, err
	}
	for range 100 {
		id, err := s.nextID(ctx, orders.counter)
		if err != nil {
			return nil, wrap(err)
		}
		created, err := s.createAs(ctx, id, o)
		if err != errIDTaken {
			return created, err
		}
		s.log.Warn("the id counter handed out a used id; skipping it", "kind", orders.noun, "id", id)
	}
	return nil, &store.Error{Code: store.EINTERNAL, Message: "the order id counter keeps handing out used ids; run orders -repair", Err: errIDTaken}
}

// errIDTaken: the id is taken (see errRecordExists).
var errIDTaken = errRecordExists

// createAs stores o as the new order id, or answers errIDTaken when an
// order has that id. An order that links a customer is created under a
// hold of the link (links.go).
func (s *Store) createAs(ctx context.Context, id int64, o store.Order) (*store.Order, error) {
	if o.CustomerID == 0 {
		return createRecordAs(ctx, s, orders, id, o)
	}
	return s.linking(ctx, o.CustomerID, id, nil, func(ctx context.Context) (*store.Order, error) {
		return createRecordAs(ctx, s, orders, id, o)
	})
}

func invalid(errs map[string]string, cur *store.Order) *store.Error { return orders.invalid(errs, cur) }

// maxRetries bounds how often a write retries after another writer changed
// the same record between its read and its EXEC.
const maxRetries = 50

// UpdateOrder applies in to order id. ifMatch, when not 0, is the version an
// If-Match header requires (EPRECONDITION otherwise); in.Version is the
// version a form or JSON body carries (ECONFLICT otherwise). A change that
// changes nothing writes nothing and keeps the version. A change to the
// customer it links is made under a hold of the new link (links.go); the
// old one is dropped after (orderRelinked).
func (s *Store) UpdateOrder(ctx context.Context, id int64, in store.OrderInput, ifMatch int64) (*store.Order, error) {
	update := func(ctx context.Context) (*store.Order, error) {
		return updateRecord(ctx, s, orders, id, ifMatch, in.Version, func(cur *store.Order) (store.Order, map[string]string) {
			return store.ApplyOrder(cur, in)
		})
	}
	var cid int64
	if in.CustomerID != nil {
		cid, _ = store.ParseID(strings.TrimSpace(*in.CustomerID))
	}
	var o *store.Order
	var err error
	if cid == 0 {
		o, err = update(ctx)
	} else {
		// Most changes keep the customer: they need no hold.
		o, err = update(guarded(ctx, s.stillLinked(id, cid)))
		if err == errNotLinked {
			o, err = s.linking(ctx, cid, id, &id, update)
		}
	}
	return o, err
}

// sameOrder reports whether a and b store the same values (the version and
// times aside).
func sameOrder(a, b *store.Order) bool {
	if a.Customer != b.Customer || a.Email != b.Email || a.Status != b.Status ||
		a.Currency != b.Currency || a.Notes != b.Notes || a.CustomerID != b.CustomerID {
		return false
	}
	return store.SameItems(a.Items, b.Items)
}

// DeleteOrder removes order id, its items and its index entries. ifMatch, when
// not 0, must equal the stored version (EPRECONDITION); so must version, the
// one a form or JSON body carries (ECONFLICT).
func (s *Store) DeleteOrder(ctx context.Context, id int64, ifMatch, version int64) error {
	return deleteRecord(ctx, s, orders, id, ifMatch, version)
}

// RestoreOrder brings back order id deleted within the undo window
// (restoreRecord). An order that linked a customer is restored under a
// hold of that link, as a create is: a customer deleted meanwhile is a
// field error, and nothing is written.
func (s *Store) RestoreOrder(ctx context.Context, id int64) (*store.Order, error) {
	v, err := s.rdb.HGet(ctx, undoKey(s.orderKey(id)), fCustomerID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	cid, _ := store.ParseID(v)
	linked := func(o *store.Order) error {
		if o.CustomerID != cid {
			return store.Errorf(store.ECONFLICT, "order %d changed while it was being restored; try again", id)
		}
		return nil
	}
	if cid == 0 {
		return restoreRecord(ctx, s, orders, id, linked)
	}
	o, err := s.linking(ctx, cid, id, nil, func(ctx context.Context) (*store.Order, error) {
		return restoreRecord(ctx, s, orders, id, linked)
	})
	if se, ok := err.(*store.Error); ok && se.Code == store.EINVALID && se.Fields["customer_id"] != "" {
		se.Message = fmt.Sprintf("order %d cannot be restored: it linked customer %d, who is deleted (restore the customer first)", id, cid)
	}
	return o, err
}

// OrderHistory is a page of order id's history, newest first, before the
// entry named by cursor ("": from the newest); perPage 0 is 25.
func (s *Store) OrderHistory(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return historyOf(ctx, s, orders, id, cursor, perPage)
}

// AddOrderNote appends a note to order id's history; the order itself,
// its version included, does not change.
func (s *Store) AddOrderNote(ctx context.Context, id int64, note string) (*store.HistoryEntry, error) {
	return noteOn(ctx, s, orders, id, note)
}

// customerRef is a customer id as an order's history shows it ("" for none).
func customerRef(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// orderRelinked places the customers an order write linked or unlinked
// (created or deleted with a link, or moved between customers), which the
// write marked. The order is written by then: a failure here is logged,
// and the marks stay for the reconciler (last_order.go). It lives beside
// the order's kind because every order write runs it, most of them only
// to find no link changed.
func (s *Store) orderRelinked(ctx context.Context, ch Change[store.Order]) {
	var was, is int64
	if ch.Before != nil {
		was = ch.Before.CustomerID
	}
	if ch.After != nil {
		is = ch.After.CustomerID
	}
	if was == is && ch.Before != nil && ch.After != nil {
		return
	}
	if err := s.placeByLastOrder(ctx, was, is); err != nil {
		s.log.Warn("placing customers by their last order failed; the reconciler places them", "customers", []int64{was, is}, "err", err)
	}
	if was != 0 && was != is {
		// Its entry in the customer's links it left (links.go).
		s.releaseLink(ctx, was, ch.Before.ID)
	}
}
