package routes

import (
	"bytes"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// proxies are the trusted proxies' addresses and ranges.
type proxies []*net.IPNet

// newProxies parses the list checkNetConfig accepted.
func newProxies(list []string) proxies {
	var out proxies
	for _, p := range list {
		p = strings.TrimSpace(p)
		if _, n, err := net.ParseCIDR(p); err == nil {
			out = append(out, n)
		} else if ip := net.ParseIP(p); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
		}
	}
	return out
}

func (ps proxies) trusted(ip net.IP) bool {
	for _, n := range ps {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the client a request comes from, as the
// limits count it and the logs name it: the connection's peer, unless the
// peer is a trusted proxy; then the nearest address in X-Forwarded-For
// that is not a trusted proxy. Each proxy appends the address it got the
// request from, so only the entries right of the first untrusted one were
// written by proxies; whatever lies left of it the client wrote itself.
// (Fiber's c.IP(), given a ProxyHeader, answers the header whole, or with
// IP validation its leftmost address: what the client wrote.) When every entry is a
// trusted proxy the leftmost is taken; an entry that is no address ends
// the walk at the last good one.
func (ps proxies) clientAddr(c *fiber.Ctx) string {
	peer := c.Context().RemoteIP()
	if len(ps) == 0 || !ps.trusted(peer) {
		return peer.String()
	}
	var entries [][]byte
	c.Request().Header.VisitAll(func(k, v []byte) {
		if bytes.EqualFold(k, []byte(fiber.HeaderXForwardedFor)) {
			entries = append(entries, bytes.Split(v, []byte{','})...)
		}
	})
	addr := peer
	for i := len(entries) - 1; i >= 0; i-- {
		ip := parseForwarded(string(bytes.TrimSpace(entries[i])))
		if ip == nil {
			break
		}
		addr = ip
		if !ps.trusted(ip) {
			break
		}
	}
	return addr.String()
}

// parseForwarded reads one X-Forwarded-For entry: an address, possibly
// with a port ("192.0.2.1:4711", "[2001:db8::1]:443").
func parseForwarded(s string) net.IP {
	if ip := net.ParseIP(s); ip != nil {
		return ip
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		return net.ParseIP(h)
	}
	return net.ParseIP(strings.Trim(s, "[]"))
}

// tooMany is the 429 of a request a limit refused, with Retry-After in
// whole seconds (rounded up).
func tooMany(c *fiber.Ctx, th *store.Throttled) error {
	secs := int64(math.Ceil(th.RetryAfter.Seconds()))
	c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	var msg string
	switch th.Limit {
	case store.LimitSignInAddress:
		msg = "too many failed sign-ins from your address; try again in " + waitText(th.RetryAfter)
	case store.LimitSignInAccount:
		msg = "too many failed sign-ins for this user name; try again in " + waitText(th.RetryAfter)
	case store.LimitStreamsAddress:
		msg = "too many live update streams are open from your address; close a tab or try again in a moment"
	default:
		msg = "too many requests; try again in " + waitText(th.RetryAfter)
	}
	return fiber.NewError(fiber.StatusTooManyRequests, msg)
}

// waitText is a wait in words: "5 minutes", "1 minute", "40 seconds".
func waitText(d time.Duration) string {
	if d > 90*time.Second {
		m := int(math.Ceil(d.Minutes()))
		return strconv.Itoa(m) + " minutes"
	}
	s := max(int(math.Ceil(d.Seconds())), 1)
	if s == 1 {
		return "1 second"
	}
	return strconv.Itoa(s) + " seconds"
}

// asThrottled returns err's *store.Throttled, or nil.
func asThrottled(err error) *store.Throttled {
	var th *store.Throttled
	if errors.As(err, &th) {
		return th
	}
	return nil
}
