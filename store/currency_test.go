package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"orders/store"
)

func TestCurrencyMustBeAnISOCodeInUse(t *testing.T) {
	for code, want := range map[string]int{"USD": 2, "EUR": 2, "JPY": 0, "BHD": 3, "KWD": 3, "CLF": 4, "GBP": 2} {
		if d, ok := store.CurrencyDigits(code); !ok || d != want {
			t.Errorf("CurrencyDigits(%s) = %d, %v; want %d, true", code, d, ok, want)
		}
	}
	// Three capital letters that are no currency, a withdrawn one, the
	// code for "no currency", a test code, a metal, lower case.
	for _, code := range []string{"XYZ", "ABC", "DEM", "XXX", "XTS", "XAU", "usd", "US", "USDD"} {
		if d, ok := store.CurrencyDigits(code); ok {
			t.Errorf("CurrencyDigits(%s) = %d, true; want not a currency in use", code, d)
		}
		if strings.ToUpper(code) != code || len(code) != 3 {
			continue
		}
		_, errs := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), Currency: ptr(code)})
		if !strings.Contains(errs["currency"], "ISO 4217") {
			t.Errorf("an order in %s: errors %v, want currency refused", code, errs)
		}
		_, errs = store.ApplyProduct(nil, store.ProductInput{SKU: ptr("A"), Name: ptr("A"), UnitPrice: ptr("1"), Currency: ptr(code)})
		if !strings.Contains(errs["currency"], "ISO 4217") {
			t.Errorf("a product in %s: errors %v, want currency refused", code, errs)
		}
	}
	if o, errs := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), Currency: ptr(" jpy ")}); errs != nil || o.Currency != "JPY" {
		t.Errorf("an order in ' jpy ': %v %v, want JPY", o.Currency, errs)
	}
}

func TestAmountsHaveAtMostTheCurrencysDecimals(t *testing.T) {
	ok := []struct{ code, in, shown string }{
		{"JPY", "350", "350"}, {"JPY", "1000000", "1000000"}, {"USD", "19.9", "19.90"}, {"USD", "19.99", "19.99"},
		{"BHD", "1.234", "1.234"}, {"BHD", "1.2", "1.200"}, {"BHD", "1000000", "1000000.000"}, {"CLF", "0.0001", "0.0001"},
	}
	for _, tt := range ok {
		m, err := store.ParseAmount(tt.in, tt.code)
		if err != nil || m.In(tt.code) != tt.shown {
			t.Errorf("ParseAmount(%q, %s) = %q, %v; want %q", tt.in, tt.code, m.In(tt.code), err, tt.shown)
		}
		o, errs := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), Currency: ptr(tt.code), HasItems: true,
			Items: []store.ItemInput{{Name: "Lamp", Quantity: "1", UnitPrice: tt.in}}})
		if errs != nil || o.Total.In(tt.code) != tt.shown {
			t.Errorf("an order of one %s at %s: total %q, errors %v; want %q", tt.code, tt.in, o.Total.In(tt.code), errs, tt.shown)
		}
	}
	bad := []struct{ code, in, msg string }{
		{"JPY", "350.5", "must be a whole amount like 350, with no decimals in JPY"},
		{"JPY", "350.00", "must be a whole amount like 350, with no decimals in JPY"},
		{"USD", "1.234", "must be an amount like 19.99, with at most two decimals"},
		{"BHD", "1.2345", "must be an amount like 1.234, with at most three decimals in BHD"},
		{"JPY", "1000001", "must be at most 1000000"},
		{"BHD", "1000000.001", "must be at most 1000000.000"},
		{"BHD", "-1", "must be an amount like 1.234, with at most three decimals in BHD"},
	}
	for _, tt := range bad {
		_, errs := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), Currency: ptr(tt.code), HasItems: true,
			Items: []store.ItemInput{{Name: "Lamp", Quantity: "1", UnitPrice: tt.in}}})
		checkErrs(t, errs, "items[0][unit_price]", tt.msg)
		_, errs = store.ApplyProduct(nil, store.ProductInput{SKU: ptr("L"), Name: ptr("Lamp"), UnitPrice: ptr(tt.in), Currency: ptr(tt.code)})
		checkErrs(t, errs, "unit_price", tt.msg)
	}
}

func TestPagesGroupDigitsAndJSONStaysPlain(t *testing.T) {
	for _, tt := range []struct {
		m           store.Money
		code, plain string
		grouped     string
	}{
		{1234500, "USD", "12345.00", "12,345.00"},
		{100_000_000, "USD", "1000000.00", "1,000,000.00"},
		{35000, "JPY", "350", "350"},
		{123456700, "JPY", "1234567", "1,234,567"},
		{1234567, "BHD", "1234.567", "1,234.567"},
		{99, "USD", "0.99", "0.99"},
		// Stored before JPY lost its decimals: shown, not hidden.
		{35050, "JPY", "350.5", "350.5"},
		// A code no longer accepted keeps two decimals.
		{1234, "XYZ", "12.34", "12.34"},
	} {
		if got := tt.m.In(tt.code); got != tt.plain {
			t.Errorf("Money(%d).In(%s) = %q, want %q", tt.m, tt.code, got, tt.plain)
		}
		if got := tt.m.Grouped(tt.code); got != tt.grouped {
			t.Errorf("Money(%d).Grouped(%s) = %q, want %q", tt.m, tt.code, got, tt.grouped)
		}
	}
	o, _ := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), Currency: ptr("JPY"), HasItems: true,
		Items: []store.ItemInput{{Name: "Tea", Quantity: "100", UnitPrice: "350"}}})
	b, _ := json.Marshal(o)
	var got struct {
		Items []map[string]any `json:"items"`
		Total any              `json:"total"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Total != "35000" || got.Items[0]["unit_price"] != "350" || got.Items[0]["line_total"] != "35000" {
		t.Errorf("JPY order JSON: %s, want total \"35000\" and unit_price \"350\"", b)
	}
	b, _ = json.Marshal(o.Summary())
	if !strings.Contains(string(b), `"total":"35000"`) {
		t.Errorf("JPY summary JSON: %s, want total \"35000\"", b)
	}
	p, _ := store.ApplyProduct(nil, store.ProductInput{SKU: ptr("L"), Name: ptr("Lamp"), UnitPrice: ptr("1.234"), Currency: ptr("BHD")})
	b, _ = json.Marshal(p)
	if !strings.Contains(string(b), `"unit_price":"1.234"`) || !strings.Contains(string(b), `"currency":"BHD"`) {
		t.Errorf("BHD product JSON: %s, want unit_price \"1.234\"", b)
	}
	b, _ = json.Marshal(store.CurrencyTotal{Currency: "BHD", Total: 1234567})
	if string(b) != `{"currency":"BHD","total":"1234.567"}` {
		t.Errorf("BHD total JSON: %s", b)
	}
}

func TestChangingCurrencyKeepsThePricesDigitsWhenTheyFit(t *testing.T) {
	cur, _ := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), HasItems: true,
		Items: []store.ItemInput{{Name: "Lamp", Quantity: "2", UnitPrice: "12.50"}}})
	cur.ID, cur.Version = 1, 1
	o, errs := store.ApplyOrder(&cur, store.OrderInput{Currency: ptr("BHD")})
	if errs != nil || o.Items[0].UnitPrice.In("BHD") != "12.500" || o.Total.In("BHD") != "25.000" {
		t.Errorf("USD 12.50 to BHD: %v %v, want 12.500 and total 25.000", o.Items, errs)
	}
	o, errs = store.ApplyOrder(&cur, store.OrderInput{Currency: ptr("EUR")})
	if errs != nil || o.Total.In("EUR") != "25.00" {
		t.Errorf("USD to EUR: total %s, %v; want 25.00", o.Total.In("EUR"), errs)
	}
	_, errs = store.ApplyOrder(&cur, store.OrderInput{Currency: ptr("JPY")})
	checkErrs(t, errs, "currency", "the items' prices have more decimals than JPY has: change them too")
	// With new items in the same request, they are read in the new currency.
	o, errs = store.ApplyOrder(&cur, store.OrderInput{Currency: ptr("JPY"), HasItems: true,
		Items: []store.ItemInput{{Name: "Lamp", Quantity: "2", UnitPrice: "1250"}}})
	if errs != nil || o.Total.In("JPY") != "2500" {
		t.Errorf("to JPY with new items: total %s, %v; want 2500", o.Total.In("JPY"), errs)
	}

	p, _ := store.ApplyProduct(nil, store.ProductInput{SKU: ptr("L"), Name: ptr("Lamp"), UnitPrice: ptr("45.10")})
	_, errs = store.ApplyProduct(&p, store.ProductInput{Currency: ptr("JPY")})
	checkErrs(t, errs, "unit_price", "has more decimals than JPY has: change it too")
	if q, errs := store.ApplyProduct(&p, store.ProductInput{Currency: ptr("BHD")}); errs != nil || q.UnitPrice.In("BHD") != "45.100" {
		t.Errorf("product USD 45.10 to BHD: %s, %v; want 45.100", q.UnitPrice.In("BHD"), errs)
	}
}

func TestARecordInACodeNoLongerAcceptedStaysEditable(t *testing.T) {
	cur := store.Order{ID: 1, Customer: "Ada", Status: store.Pending, Currency: "XYZ", Version: 1,
		Items: []store.Item{{Name: "Lamp", Quantity: 1, UnitPrice: 1234}}}
	cur.Derive()
	// The edit form sends everything back, currency included.
	o, errs := store.ApplyOrder(&cur, store.OrderInput{Customer: ptr("Ada L."), Currency: ptr("xyz"), HasItems: true,
		Items: []store.ItemInput{{Name: "Lamp", Quantity: "2", UnitPrice: "12.34"}}})
	if errs != nil || o.Currency != "XYZ" || o.Total.In("XYZ") != "24.68" {
		t.Errorf("edit of an XYZ order: %s %s %v, want XYZ 24.68", o.Currency, o.Total.In("XYZ"), errs)
	}
	_, errs = store.ApplyOrder(&cur, store.OrderInput{Currency: ptr("ABC")})
	if !strings.Contains(errs["currency"], "ISO 4217") {
		t.Errorf("XYZ to ABC: %v, want the currency refused", errs)
	}
	if o, errs := store.ApplyOrder(&cur, store.OrderInput{Currency: ptr("EUR")}); errs != nil || o.Total.In("EUR") != "12.34" {
		t.Errorf("XYZ to EUR: %v, want 12.34", errs)
	}
	p := store.Product{ID: 1, SKU: "L", Name: "Lamp", UnitPrice: 4500, Currency: "XYZ", Active: true, Version: 1}
	if q, errs := store.ApplyProduct(&p, store.ProductInput{Name: ptr("Lamp 2"), UnitPrice: ptr("45.00"), Currency: ptr("XYZ")}); errs != nil || q.Name != "Lamp 2" {
		t.Errorf("edit of an XYZ product: %v", errs)
	}
}

func TestADraftMayHaveNoItemsButGoingAheadNeedsOne(t *testing.T) {
	draft, errs := store.ApplyOrder(nil, store.OrderInput{Customer: ptr("Ada"), HasItems: true})
	if errs != nil || draft.Status != store.Pending || draft.ItemCount != 0 {
		t.Fatalf("a draft without items: %v %v", draft, errs)
	}
	draft.ID, draft.Version = 1, 1
	checkErrs(t, store.Validate(&draft, store.OrderInput{Status: ptr("confirmed")}), "status",
		"cannot be confirmed without items: add at least one item first")
	// Confirming with the items in the same request is fine.
	checkErrs(t, store.Validate(&draft, store.OrderInput{Status: ptr("confirmed"), HasItems: true, Items: []store.ItemInput{item()}}), "", "")
	// Confirming while taking the last item away is not.
	withOne, _ := store.ApplyOrder(&draft, store.OrderInput{HasItems: true, Items: []store.ItemInput{item()}})
	checkErrs(t, store.Validate(&withOne, store.OrderInput{Status: ptr("confirmed"), HasItems: true}), "status",
		"cannot be confirmed without items: add at least one item first")
	// A draft without items may be cancelled.
	checkErrs(t, store.Validate(&draft, store.OrderInput{Status: ptr("cancelled")}), "", "")
	// A confirmed order keeps at least one item.
	confirmed, errs := store.ApplyOrder(&withOne, store.OrderInput{Status: ptr("confirmed")})
	if errs != nil {
		t.Fatal(errs)
	}
	checkErrs(t, store.Validate(&confirmed, store.OrderInput{HasItems: true}), "items", "a confirmed order needs at least one item")
	// An order that went ahead without items before the rule stays editable.
	old := store.Order{ID: 2, Customer: "Bob", Status: store.Shipped, Currency: "USD", Version: 4, Items: []store.Item{}}
	checkErrs(t, store.Validate(&old, store.OrderInput{Notes: ptr("late")}), "", "")
	checkErrs(t, store.Validate(&old, store.OrderInput{Status: ptr("delivered")}), "status",
		"cannot be delivered without items: add at least one item first")
}
