package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"orders/testutil"
)

func TestLoopbackAddressesAreOnlyThisMachines(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:3000": true, "127.8.9.10:3000": true, "[::1]:3000": true, "localhost:3000": true, "LOCALHOST.:80": true,
		"0.0.0.0:3000": false, ":3000": false, "[::]:3000": false, "192.168.1.5:3000": false, "orders.internal:3000": false,
		"localhost.evil.example:3000": false, "128.0.0.1:3000": false, "3000": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestRunRefusesAnOpenDeskOnANonLoopbackAddressWithoutOpen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := run(ctx, []string{"-addr", addr, "-data", ""}, envOf(nil), io.Discard, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "-open") || !strings.Contains(err.Error(), "no account exists") {
			t.Errorf("-addr %s without an account or -open: run returned %v, want a refusal that names -open", addr, err)
		}
	}
	// With -open it serves the open desk on every address, and says so on
	// every page.
	base, stop := startRun(t, "-addr", "0.0.0.0:0", "-open", "-data", "")
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	testutil.Over(base).Get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "This desk is open to anyone.")
	createOrder(t, base, "Open")
	// Once an account exists the desk is closed: every address is fine.
	ctx, cancel := context.WithCancel(context.Background())
	w := &logWriter{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "0.0.0.0:0", "-data", ""}, envOf(map[string]string{"ORDERS_ADMIN": "root:a-long-enough-password"}), w, io.Discard)
	}()
	select {
	case addr := <-w.addr:
		testutil.Over("http://"+addr).Get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusUnauthorized)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run with ORDERS_ADMIN on 0.0.0.0: %v", err)
		}
	case err := <-done:
		cancel()
		t.Fatalf("run with ORDERS_ADMIN on 0.0.0.0 (no -open) ended: %v\n%s", err, w.buf.String())
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("run with ORDERS_ADMIN did not serve in 20 s:\n%s", w.buf.String())
	}
}
