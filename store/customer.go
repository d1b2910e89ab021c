package store

import (
	"context"
	"net/mail"
	"strings"
	"time"

	"golang.org/x/text/language"
)

// Customers are the people and companies orders are for. A customer has a
// name, optional contact details and an optional postal address; its email,
// when given, is unique regardless of case. What a customer has ordered
// (how many orders, the last one, the totals per currency) is derived from
// its orders, never typed.

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
	// Orders is one page of its orders, newest first, when a reader asked
	// for it (CustomerOrders): the customer's page lists them.
	Orders *CustomerOrderPage `json:"orders,omitempty"`
}

// CustomerOrderPage is one page of a customer's orders, newest first, in
// the shape of every page of a list: the entries, then where the page
// lies. Prev and Next are the addresses of the pages around it (nil: none),
// which whoever shows the page fills in.
type CustomerOrderPage struct {
	Orders            []OrderSummary `json:"orders"`
	Page              int            `json:"page"`
	PerPage           int            `json:"per_page"`
	Total             int64          `json:"total"`
	TotalIsLowerBound bool           `json:"total_is_lower_bound"`
	Prev              *string        `json:"prev"`
	Next              *string        `json:"next"`
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

// ApplyCustomer validates in against the stored customer cur (nil on
// create) and returns the resulting customer, or the field errors (keyed
// by the JSON names; address fields as address.city).
func ApplyCustomer(cur *Customer, in CustomerInput) (Customer, map[string]string) {
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
		v, msg := CheckText(*p, max, required, newlines)
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
	v, msg := CheckText(raw, MaxEmail, false, false)
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

// CustomerSorts are the sorts of the customer list; the first is the default.
var CustomerSorts = []Sort{"name", "-name", "-created", "created", "-last_order"}

// CustomerQuery is a page of the customer list: each term of q matches a
// customer's id, the start of any word of its name or company, the start
// of its email or of its phone's digits, and every term must match.
type CustomerQuery struct {
	Q       string
	Sort    Sort
	Page    int
	PerPage int
}

// CustomerPage is one page of customers.
type CustomerPage struct {
	Customers         []Customer
	Page, PerPage     int
	Total             int64
	TotalIsLowerBound bool
	// MatchOrder: q was given, so the customers come in match order and
	// Sort was not used.
	MatchOrder bool
}

// Customers are the customers' records.
type Customers interface {
	GetCustomer(ctx context.Context, id int64) (*Customer, error)
	ListCustomers(ctx context.Context, q CustomerQuery) (CustomerPage, error)
	// CustomerOrders is one page of a customer's orders, newest first.
	CustomerOrders(ctx context.Context, id int64, page, perPage int) (OrderPage, error)
	CreateCustomer(ctx context.Context, in CustomerInput) (*Customer, error)
	UpdateCustomer(ctx context.Context, id int64, in CustomerInput, ifMatch int64) (*Customer, error)
	DeleteCustomer(ctx context.Context, id int64, ifMatch, version int64) error
	// RestoreCustomer brings back customer id deleted within UndoWindow, with its id,
	// values and history, as the next version: ENOTFOUND for no such customer,
	// EGONE when its delete is older than the window, ECONFLICT when it is
	// not deleted, EINVALID when a value it holds alone is taken meanwhile.
	RestoreCustomer(ctx context.Context, id int64) (*Customer, error)
	CustomerHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddCustomerNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
}
