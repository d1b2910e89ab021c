package store

import "context"

// Service is what the application asks of the store: each resource's
// records, the readiness of what holds them, their live event feeds and
// the limits counted beside them. The Redis adapter (store/redisstore)
// implements it.
type Service interface {
	Orders
	Products
	Customers
	Users
	Views
	// Ready reports whether the store answers (what /readyz says).
	Ready(ctx context.Context) error
	// Feed returns the event feed of a resource (OrderEvents, …); nil
	// for an unknown name.
	Feed(name string) Feed
	// Forgetting reports what this instance saw of the store forgetting
	// writes.
	Forgetting() ForgettingState
	// Limits returns the limits on sign-ins and live streams, counted in
	// the store.
	Limits(opt LimitOptions) Limiter
}

// ForgettingState is what an instance saw of Redis forgetting writes.
type ForgettingState struct {
	// Detected counts the times Redis was found behind what this instance
	// had seen (wiped, restored from a backup, or failed over with loss).
	Detected int64
	// Recovering is true from the detection until the indexes are repaired.
	Recovering bool
	// Unsafe is true while the id counters may still hand out an id in use.
	Unsafe bool
}
