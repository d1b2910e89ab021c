package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/currency"
)

// Money is an amount as a whole number of a currency's smallest kept unit:
// hundredths for currencies of up to two decimals (so a JPY amount is kept
// in hundredths too, and always a whole number of yen), thousandths or ten
// thousandths for those with three or four (BHD, CLF). MoneyScale says
// which. It is never a float: it is parsed from and printed as a decimal
// string such as "19.99".
type Money int64

// MaxUnitPrice is the largest unit price an item may have in a currency
// kept in hundredths: 1,000,000.00 (MaxPrice gives it for any currency).
const MaxUnitPrice Money = 100_000_000

// maxWholeDigits bounds the whole part of an amount: at most 1,000,000.
const maxWholeDigits = 7

// inUse holds the currencies some country or territory uses today (legal
// tender, or a unit of account such as CLF), as golang.org/x/text knows
// them: a code that only names a withdrawn currency, a metal or a test code
// is not one an order can use.
var inUse = func() map[currency.Unit]bool {
	m := map[currency.Unit]bool{}
	for it := currency.Query(currency.Date(time.Now()), currency.NonTender); it.Next(); {
		if it.Region().String() != "ZZ" { // metals, funds and test codes belong to no place
			m[it.Unit()] = true
		}
	}
	return m
}()

// CurrencyDigits returns how many decimals (minor units) the ISO 4217
// currency code has (JPY 0, USD 2, BHD 3), and whether the code names a
// currency in use. A code it does not know counts as two decimals, which
// is how amounts in it were always kept.
func CurrencyDigits(code string) (digits int, known bool) {
	if len(code) != CurrencyLen || strings.ToUpper(code) != code {
		return 2, false
	}
	u, err := currency.ParseISO(code)
	if err != nil || !inUse[u] {
		return 2, false
	}
	d, _ := currency.Standard.Rounding(u)
	return d, true
}

// MoneyScale returns the number of decimals Money keeps for a currency: its
// minor units, but never fewer than two.
func MoneyScale(code string) int {
	d, _ := CurrencyDigits(code)
	return max(d, 2)
}

// pow10 returns 10^n for small n.
func pow10(n int) Money {
	p := Money(1)
	for range n {
		p *= 10
	}
	return p
}

// MaxPrice is the largest unit price in a currency: 1,000,000.
func MaxPrice(code string) Money { return 1_000_000 * pow10(MoneyScale(code)) }

// Rescale converts an amount kept with from decimals into one kept with
// to decimals; ok is false when decimals would be lost.
func (m Money) Rescale(from, to int) (Money, bool) {
	switch {
	case to >= from:
		return m * pow10(to-from), true
	case m%pow10(from-to) != 0:
		return 0, false
	default:
		return m / pow10(from-to), true
	}
}

// FitsCurrency reports whether m (kept at the currency's MoneyScale) has no
// more decimals than the currency has.
func (m Money) FitsCurrency(code string) bool {
	d, _ := CurrencyDigits(code)
	return m%pow10(MoneyScale(code)-d) == 0
}

// errMoney is returned by ParseMoney for text that is not a decimal amount.
var errMoney = errors.New("must be an amount like 19.99, with at most two decimals")

// ParseMoney reads a non-negative decimal amount with at most two decimals
// ("3", "3.5", "3.50") into cents, using integer arithmetic only.
func ParseMoney(s string) (Money, error) {
	return parseDecimal(s, 2, 2)
}

var decimalWords = [...]string{"no", "one", "two", "three", "four"}

// ParseAmount reads a non-negative decimal amount in a currency: at most as
// many decimals as the currency has ("350" for JPY, "1.234" for BHD), at
// most 1,000,000, kept at the currency's MoneyScale. Integer arithmetic
// only.
func ParseAmount(s, code string) (Money, error) {
	d, known := CurrencyDigits(code)
	m, err := parseDecimal(s, d, MoneyScale(code))
	if err == nil || d == 2 || err != errMoney {
		return m, err
	}
	example := "350"
	if d > 0 {
		example = "1." + "2345"[:d]
	}
	word := "decimals"
	if d == 1 {
		word = "decimal"
	}
	where := ""
	if known {
		where = " in " + code
	}
	if d == 0 {
		return 0, errors.New("must be a whole amount like " + example + ", with no decimals" + where)
	}
	return 0, errors.New("must be an amount like " + example + ", with at most " + decimalWords[d] + " " + word + where)
}

// parseDecimal reads digits with at most places decimals into an amount
// kept with scale decimals (scale >= places).
func parseDecimal(s string, places, scale int) (Money, error) {
	whole, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			whole, frac = s[:i], s[i+1:]
			if frac == "" {
				return 0, errMoney
			}
			break
		}
	}
	if whole == "" || len(frac) > places || !allDigits(whole) || !allDigits(frac) {
		return 0, errMoney
	}
	// Leading zeros are harmless; strip them so the length check bounds the value.
	for len(whole) > 1 && whole[0] == '0' {
		whole = whole[1:]
	}
	if len(whole) > maxWholeDigits {
		return 0, errors.New("must be at most " + Money(1_000_000*pow10(scale)).format(scale, places, false))
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	var f int64
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
	}
	return Money(w)*pow10(scale) + Money(f)*pow10(scale-len(frac)), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String prints an amount kept in hundredths with exactly two decimals:
// 1234 → "12.34". In prints an amount in its currency.
func (m Money) String() string { return m.format(2, 2, false) }

// In prints the amount, kept at the currency's MoneyScale, as a plain
// decimal with the currency's decimals: "350" (JPY), "12.30" (USD),
// "1.234" (BHD). Digits past the currency's decimals that are not zero
// (an amount stored before the currency's decimals were enforced) are
// shown rather than hidden.
func (m Money) In(code string) string {
	d, _ := CurrencyDigits(code)
	return m.format(MoneyScale(code), d, false)
}

// Grouped is In with the whole part's digits in groups of three:
// "12,345.00". It is for people; programs get In.
func (m Money) Grouped(code string) string {
	d, _ := CurrencyDigits(code)
	return m.format(MoneyScale(code), d, true)
}

// format prints m, kept with scale decimals, with at least places of
// them, and its whole part grouped in threes when group is set.
func (m Money) format(scale, places int, group bool) string {
	neg := m < 0
	if neg {
		m = -m
	}
	unit := pow10(scale)
	whole := strconv.FormatInt(int64(m/unit), 10)
	if group {
		whole = groupDigits(whole)
	}
	frac := strconv.FormatInt(int64(m%unit)+int64(unit), 10)[1:]
	for len(frac) > places && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	s := whole
	if frac != "" {
		s += "." + frac
	}
	if neg {
		return "-" + s
	}
	return s
}

// groupDigits puts a comma between each group of three digits.
func groupDigits(s string) string {
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	head := len(s) % 3
	if head == 0 {
		head = 3
	}
	b.WriteString(s[:head])
	for i := head; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Times multiplies a unit price by a quantity.
func (m Money) Times(q int64) Money { return m * Money(q) }

// MarshalJSON writes the amount as a decimal string, never a JSON number,
// so no client reads it into a float by accident. Records with a currency
// write their amounts with In instead (see their MarshalJSON).
func (m Money) MarshalJSON() ([]byte, error) {
	return []byte(`"` + m.String() + `"`), nil
}

// UnmarshalJSON accepts a decimal string ("19.99") or a plain JSON number
// literal (19.99), read as text so no float is ever involved.
func (m *Money) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	v, err := ParseMoney(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}
