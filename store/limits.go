package store

import (
	"context"
	"fmt"
	"time"
)

// The limits' names: a Throttled error carries one, and OnThrottle is
// called with it (metrics count throttled requests by it).
const (
	LimitSignInAddress  = "signin_address"  // failed sign-ins from one client address
	LimitSignInAccount  = "signin_account"  // failed sign-ins as one account, from anywhere
	LimitStreamsAddress = "streams_address" // live streams open from one client address
)

// LimitRules are the figures of the limits. A zero field takes its value
// from DefaultLimitRules.
type LimitRules struct {
	// SignInPerAddress failed sign-ins from one address within
	// SignInAddressWindow, and every further attempt from it is refused
	// until the oldest of them is that old.
	SignInPerAddress    int
	SignInAddressWindow time.Duration
	// SignInPerAccount failed sign-ins as one account within
	// SignInAccountWindow, from any addresses, and the account's further
	// attempts are refused likewise.
	SignInPerAccount    int
	SignInAccountWindow time.Duration
	// StreamsPerAddress live streams open at once from one address.
	StreamsPerAddress int
	// StreamLease is how long a stream's slot is held without a renewal:
	// an instance that dies holding streams frees their slots within it.
	// A stream renews its slot every third of it.
	StreamLease time.Duration
}

// DefaultLimitRules are the limits a deployment gets.
var DefaultLimitRules = LimitRules{
	SignInPerAddress:    10,
	SignInAddressWindow: 10 * time.Minute,
	SignInPerAccount:    50,
	SignInAccountWindow: time.Hour,
	StreamsPerAddress:   32,
	StreamLease:         time.Minute,
}

// LimitOptions configures Limits.
type LimitOptions struct {
	// Rules are the figures; zero fields take the defaults.
	Rules LimitRules
	// OnThrottle, when set, is called with a limit's name (LimitSignInAddress,
	// …) each time a request is refused by it.
	OnThrottle func(limit string)
}

// Throttled is the error of a request refused by a limit.
type Throttled struct {
	// Limit is the limit's name (LimitSignInAddress, …).
	Limit string
	// RetryAfter is how long until the limit lets a request through again
	// (for a stream: a suggestion, since slots free as streams end).
	RetryAfter time.Duration
}

func (t *Throttled) Error() string {
	return fmt.Sprintf("throttled by %s; retry after %s", t.Limit, t.RetryAfter)
}

// Limiter holds the limits on failed sign-ins and on live streams per
// client address, counted where every instance sees the same counts.
type Limiter interface {
	// SignInAllowed answers a *Throttled when addr or account has failed
	// too often within its window.
	SignInAllowed(ctx context.Context, addr, account string) error
	// CountFailedSignIn counts one failed sign-in from addr as account.
	CountFailedSignIn(ctx context.Context, addr, account string) error
	// OpenStream takes one of addr's live-stream slots, or answers a
	// *Throttled when addr holds all of them.
	OpenStream(ctx context.Context, addr string) (StreamSlot, error)
	// RenewEvery is how often an open stream renews its slot.
	RenewEvery() time.Duration
}

// StreamSlot is one live stream's place in its address's count.
type StreamSlot interface {
	Renew(ctx context.Context) error
	Close(ctx context.Context) error
}
