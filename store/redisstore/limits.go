package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Limits are throttles counted in Redis, so every instance sharing the
// store's Redis sees the same counts. Each count is a sorted set under the
// store's prefix (docs/data.md): failed sign-ins by the time they failed,
// kept for their window (a sliding window: an address is refused while its
// last window holds the limit's number of failures), and open streams by
// the time their lease ends. Every command touches one key, so the limits
// work on a Redis Cluster as on one Redis.
type Limits struct {
	s          *Store
	rules      store.LimitRules
	onThrottle func(string)
	// Members of the sets are unique across instances: a random tag
	// chosen here and a counter.
	tag string
	seq atomic.Uint64
}

// NewLimits returns the limits kept in s's Redis, under its prefix.
func NewLimits(s *Store, opt store.LimitOptions) *Limits {
	r, d := opt.Rules, store.DefaultLimitRules
	if r.SignInPerAddress <= 0 {
		r.SignInPerAddress = d.SignInPerAddress
	}
	if r.SignInAddressWindow <= 0 {
		r.SignInAddressWindow = d.SignInAddressWindow
	}
	if r.SignInPerAccount <= 0 {
		r.SignInPerAccount = d.SignInPerAccount
	}
	if r.SignInAccountWindow <= 0 {
		r.SignInAccountWindow = d.SignInAccountWindow
	}
	if r.StreamsPerAddress <= 0 {
		r.StreamsPerAddress = d.StreamsPerAddress
	}
	if r.StreamLease <= 0 {
		r.StreamLease = d.StreamLease
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Limits{s: s, rules: r, onThrottle: opt.OnThrottle, tag: hex.EncodeToString(b[:])}
}

// Limits returns the limits kept in s's Redis (NewLimits).
func (s *Store) Limits(opt store.LimitOptions) store.Limiter { return NewLimits(s, opt) }

// Rules returns the figures in force.
func (l *Limits) Rules() store.LimitRules { return l.rules }

func (l *Limits) throttled(limit string, retry time.Duration) *store.Throttled {
	if l.onThrottle != nil {
		l.onThrottle(limit)
	}
	return &store.Throttled{Limit: limit, RetryAfter: max(retry, time.Second)}
}

// member is a unique member for a set, beginning with the time so that
// equal scores still sort by age.
func (l *Limits) member(now time.Time) string {
	return strconv.FormatInt(now.UnixMilli(), 10) + "-" + l.tag + "-" + strconv.FormatUint(l.seq.Add(1), 10)
}

// AddressKey is the part of a limit's key that names a client address:
// the address itself for IPv4, its /64 network for IPv6 (one client
// usually holds a whole /64), anything else as given, cut to 64 bytes.
func AddressKey(addr string) string {
	ip := net.ParseIP(strings.Trim(addr, "[]"))
	switch {
	case ip == nil:
		if len(addr) > 64 {
			addr = addr[:64]
		}
		return addr
	case ip.To4() != nil:
		return ip.To4().String()
	default:
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
}

func (l *Limits) signInAddressKey(addr string) string {
	return l.s.prefix + "lim:signin:addr:" + AddressKey(addr)
}

// signInAccountKey names an account by a hash of its lower-cased name: the
// name is whatever a client sent.
func (l *Limits) signInAccountKey(account string) string {
	h := sha256.Sum256([]byte(strings.ToLower(account)))
	return l.s.prefix + "lim:signin:acct:" + hex.EncodeToString(h[:16])
}

func (l *Limits) streamsKey(addr string) string {
	return l.s.prefix + "lim:streams:" + AddressKey(addr)
}

// window is one sliding window of failures.
type window struct {
	limit, key string
	max        int
	span       time.Duration
}

func (l *Limits) signInWindows(addr, account string) []window {
	w := []window{{store.LimitSignInAddress, l.signInAddressKey(addr), l.rules.SignInPerAddress, l.rules.SignInAddressWindow}}
	if account != "" {
		w = append(w, window{store.LimitSignInAccount, l.signInAccountKey(account), l.rules.SignInPerAccount, l.rules.SignInAccountWindow})
	}
	return w
}

// SignInAllowed says whether a sign-in from addr as account may be
// checked at all. It returns nil when it may; a *Throttled when addr or
// account (when not empty) holds its limit of failures within its window,
// so the attempt is refused whether its password is right or not; an
// EUNAVAILABLE error when Redis does not answer. It only reads: the
// caller checks the password next and reports a failure with SignInFailed.
// Attempts at once can all pass between the two; CountFailedSignIn counts
// a failure only while the limit allows it, in one step.
func (l *Limits) SignInAllowed(ctx context.Context, addr, account string) error {
	now := l.s.now()
	ws := l.signInWindows(addr, account)
	cmds := make([]*redis.ZSliceCmd, len(ws))
	_, err := l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range ws {
			cmds[i] = p.ZRangeByScoreWithScores(ctx, w.key, &redis.ZRangeBy{
				Min: "(" + strconv.FormatInt(now.Add(-w.span).UnixMilli(), 10), Max: "+inf"})
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	var worst *store.Throttled
	for i, w := range ws {
		in := cmds[i].Val() // the failures within the window, oldest first
		if len(in) < w.max {
			continue
		}
		// Refused until the failure that makes the count reach the limit
		// leaves the window.
		at := time.UnixMilli(int64(in[len(in)-w.max].Score)).Add(w.span)
		if t := (&store.Throttled{Limit: w.limit, RetryAfter: at.Sub(now)}); worst == nil || t.RetryAfter > worst.RetryAfter {
			worst = t
		}
	}
	if worst != nil {
		return l.throttled(worst.Limit, worst.RetryAfter.Round(time.Second))
	}
	return nil
}

// countFailureScript counts a failed sign-in in one window (KEYS[1]) unless
// the window holds its limit already, in one step, so that failures at
// once are counted one after the other. It drops the failures older than
// the window, then either refuses, returning the time (ms) of the failure
// whose leaving the window lets attempts through again, or counts this
// one and returns "". ARGV: the window's start (ms; failures at or before
// it are gone), now (ms), the limit, the member, the window (ms).
var countFailureScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
local max = tonumber(ARGV[3])
if n >= max then
  return redis.call('ZRANGE', KEYS[1], n - max, n - max, 'WITHSCORES')[2]
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -max - 1)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return ''
`)

// CountFailedSignIn counts a failed sign-in from addr as account (when not
// empty), unless addr or account holds its limit of failures within its
// window already: then it counts nothing and returns a *Throttled, and the
// caller answers as it answers any attempt SignInAllowed refuses. It
// returns an EUNAVAILABLE error when Redis does not answer. Each window is
// read and counted in one step, so that however many failures arrive at
// once (all of them let through by SignInAllowed before any was counted),
// no more than a window's limit are ever counted and answered as failures;
// a failure refused by one window is not counted in the other.
func (l *Limits) CountFailedSignIn(ctx context.Context, addr, account string) error {
	now := l.s.now()
	member := l.member(now)
	ws := l.signInWindows(addr, account)
	cmds := make([]*redis.Cmd, len(ws))
	_, err := l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range ws {
			cmds[i] = countFailureScript.Eval(ctx, p, []string{w.key},
				now.Add(-w.span).UnixMilli(), now.UnixMilli(), w.max, member, w.span.Milliseconds())
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	var worst *store.Throttled
	var counted []string
	for i, w := range ws {
		at, err := cmds[i].Text()
		if err != nil {
			return unavailable(err)
		}
		if at == "" {
			counted = append(counted, w.key)
			continue
		}
		ms, err := strconv.ParseFloat(at, 64)
		if err != nil {
			return unavailable(fmt.Errorf("a sign-in window answered %q", at))
		}
		retry := time.UnixMilli(int64(ms)).Add(w.span).Sub(now)
		if worst == nil || retry > worst.RetryAfter {
			worst = &store.Throttled{Limit: w.limit, RetryAfter: retry}
		}
	}
	if worst == nil {
		return nil
	}
	if len(counted) > 0 {
		_, err := l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, key := range counted {
				p.ZRem(ctx, key, member)
			}
			return nil
		})
		if err != nil {
			return unavailable(err)
		}
	}
	return l.throttled(worst.Limit, worst.RetryAfter.Round(time.Second))
}

// SignInFailed counts a failed sign-in from addr as account (when not
// empty). Each window keeps only its newest failures up to its limit (that
// is all a refusal needs) and expires with its window.
func (l *Limits) SignInFailed(ctx context.Context, addr, account string) error {
	now := l.s.now()
	member := l.member(now)
	_, err := l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, w := range l.signInWindows(addr, account) {
			p.ZRemRangeByScore(ctx, w.key, "-inf", strconv.FormatInt(now.Add(-w.span).UnixMilli(), 10))
			p.ZAdd(ctx, w.key, redis.Z{Score: float64(now.UnixMilli()), Member: member})
			p.ZRemRangeByRank(ctx, w.key, 0, int64(-w.max-1))
			p.PExpire(ctx, w.key, w.span)
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// openStreamScript takes a stream slot in KEYS[1] unless the address holds
// them all. ARGV: now (ms), the lease's end (ms), the most slots, the
// member, the lease (ms). It returns 1, or 0 when refused. Slots whose
// lease ended (an instance that died holding them) are dropped first.
var openStreamScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)

// streamRetry is the Retry-After of a stream refused: slots free whenever
// streams end, so a short wait is as good as any.
const streamRetry = 5 * time.Second

// StreamSlot is one open stream's place in its address's count.
type StreamSlot struct {
	l         *Limits
	key, name string
	closed    atomic.Bool
}

// OpenStream takes one of addr's stream slots. It returns a *Throttled
// when addr holds StreamsPerAddress open streams already, and an
// EUNAVAILABLE error when Redis does not answer. The caller renews the
// slot (Renew) every RenewEvery while the stream lasts and closes it when
// the stream ends.
func (l *Limits) OpenStream(ctx context.Context, addr string) (store.StreamSlot, error) {
	now := l.s.now()
	slot := &StreamSlot{l: l, key: l.streamsKey(addr), name: l.member(now)}
	ok, err := openStreamScript.Run(ctx, l.s.rdb, []string{slot.key},
		now.UnixMilli(), now.Add(l.rules.StreamLease).UnixMilli(), l.rules.StreamsPerAddress,
		slot.name, l.rules.StreamLease.Milliseconds()).Int()
	if err != nil {
		return nil, unavailable(err)
	}
	if ok != 1 {
		return nil, l.throttled(store.LimitStreamsAddress, streamRetry)
	}
	return slot, nil
}

// RenewEvery is how often an open stream renews its slot.
func (l *Limits) RenewEvery() time.Duration { return l.rules.StreamLease / 3 }

// Renew extends the slot's lease. A slot its lease let go of (Redis was
// unreachable for a whole lease) is not taken again: the stream goes on
// uncounted rather than past the limit.
func (s *StreamSlot) Renew(ctx context.Context) error {
	if s.closed.Load() {
		return nil
	}
	now := s.l.s.now()
	_, err := s.l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAddXX(ctx, s.key, redis.Z{Score: float64(now.Add(s.l.rules.StreamLease).UnixMilli()), Member: s.name})
		p.PExpire(ctx, s.key, s.l.rules.StreamLease)
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Close frees the slot; closing it again does nothing. When Redis does
// not answer, the slot is freed when its lease ends.
func (s *StreamSlot) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.l.s.rdb.ZRem(ctx, s.key, s.name).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}
