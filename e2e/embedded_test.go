package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orders/testutil"
)

// TestEmbeddedStoreUnderLoadAndRestart: the default `go run .` store (the
// embedded Redis with its snapshot file) under 8 concurrent writers
// (creates, PUTs, DELETEs racing PUTs) for ORDERS_EMBEDDED_SECONDS (10 s
// by default, 30 in .ci/run) across at least 10 snapshots (every 2 s, the
// default, for 30 s or more; every d/15 for a shorter run): the process
// never crashes (a snapshot must not read maps a write changes), SIGTERM
// exits 0, and after a restart on the same file every
// acknowledged order is there at its last acknowledged version, every
// acknowledged delete is gone, and every list agrees.
func TestEmbeddedStoreUnderLoadAndRestart(t *testing.T) {
	testutil.Long(t)
	d := 10 * time.Second
	if n, err := strconv.Atoi(os.Getenv("ORDERS_EMBEDDED_SECONDS")); err == nil && n > 0 {
		d = time.Duration(n) * time.Second
	}
	every := min(2*time.Second, (d / 15).Round(time.Millisecond))
	data := filepath.Join(t.TempDir(), "orders.json")
	start := func() *appServer { return startEmbedded(t, data, "ORDERS_SNAPSHOT_INTERVAL="+every.String()) }
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
	// About 15 were due; a slow machine may skip a tick or two.
	if snapshots < 10 {
		t.Errorf("%d snapshots (one every %v) were written during %v of writes; want at least 10", snapshots, every, d)
	}
	again := start()
	v := checkInvariants(t, again.base, a)
	// The embedded Redis takes no connection from outside (a random
	// password): its products are checked over HTTP only.
	cat := checkCatalogue(t, again.base, nil, nil, "", a.products)
	reportChaos(t, "embedded", 8, d, a, v, cat, fmt.Sprintf(", %d snapshots (every %v) survived, SIGTERM exit 0 and a restart", snapshots, every))
}

// TestEmbeddedSnapshotFailureIsLoud: the program on the embedded store
// whose snapshot cannot be written (its folder replaced by a file: tests
// run as root, so permissions would not stop it) says so on stderr at
// every attempt, /readyz turns 503 (after two failures in a row) and
// back to 200 once a snapshot is written again, and when the last
// snapshot at SIGTERM fails the process exits non-zero.
func TestEmbeddedSnapshotFailureIsLoud(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	data := filepath.Join(dir, "orders.json")
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(appBinary(t), "-addr", addr, "-data", data)
	cmd.Env = appEnv("ORDERS_SNAPSHOT_INTERVAL=200ms")
	stderr := &testutil.SyncBuffer{}
	app := &proc{name: "app " + addr, cmd: cmd, out: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = app.out, io.MultiWriter(app.out, stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { app.err = cmd.Wait(); close(app.exited) }()
	t.Cleanup(app.kill)
	base := "http://" + addr
	readyz := func() int {
		r, err := call(base, http.MethodGet, "/readyz", "", nil, nil)
		if err != nil {
			return 0
		}
		return r.Status
	}
	// waitReady polls /readyz until it answers want, for up to 5 s.
	waitReady := func(want int, why string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for got := readyz(); got != want; got = readyz() {
			if !app.running() || time.Now().After(deadline) {
				t.Fatalf("%s: /readyz answers %d, want %d; stderr:\n%s", why, got, want, tail(stderr.String(), 10))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	create := func(name string) {
		t.Helper()
		r := mustCall(t, base, http.MethodPost, "/orders", "application/json", []byte(`{"customer":"`+name+`"}`), testutil.HJSON)
		if r.Status != http.StatusCreated {
			t.Fatalf("POST /orders: %d %s, want 201", r.Status, testutil.Snippet(r.Body))
		}
	}
	waitReady(200, "at start")
	create("Ada")

	// The folder becomes a file: no snapshot can be written.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	create("Grace")
	waitReady(503, "snapshots failing")
	if n := strings.Count(stderr.String(), "ERROR: writing the snapshot"); n < 2 {
		t.Errorf("stderr has %d snapshot error lines, want one per failed attempt (at least 2):\n%s", n, stderr.String())
	}
	if !strings.Contains(stderr.String(), data) {
		t.Errorf("stderr does not name the snapshot file %s:\n%s", data, stderr.String())
	}

	// The folder is back: the next snapshot is written, /readyz is 200 again.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	waitReady(200, "the folder back")
	if b, err := os.ReadFile(data); err != nil || !strings.Contains(string(b), "Grace") {
		t.Errorf("the snapshot after the folder came back: %v, want it to hold the order created while it failed:\n%.300s", err, b)
	}

	// It fails again, and stays failing through the last snapshot.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	create("Edsger")
	app.signal(t, syscall.SIGTERM)
	select {
	case <-app.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the app did not exit within 15 s of SIGTERM")
	}
	var exit *exec.ExitError
	if !errors.As(app.err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("exit after SIGTERM with a last snapshot that could not be written: %v, want a non-zero exit code; stderr:\n%s", app.err, tail(stderr.String(), 10))
	}
	if !strings.Contains(stderr.String(), "writing the last snapshot") {
		t.Errorf("stderr does not say the last snapshot failed:\n%s", tail(stderr.String(), 10))
	}
}
