package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// limitsFixture is a Limits over its own key space in a target, on a clock
// the test moves, counting the refusals by limit.
type limitsFixture struct {
	l       *redisstore.Limits
	clock   *clock
	mu      sync.Mutex
	refused map[string]int
}

func newLimits(t *testing.T, tg testutil.Target, rules store.LimitRules) *limitsFixture {
	t.Helper()
	f := &limitsFixture{clock: &clock{}, refused: map[string]int{}}
	f.clock.unix.Store(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC).Unix())
	s := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster, Now: f.clock.Now})
	f.l = redisstore.NewLimits(s, store.LimitOptions{Rules: rules, OnThrottle: func(limit string) {
		f.mu.Lock()
		f.refused[limit]++
		f.mu.Unlock()
	}})
	return f
}

// throttledBy returns the limit that refused err's request, or "" (and
// fails the test on any other error).
func throttledBy(t *testing.T, err error) (string, time.Duration) {
	t.Helper()
	var th *store.Throttled
	switch {
	case err == nil:
		return "", 0
	case errors.As(err, &th):
		return th.Limit, th.RetryAfter
	default:
		t.Fatalf("unexpected error: %v", err)
		return "", 0
	}
}

func TestFailedSignInsFromOneAddressRefuseItUntilTheWindowPasses(t *testing.T) {
	ctx := context.Background()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := newLimits(t, tg, store.LimitRules{})
			for i := range 10 {
				if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.7", "desk")); lim != "" {
					t.Fatalf("attempt %d refused by %s before 10 failures", i+1, lim)
				}
				if err := f.l.SignInFailed(ctx, "192.0.2.7", "desk"); err != nil {
					t.Fatal(err)
				}
				f.clock.Advance(30 * time.Second) // 10 failures within 5 minutes
			}
			lim, retry := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.7", "desk"))
			if lim != store.LimitSignInAddress {
				t.Fatalf("11th attempt after 10 failures: refused by %q, want %q", lim, store.LimitSignInAddress)
			}
			// The first failure leaves the window 10 minutes after it: 5
			// minutes from now.
			if retry != 5*time.Minute {
				t.Errorf("Retry-After %s, want 5m0s (until the oldest failure is 10 minutes old)", retry)
			}
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.8", "other")); lim != "" {
				t.Errorf("another address, another account: refused by %s", lim)
			}
			// Any account from that address is refused.
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.7", "someone-else")); lim != store.LimitSignInAddress {
				t.Errorf("another account from the throttled address: refused by %q, want %q", lim, store.LimitSignInAddress)
			}
			f.clock.Advance(5*time.Minute - time.Second)
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.7", "desk")); lim == "" {
				t.Errorf("a second before the window passes: let through")
			}
			f.clock.Advance(time.Second)
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.7", "desk")); lim != "" {
				t.Errorf("once the oldest failure left the window: refused by %s", lim)
			}
			// One failure left the window, nine are in it: one more
			// failure and the address is refused again.
			if err := f.l.SignInFailed(ctx, "192.0.2.7", "desk"); err != nil {
				t.Fatal(err)
			}
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.7", "desk")); lim != store.LimitSignInAddress {
				t.Errorf("10 failures in the last 10 minutes again: refused by %q, want %q", lim, store.LimitSignInAddress)
			}
			if f.refused[store.LimitSignInAddress] != 4 {
				t.Errorf("OnThrottle saw %d refusals by %s, want 4", f.refused[store.LimitSignInAddress], store.LimitSignInAddress)
			}
		})
	}
}

func TestFailedSignInsAsOneAccountFromManyAddressesRefuseTheAccount(t *testing.T) {
	ctx := context.Background()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := newLimits(t, tg, store.LimitRules{})
			for i := range 50 {
				addr := "198.51.100." + strconv.Itoa(i+1)
				if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, addr, "Desk")); lim != "" {
					t.Fatalf("failure %d refused by %s", i+1, lim)
				}
				if err := f.l.SignInFailed(ctx, addr, "desk"); err != nil {
					t.Fatal(err)
				}
				f.clock.Advance(time.Minute)
			}
			lim, retry := throttledBy(t, f.l.SignInAllowed(ctx, "203.0.113.1", "desk"))
			if lim != store.LimitSignInAccount {
				t.Fatalf("an address never seen, after 50 failures as the account: refused by %q, want %q", lim, store.LimitSignInAccount)
			}
			if retry != 10*time.Minute {
				t.Errorf("Retry-After %s, want 10m0s (the first failure, 50 minutes ago, leaves the hour)", retry)
			}
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "203.0.113.1", "DESK")); lim != store.LimitSignInAccount {
				t.Errorf("the account's name in capitals: refused by %q, want %q", lim, store.LimitSignInAccount)
			}
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "203.0.113.1", "clerk")); lim != "" {
				t.Errorf("another account from a fresh address: refused by %s", lim)
			}
			f.clock.Advance(10 * time.Minute)
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "203.0.113.1", "desk")); lim != "" {
				t.Errorf("after the oldest failure left the hour: refused by %s", lim)
			}
		})
	}
}

func TestSignInLimitsCountAnIPv6NetworkAsOneAddress(t *testing.T) {
	ctx := context.Background()
	f := newLimits(t, testutil.Miniredis(t), store.LimitRules{SignInPerAddress: 3})
	for i := range 3 {
		if err := f.l.SignInFailed(ctx, "2001:db8:1:2::"+strconv.Itoa(i+1), ""); err != nil {
			t.Fatal(err)
		}
	}
	if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "2001:db8:1:2:ffff::9", "")); lim != store.LimitSignInAddress {
		t.Errorf("an address of the same /64: refused by %q, want %q", lim, store.LimitSignInAddress)
	}
	if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "2001:db8:1:3::1", "")); lim != "" {
		t.Errorf("an address of another /64: refused by %s", lim)
	}
	if got := redisstore.AddressKey("::ffff:192.0.2.1"); got != "192.0.2.1" {
		t.Errorf("AddressKey of an IPv4-mapped address: %q, want 192.0.2.1", got)
	}
}

func TestSignInLimitsFailClosedWhenRedisIsDown(t *testing.T) {
	o := &redis.Options{Addr: "127.0.0.1:1"}
	redisstore.Deadlines(o)
	c := redis.NewClient(o)
	defer c.Close()
	l := redisstore.NewLimits(redisstore.New(c, redisstore.Options{}), store.LimitOptions{})
	err := l.SignInAllowed(context.Background(), "192.0.2.1", "desk")
	if store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("SignInAllowed with Redis down: %v, want an %s error", err, store.EUNAVAILABLE)
	}
}

func TestStreamSlotsPerAddress(t *testing.T) {
	ctx := context.Background()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := newLimits(t, tg, store.LimitRules{StreamsPerAddress: 4, StreamLease: time.Minute})
			// A second instance on the same Redis counts the same slots.
			other := redisstore.NewLimits(redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Now: f.clock.Now}),
				store.LimitOptions{Rules: f.l.Rules()})
			var slots []store.StreamSlot
			for i := range 4 {
				l := f.l
				if i%2 == 1 {
					l = other
				}
				s, err := l.OpenStream(ctx, "192.0.2.7")
				if err != nil {
					t.Fatalf("stream %d: %v", i+1, err)
				}
				slots = append(slots, s)
			}
			for _, l := range []*redisstore.Limits{f.l, other} {
				_, err := l.OpenStream(ctx, "192.0.2.7")
				if lim, _ := throttledBy(t, err); lim != store.LimitStreamsAddress {
					t.Errorf("a 5th stream: refused by %q, want %q", lim, store.LimitStreamsAddress)
				}
			}
			if s, err := f.l.OpenStream(ctx, "192.0.2.8"); err != nil {
				t.Errorf("another address: %v", err)
			} else {
				_ = s.Close(ctx)
			}
			if err := slots[0].Close(ctx); err != nil {
				t.Fatal(err)
			}
			_ = slots[0].Close(ctx) // twice frees nothing more
			s, err := other.OpenStream(ctx, "192.0.2.7")
			if err != nil {
				t.Fatalf("after a stream closed: %v", err)
			}
			slots[0] = s
			if _, err := f.l.OpenStream(ctx, "192.0.2.7"); err == nil {
				t.Fatal("a second Close freed a second slot")
			}
			// Slots renewed hold; slots of an instance that died (never
			// renewed, never closed) free when their lease ends.
			f.clock.Advance(40 * time.Second)
			for _, s := range slots[:2] {
				if err := s.Renew(ctx); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.Advance(30 * time.Second)
			for i := range 2 {
				if _, err := f.l.OpenStream(ctx, "192.0.2.7"); err != nil {
					t.Errorf("stream %d after two leases ended: %v", i+1, err)
				}
			}
			if _, err := f.l.OpenStream(ctx, "192.0.2.7"); err == nil {
				t.Error("the renewed slots were freed too")
			}
			if f.refused[store.LimitStreamsAddress] != 3 {
				t.Errorf("OnThrottle saw %d refusals by %s, want 3", f.refused[store.LimitStreamsAddress], store.LimitStreamsAddress)
			}
		})
	}
}

func TestStreamSlotsHoldTheLimitUnderConcurrentOpens(t *testing.T) {
	ctx := context.Background()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := newLimits(t, tg, store.LimitRules{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			opened := 0
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := f.l.OpenStream(ctx, "192.0.2.9"); err == nil {
						mu.Lock()
						opened++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if opened != 32 {
				t.Errorf("200 streams opened at once from one address: %d opened, want 32", opened)
			}
		})
	}
}

func TestAFailureRefusedByOneLimitIsNotCountedByTheOther(t *testing.T) {
	ctx := context.Background()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := newLimits(t, tg, store.LimitRules{SignInPerAddress: 3, SignInPerAccount: 2})
			for i := range 2 {
				if lim, _ := throttledBy(t, f.l.CountFailedSignIn(ctx, "192.0.2.1", "desk")); lim != "" {
					t.Fatalf("failure %d as desk: refused by %s", i+1, lim)
				}
			}
			// desk is refused now; a person at another address who mistypes
			// desk's password while it is refused is not counted against
			// that address.
			for range 5 {
				if lim, _ := throttledBy(t, f.l.CountFailedSignIn(ctx, "192.0.2.2", "desk")); lim != store.LimitSignInAccount {
					t.Fatalf("desk after 2 failures: refused by %q, want %s", lim, store.LimitSignInAccount)
				}
			}
			if lim, _ := throttledBy(t, f.l.SignInAllowed(ctx, "192.0.2.2", "clerk")); lim != "" {
				t.Errorf("the right password as clerk from 192.0.2.2, whose only attempts were refused: refused by %s", lim)
			}
		})
	}
}
