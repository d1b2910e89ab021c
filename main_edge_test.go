package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"orders/routes"
	"orders/testutil"
)

// TestConnectionCapFlags: -max-conns / MAX_CONNS and -max-conns-per-ip /
// MAX_CONNS_PER_IP are read like every flag, default to "from the
// open-file limit" and 128, and refuse what is not a count.
func TestConnectionCapFlags(t *testing.T) {
	c, err := parseConfig(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.maxConns != 0 || c.maxConnsPerIP != routes.DefaultMaxConnsPerIP {
		t.Errorf("defaults: max conns %d, per address %d; want 0 (from the file limit) and %d", c.maxConns, c.maxConnsPerIP, routes.DefaultMaxConnsPerIP)
	}
	c, err = parseConfig([]string{"-max-conns", "900"}, envOf(map[string]string{"MAX_CONNS": "500", "MAX_CONNS_PER_IP": "16"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.maxConns != 900 || c.maxConnsPerIP != 16 {
		t.Errorf("max conns %d, per address %d; want 900 from the flag, 16 from MAX_CONNS_PER_IP", c.maxConns, c.maxConnsPerIP)
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
	}{
		{nil, map[string]string{"MAX_CONNS": "lots"}},
		{nil, map[string]string{"MAX_CONNS_PER_IP": "-1"}},
		{[]string{"-max-conns-per-ip", "0"}, nil},
		{[]string{"-max-conns", "-5"}, nil},
	} {
		if _, err := parseConfig(bad.args, envOf(bad.env), io.Discard); err == nil {
			t.Errorf("flags %q, variables %v: accepted, want an error", bad.args, bad.env)
		}
	}
}

// TestBodyBudgetFlag: -body-budget / BODY_BUDGET is read like every flag,
// in MiB, defaults to 64, and refuses what is not at least 1 MiB.
func TestBodyBudgetFlag(t *testing.T) {
	c, err := parseConfig(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.bodyBudgetMiB<<20 != routes.DefaultBodyBudget {
		t.Errorf("default body budget %d MiB, want %d MiB", c.bodyBudgetMiB, routes.DefaultBodyBudget>>20)
	}
	for _, ok := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{nil, map[string]string{"BODY_BUDGET": "16"}, 16},
		{[]string{"-body-budget", "256"}, map[string]string{"BODY_BUDGET": "16"}, 256},
	} {
		c, err := parseConfig(ok.args, envOf(ok.env), io.Discard)
		if err != nil || c.bodyBudgetMiB != ok.want {
			t.Errorf("flags %q, variables %v: body budget %d MiB (%v), want %d", ok.args, ok.env, c.bodyBudgetMiB, err, ok.want)
		}
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
	}{
		{nil, map[string]string{"BODY_BUDGET": "64MiB"}},
		{nil, map[string]string{"BODY_BUDGET": "-1"}},
		{[]string{"-body-budget", "0"}, nil},
	} {
		if _, err := parseConfig(bad.args, envOf(bad.env), io.Discard); err == nil {
			t.Errorf("flags %q, variables %v: accepted, want an error", bad.args, bad.env)
		}
	}
}

// TestRenderCacheFlag: -render-cache / RENDER_CACHE is in MiB, 64 by
// default, 0 keeps no fragments (the application is told -1), and what is
// not a whole number of MiB is refused.
func TestRenderCacheFlag(t *testing.T) {
	for _, ok := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{nil, nil, routes.DefaultRenderCache},
		{nil, map[string]string{"RENDER_CACHE": "8"}, 8},
		{[]string{"-render-cache", "0"}, map[string]string{"RENDER_CACHE": "8"}, 0},
	} {
		c, err := parseConfig(ok.args, envOf(ok.env), io.Discard)
		if err != nil || c.renderCacheMiB != ok.want {
			t.Errorf("flags %q, variables %v: render cache %d MiB (%v), want %d", ok.args, ok.env, c.renderCacheMiB, err, ok.want)
		}
	}
	for _, bad := range [][]string{{"-render-cache", "-1"}, {"-render-cache", "64MiB"}} {
		if _, err := parseConfig(bad, envOf(nil), io.Discard); err == nil {
			t.Errorf("flags %q: accepted, want an error", bad)
		}
	}
}

// TestTheFileLimitIsRaisedToTheHardLimit lowers this process's soft limit
// and has raiseFileLimit put it back at the hard limit.
func TestTheFileLimitIsRaisedToTheHardLimit(t *testing.T) {
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		testutil.Skip(t, "no open-file limit here: "+err.Error())
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was) })
	if was.Max < 512 {
		testutil.Skip(t, fmt.Sprintf("the open-file hard limit is %d: too low to lower", was.Max))
	}
	low := syscall.Rlimit{Cur: 256, Max: was.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		testutil.Skip(t, "cannot lower the open-file soft limit: "+err.Error())
	}
	got, err := raiseFileLimit()
	if err != nil || got != was.Max {
		t.Errorf("raiseFileLimit: %d, %v; want the hard limit %d", got, err, was.Max)
	}
	var now syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now)
	if now.Cur != was.Max {
		t.Errorf("soft limit after raiseFileLimit: %d, want %d", now.Cur, was.Max)
	}
}

// TestRunCapsConnectionsPerAddress runs the program with -max-conns-per-ip
// 3: a fourth connection from one address is closed at once, while
// another address is served.
func TestRunCapsConnectionsPerAddress(t *testing.T) {
	// Not 127.0.0.1: startRun's polling may keep a connection from it.
	one, other := testutil.Loopback(t, 3), testutil.Loopback(t, 2)
	from := &net.Dialer{LocalAddr: &net.TCPAddr{IP: one}}
	base, stop := startRun(t, "-data", "", "-max-conns-per-ip", "3")
	defer stop()
	addr := strings.TrimPrefix(base, "http://")
	for i := range 3 {
		c, err := from.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		defer c.Close()
	}
	time.Sleep(100 * time.Millisecond) // the server has accepted them
	c, err := from.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); n > 0 || ok && ne.Timeout() {
		t.Errorf("a fourth connection from %v: %d bytes, %v; want it closed at once", one, n, err)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: other}}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	res, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("from %v while %v holds its 3: %v, want /healthz to answer", other, one, err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("from %v: /healthz %d, want 200", other, res.StatusCode)
	}
}
