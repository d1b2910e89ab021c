package routes

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxConnsPerIP is the most connections one client address may hold
// open at once unless configured otherwise.
const DefaultMaxConnsPerIP = 128

// ListenerOptions are the connection caps a Listener enforces.
type ListenerOptions struct {
	// MaxConns is the most connections open at once; 0 means no cap.
	MaxConns int
	// MaxConnsPerIP is the most connections open at once from one client
	// address; 0 means no cap. An IPv6 client is counted by its /64
	// network, as the limits count it: one client usually holds a whole
	// /64, and could otherwise open as many connections as it has
	// addresses.
	MaxConnsPerIP int
	// TrustedProxies (IP addresses or CIDR ranges) are exempt from the
	// per-address cap: every client of a proxy arrives from its address.
	TrustedProxies []string
	// Logger hears when the accept loop runs out of file descriptors and
	// when it recovers; slog.Default() when nil.
	Logger *slog.Logger
}

// Listener is a net.Listener that caps the connections it hands out, in
// total and per client address, and that never gives up accepting. A
// connection past a cap is closed at once, before any byte of it is read:
// nothing is written to it, since a client that holds too many connections
// is not listening for an explanation and writing could block the accept
// loop. When accepting fails for want of file descriptors (or any other
// reason but the listener being closed), Accept waits and tries again,
// 5 ms doubling up to 1 s, as net/http does, instead of returning the
// error: fasthttp ends its Serve on any Accept error that is not a timeout,
// and one client's idle connections would otherwise stop the process.
type Listener struct {
	net.Listener
	max, perIP int
	proxies    []netip.Prefix
	log        *slog.Logger

	mu     sync.Mutex
	byAddr map[netip.Prefix]int

	open                        atomic.Int64
	refusedTotal, refusedPerIP  atomic.Uint64
	acceptFailures, fdShortages atomic.Uint64

	closed    chan struct{}
	closeOnce sync.Once
}

// NewListener wraps ln with the caps in o.
func NewListener(ln net.Listener, o ListenerOptions) (*Listener, error) {
	if o.MaxConns < 0 || o.MaxConnsPerIP < 0 {
		return nil, errors.New("connection caps must not be negative")
	}
	l := &Listener{Listener: ln, max: o.MaxConns, perIP: o.MaxConnsPerIP, log: o.Logger,
		byAddr: map[netip.Prefix]int{}, closed: make(chan struct{})}
	if l.log == nil {
		l.log = slog.Default()
	}
	for _, p := range o.TrustedProxies {
		p = strings.TrimSpace(p)
		if pre, err := netip.ParsePrefix(p); err == nil {
			l.proxies = append(l.proxies, pre.Masked())
		} else if a, err := netip.ParseAddr(p); err == nil {
			a = a.Unmap()
			l.proxies = append(l.proxies, netip.PrefixFrom(a, a.BitLen()))
		} else {
			return nil, fmt.Errorf("trusted proxy %q: give an IP address or a CIDR range, like 10.0.0.0/8", p)
		}
	}
	return l, nil
}

// Accept returns the next connection within the caps. It returns an error
// only once the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			select {
			case <-l.closed:
				return nil, net.ErrClosed
			default:
			}
			delay = l.backOff(err, delay)
			select {
			case <-l.closed:
				return nil, net.ErrClosed
			case <-time.After(delay):
			}
			continue
		}
		if delay > 0 {
			l.log.Info("accepting connections again", "open", l.open.Load())
			delay = 0
		}
		if lc, ok := l.admit(c); ok {
			return lc, nil
		}
		_ = c.Close()
	}
}

// backOff counts a failed accept, logs the first of a run of them, and
// returns how long to wait before the next try.
func (l *Listener) backOff(err error, delay time.Duration) time.Duration {
	l.acceptFailures.Add(1)
	short := errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
	if short {
		l.fdShortages.Add(1)
	}
	if delay == 0 {
		if short {
			l.log.Error("out of file descriptors: waiting before accepting more connections; lower -max-conns or raise the open-file limit",
				"err", err, "open", l.open.Load())
		} else {
			l.log.Error("accepting a connection failed; trying again", "err", err)
		}
		return 5 * time.Millisecond
	}
	return min(2*delay, time.Second)
}

// admit counts c in if the caps allow it.
func (l *Listener) admit(c net.Conn) (net.Conn, bool) {
	if n := l.open.Add(1); l.max > 0 && n > int64(l.max) {
		l.open.Add(-1)
		l.refusedTotal.Add(1)
		return nil, false
	}
	addr := remoteAddr(c)
	counted := l.perIP > 0 && addr.IsValid() && !l.exempt(addr)
	var client netip.Prefix
	if counted {
		client = clientNetwork(addr)
		l.mu.Lock()
		if l.byAddr[client] >= l.perIP {
			l.mu.Unlock()
			l.open.Add(-1)
			l.refusedPerIP.Add(1)
			return nil, false
		}
		l.byAddr[client]++
		l.mu.Unlock()
	}
	lc := &limitedConn{Conn: c, l: l, client: client}
	return lc, true
}

func (l *Listener) exempt(a netip.Addr) bool {
	for _, p := range l.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientNetwork is what the per-address cap counts a connection from a
// by: an IPv4 address itself, an IPv6 address's /64 network.
func clientNetwork(a netip.Addr) netip.Prefix {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// release gives back what admit took for one connection.
func (l *Listener) release(client netip.Prefix) {
	l.open.Add(-1)
	if !client.IsValid() {
		return
	}
	l.mu.Lock()
	if l.byAddr[client] <= 1 {
		delete(l.byAddr, client)
	} else {
		l.byAddr[client]--
	}
	l.mu.Unlock()
}

// Close closes the listener; an Accept waiting to try again returns at once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Open is the number of connections open now.
func (l *Listener) Open() int64 { return l.open.Load() }

// Refused is the number of connections closed on arrival since the start,
// by reason: "total" (past MaxConns), "per_ip" (past MaxConnsPerIP);
// "emfile" counts the accepts that failed for want of file descriptors
// (the connection waits in the kernel's queue until one is free).
func (l *Listener) Refused(reason string) uint64 {
	switch reason {
	case "total":
		return l.refusedTotal.Load()
	case "per_ip":
		return l.refusedPerIP.Load()
	case "emfile":
		return l.fdShortages.Load()
	}
	return 0
}

// RefusalReasons are the reasons Refused knows.
var RefusalReasons = []string{"total", "per_ip", "emfile"}

// AcceptFailures is the number of failed accepts of any kind since the
// start (every one was retried).
func (l *Listener) AcceptFailures() uint64 { return l.acceptFailures.Load() }

// remoteAddr is the client's IP address of c (IPv4 in its 4-byte form), or
// the zero Addr when c has none (a Unix socket).
func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// A connection closed while its client may still be sending (a body
// refused part way) lingers: its writing side is closed at once, so the
// client sees the answer and its end, and what the client still sends is
// read and thrown away for up to lingerFor or lingerAtMost bytes. Closed
// with unread bytes, a socket answers with a reset, and a client that gets
// the reset before it has read the answer never sees it.
const (
	lingerFor    = 2 * time.Second
	lingerAtMost = 8 << 20
)

// limitedConn gives its place back once, however often it is closed.
type limitedConn struct {
	net.Conn
	l      *Listener
	client netip.Prefix // valid when counted against its client's cap
	once   sync.Once
	linger atomic.Bool
}

// lingerOnClose makes c linger when it is closed (if c is one of a
// Listener's connections).
func lingerOnClose(c net.Conn) {
	if lc, ok := c.(*limitedConn); ok {
		lc.linger.Store(true)
	}
}

func (c *limitedConn) Close() error {
	if c.linger.Swap(false) {
		if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
			go c.drainThenClose()
			return nil
		}
	}
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.client) })
	return err
}

// SetWriteBuffer sets the kernel send buffer of the TCP connection inside
// (the live update streams keep theirs small).
func (c *limitedConn) SetWriteBuffer(n int) error {
	if s, ok := c.Conn.(interface{ SetWriteBuffer(int) error }); ok {
		return s.SetWriteBuffer(n)
	}
	return errors.ErrUnsupported
}

func (c *limitedConn) drainThenClose() {
	_ = c.Conn.SetReadDeadline(time.Now().Add(lingerFor))
	_, _ = io.CopyN(io.Discard, c.Conn, lingerAtMost)
	_ = c.Close()
}
