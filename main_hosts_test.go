package main

import (
	"context"
	"io"
	"orders/testutil"
	"slices"
	"strings"
	"testing"
)

// TestHostsAndProxiesFlags: -hosts / ALLOWED_HOSTS and -trusted-proxies /
// TRUSTED_PROXIES are read like every flag (the flag wins), the -addr host
// is a name the server answers to, the running program answers 421 to any
// other name (DNS rebinding), and an entry that could never
// match stops the start instead of being ignored.
func TestHostsAndProxiesFlags(t *testing.T) {
	env := map[string]string{"ALLOWED_HOSTS": "a.example, b.example", "TRUSTED_PROXIES": "10.0.0.1,10.1.0.0/16"}
	c, err := parseConfig([]string{"-addr", "orders.internal:3000", "-hosts", "c.example,,"}, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c.example", "orders.internal"}; !slices.Equal(c.hosts, want) {
		t.Errorf("hosts = %q, want %q (the -hosts flag over ALLOWED_HOSTS, and the -addr name)", c.hosts, want)
	}
	if want := []string{"10.0.0.1", "10.1.0.0/16"}; !slices.Equal(c.trustedProxies, want) {
		t.Errorf("trusted proxies = %q, want %q from TRUSTED_PROXIES", c.trustedProxies, want)
	}

	base, stop := startRun(t, "-data", "", "-hosts", "orders.test")
	defer stop()
	for host, want := range map[string]int{"orders.test": 200, "ORDERS.TEST": 200, "localhost": 200, "r.evil.test": 421} {
		if got := testutil.Over(base).Get(t, "/orders", testutil.HJSON.With(testutil.H{"Host": host})).Status; got != want {
			t.Errorf("GET /orders with Host %s: %d, want %d", host, got, want)
		}
	}

	for _, args := range [][]string{{"-trusted-proxies", "proxy.internal"}, {"-hosts", "orders.test:443"}} {
		err := run(context.Background(), append([]string{"-addr", "127.0.0.1:0", "-data", ""}, args...),
			envOf(nil), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), strings.Split(args[1], ":")[0]) {
			t.Errorf("run %q: error %v, want one naming the entry", args, err)
		}
	}
}
