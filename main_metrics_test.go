package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// observedRun is the real program started with a metrics listener.
type observedRun struct {
	base, metrics string // http://host:port of the application and of its metrics
	log           *testutil.SyncBuffer
	stop          func() error // cancels run and returns its error
}

// urlRE finds the addresses run logs as it starts, in either log format.
var urlRE = regexp.MustCompile(`"?url"?[=:]"?http://([^/\s"]+)/(orders|metrics)`)

// startObserved runs the program on free ports with args and the
// variables env, and waits until it serves the application and, when args
// ask for it, the metrics.
func startObserved(t *testing.T, env map[string]string, args ...string) *observedRun {
	t.Helper()
	r := &observedRun{log: &testutil.SyncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), envOf(env), r.log, io.Discard)
	}()
	var runErr error
	stopped := false
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { _ = r.stop() })
	wantMetrics := strings.Contains(strings.Join(args, " "), "-metrics-addr")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range urlRE.FindAllStringSubmatch(r.log.String(), -1) {
			if m[2] == "orders" {
				r.base = "http://" + m[1]
			} else {
				r.metrics = "http://" + m[1]
			}
		}
		if r.base != "" && (r.metrics != "" || !wantMetrics) {
			return r
		}
		select {
		case err := <-done:
			cancel()
			stopped, runErr = true, err
			t.Fatalf("run ended before serving: %v\n%s", err, r.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("run did not start serving in 10 s:\n%s", r.log.String())
	return nil
}

// scrapeRun reads the metrics listener: every series with its value.
func scrapeRun(t *testing.T, r *observedRun) map[string]float64 {
	t.Helper()
	resp, err := http.Get(r.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics answered %d: %s", r.metrics, resp.StatusCode, b)
	}
	return testutil.ParseMetrics(t, string(b))
}

func hasSeries(all map[string]float64, name string) bool {
	for s := range all {
		if s == name || strings.HasPrefix(s, name+"{") {
			return true
		}
	}
	return false
}

// TestMetricsListenerServesApartFromTheApplication: with -metrics-addr the
// program serves Prometheus's metrics on that address only (the
// application's port answers 404 at /metrics), and they show the requests
// by route pattern, the Go runtime and the process, the Redis pool, the
// live streams open and the embedded store's snapshot; scraping counts no
// request.
func TestMetricsListenerServesApartFromTheApplication(t *testing.T) {
	data := filepath.Join(t.TempDir(), "orders.json")
	r := startObserved(t, map[string]string{"ORDERS_SNAPSHOT_INTERVAL": "50ms", "ORDERS_EVENT_HEARTBEAT": "50ms"},
		"-data", data, "-metrics-addr", "127.0.0.1:0")
	if got := getStatus(t, r.base, "/metrics"); got != http.StatusNotFound {
		t.Errorf("the application's port answered %d at /metrics, want 404", got)
	}
	id := createOrder(t, r.base, "Ada Lovelace")
	for _, p := range []string{"/orders", fmt.Sprintf("/orders/%d", id), "/orders/424242", "/no/such/page"} {
		getStatus(t, r.base, p)
	}
	stream := testutil.OpenSSE(t, r.base, "/orders/events", nil)
	stream.WaitOpen(t)

	// The snapshot is written within a few intervals of the create.
	var all map[string]float64
	deadline := time.Now().Add(10 * time.Second)
	for all = scrapeRun(t, r); !hasSeries(all, "orders_embedded_snapshot_bytes") && time.Now().Before(deadline); all = scrapeRun(t, r) {
		time.Sleep(20 * time.Millisecond)
	}
	want := map[string]float64{
		`orders_http_requests_total{method="POST",route="/orders",status="201"}`:         1,
		`orders_http_requests_total{method="GET",route="/orders",status="200"}`:          1,
		`orders_http_requests_total{method="GET",route="/orders/:id<int>",status="200"}`: 1,
		`orders_http_requests_total{method="GET",route="/orders/:id<int>",status="404"}`: 1,
		`orders_http_requests_total{method="GET",route="unmatched",status="404"}`:        2, // /metrics and /no/such/page
		`orders_http_requests_total{method="GET",route="/orders/events",status="200"}`:   1,
		`orders_live_streams_open`:          1,
		`orders_ready`:                      1,
		`orders_embedded_snapshot_failures`: 0,
	}
	for s, v := range want {
		if got, ok := all[s]; !ok || got != v {
			t.Errorf("%s = %v (present: %v), want %v", s, got, ok, v)
		}
	}
	for _, name := range []string{"orders_http_request_duration_seconds_bucket", "go_goroutines", "process_resident_memory_bytes",
		"orders_http_connections_open", "orders_redis_pool_hits_total", "orders_redis_pool_connections", "orders_redis_pool_idle_connections", "orders_redis_pool_timeouts_total",
		"orders_embedded_snapshot_age_seconds", "orders_embedded_snapshot_bytes", "orders_embedded_snapshot_pause_seconds",
		"orders_embedded_log_bytes", "orders_embedded_log_syncs_total", "orders_embedded_log_records_total"} {
		if !hasSeries(all, name) {
			t.Errorf("no %s in the metrics", name)
		}
	}
	for s := range all {
		if strings.Contains(s, "metrics\"") || strings.Contains(s, "/4") || strings.Contains(s, "/"+strconv.FormatInt(id, 10)) {
			t.Errorf("a series names a path or an id: %s", s)
		}
	}
	if got := all["orders_http_requests_total{method=\"GET\",route=\"/orders\",status=\"200\"}"]; got != 1 {
		t.Errorf("scraping counted requests: GET /orders = %v, want 1", got)
	}

	stream.Close()
	for deadline = time.Now().Add(10 * time.Second); scrapeRun(t, r)["orders_live_streams_open"] != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if got := scrapeRun(t, r)["orders_live_streams_open"]; got != 0 {
		t.Errorf("the stream closed: orders_live_streams_open = %v after 10 s, want 0", got)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := http.Get(r.metrics + "/metrics"); err == nil {
		t.Error("the metrics listener still answers after the program stopped")
	}
}

// requestFields are the fields of every request's log line.
var requestFields = []string{"time", "level", "request_id", "method", "route", "path", "status", "duration", "bytes", "client_ip", "person"}

// exerciseLog sends the requests whose log lines the log tests read.
func exerciseLog(t *testing.T, r *observedRun) {
	t.Helper()
	createOrder(t, r.base, "Ada Lovelace")
	getStatus(t, r.base, "/orders/5")
	getStatus(t, r.base, "/no/such/page")
}

// TestRequestLogLinesCarryEveryFieldAsJSON: with -log-format json every
// log line is a JSON object, and each request's carries its request id,
// method, route pattern, path, status, duration, bytes, the client's
// address and the person.
func TestRequestLogLinesCarryEveryFieldAsJSON(t *testing.T) {
	r := startObserved(t, nil, "-data", "", "-log-format", "json")
	exerciseLog(t, r)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	var requests []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.log.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line is no JSON object (%v): %s", err, sc.Text())
		}
		if line["msg"] == "request" {
			requests = append(requests, line)
		}
	}
	if len(requests) != 3 {
		t.Fatalf("%d request lines, want 3:\n%s", len(requests), r.log.String())
	}
	for _, l := range requests {
		for _, k := range requestFields {
			if _, ok := l[k]; !ok {
				t.Errorf("request line without %q: %v", k, l)
			}
		}
		if l["client_ip"] != "127.0.0.1" || l["person"] != "anonymous" {
			t.Errorf("client_ip %v, person %v; want 127.0.0.1 and anonymous: %v", l["client_ip"], l["person"], l)
		}
	}
	want := [][3]any{{"POST", "/orders", 201.0}, {"GET", "/orders/:id<int>", 404.0}, {"GET", "unmatched", 404.0}}
	for i, w := range want {
		if l := requests[i]; l["method"] != w[0] || l["route"] != w[1] || l["status"] != w[2] {
			t.Errorf("request %d logged method %v route %v status %v, want %v", i+1, l["method"], l["route"], l["status"], w)
		}
	}
	if requests[1]["path"] != "/orders/5" {
		t.Errorf("GET /orders/5 logged path %v", requests[1]["path"])
	}
}

// TestRequestLogLinesCarryEveryFieldAsText: the default log format is
// text (key=value), and a request's line has the same fields as in JSON.
func TestRequestLogLinesCarryEveryFieldAsText(t *testing.T) {
	r := startObserved(t, nil, "-data", "")
	exerciseLog(t, r)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(r.log.String(), "\n") {
		if !strings.Contains(line, " msg=request ") {
			continue
		}
		n++
		for _, k := range requestFields {
			if !strings.HasPrefix(line, k+"=") && !strings.Contains(line, " "+k+"=") {
				t.Errorf("request line without %s=: %s", k, line)
			}
		}
		if strings.Contains(line, "path=/orders/5") && !strings.Contains(line, "route=/orders/:id<int> ") {
			t.Errorf("GET /orders/5 logged without its route pattern: %s", line)
		}
	}
	if n != 3 {
		t.Errorf("%d request lines, want 3:\n%s", n, r.log.String())
	}
}

// TestLogFormatAndMetricsAddressConfig: -log-format wins over LOG_FORMAT,
// and -metrics-addr over METRICS_ADDR (default: no metrics); a format
// other than text or json, or a metrics address that cannot be listened
// on, stops the program at start with an error that says so.
func TestLogFormatAndMetricsAddressConfig(t *testing.T) {
	c, err := parseConfig(nil, envOf(nil), io.Discard)
	if err != nil || c.logFormat != "text" || c.metricsAddr != "" {
		t.Errorf("defaults: log format %q, metrics address %q (%v); want text and none", c.logFormat, c.metricsAddr, err)
	}
	env := envOf(map[string]string{"LOG_FORMAT": "json", "METRICS_ADDR": "127.0.0.1:9100"})
	if c, err = parseConfig(nil, env, io.Discard); err != nil || c.logFormat != "json" || c.metricsAddr != "127.0.0.1:9100" {
		t.Errorf("from the environment: %q, %q (%v); want json and 127.0.0.1:9100", c.logFormat, c.metricsAddr, err)
	}
	if c, err = parseConfig([]string{"-log-format", "text", "-metrics-addr", "127.0.0.1:9200"}, env, io.Discard); err != nil ||
		c.logFormat != "text" || c.metricsAddr != "127.0.0.1:9200" {
		t.Errorf("flags over the environment: %q, %q (%v); want text and 127.0.0.1:9200", c.logFormat, c.metricsAddr, err)
	}
	for _, args := range [][]string{{"-log-format", "xml"}, {"-log-format", "JSON "}} {
		if _, err := parseConfig(args, envOf(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "text or json") {
			t.Errorf("%v: error %v, want one that says text or json", args, err)
		}
	}
	if _, err := parseConfig(nil, envOf(map[string]string{"LOG_FORMAT": "yaml"}), io.Discard); err == nil {
		t.Error("LOG_FORMAT=yaml was accepted")
	}
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0", "-data", "", "-metrics-addr", "127.0.0.1:99999"}, envOf(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-metrics-addr") {
		t.Errorf("-metrics-addr 127.0.0.1:99999: run returned %v, want an error naming -metrics-addr", err)
	}
}

// TestMetricsCountRefusedConnectionsAndThrottledSignIns: what the edge
// refuses shows on /metrics: connections closed past the per-address cap
// by reason, and sign-ins refused with 429 by the limit that refused them.
func TestMetricsCountRefusedConnectionsAndThrottledSignIns(t *testing.T) {
	r := startObserved(t, map[string]string{"ORDERS_ADMIN": "clerk:right horse battery"},
		"-data", "", "-metrics-addr", "127.0.0.1:0", "-max-conns-per-ip", "2")
	host := strings.TrimPrefix(r.base, "http://")
	var held []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The two past the cap are closed at once: reading them ends.
	closed := 0
	for _, c := range held[2:] {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
	}
	for _, c := range held {
		c.Close()
	}
	if closed != 2 {
		t.Fatalf("%d of the 2 connections past the per-address cap were closed, want 2", closed)
	}
	// The wrong tokens come from another address, under its cap.
	from := &net.TCPAddr{IP: testutil.Loopback(t, 2)}
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: from}).DialContext}}
	for i := range 11 {
		req, _ := http.NewRequest(http.MethodGet, r.base+"/orders", nil)
		req.Header.Set("Authorization", "Bearer wrong")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("wrong token %d: %v", i+1, err)
		}
		// Read to the end, so the one connection is used again (a third
		// from this address would be past the cap).
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	all := scrapeRun(t, r)
	for s, atLeast := range map[string]float64{
		`orders_http_connections_refused_total{reason="per_ip"}`:                    2,
		`orders_throttled_requests_total{limit="` + store.LimitSignInAddress + `"}`: 1,
		// Refused before routing: no route is named.
		`orders_http_requests_total{method="GET",route="unmatched",status="429"}`: 1,
	} {
		if got, ok := all[s]; !ok || got < atLeast {
			t.Errorf("%s = %v (present: %v), want at least %v", s, got, ok, atLeast)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}
