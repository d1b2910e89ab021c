package routes

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"orders/testutil"
)

// serveGreeting serves ln until the test ends: every connection it hands
// out is greeted with "hi\n" and held open until the client closes it.
func serveGreeting(t *testing.T, ln *Listener) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("hi\n"))
				_, _ = c.Read(make([]byte, 1)) // until the client closes
			}()
		}
	}()
}

// dialFrom connects to addr from the source address from and says whether
// the server served the connection (greeted it) or closed it at once.
func dialFrom(t *testing.T, from net.IP, addr string) (net.Conn, bool) {
	t.Helper()
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 2 * time.Second}).Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialling from %v: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	return c, err == nil && line == "hi\n"
}

func TestOneAddressHoldsAtMostItsConnections(t *testing.T) {
	one, two, proxy := testutil.Loopback(t, 2), testutil.Loopback(t, 3), testutil.Loopback(t, 4)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(tcp, ListenerOptions{MaxConnsPerIP: DefaultMaxConnsPerIP, TrustedProxies: []string{proxy.String()}, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	serveGreeting(t, ln)
	addr := tcp.Addr().String()

	var held []net.Conn
	for i := range DefaultMaxConnsPerIP {
		c, served := dialFrom(t, one, addr)
		if !served {
			t.Fatalf("connection %d from %v was closed, want it served (the cap is %d)", i+1, one, DefaultMaxConnsPerIP)
		}
		held = append(held, c)
	}
	if _, served := dialFrom(t, one, addr); served {
		t.Errorf("connection %d from %v was served, want it closed at once", DefaultMaxConnsPerIP+1, one)
	}
	if _, served := dialFrom(t, two, addr); !served {
		t.Errorf("a connection from %v, while %v holds its %d: closed, want it served", two, one, DefaultMaxConnsPerIP)
	}
	for i := range DefaultMaxConnsPerIP + 10 {
		if _, served := dialFrom(t, proxy, addr); !served {
			t.Fatalf("connection %d from the trusted proxy %v was closed, want every one served", i+1, proxy)
		}
	}
	// A connection closed gives its place back.
	held[0].Close()
	var served bool
	for range 100 {
		var c net.Conn
		if c, served = dialFrom(t, one, addr); served {
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond) // the server sees the close
	}
	if !served {
		t.Errorf("after one of its connections closed, a new one from %v: closed, want it served", one)
	}
	t.Logf("open %d; refused per address %d, in all %d", ln.Open(), ln.Refused("per_ip"), ln.Refused("total"))
	if ln.Refused("per_ip") == 0 {
		t.Errorf("refused per address: %d, want at least 1", ln.Refused("per_ip"))
	}
}

func TestNoConnectionPastTheTotalCap(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(tcp, ListenerOptions{MaxConns: 3, MaxConnsPerIP: 100, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	serveGreeting(t, ln)
	addr := tcp.Addr().String()
	lo := net.IPv4(127, 0, 0, 1)
	var held []net.Conn
	for i := range 3 {
		c, served := dialFrom(t, lo, addr)
		if !served {
			t.Fatalf("connection %d of 3: closed, want it served", i+1)
		}
		held = append(held, c)
	}
	if _, served := dialFrom(t, lo, addr); served {
		t.Errorf("a fourth connection with the cap at 3: served, want it closed at once")
	}
	if got := ln.Refused("total"); got != 1 {
		t.Errorf("refused in all: %d, want 1", got)
	}
	if got := ln.Open(); got != 3 {
		t.Errorf("open: %d, want 3", got)
	}
	held[0].Close()
	deadline := time.Now().Add(2 * time.Second)
	for ln.Open() != 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, served := dialFrom(t, lo, addr); !served {
		t.Errorf("after one of the three closed: closed, want it served")
	}
}

// failingListener fails its first n accepts with err, then accepts from
// the listener inside it.
type failingListener struct {
	net.Listener
	n   int
	err error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, l.err
	}
	return l.Listener.Accept()
}

func TestAcceptKeepsGoingWhenFileDescriptorsRunOut(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	ln, err := NewListener(&failingListener{Listener: tcp, n: 5, err: emfile}, ListenerOptions{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	serveGreeting(t, ln)
	if _, served := dialFrom(t, net.IPv4(127, 0, 0, 1), tcp.Addr().String()); !served {
		t.Errorf("after 5 accepts failed with EMFILE: the connection was not served")
	}
	if got := ln.Refused("emfile"); got != 5 {
		t.Errorf("accepts short of file descriptors: %d, want 5", got)
	}

	// A listener closed while Accept waits to try again ends it at once.
	tcp2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln2, err := NewListener(&failingListener{Listener: tcp2, n: 1 << 30, err: emfile}, ListenerOptions{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ln2.Accept()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ln2.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept on a closed listener: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept kept waiting after the listener closed")
	}
}

// TestListenerConnectionsKeepTheirSocketOptions: what the live update
// streams set on their connection (a small send buffer) reaches the
// socket through the Listener's wrapper.
func TestListenerConnectionsKeepTheirSocketOptions(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(tcp, ListenerOptions{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sb, ok := c.(interface{ SetWriteBuffer(int) error })
	if !ok {
		t.Fatalf("a Listener's connection (%T) has no SetWriteBuffer", c)
	}
	if err := sb.SetWriteBuffer(32 << 10); err != nil {
		t.Errorf("SetWriteBuffer: %v", err)
	}
}

// handingOutListener hands out the connections in conns, then says it is
// closed.
type handingOutListener struct {
	net.Listener
	conns chan net.Conn
}

func (l *handingOutListener) Accept() (net.Conn, error) {
	if c, ok := <-l.conns; ok {
		return c, nil
	}
	return nil, net.ErrClosed
}

// connFrom is one end of a pipe that says it comes from addr.
type connFrom struct {
	net.Conn
	addr *net.TCPAddr
}

func (c connFrom) RemoteAddr() net.Addr { return c.addr }

func TestAnIPv6ClientHoldsAtMostItsConnectionsAcrossItsNetwork(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	const perIP = 4
	// One client holds a whole /64: each connection from another address
	// in it, 12 in all, then one from a neighbouring /64.
	var from []string
	for i := 1; i <= 12; i++ {
		from = append(from, fmt.Sprintf("2001:db8:1:2::%x", i*0x1111))
	}
	from = append(from, "2001:db8:1:3::1")
	conns := make(chan net.Conn, len(from))
	for _, a := range from {
		c, other := net.Pipe()
		t.Cleanup(func() { c.Close(); other.Close() })
		conns <- connFrom{Conn: c, addr: &net.TCPAddr{IP: net.ParseIP(a), Port: 40000}}
	}
	close(conns)
	ln, err := NewListener(&handingOutListener{Listener: tcp, conns: conns}, ListenerOptions{MaxConnsPerIP: perIP, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		served = append(served, c.RemoteAddr().String())
	}
	if len(served) != perIP+1 || served[perIP] != "[2001:db8:1:3::1]:40000" {
		t.Errorf("12 connections from 12 addresses of one /64, then one from the next /64, with %d per address: served %v, want the first %d and the last", perIP, served, perIP)
	}
	if got := ln.Refused("per_ip"); got != 12-perIP {
		t.Errorf("refused per address: %d, want %d", got, 12-perIP)
	}
}
