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
