package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Money is an amount in minor units (cents). It is never a float: it is parsed
// from and printed as a decimal string such as "19.99".
type Money int64

// MaxUnitPrice is the largest unit price an item may have: 1,000,000.00.
const MaxUnitPrice Money = 100_000_000

// errMoney is returned by ParseMoney for text that is not a decimal amount.
var errMoney = errors.New("must be an amount like 19.99, with at most two decimals")

// ParseMoney reads a non-negative decimal amount with at most two decimals
// ("3", "3.5", "3.50") into cents, using integer arithmetic only.
func ParseMoney(s string) (Money, error) {
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
	if whole == "" || len(frac) > 2 || !allDigits(whole) || !allDigits(frac) {
		return 0, errMoney
	}
	// Leading zeros are harmless; strip them so the length check bounds the value.
	for len(whole) > 1 && whole[0] == '0' {
		whole = whole[1:]
	}
	if len(whole) > 7 {
		return 0, errors.New("must be at most 1000000.00")
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	var f int64
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
		if len(frac) == 1 {
			f *= 10
		}
	}
	return Money(w*100 + f), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String prints the amount with exactly two decimals: 1234 → "12.34".
func (m Money) String() string {
	neg := m < 0
	if neg {
		m = -m
	}
	cents := int64(m % 100)
	s := strconv.FormatInt(int64(m/100), 10) + "." + string(rune('0'+cents/10)) + string(rune('0'+cents%10))
	if neg {
		return "-" + s
	}
	return s
}

// Times multiplies a unit price by a quantity.
func (m Money) Times(q int64) Money { return m * Money(q) }

// MarshalJSON writes the amount as a decimal string, never a JSON number,
// so no client reads it into a float by accident.
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
