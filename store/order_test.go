package store_test

import (
	"fmt"
	"strings"
	"testing"

	"orders/store"
)

func ptr[T any](v T) *T { return &v }

// item is a valid item input.
func item() store.ItemInput {
	return store.ItemInput{SKU: "SKU-1", Name: "Widget", Quantity: "2", UnitPrice: "19.99"}
}

// validInput is a valid new order with one item.
func validInput() store.OrderInput {
	return store.OrderInput{
		Customer: ptr("Ada Lovelace"),
		Email:    ptr("ada@example.com"),
		Notes:    ptr("Leave at the door."),
		Items:    []store.ItemInput{item()},
		HasItems: true,
	}
}

const (
	msgRequired   = "is required"
	msgEmail      = "must be one email address, like name@example.com"
	msgStatus     = "must be one of pending, confirmed, shipped, delivered, cancelled"
	msgNewPending = "a new order starts as pending"
	msgCurrency   = "must be a three-letter ISO 4217 code, like USD"
	msgControl    = "must not contain control characters"
	msgSKU        = "must be at most 64 letters, digits, '-', '_' or '.'"
	msgQuantity   = "must be a whole number from 1 to 1000000"
	msgPrice      = "must be an amount like 19.99, with at most two decimals"
	msgPriceMax   = "must be at most 1000000.00"
)

func TestValidateNewOrder(t *testing.T) {
	withItem := func(f func(*store.ItemInput)) func(*store.OrderInput) {
		return func(in *store.OrderInput) {
			it := item()
			f(&it)
			in.Items = []store.ItemInput{it}
		}
	}
	tests := []struct {
		name   string
		change func(*store.OrderInput)
		key    string // "" means valid
		msg    string
	}{
		{"valid", func(in *store.OrderInput) {}, "", ""},
		{"only a customer", func(in *store.OrderInput) { *in = store.OrderInput{Customer: ptr("Ada")} }, "", ""},
		{"customer missing", func(in *store.OrderInput) { in.Customer = nil }, "customer", msgRequired},
		{"customer empty", func(in *store.OrderInput) { in.Customer = ptr("") }, "customer", msgRequired},
		{"customer blank", func(in *store.OrderInput) { in.Customer = ptr(" \t ") }, "customer", msgRequired},
		{"customer 120 runes", func(in *store.OrderInput) { in.Customer = ptr(strings.Repeat("é", 120)) }, "", ""},
		{"customer 121 runes", func(in *store.OrderInput) { in.Customer = ptr(strings.Repeat("é", 121)) }, "customer", "must be at most 120 characters"},
		{"customer padded to 121", func(in *store.OrderInput) { in.Customer = ptr("  " + strings.Repeat("a", 120) + "  ") }, "", ""},
		{"customer bell", func(in *store.OrderInput) { in.Customer = ptr("Ada\aLovelace") }, "customer", msgControl},
		{"customer newline", func(in *store.OrderInput) { in.Customer = ptr("Ada\nLovelace") }, "customer", msgControl},
		{"customer NUL", func(in *store.OrderInput) { in.Customer = ptr("Ada\x00") }, "customer", msgControl},
		{"customer invalid UTF-8", func(in *store.OrderInput) { in.Customer = ptr("Ada\xff") }, "customer", "must be valid UTF-8 text"},
		{"email empty", func(in *store.OrderInput) { in.Email = ptr("") }, "", ""},
		{"email invalid", func(in *store.OrderInput) { in.Email = ptr("not-an-email") }, "email", msgEmail},
		{"email no domain", func(in *store.OrderInput) { in.Email = ptr("ada@") }, "email", msgEmail},
		{"email two addresses", func(in *store.OrderInput) { in.Email = ptr("a@example.com, b@example.com") }, "email", msgEmail},
		{"email with a name", func(in *store.OrderInput) { in.Email = ptr("Ada <ada@example.com>") }, "email", msgEmail},
		{"email 254", func(in *store.OrderInput) {
			in.Email = ptr(strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com")
		}, "", ""},
		{"email 255", func(in *store.OrderInput) {
			in.Email = ptr(strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com")
		}, "email", "must be at most 254 characters"},
		{"notes 2000", func(in *store.OrderInput) { in.Notes = ptr(strings.Repeat("n", 2000)) }, "", ""},
		{"notes 2001", func(in *store.OrderInput) { in.Notes = ptr(strings.Repeat("n", 2001)) }, "notes", "must be at most 2000 characters"},
		{"notes newlines", func(in *store.OrderInput) { in.Notes = ptr("line 1\r\nline 2\n\tindented") }, "", ""},
		{"notes escape", func(in *store.OrderInput) { in.Notes = ptr("a\x1bb") }, "notes", msgControl},
		{"status pending", func(in *store.OrderInput) { in.Status = ptr("pending") }, "", ""},
		{"status unknown", func(in *store.OrderInput) { in.Status = ptr("lost") }, "status", msgStatus},
		{"status empty", func(in *store.OrderInput) { in.Status = ptr("") }, "status", msgStatus},
		{"new status confirmed", func(in *store.OrderInput) { in.Status = ptr("confirmed") }, "status", msgNewPending},
		{"new status shipped", func(in *store.OrderInput) { in.Status = ptr("shipped") }, "status", msgNewPending},
		{"new status delivered", func(in *store.OrderInput) { in.Status = ptr("delivered") }, "status", msgNewPending},
		{"new status cancelled", func(in *store.OrderInput) { in.Status = ptr("cancelled") }, "status", msgNewPending},
		{"currency EUR", func(in *store.OrderInput) { in.Currency = ptr("EUR") }, "", ""},
		{"currency usd", func(in *store.OrderInput) { in.Currency = ptr("usd") }, "", ""},
		{"currency US", func(in *store.OrderInput) { in.Currency = ptr("US") }, "currency", msgCurrency},
		{"currency USDX", func(in *store.OrderInput) { in.Currency = ptr("USDX") }, "currency", msgCurrency},
		{"currency U$D", func(in *store.OrderInput) { in.Currency = ptr("U$D") }, "currency", msgCurrency},
		{"currency empty", func(in *store.OrderInput) { in.Currency = ptr("") }, "currency", msgCurrency},
		{"no items", func(in *store.OrderInput) { in.Items = nil }, "", ""},
		{"100 items", func(in *store.OrderInput) { in.Items = items(100) }, "", ""},
		{"101 items", func(in *store.OrderInput) { in.Items = items(101) }, "items", "at most 100 items"},
		{"item name empty", withItem(func(it *store.ItemInput) { it.Name = "" }), "items[0][name]", msgRequired},
		{"item name blank", withItem(func(it *store.ItemInput) { it.Name = "   " }), "items[0][name]", msgRequired},
		{"item name 200", withItem(func(it *store.ItemInput) { it.Name = strings.Repeat("ü", 200) }), "", ""},
		{"item name 201", withItem(func(it *store.ItemInput) { it.Name = strings.Repeat("ü", 201) }), "items[0][name]", "must be at most 200 characters"},
		{"item name control", withItem(func(it *store.ItemInput) { it.Name = "a\tb" }), "items[0][name]", msgControl},
		{"item sku empty", withItem(func(it *store.ItemInput) { it.SKU = "" }), "", ""},
		{"item sku all kinds", withItem(func(it *store.ItemInput) { it.SKU = "Az09-_." }), "", ""},
		{"item sku space", withItem(func(it *store.ItemInput) { it.SKU = "AB CD" }), "items[0][sku]", msgSKU},
		{"item sku slash", withItem(func(it *store.ItemInput) { it.SKU = "AB/CD" }), "items[0][sku]", msgSKU},
		{"item sku non-ASCII", withItem(func(it *store.ItemInput) { it.SKU = "ÄB" }), "items[0][sku]", msgSKU},
		{"item sku 64", withItem(func(it *store.ItemInput) { it.SKU = strings.Repeat("X", 64) }), "", ""},
		{"item sku 65", withItem(func(it *store.ItemInput) { it.SKU = strings.Repeat("X", 65) }), "items[0][sku]", msgSKU},
		{"item quantity 1", withItem(func(it *store.ItemInput) { it.Quantity = "1" }), "", ""},
		{"item quantity 1000000", withItem(func(it *store.ItemInput) { it.Quantity = "1000000" }), "", ""},
		{"item quantity 0", withItem(func(it *store.ItemInput) { it.Quantity = "0" }), "items[0][quantity]", msgQuantity},
		{"item quantity 1000001", withItem(func(it *store.ItemInput) { it.Quantity = "1000001" }), "items[0][quantity]", msgQuantity},
		{"item quantity 1.5", withItem(func(it *store.ItemInput) { it.Quantity = "1.5" }), "items[0][quantity]", msgQuantity},
		{"item quantity abc", withItem(func(it *store.ItemInput) { it.Quantity = "abc" }), "items[0][quantity]", msgQuantity},
		{"item quantity empty", withItem(func(it *store.ItemInput) { it.Quantity = "" }), "items[0][quantity]", msgQuantity},
		{"item quantity -1", withItem(func(it *store.ItemInput) { it.Quantity = "-1" }), "items[0][quantity]", msgQuantity},
		{"item quantity huge", withItem(func(it *store.ItemInput) { it.Quantity = "99999999999999999999" }), "items[0][quantity]", msgQuantity},
		{"item price 0", withItem(func(it *store.ItemInput) { it.UnitPrice = "0" }), "", ""},
		{"item price max", withItem(func(it *store.ItemInput) { it.UnitPrice = "1000000.00" }), "", ""},
		{"item price 1.234", withItem(func(it *store.ItemInput) { it.UnitPrice = "1.234" }), "items[0][unit_price]", msgPrice},
		{"item price 1000000.01", withItem(func(it *store.ItemInput) { it.UnitPrice = "1000000.01" }), "items[0][unit_price]", msgPriceMax},
		{"item price 9999999.99", withItem(func(it *store.ItemInput) { it.UnitPrice = "9999999.99" }), "items[0][unit_price]", msgPriceMax},
		{"item price 10000000", withItem(func(it *store.ItemInput) { it.UnitPrice = "10000000" }), "items[0][unit_price]", msgPriceMax},
		{"item price -1", withItem(func(it *store.ItemInput) { it.UnitPrice = "-1" }), "items[0][unit_price]", msgPrice},
		{"item price empty", withItem(func(it *store.ItemInput) { it.UnitPrice = "" }), "items[0][unit_price]", msgPrice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := validInput()
			tt.change(&in)
			errs := store.Validate(nil, in)
			checkErrs(t, errs, tt.key, tt.msg)
		})
	}
}

// items returns n valid item inputs indexed 0..n-1.
func items(n int) []store.ItemInput {
	out := make([]store.ItemInput, n)
	for i := range out {
		out[i] = item()
	}
	return out
}

// checkErrs wants errs to hold exactly key: msg, or nothing when key is "".
func checkErrs(t *testing.T, errs map[string]string, key, msg string) {
	t.Helper()
	if key == "" {
		if errs != nil {
			t.Errorf("errors: got %v, want none", errs)
		}
		return
	}
	if got, ok := errs[key]; !ok || got != msg {
		t.Errorf("errors[%q]: got %q (all: %v), want %q", key, got, errs, msg)
	}
	if len(errs) != 1 {
		t.Errorf("errors: got %d %v, want only %q", len(errs), errs, key)
	}
}

// TestValidateItemErrorsUsePositions: an item's messages are keyed by its
// position in the input (routes gives them back under a form's row
// numbers).
func TestValidateItemErrorsUsePositions(t *testing.T) {
	in := validInput()
	in.Items = []store.ItemInput{
		item(),
		{Name: "", Quantity: "0", UnitPrice: "1.234", SKU: "a b"},
		item(),
		{Name: "ok", Quantity: "abc", UnitPrice: "2"},
	}
	want := map[string]string{
		"items[1][name]":       msgRequired,
		"items[1][quantity]":   msgQuantity,
		"items[1][unit_price]": msgPrice,
		"items[1][sku]":        msgSKU,
		"items[3][quantity]":   msgQuantity,
	}
	got := store.Validate(nil, in)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("errors:\n got %v\nwant %v", got, want)
	}
}

func TestValidateSeveralFields(t *testing.T) {
	in := store.OrderInput{Customer: ptr(""), Email: ptr("x"), Status: ptr("nope"), Currency: ptr("$"), Notes: ptr(strings.Repeat("n", 2001))}
	got := store.Validate(nil, in)
	for _, k := range []string{"customer", "email", "status", "currency", "notes"} {
		if _, ok := got[k]; !ok {
			t.Errorf("errors: got %v, want a message for %q", got, k)
		}
	}
}

// allowed lists every permitted status change other than staying put.
var allowed = map[[2]store.Status]bool{
	{store.Pending, store.Confirmed}:   true,
	{store.Pending, store.Cancelled}:   true,
	{store.Confirmed, store.Shipped}:   true,
	{store.Confirmed, store.Cancelled}: true,
	{store.Shipped, store.Delivered}:   true,
}

func TestStatusTransitionsValidate(t *testing.T) {
	for _, from := range store.Statuses {
		for _, to := range store.Statuses {
			ok := from == to || allowed[[2]store.Status{from, to}]
			if got := from.CanBecome(to); got != ok {
				t.Errorf("%s.CanBecome(%s) = %v, want %v", from, to, got, ok)
			}
			cur := &store.Order{ID: 1, Customer: "Ada", Status: from, Currency: "USD", Version: 3,
				Items: []store.Item{{Name: "Widget", Quantity: 1, UnitPrice: 100}}}
			errs := store.Validate(cur, store.OrderInput{Status: ptr(string(to))})
			if ok {
				checkErrs(t, errs, "", "")
			} else {
				checkErrs(t, errs, "status", fmt.Sprintf("cannot change status from %s to %s", from, to))
			}
		}
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"42", 42, true},
		{"123456789012345678", 123456789012345678, true},
		{"999999999999999999", 999999999999999999, true},
		{"0", 0, false},
		{"01", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1a", 0, false},
		{" 1", 0, false},
		{"1234567890123456789", 0, false},
		{"", 0, false},
		{"1.0", 0, false},
	}
	for _, tt := range tests {
		got, ok := store.ParseID(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseID(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
