package store

import "time"

// IdempotencyTTL is how long an Idempotency-Key is remembered: a retry with
// the same key within it gets the first request's answer.
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether k is 1 to 255 visible ASCII characters.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
