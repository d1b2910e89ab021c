package e2e

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"orders/testutil"
)

// TestShutdownDrainsInFlight: SIGTERM while requests are in flight lets them
// finish with a whole answer, refuses nothing half-done, and exits 0. To
// hold requests in flight, Redis is stopped (SIGSTOP): each request then
// waits for its deadline and answers 503.
func TestShutdownDrainsInFlight(t *testing.T) {
	rs := startRedis(t, 0)
	app := startApp(t, rs.url())
	mustCall(t, app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Drain"}), testutil.HJSON).
		WantStatus(t, 201)

	rs.signal(t, syscall.SIGSTOP)
	defer rs.cmd.Process.Signal(syscall.SIGCONT)
	const n = 6
	results := make(chan error, n)
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			r, err := call(app.base, http.MethodGet, "/orders/1", "", nil, testutil.HJSON)
			if err != nil {
				results <- err
				return
			}
			statuses <- r.Status
			results <- nil
		}()
	}
	time.Sleep(300 * time.Millisecond) // the requests are now waiting on Redis
	start := time.Now()
	app.signal(t, syscall.SIGTERM)

	for i := 0; i < n; i++ {
		if err := <-results; err != nil {
			t.Errorf("a request in flight at SIGTERM failed: %v (want a whole answer)", err)
		}
	}
	close(statuses)
	for s := range statuses {
		if s != http.StatusServiceUnavailable {
			t.Errorf("a request in flight at SIGTERM answered %d, want 503 (Redis is stopped)", s)
		}
	}
	select {
	case <-app.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("the app did not exit within 15 s of SIGTERM; its output:\n%s", tail(app.out.String(), 20))
	}
	if app.err != nil {
		t.Errorf("the app exited with %v after SIGTERM, want 0; its output:\n%s", app.err, tail(app.out.String(), 20))
	}
	t.Logf("%d requests in flight at SIGTERM all answered; the app exited 0 after %v", n, time.Since(start).Round(time.Millisecond))
	// New connections are refused once it has stopped.
	if _, err := call(app.base, http.MethodGet, "/healthz", "", nil, nil); err == nil {
		t.Error("the app still answers after it exited")
	}
}
