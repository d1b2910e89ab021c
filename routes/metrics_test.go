package routes

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"orders/store/embedded"
	"orders/testutil"
)

// scrape reads m as Prometheus does, through its handler: every series
// ("name{label="value",...}") with its value.
func scrape(t testing.TB, m *Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics answered %d: %s", rec.Code, rec.Body.String())
	}
	return testutil.ParseMetrics(t, rec.Body.String())
}

var labelRE = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// seriesNamed returns the series of one metric, by their labels.
func seriesNamed(all map[string]float64, name string) map[string]float64 {
	out := map[string]float64{}
	for s, v := range all {
		if s == name || strings.HasPrefix(s, name+"{") {
			out[s] = v
		}
	}
	return out
}

// newMeteredApp is the test application with metrics, over miniredis.
func newMeteredApp(t *testing.T, more ...func(*Config)) (*testApp, *Metrics) {
	m := NewMetrics()
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)),
		append([]func(*Config){func(c *Config) { c.Metrics = m }}, more...)...)
	return a, m
}

// TestMetricsCountRequestsByRoutePatternNeverById: requests are counted
// and timed by method, the route's pattern and status; two orders' pages
// are one route, a path no route answers is "unmatched", and no label
// anywhere holds an id or a path.
func TestMetricsCountRequestsByRoutePatternNeverById(t *testing.T) {
	a, m := newMeteredApp(t)
	a.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusOK)
	first, second := a.createNamed(t, "Ada Lovelace"), a.createNamed(t, "Grace Hopper")
	a.get(t, fmt.Sprintf("/orders/%d", first.ID), testutil.HJSON).WantStatus(t, http.StatusOK)
	a.get(t, fmt.Sprintf("/orders/%d", second.ID), testutil.HJSON).WantStatus(t, http.StatusOK)
	a.get(t, "/orders/987654", testutil.HJSON).WantStatus(t, http.StatusNotFound)
	a.get(t, "/no/such/page", testutil.HJSON).WantStatus(t, http.StatusNotFound)

	all := scrape(t, m)
	want := map[string]float64{
		`orders_http_requests_total{method="GET",route="/orders",status="200"}`:                                     1,
		`orders_http_requests_total{method="POST",route="/orders",status="201"}`:                                    2,
		`orders_http_requests_total{method="GET",route="/orders/:id<int>",status="200"}`:                            2,
		`orders_http_requests_total{method="GET",route="/orders/:id<int>",status="404"}`:                            1,
		`orders_http_requests_total{method="GET",route="unmatched",status="404"}`:                                   1,
		`orders_http_request_duration_seconds_count{method="GET",route="/orders/:id<int>",status="200"}`:            2,
		`orders_http_request_duration_seconds_bucket{method="GET",route="/orders/:id<int>",status="200",le="+Inf"}`: 2,
		`orders_live_streams_open`:               0,
		`orders_ready`:                           1,
		`orders_store_recovering`:                0,
		`orders_store_forgetting_detected_total`: 0,
		`orders_request_body_bytes_held`:         0,
		`orders_request_body_budget_bytes`:       DefaultBodyBudget,
	}
	for s, v := range want {
		if got, ok := all[s]; !ok || got != v {
			t.Errorf("%s = %v (present: %v), want %v", s, got, ok, v)
		}
	}
	if got := len(seriesNamed(all, "orders_http_requests_total")); got != 5 {
		t.Errorf("%d request series, want the 5 above:\n%v", got, seriesNamed(all, "orders_http_requests_total"))
	}
	ids := regexp.MustCompile(`/\d|no/such`)
	for s := range all {
		for _, l := range labelRE.FindAllStringSubmatch(s, -1) {
			if ids.MatchString(l[2]) {
				t.Errorf("a label holds an id or a path: %s", s)
			}
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_open_fds"} {
		if len(seriesNamed(all, name)) == 0 {
			t.Errorf("no %s: the Go runtime's and the process's metrics are missing", name)
		}
	}
}

// TestMetricsSeriesStayFewOverAThousandIds: a thousand orders' pages, a
// thousand paths no route answers and a thousand query strings add no
// series past the first of each kind, so a scrape's size does not grow
// with the traffic.
func TestMetricsSeriesStayFewOverAThousandIds(t *testing.T) {
	a, m := newMeteredApp(t)
	before := promtest.CollectAndCount(m.requests)
	for i := 1; i <= 1000; i++ {
		a.get(t, fmt.Sprintf("/orders/%d", i), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		a.get(t, fmt.Sprintf("/nothing-%d", i), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		a.get(t, fmt.Sprintf("/orders?q=%d", i), testutil.HJSON).WantStatus(t, http.StatusOK)
	}
	requests, durations := promtest.CollectAndCount(m.requests), promtest.CollectAndCount(m.duration)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	t.Logf("after 3,000 requests over 2,000 paths: %d request series, %d histograms, scrape %d bytes", requests, durations, rec.Body.Len())
	if before != 0 || requests != 3 || durations != 3 {
		t.Errorf("request series: %d before, %d counters and %d histograms after; want 0, then 3 and 3 (one per route and status)", before, requests, durations)
	}
}

// TestLiveStreamsGaugeFollowsOpenStreams: the open live streams are shown
// while they are open, and no longer once they end.
func TestLiveStreamsGaugeFollowsOpenStreams(t *testing.T) {
	a, m := newMeteredApp(t, func(c *Config) { c.EventHeartbeat = 50 * time.Millisecond })
	base := "http://" + testutil.Serve(t, a.app)
	streams := func() float64 { return scrape(t, m)["orders_live_streams_open"] }
	s1 := testutil.OpenSSE(t, base, "/orders/events", nil)
	s1.WaitOpen(t)
	s2 := testutil.OpenSSE(t, base, "/products/events", nil)
	s2.WaitOpen(t)
	if got := streams(); got != 2 {
		t.Errorf("two streams open: orders_live_streams_open = %v, want 2", got)
	}
	s1.Close()
	s2.Close()
	deadline := time.Now().Add(10 * time.Second)
	for streams() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := streams(); got != 0 {
		t.Errorf("both streams closed: orders_live_streams_open = %v after 10 s, want 0", got)
	}
}

type fakePool struct{ s redis.PoolStats }

func (f *fakePool) PoolStats() *redis.PoolStats { return &f.s }

// TestMetricsReadTheirOwnersAtEachScrape: the connection counts, the Redis
// pool's figures and the embedded store's files are read when scraped,
// not copied when registered; a rate limit's refusals are counted by its
// name; a nil *Metrics takes every call and does nothing.
func TestMetricsReadTheirOwnersAtEachScrape(t *testing.T) {
	m := NewMetrics()
	conns := ConnStats{Open: 3, Refused: map[string]int64{"total": 2}}
	pool := &fakePool{redis.PoolStats{Hits: 10, Misses: 2, Timeouts: 1, TotalConns: 4, IdleConns: 3, StaleConns: 5}}
	emb := embedded.Stats{Path: "data/orders.json", SnapshotAt: time.Now().Add(-time.Minute), SnapshotBytes: 1234, SnapshotFailures: 1, SnapshotPause: 2 * time.Millisecond}
	for _, err := range []error{
		m.RegisterConnections(func() ConnStats { return conns }),
		m.RegisterRedisPool(pool),
		m.RegisterEmbedded(func() embedded.Stats { return emb }),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	m.Throttled("signin_address")
	m.Throttled("signin_address")

	conns.Open, conns.Refused["per_ip"] = 5, 7
	pool.s.Timeouts, pool.s.IdleConns = 4, 1
	emb.LogBytes, emb.LogFsyncs, emb.LogRecords = 4096, 9, 12
	all := scrape(t, m)
	want := map[string]float64{
		`orders_http_connections_open`:                            5,
		`orders_http_connections_refused_total{reason="total"}`:   2,
		`orders_http_connections_refused_total{reason="per_ip"}`:  7,
		`orders_throttled_requests_total{limit="signin_address"}`: 2,
		`orders_redis_pool_hits_total`:                            10,
		`orders_redis_pool_misses_total`:                          2,
		`orders_redis_pool_timeouts_total`:                        4,
		`orders_redis_pool_connections`:                           4,
		`orders_redis_pool_idle_connections`:                      1,
		`orders_redis_pool_stale_connections_total`:               5,
		`orders_embedded_snapshot_bytes`:                          1234,
		`orders_embedded_snapshot_failures`:                       1,
		`orders_embedded_snapshot_pause_seconds`:                  0.002,
		`orders_embedded_log_bytes`:                               4096,
		`orders_embedded_log_syncs_total`:                         9,
		`orders_embedded_log_records_total`:                       12,
	}
	for s, v := range want {
		if got, ok := all[s]; !ok || got != v {
			t.Errorf("%s = %v (present: %v), want %v", s, got, ok, v)
		}
	}
	if age := all["orders_embedded_snapshot_age_seconds"]; age < 60 || age > 3600 {
		t.Errorf("orders_embedded_snapshot_age_seconds = %v, want about 60", age)
	}

	emb = embedded.Stats{} // keeps no file
	if got := seriesNamed(scrape(t, m), "orders_embedded_snapshot_failures"); len(got) != 0 {
		t.Errorf("an embedded store that keeps no file shows %v; want no snapshot metrics", got)
	}

	var none *Metrics
	none.Throttled("signin_address")
	none.observe("GET", "/orders", 200, time.Millisecond)
	if err := none.RegisterRedisPool(pool); err != nil {
		t.Errorf("nil Metrics: %v", err)
	}
}

// TestRequestLogNamesTheClientBehindATrustedProxyOnly: the log names the
// address a trusted proxy saw (the last in X-Forwarded-For); from anyone
// else the header changes nothing, and the connection's address is logged.
func TestRequestLogNamesTheClientBehindATrustedProxyOnly(t *testing.T) {
	for _, tc := range []struct {
		proxies []string
		want    string
	}{{[]string{"0.0.0.0"}, "198.51.100.2"}, {nil, "0.0.0.0"}} {
		var logs testutil.SyncBuffer
		a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)), func(c *Config) {
			c.TrustedProxies = tc.proxies
			c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		})
		a.get(t, "/healthz", testutil.H{"X-Forwarded-For": "203.0.113.7, 198.51.100.2"}).WantStatus(t, http.StatusOK)
		var line struct {
			Client string `json:"client_ip"`
			Person string `json:"person"`
		}
		if err := json.Unmarshal([]byte(logs.String()), &line); err != nil || line.Client != tc.want || line.Person != "anonymous" {
			t.Errorf("trusted proxies %v: logged client_ip %q, person %q (%v), want %s and anonymous: %s", tc.proxies, line.Client, line.Person, err, tc.want, logs.String())
		}
	}
}
