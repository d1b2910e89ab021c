package redisstore

import (
	"strconv"

	"orders/store"
)

// fMoneyScale is the hash field (of orders and products alike) that says
// how many decimals the record's amounts are kept with. It is absent when
// two, as every record was written before currencies had their own
// decimals: a BHD order written then, in hundredths, reads as thousandths.
const fMoneyScale = "ms"

// appendScale appends the ms field when the currency's amounts are not
// kept in hundredths.
func appendScale(args []any, code string) []any {
	if sc := store.MoneyScale(code); sc != 2 {
		args = append(args, fMoneyScale, sc)
	}
	return args
}

// readScale returns a function that turns an amount as stored in hash h
// into one kept at the currency's scale.
func readScale(h map[string]string, code string) func(store.Money) store.Money {
	from := 2
	if v, err := strconv.Atoi(h[fMoneyScale]); err == nil && v >= 0 && v <= 6 {
		from = v
	}
	to := store.MoneyScale(code)
	return func(m store.Money) store.Money {
		if r, ok := m.Rescale(from, to); ok {
			return r
		}
		return m
	}
}
