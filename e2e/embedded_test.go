package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEmbeddedStoreUnderLoadAndRestart: the default `go run .` store (the
// embedded Redis with its snapshot file) under 8 concurrent writers for
// ORDERS_EMBEDDED_SECONDS (10 s by default, 30 in .ci/run: at least 10
// snapshots, one every 2 s when something changed): the process
// never crashes (it used to within 2–6 s: a concurrent map write in the
// snapshot), SIGTERM exits 0, and after a restart on the same file every
// acknowledged order is there at its last acknowledged version, every
// acknowledged delete is gone, and every list agrees (issue 8, test d).
func TestEmbeddedStoreUnderLoadAndRestart(t *testing.T) {
	d := 10 * time.Second
	if n, err := strconv.Atoi(os.Getenv("ORDERS_EMBEDDED_SECONDS")); err == nil && n > 0 {
		d = time.Duration(n) * time.Second
	}
	data := filepath.Join(t.TempDir(), "orders.json")
	start := func() *appServer {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		cmd := exec.Command(appBinary(t), "-addr", addr, "-data", data)
		cmd.Env = appEnv()
		a := &appServer{proc: startProc(t, "app "+addr, cmd), base: "http://" + addr}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if res, err := quick.Get(a.base + "/healthz"); err == nil {
				res.Body.Close()
				return a
			}
			if !a.running() || time.Now().After(deadline) {
				t.Fatalf("the app did not start; its output:\n%s", tail(a.out.String(), 30))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	app := start()
	snapshots := 0
	stop := make(chan struct{})
	counted := make(chan int)
	go func() {
		var last time.Time
		n := 0
		for {
			select {
			case <-stop:
				counted <- n
				return
			case <-time.After(50 * time.Millisecond):
			}
			if fi, err := os.Stat(data); err == nil && !fi.ModTime().Equal(last) {
				last = fi.ModTime()
				n++
			}
		}
	}()
	a := chaos(t, func() []string { return []string{app.base} }, 8, d)
	close(stop)
	snapshots = <-counted
	if !app.running() {
		t.Fatalf("the app died under load (%v); its output:\n%s", app.err, tail(app.out.String(), 40))
	}
	app.signal(t, syscall.SIGTERM)
	select {
	case <-app.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the app did not exit within 15 s of SIGTERM")
	}
	if app.err != nil {
		t.Errorf("exit after SIGTERM: %v, want 0; output:\n%s", app.err, tail(app.out.String(), 20))
	}
	if out := app.out.String(); strings.Contains(out, "fatal error") || strings.Contains(out, "panic:") || strings.Contains(out, "ERROR") {
		t.Errorf("the app's output shows a crash or an error:\n%s", tail(out, 40))
	}
	// A snapshot every 2 s; allow for the first tick and a slow machine
	// (30 s must give at least 10).
	want := max(int(d/(2*time.Second))-4, 1)
	if snapshots < want {
		t.Errorf("%d snapshots were written during %v of writes; want at least %d", snapshots, d, want)
	}
	again := start()
	v := checkInvariants(t, again.base, a)
	reportChaos(t, "embedded", 8, d, a, v, fmt.Sprintf(", %d snapshots, SIGTERM and a restart", snapshots))
}
