package store

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseMoney: whatever the text, ParseMoney never panics, accepts only
// plain decimals with at most two places, and what it accepts prints back
// as the same amount.
func FuzzParseMoney(f *testing.F) {
	for _, s := range []string{"0", "0.1", "19.99", "1000000.00", "007.50", "", ".5", "1.", "1.234", "-1", "1e3", "١٢", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMoney(s)
		if err != nil {
			return
		}
		if m < 0 || m > 999_999_999 {
			t.Fatalf("ParseMoney(%q) = %d cents, outside 0 to 9999999.99", s, m)
		}
		whole, frac, _ := strings.Cut(s, ".")
		if len(frac) > 2 || strings.TrimLeft(whole, "0123456789") != "" {
			t.Fatalf("ParseMoney(%q) accepted text that is not a plain decimal", s)
		}
		back, err := ParseMoney(m.String())
		if err != nil || back != m {
			t.Fatalf("ParseMoney(%q) = %s, which reads back as %d, %v", s, m, back, err)
		}
		// The cents are exactly what the digits say: no float involved.
		w, _ := strconv.ParseInt(strings.TrimLeft(whole, "0")+"0", 10, 64)
		if int64(m)/100 != w/10 {
			t.Fatalf("ParseMoney(%q) = %s: whole part differs", s, m)
		}
	})
}

// FuzzParseAmount: in a currency with no decimals (JPY) or three (BHD),
// ParseAmount never panics, accepts no more decimals than the currency
// has, and what it accepts prints back (In) as the same amount.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"350", "350.5", "1.234", "1.2345", "1000000", "1000000.001", "", ".", "0.000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, code := range []string{"JPY", "BHD"} {
			m, err := ParseAmount(s, code)
			if err != nil {
				continue
			}
			d, _ := CurrencyDigits(code)
			if _, frac, _ := strings.Cut(s, "."); len(frac) > d {
				t.Fatalf("ParseAmount(%q, %s) accepted %d decimals", s, code, len(frac))
			}
			if limit := 10 * MaxPrice(code); m < 0 || m >= limit { // at most seven whole digits
				t.Fatalf("ParseAmount(%q, %s) = %d, outside 0 to %s", s, code, m, limit.In(code))
			}
			if back, err := ParseAmount(m.In(code), code); err != nil || back != m {
				t.Fatalf("ParseAmount(%q, %s) = %s, which reads back as %d, %v", s, code, m.In(code), back, err)
			}
		}
	})
}
