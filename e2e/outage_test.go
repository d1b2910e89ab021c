package e2e

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orders/testutil"
)

// probe is one request the outage test repeats in every phase.
type probe struct {
	name, method, path, ctype string
	body                      func() []byte
	h                         testutil.H
	json                      bool // the representation asked for
	ok                        int  // its status while Redis answers
}

func outageProbes(id string) []probe {
	none := func() []byte { return nil }
	create := func() []byte { return jsonOf(map[string]any{"customer": "Outage"}) }
	return []probe{
		{"list JSON", http.MethodGet, "/orders", "", none, testutil.HJSON, true, 200},
		{"list page", http.MethodGet, "/orders", "", none, testutil.HPage, false, 200},
		{"list fragment", http.MethodGet, "/orders?q=out", "", none, testutil.HHX.With(testutil.H{"HX-Target": "div#order-results"}), false, 200},
		{"inquiry JSON", http.MethodGet, "/orders/inquiry", "", none, testutil.HJSON, true, 200},
		{"order JSON", http.MethodGet, "/orders/" + id, "", none, testutil.HJSON, true, 200},
		{"order page", http.MethodGet, "/orders/" + id, "", none, testutil.HPage, false, 200},
		{"create JSON", http.MethodPost, "/orders", "application/json", create, testutil.HJSON, true, 201},
		{"create form", http.MethodPost, "/orders", "application/x-www-form-urlencoded",
			func() []byte { return []byte(url.Values{"customer": {"Outage form"}}.Encode()) }, testutil.HPage, false, 303},
		{"update JSON", http.MethodPut, "/orders/" + id, "application/json",
			func() []byte { return jsonOf(map[string]any{"notes": "outage"}) }, testutil.HJSON, true, 200},
	}
}

// outageRun sends every probe, all at once; in an outage each must answer
// 503 with Retry-After within two seconds, in the representation asked for.
// It returns the slowest answer.
func outageRun(t *testing.T, app *appServer, phase string, probes []probe, down bool) time.Duration {
	t.Helper()
	var (
		mu    sync.Mutex
		worst time.Duration
		wg    sync.WaitGroup
	)
	for _, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := call(app.base, p.method, p.path, p.ctype, p.body(), p.h)
			if err != nil {
				t.Errorf("%s: %s (%s %s): %v, want an answer", phase, p.name, p.method, p.path, err)
				return
			}
			mu.Lock()
			worst = max(worst, r.Took)
			mu.Unlock()
			if !down {
				if r.Status != p.ok {
					t.Errorf("%s: %s: got %d, want %d; body %s", phase, p.name, r.Status, p.ok, testutil.Snippet(r.Body))
				}
				return
			}
			checkUnavailable(t, phase+": "+p.name, r, p.json)
		}()
	}
	wg.Wait()
	for _, c := range []struct {
		path string
		want int
	}{{"/healthz", 200}, {"/readyz", map[bool]int{true: 503, false: 200}[down]}} {
		r, err := call(app.base, http.MethodGet, c.path, "", nil, nil)
		if err != nil {
			t.Errorf("%s: GET %s: %v", phase, c.path, err)
			continue
		}
		worst = max(worst, r.Took)
		if r.Status != c.want {
			t.Errorf("%s: GET %s: got %d, want %d; body %s", phase, c.path, r.Status, c.want, testutil.Snippet(r.Body))
		}
		if r.Took > 2*time.Second {
			t.Errorf("%s: GET %s took %v, want under 2s", phase, c.path, r.Took)
		}
	}
	if !app.running() {
		t.Fatalf("%s: the app exited (%v), want it to keep running:\n%s", phase, app.err, tail(app.out.String(), 30))
	}
	return worst
}

func checkUnavailable(t *testing.T, what string, r *testutil.Resp, wantJSON bool) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("%s: got %d, want 503; body %s", what, r.Status, testutil.Snippet(r.Body))
		return
	}
	if r.Took > 2*time.Second {
		t.Errorf("%s: 503 after %v, want within 2s", what, r.Took)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", what)
	}
	ct := r.Header.Get("Content-Type")
	if wantJSON {
		var e struct {
			Error string `json:"error"`
		}
		if !strings.HasPrefix(ct, "application/json") || r.Decode(&e) != nil || e.Error == "" {
			t.Errorf("%s: got Content-Type %q body %s, want JSON with an \"error\"", what, ct, testutil.Snippet(r.Body))
		}
	} else if !strings.HasPrefix(ct, "text/html") || !strings.Contains(r.Body, `id="error"`) {
		t.Errorf("%s: got Content-Type %q body %s, want the HTML error", what, ct, testutil.Snippet(r.Body))
	}
	for _, leak := range []string{"dial tcp", "i/o timeout", "127.0.0.1:", "connection refused", "redis:"} {
		if strings.Contains(r.Body, leak) {
			t.Errorf("%s: the body shows internals (%q): %s", what, leak, testutil.Snippet(r.Body))
		}
	}
}

// burst sends n list requests at once and checks each is a quick 503 (or
// 200 when up); it returns the slowest.
func burst(t *testing.T, app *appServer, phase string, n int, down bool) time.Duration {
	t.Helper()
	var (
		mu    sync.Mutex
		worst time.Duration
		wg    sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := call(app.base, http.MethodGet, "/orders", "", nil, testutil.HJSON)
			if err != nil {
				t.Errorf("%s: burst request %d: %v", phase, i, err)
				return
			}
			mu.Lock()
			worst = max(worst, r.Took)
			mu.Unlock()
			if down {
				checkUnavailable(t, phase+": burst", r, true)
			} else if r.Status != 200 {
				t.Errorf("%s: burst request %d: got %d, want 200", phase, i, r.Status)
			}
		}()
	}
	wg.Wait()
	return worst
}

// TestRedisOutage: a stopped Redis and a killed one each give quick 503s in
// the representation asked for, and the app recovers by itself.
func TestRedisOutage(t *testing.T) {
	testutil.Long(t)
	rs := startRedis(t, 0)
	app := startApp(t, rs.url())
	var o orderJSON
	mustCall(t, app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Outage"}), testutil.HJSON).
		WantStatus(t, 201).JSON(t, &o)
	probes := outageProbes(strconv.FormatInt(o.ID, 10))
	outageRun(t, app, "before", probes, false)

	var worst time.Duration
	t.Run("stopped", func(t *testing.T) {
		rs.signal(t, syscall.SIGSTOP)
		stopped := true
		defer func() {
			if stopped {
				_ = rs.cmd.Process.Signal(syscall.SIGCONT)
			}
		}()
		w1 := outageRun(t, app, "SIGSTOP", probes, true)
		w2 := burst(t, app, "SIGSTOP", 30, true)
		worst = max(worst, w1, w2)
		t.Logf("Redis stopped: slowest 503 %v for the probes, %v in a burst of 30", w1.Round(time.Millisecond), w2.Round(time.Millisecond))

		rs.signal(t, syscall.SIGCONT)
		stopped = false
		start := time.Now()
		w3 := outageRun(t, app, "after SIGCONT", probes, false)
		w4 := burst(t, app, "after SIGCONT", 30, false)
		t.Logf("Redis continued: every probe answered at once (slowest %v, burst %v, %v in all), no restart of the app",
			w3.Round(time.Millisecond), w4.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	})

	t.Run("killed", func(t *testing.T) {
		rs.signal(t, syscall.SIGKILL)
		<-rs.exited
		w1 := outageRun(t, app, "SIGKILL", probes, true)
		w2 := burst(t, app, "SIGKILL", 30, true)
		worst = max(worst, w1, w2)
		t.Logf("Redis killed: slowest 503 %v for the probes, %v in a burst of 30", w1.Round(time.Millisecond), w2.Round(time.Millisecond))

		rs2 := startRedis(t, rs.port)
		start := time.Now()
		for {
			r, err := call(app.base, http.MethodGet, "/readyz", "", nil, nil)
			if err == nil && r.Status == 200 {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("a new redis-server on port %d has answered for 5s, the app still says %v %v", rs.port, r, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		recovered := time.Since(start)
		// The new Redis is empty. A new order never gets an id handed out
		// before (order 1's): the probes ask for the one it gets.
		var again orderJSON
		mustCall(t, app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Again"}), testutil.HJSON).
			WantStatus(t, 201).JSON(t, &again)
		if again.ID <= o.ID {
			t.Errorf("the first order on the new redis-server got id %d, one handed out before (%d)", again.ID, o.ID)
		}
		outageRun(t, app, "new redis-server", outageProbes(strconv.FormatInt(again.ID, 10)), false)
		t.Logf("a new redis-server on the same port: the app was ready again after %v, by itself", recovered.Round(time.Millisecond))
		_ = rs2
	})

	if !app.running() {
		t.Fatalf("the app exited: %v", app.err)
	}
	t.Logf("worst response time while Redis was down: %v (limit 2s); the app process never exited", worst.Round(time.Millisecond))
}
