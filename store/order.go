// Package store is the domain: the records of every resource (orders,
// products, customers) with their inputs, queries and pages, validation,
// money, errors, limits, statuses and sorts, the history and event types,
// and Service, what the application asks of whatever keeps the records.
// It imports nothing of the application and nothing of Redis: the Redis
// adapter is store/redisstore.
package store

import (
	"context"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Status is where an order stands in its lifecycle.
type Status string

// The statuses an order moves through.
const (
	Pending   Status = "pending"
	Confirmed Status = "confirmed"
	Shipped   Status = "shipped"
	Delivered Status = "delivered"
	Cancelled Status = "cancelled"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{Pending, Confirmed, Shipped, Delivered, Cancelled}

var transitions = map[Status][]Status{
	Pending:   {Confirmed, Cancelled},
	Confirmed: {Shipped, Cancelled},
	Shipped:   {Delivered},
}

// StatusNames lists the statuses for a message: "pending, confirmed, …".
func StatusNames() string {
	names := make([]string, len(Statuses))
	for i, s := range Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Next lists the statuses an order may move to from s.
func (s Status) Next() []Status { return transitions[s] }

// CanBecome reports whether an order in status s may be set to t.
// Setting the current status again is allowed and changes nothing.
func (s Status) CanBecome(t Status) bool {
	if s == t {
		return true
	}
	for _, v := range transitions[s] {
		if v == t {
			return true
		}
	}
	return false
}

// ItemsEditable reports whether items and currency may change in status s.
func (s Status) ItemsEditable() bool { return s == Pending || s == Confirmed }

// Limits of an order's fields (in characters, except MaxItems and
// MaxQuantity).
const (
	MaxCustomer = 120
	MaxEmail    = 254
	MaxNotes    = 2000
	MaxItems    = 100
	MaxSKU      = 64
	MaxItemName = 200
	MaxQuantity = 1_000_000
	// CurrencyLen is the length of a currency code (ISO 4217).
	CurrencyLen = 3
)

// Messages that name a limit, made from it.
var (
	msgSKU      = "must be at most " + strconv.Itoa(MaxSKU) + " letters, digits, '-', '_' or '.'"
	msgQuantity = "must be a whole number from 1 to " + strconv.Itoa(MaxQuantity)
)

// Item is one line of an order. It has no identity of its own.
type Item struct {
	SKU       string `json:"sku"`
	Name      string `json:"name"`
	Quantity  int64  `json:"quantity"`
	UnitPrice Money  `json:"unit_price"`
	LineTotal Money  `json:"line_total"`
}

// Order is one member of the order collection.
type Order struct {
	ID       int64  `json:"id"`
	Customer string `json:"customer"`
	Email    string `json:"email"`
	Status   Status `json:"status"`
	Currency string `json:"currency"`
	Notes    string `json:"notes"`
	// CustomerID links the order to a customer (0: none; its customer
	// and email are the order's own copies either way).
	CustomerID int64     `json:"customer_id,omitempty"`
	Items      []Item    `json:"items"`
	ItemCount  int       `json:"item_count"`
	Total      Money     `json:"total"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`

	// Idem is the fingerprint of the Idempotency-Key request that created
	// the order, if any: a retry checks the order it finds is its own. It
	// is the store's, never shown.
	Idem string `json:"-"`
}

// OrderSummary is the List representation of an order: everything but its items.
type OrderSummary struct {
	ID       int64  `json:"id"`
	Customer string `json:"customer"`
	Email    string `json:"email"`
	Status   Status `json:"status"`
	Currency string `json:"currency"`
	Notes    string `json:"notes"`
	// CustomerID is the linked customer (0, and absent in JSON: none).
	CustomerID int64     `json:"customer_id,omitempty"`
	ItemCount  int       `json:"item_count"`
	Total      Money     `json:"total"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Summary returns o without its items.
func (o *Order) Summary() OrderSummary {
	return OrderSummary{o.ID, o.Customer, o.Email, o.Status, o.Currency, o.Notes,
		o.CustomerID, o.ItemCount, o.Total, o.Version, o.CreatedAt, o.UpdatedAt}
}

// Derive recomputes line totals, the item count and the order total.
func (o *Order) Derive() {
	o.ItemCount = len(o.Items)
	o.Total = 0
	for i := range o.Items {
		o.Items[i].LineTotal = o.Items[i].UnitPrice.Times(o.Items[i].Quantity)
		o.Total += o.Items[i].LineTotal
	}
}

// ItemInput is one item as a person or program sent it: raw text, checked by
// Validate.
type ItemInput struct {
	SKU       string
	Name      string
	Quantity  string
	UnitPrice string
}

// OrderInput is a create or update request. A nil field was not sent: an update
// keeps the stored value. Items is nil when the request said nothing about
// items, and non-nil (perhaps empty) when it replaces them.
type OrderInput struct {
	Customer *string
	Email    *string
	Status   *string
	Currency *string
	Notes    *string
	// CustomerID is a customer's id, or "" for none.
	CustomerID *string
	Items      []ItemInput
	// HasItems is true when the request carried items, even none.
	HasItems bool
	// Version, when set, must equal the stored version (else ECONFLICT).
	Version *int64
}

var (
	skuRE      = regexp.MustCompile(`^[A-Za-z0-9._-]*$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{` + strconv.Itoa(CurrencyLen) + `}$`)
)

// itemKey is the error key of an item field: items[i][field], as forms
// name item fields and as JSON errors report them, i the item's position in Input.Items (a form's row numbers are the
// HTTP layer's: routes gives the messages back under them).
func itemKey(n int, field string) string {
	return "items[" + strconv.Itoa(n) + "][" + field + "]"
}

func hasControl(s string, allowNewlines bool) bool {
	for _, r := range s {
		if allowNewlines && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// ApplyOrder validates in against the stored order cur (nil on create) and
// returns the resulting order, or the field errors. It never mutates cur.
func ApplyOrder(cur *Order, in OrderInput) (Order, map[string]string) {
	errs := map[string]string{}
	var o Order
	if cur != nil {
		o = *cur
		o.Items = append([]Item{}, cur.Items...) // never nil: JSON says [], not null
	} else {
		o.Status = Pending
		o.Currency = "USD"
		o.Items = []Item{}
	}
	text := func(field string, p *string, max int, required, newlines bool) (string, bool) {
		if p == nil {
			return "", false
		}
		v, msg := CheckText(*p, max, required, newlines)
		if msg != "" {
			errs[field] = msg
			return "", false
		}
		return v, true
	}

	if cur == nil && in.Customer == nil {
		errs["customer"] = "is required"
	}
	if v, ok := text("customer", in.Customer, MaxCustomer, true, false); ok {
		o.Customer = v
	}
	if v, ok := text("email", in.Email, MaxEmail, false, false); ok {
		if v != "" {
			a, err := mail.ParseAddress(v)
			if err != nil || a.Address != v || a.Name != "" {
				errs["email"] = "must be one email address, like name@example.com"
				ok = false
			}
		}
		if ok {
			o.Email = v
		}
	}
	if v, ok := text("notes", in.Notes, MaxNotes, false, true); ok {
		o.Notes = v
	}
	if in.CustomerID != nil {
		v := strings.TrimSpace(*in.CustomerID)
		if id, ok := ParseID(v); ok {
			o.CustomerID = id
		} else if v == "" {
			o.CustomerID = 0
		} else {
			errs["customer_id"] = "must be a customer's number"
		}
	}
	if in.Status != nil {
		s := Status(strings.ToLower(strings.TrimSpace(*in.Status)))
		switch {
		case !s.Valid():
			errs["status"] = "must be one of " + StatusNames()
		case cur == nil && s != Pending:
			errs["status"] = "a new order starts as pending"
		case cur != nil && !cur.Status.CanBecome(s):
			errs["status"] = "cannot change status from " + string(cur.Status) + " to " + string(s)
		default:
			o.Status = s
		}
	}
	// Items and currency follow the status the order has before this change:
	// a request may not ship an order and change its items in one go.
	frozen := cur != nil && !cur.Status.ItemsEditable()
	if in.Currency != nil {
		v, msg := checkCurrency(*in.Currency)
		switch {
		case cur != nil && v == cur.Currency:
			// The stored currency again is no change, even a code no
			// longer accepted: such an order stays editable as it is.
		case msg != "":
			errs["currency"] = msg
		case frozen:
			errs["currency"] = "cannot change once an order is " + string(cur.Status)
		default:
			o.Currency = v
		}
	}
	if cur != nil && o.Currency != cur.Currency && !in.HasItems {
		// The items kept through a change of currency keep their
		// amounts' digits (12.50 USD becomes 12.50 EUR), which must fit
		// the new currency's decimals.
		from, to := MoneyScale(cur.Currency), MoneyScale(o.Currency)
		for i := range o.Items {
			p, ok := o.Items[i].UnitPrice.Rescale(from, to)
			if !ok || !p.FitsCurrency(o.Currency) {
				errs["currency"] = "the items' prices have more decimals than " + o.Currency + " has: change them too"
				break
			}
			o.Items[i].UnitPrice = p
		}
	}
	if in.HasItems {
		if frozen {
			// The same items again (a client PUTs back what it read) are
			// no change; other items are refused.
			items := make([]Item, 0, len(in.Items))
			scratch := map[string]string{}
			for i, it := range in.Items {
				if item, ok := validateItem(i, it, cur.Currency, scratch); ok {
					items = append(items, item)
				}
			}
			if len(scratch) > 0 || !SameItems(items, cur.Items) {
				errs["items"] = "cannot change once an order is " + string(cur.Status)
			}
		} else if len(in.Items) > MaxItems {
			errs["items"] = "at most " + strconv.Itoa(MaxItems) + " items"
		} else {
			o.Items = make([]Item, 0, len(in.Items))
			for i, it := range in.Items {
				item, ok := validateItem(i, it, o.Currency, errs)
				if ok {
					o.Items = append(o.Items, item)
				}
			}
		}
	}
	if len(errs) == 0 && len(o.Items) == 0 && o.Status.NeedsItems() {
		// A draft may have no items; an order that goes ahead needs one.
		switch {
		case cur == nil || o.Status != cur.Status:
			errs["status"] = "cannot be " + string(o.Status) + " without items: add at least one item first"
		case len(cur.Items) > 0:
			errs["items"] = "a " + string(o.Status) + " order needs at least one item"
		}
	}
	if len(errs) > 0 {
		return Order{}, errs
	}
	o.Derive()
	return o, nil
}

// NeedsItems reports whether an order in status s must have items: every
// status but a draft (pending) and a cancelled order.
func (s Status) NeedsItems() bool { return s != Pending && s != Cancelled }

// validateItem checks item i of a request (its position in Input.Items,
// which names it in the messages: items[i][field]).
func validateItem(i int, it ItemInput, code string, errs map[string]string) (Item, bool) {
	n := len(errs)
	var item Item
	var msg string
	if item.SKU, msg = checkSKU(it.SKU, false); msg != "" {
		errs[itemKey(i, "sku")] = msg
	}
	if item.Name, msg = CheckText(it.Name, MaxItemName, true, false); msg != "" {
		errs[itemKey(i, "name")] = msg
	}
	q := strings.TrimSpace(it.Quantity)
	if !allDigits(q) || q == "" || len(q) > 9 {
		errs[itemKey(i, "quantity")] = msgQuantity
	} else {
		item.Quantity, _ = strconv.ParseInt(q, 10, 64)
		if item.Quantity < 1 || item.Quantity > MaxQuantity {
			errs[itemKey(i, "quantity")] = msgQuantity
		}
	}
	if item.UnitPrice, msg = checkPrice(it.UnitPrice, code); msg != "" {
		errs[itemKey(i, "unit_price")] = msg
	}
	return item, len(errs) == n
}

// CheckText cleans a text field (cleanText) and checks it: the value, or
// the message that says what is wrong with it.
func CheckText(raw string, max int, required, newlines bool) (string, string) {
	v, ok := cleanText(raw)
	switch {
	case !utf8.ValidString(v):
		return "", "must be valid UTF-8 text"
	case !ok:
		return "", msgBidi
	case required && v == "":
		return "", "is required"
	case utf8.RuneCountInString(v) > max:
		return "", "must be at most " + strconv.Itoa(max) + " characters"
	case hasControl(v, newlines):
		return "", "must not contain control characters"
	}
	return v, ""
}

// checkSKU cleans and checks a SKU (a SKU of only invisible characters is
// no SKU).
func checkSKU(raw string, required bool) (string, string) {
	v, clean := cleanText(raw)
	switch {
	case !clean:
		return "", msgBidi
	case required && v == "":
		return "", "is required"
	case !utf8.ValidString(v) || len(v) > MaxSKU || !skuRE.MatchString(v):
		return "", msgSKU
	}
	return v, ""
}

// checkPrice reads a unit price in a currency: 0 to MaxPrice, with no
// more decimals than the currency has.
func checkPrice(raw, code string) (Money, string) {
	m, err := ParseAmount(strings.TrimSpace(raw), code)
	switch {
	case err != nil:
		return 0, err.Error()
	case m > MaxPrice(code):
		return 0, "must be at most " + MaxPrice(code).In(code)
	}
	return m, ""
}

// checkCurrency reads a currency code (upper-cased): an ISO 4217 code of a
// currency in use. It returns the upper-cased code even when it refuses it.
func checkCurrency(raw string) (string, string) {
	v := strings.ToUpper(strings.TrimSpace(raw))
	if !currencyRE.MatchString(v) {
		return v, "must be a three-letter ISO 4217 code, like USD"
	}
	if _, ok := CurrencyDigits(v); !ok {
		return v, "must be the ISO 4217 code of a currency in use, like USD or EUR; " + v + " is none"
	}
	return v, ""
}

// Validate checks in as a new order (cur nil) or as a change to cur, and
// returns field errors, or nil.
func Validate(cur *Order, in OrderInput) map[string]string {
	_, errs := ApplyOrder(cur, in)
	return errs
}

// ParseID reads a path identifier: 1 to 18 digits without a leading zero.
func ParseID(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 || s[0] == '0' || !allDigits(s) {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}

const msgBidi = "must not contain bidirectional override, embedding or isolate characters"

// cleanText is how every text field of every resource is read: trimmed and
// NFC-normalised (a composed and a decomposed "Zoé" are one name); a value
// of nothing but invisible characters (zero-width, bidi marks, BOM) is
// empty; ok is false when it holds a bidi override, embedding or isolate,
// which can make text display as something else. Invalid UTF-8 is returned
// as it is, for the caller to refuse.
func cleanText(s string) (v string, ok bool) {
	v = strings.TrimSpace(s)
	if !utf8.ValidString(v) {
		return v, true
	}
	visible := false
	for _, r := range v {
		switch {
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return v, false
		case invisible(r) || unicode.IsSpace(r):
		default:
			visible = true
		}
	}
	if !visible {
		return "", true
	}
	return norm.NFC.String(v), true
}

// invisible reports characters that show nothing: zero-width spaces and
// joiners, bidi marks, word joiners, the BOM, the soft hyphen.
func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x061C, r == 0x00AD, r == 0x180E:
		return true
	}
	return false
}

// SameItems reports whether a and b hold the same items in the same order.
func SameItems(a, b []Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.SKU != y.SKU || x.Name != y.Name || x.Quantity != y.Quantity || x.UnitPrice != y.UnitPrice {
			return false
		}
	}
	return true
}

// Orders are the orders' records.
type Orders interface {
	GetOrder(ctx context.Context, id int64) (*Order, error)
	ListOrders(ctx context.Context, q OrderQuery) (OrderPage, error)
	CreateOrder(ctx context.Context, in OrderInput) (*Order, error)
	// CreateOrderOnce is CreateOrder for a request that carries an
	// Idempotency-Key: a retry with the same key and fingerprint gets the
	// same order.
	CreateOrderOnce(ctx context.Context, key, fingerprint string, in OrderInput) (*Order, error)
	UpdateOrder(ctx context.Context, id int64, in OrderInput, ifMatch int64) (*Order, error)
	DeleteOrder(ctx context.Context, id int64, ifMatch, version int64) error
	// RestoreOrder brings back order id deleted within UndoWindow, with its id,
	// values and history, as the next version: ENOTFOUND for no such order,
	// EGONE when its delete is older than the window, ECONFLICT when it is
	// not deleted, EINVALID when a value it holds alone is taken meanwhile.
	RestoreOrder(ctx context.Context, id int64) (*Order, error)
	OrderHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddOrderNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
	CountOrders(ctx context.Context) (int64, error)
}

// PairBy pairs each of n things with one of m others: for each rule in
// turn, each thing not yet paired takes the first other not yet taken that
// the rule matches (rule(i, j): thing i and other j). It returns, for each
// thing, the other it took, or -1. The history (an item before and after a
// change) and the 409's comparison (theirs and yours) pair items by it.
func PairBy(n, m int, rules ...func(i, j int) bool) []int {
	taken := make([]bool, m)
	paired := make([]int, n)
	for i := range paired {
		paired[i] = -1
	}
	for _, rule := range rules {
		for i := range paired {
			if paired[i] >= 0 {
				continue
			}
			for j := range taken {
				if !taken[j] && rule(i, j) {
					taken[j], paired[i] = true, j
					break
				}
			}
		}
	}
	return paired
}
