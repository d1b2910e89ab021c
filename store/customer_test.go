package store

import (
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestACustomerNeedsANameAndNothingElse(t *testing.T) {
	c, errs := ApplyCustomer(nil, CustomerInput{Name: ptr("  Ada Lovelace ")})
	if errs != nil {
		t.Fatalf("a name alone: %v", errs)
	}
	if c.Name != "Ada Lovelace" || c.Email != "" || c.Address != (Address{}) {
		t.Errorf("got %+v", c)
	}
	if _, errs := ApplyCustomer(nil, CustomerInput{Email: ptr("ada@example.com")}); errs["name"] != "is required" {
		t.Errorf("no name: %v", errs)
	}
	if _, errs := ApplyCustomer(nil, CustomerInput{Name: ptr("   ")}); errs["name"] != "is required" {
		t.Errorf("a blank name: %v", errs)
	}
	if _, errs := ApplyCustomer(nil, CustomerInput{Name: ptr(strings.Repeat("x", MaxCustomerName+1))}); errs["name"] == "" {
		t.Errorf("a name over %d characters was taken", MaxCustomerName)
	}
}

func TestACustomerChangeKeepsWhatItDidNotSend(t *testing.T) {
	cur := &Customer{ID: 3, Name: "Ada", Email: "ada@example.com", Phone: "+44 20 1234", Version: 2,
		Address: Address{City: "London", Country: "GB"}}
	c, errs := ApplyCustomer(cur, CustomerInput{Company: ptr("Analytical Engines Ltd"),
		Address: AddressInput{City: ptr("Cambridge")}})
	if errs != nil {
		t.Fatal(errs)
	}
	if c.Name != "Ada" || c.Email != cur.Email || c.Phone != cur.Phone || c.Company != "Analytical Engines Ltd" ||
		c.Address.City != "Cambridge" || c.Address.Country != "GB" {
		t.Errorf("got %+v", c)
	}
	if cur.Address.City != "London" {
		t.Error("the stored customer was changed")
	}
	// An empty optional field clears it.
	c, errs = ApplyCustomer(cur, CustomerInput{Email: ptr(""), Phone: ptr(" ")})
	if errs != nil || c.Email != "" || c.Phone != "" {
		t.Errorf("clearing email and phone: %+v %v", c, errs)
	}
}

func TestCustomerContactDetailsAreChecked(t *testing.T) {
	bad := []struct {
		field string
		in    CustomerInput
	}{
		{"email", CustomerInput{Email: ptr("ada at example.com")}},
		{"email", CustomerInput{Email: ptr("Ada <ada@example.com>")}},
		{"phone", CustomerInput{Phone: ptr("call me")}},
		{"phone", CustomerInput{Phone: ptr("+-() .")}},
		{"phone", CustomerInput{Phone: ptr(strings.Repeat("1", MaxPhone+1))}},
		{"address.country", CustomerInput{Address: AddressInput{Country: ptr("Germany")}}},
		{"address.country", CustomerInput{Address: AddressInput{Country: ptr("EU")}}},
		{"address.country", CustomerInput{Address: AddressInput{Country: ptr("ZZ")}}},
		{"address.country", CustomerInput{Address: AddressInput{Country: ptr("UK")}}},
		{"address.country", CustomerInput{Address: AddressInput{Country: ptr("D1")}}},
		{"address.postal_code", CustomerInput{Address: AddressInput{PostalCode: ptr(strings.Repeat("9", MaxPostalCode+1))}}},
		{"address.line1", CustomerInput{Address: AddressInput{Line1: ptr("a\x00b")}}},
		{"company", CustomerInput{Company: ptr("x\u202Ey")}},
		{"notes", CustomerInput{Notes: ptr(strings.Repeat("n", MaxNotes+1))}},
	}
	for _, b := range bad {
		b.in.Name = ptr("Ada")
		if _, errs := ApplyCustomer(nil, b.in); errs[b.field] == "" {
			t.Errorf("%+v: no error for %s (%v)", b.in, b.field, errs)
		}
	}
	good := CustomerInput{Name: ptr("Ada"), Email: ptr("ada@example.com"), Phone: ptr("+49 (30) 123-45.6"),
		Address: AddressInput{Country: ptr(" de "), PostalCode: ptr("10115")}, Notes: ptr("line one\nline two")}
	c, errs := ApplyCustomer(nil, good)
	if errs != nil {
		t.Fatal(errs)
	}
	if c.Address.Country != "DE" || c.Phone != "+49 (30) 123-45.6" {
		t.Errorf("got %+v", c)
	}
	if d := CustomerDigits(c.Phone); d != "493012345"+"6" {
		t.Errorf("digits of %q: %q", c.Phone, d)
	}
}
