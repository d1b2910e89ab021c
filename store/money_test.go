package store

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestParseMoneyValid(t *testing.T) {
	tests := []struct {
		in   string
		want Money
	}{
		{"0", 0},
		{"0.1", 10},
		{"0.10", 10},
		{"0.01", 1},
		{"3", 300},
		{"3.5", 350},
		{"19.99", 1999},
		{"007.50", 750},
		{"1000000", 100_000_000},
		{"1000000.00", 100_000_000},
	}
	for _, tt := range tests {
		got, err := ParseMoney(tt.in)
		if err != nil {
			t.Errorf("ParseMoney(%q): got error %v, want %d", tt.in, err, tt.want)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseMoney(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseMoneyInvalid(t *testing.T) {
	for _, in := range []string{
		"", ".5", "1.", "1.234", "-1", "+1", "1e3", "abc", " 1", "1 ", "1,000.00",
		"10000000", "NaN", "Inf", "1.2.3", "0x10", "١", ".",
	} {
		if got, err := ParseMoney(in); err == nil {
			t.Errorf("ParseMoney(%q) = %d, want an error", in, got)
		}
	}
}

func TestMoneyString(t *testing.T) {
	tests := []struct {
		in   Money
		want string
	}{
		{0, "0.00"},
		{1, "0.01"},
		{10, "0.10"},
		{99, "0.99"},
		{100, "1.00"},
		{1999, "19.99"},
		{100_000_000, "1000000.00"},
		{-5, "-0.05"},
		{-1999, "-19.99"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Money(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
	}
}

func TestMoneyExactArithmetic(t *testing.T) {
	if got := Money(10).Times(3).String(); got != "0.30" {
		t.Errorf("0.10 × 3 = %q, want %q", got, "0.30")
	}
	// 0.01 + 0.02 + … + 9.99 (cents 1..999) = 999·1000/2 cents = 4995.00.
	var sum Money
	for c := 1; c <= 999; c++ {
		text := fmt.Sprintf("%d.%02d", c/100, c%100)
		m, err := ParseMoney(text)
		if err != nil {
			t.Fatalf("ParseMoney(%q): %v", text, err)
		}
		sum += m
	}
	if got, want := sum.String(), "4995.00"; got != want {
		t.Errorf("sum of 0.01…9.99 = %q, want %q", got, want)
	}
	// A float would drift here: ten thousand times 0.10 is exactly 1000.00.
	var s Money
	for range 10000 {
		s += Money(10)
	}
	if got, want := s.String(), "1000.00"; got != want {
		t.Errorf("10000 × 0.10 summed = %q, want %q", got, want)
	}
}

func TestMoneyJSON(t *testing.T) {
	for _, m := range []Money{0, 1, 10, 1999, 100_000_000} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(%d): %v", m, err)
		}
		if want := `"` + m.String() + `"`; string(b) != want {
			t.Errorf("Marshal(%d) = %s, want %s", m, b, want)
		}
		var back Money
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if back != m {
			t.Errorf("round trip of %d gave %d", m, back)
		}
	}
	// A struct field, as in an item.
	b, _ := json.Marshal(Item{Name: "x", Quantity: 3, UnitPrice: 10, LineTotal: 30})
	var it map[string]any
	if err := json.Unmarshal(b, &it); err != nil {
		t.Fatal(err)
	}
	if it["unit_price"] != "0.10" || it["line_total"] != "0.30" {
		t.Errorf("item JSON unit_price=%v line_total=%v, want strings \"0.10\" and \"0.30\"", it["unit_price"], it["line_total"])
	}
	// A number literal is read as text, never through a float.
	var m Money
	if err := json.Unmarshal([]byte(`19.99`), &m); err != nil || m != 1999 {
		t.Errorf("Unmarshal(19.99) = %d, %v; want 1999, nil", m, err)
	}
	for _, bad := range []string{`"1.234"`, `"-1"`, `1e3`, `"abc"`, `true`, `"1,00"`} {
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("Unmarshal(%s): got no error, want one", bad)
		}
	}
}
