package testutil

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// Loopback returns the loopback address 127.0.0.n for a test's client to
// dial from, so that one test can be several clients: on Linux all of
// 127.0.0.0/8 is the loopback interface. When this machine cannot dial
// from 127.0.0.n, the test is skipped loudly, or fails with
// ORDERS_REQUIRE_EDGE=1.
func Loopback(t testing.TB, n int) net.IP {
	t.Helper()
	ip := net.IPv4(127, 0, 0, byte(n))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: time.Second}).Dial("tcp", ln.Addr().String())
	if err != nil {
		SkipEdge(t, fmt.Sprintf("connections from %v are not possible here (%v)", ip, err))
	}
	c.Close()
	return ip
}

// SkipEdge skips the test for why, counted on the package's summary line,
// or fails it when ORDERS_REQUIRE_EDGE=1 (CI, where the edge tests' tools
// must be there).
func SkipEdge(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("ORDERS_REQUIRE_EDGE") == "1" {
		t.Fatalf("*** %s, and ORDERS_REQUIRE_EDGE=1 ***", why)
	}
	Skip(t, why)
}
