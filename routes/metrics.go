package routes

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/embedded"
)

// Metrics is what the application shows Prometheus, in a registry of its
// own (never the process-wide default, so two applications in one process
// and the tests never mix their figures). Request counts and durations are
// counted as requests end; everything else is read from its owner at each
// scrape by the collectors registered here. Every method works on a nil
// *Metrics and then does nothing, so code that counts needs no check.
//
// Label values come from short fixed sets only: a route's pattern (never
// the path, which holds ids), a method, a status, a reason or a limit's
// name. The figures are served by Handler, on a listener of their own.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	throttled *prometheus.CounterVec
}

// metricsNamespace begins every metric name of the application's own.
const metricsNamespace = "orders"

// unmatchedRoute is the route label of a request that reached no route:
// no route matched (404, 405), or a check before the routes answered it
// (a wrong host, a failed sign-in, a refused write).
const unmatchedRoute = "unmatched"

// NewMetrics returns the metrics of one application, with the Go
// runtime's and the process's.
func NewMetrics() *Metrics {
	labels := []string{"method", "route", "status"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status."}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: "http_request_duration_seconds",
			Help:    "Time from a request's headers read to its answer made (a live stream: to its start), by method, route pattern and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, labels),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "throttled_requests_total",
			Help: "Requests refused with 429 by a rate limit, by the limit's name."}, []string{"limit"}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.throttled,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format (or the format
// the scraper asks for). It counts nothing itself.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Register adds collectors of any kind to the registry.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	if m == nil {
		return nil
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Throttled counts one request a rate limit refused; limit names the limit
// (a fixed name such as "sign-in-address", never an address or a user).
func (m *Metrics) Throttled(limit string) {
	if m == nil {
		return
	}
	m.throttled.WithLabelValues(limit).Inc()
}

// observe counts one answered request.
func (m *Metrics) observe(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(method, route, code).Inc()
	m.duration.WithLabelValues(method, route, code).Observe(d.Seconds())
}

// ConnStats is what a listener counts: the connections open now, and the
// connections refused since start by reason (a short fixed set, such as
// "total-cap" and "address-cap").
type ConnStats struct {
	Open    int64
	Refused map[string]int64
}

// RegisterConnections shows the listener's connection counts, which read
// returns at each scrape.
func (m *Metrics) RegisterConnections(read func() ConnStats) error {
	if m == nil {
		return nil
	}
	open := newDesc("http_connections_open", "Client connections open now.")
	refused := newDesc("http_connections_refused_total", "Client connections closed at once, unserved, by reason.", "reason")
	return m.Register(scrapeCollector{descs: []*prometheus.Desc{open, refused}, collect: func(ch chan<- prometheus.Metric) {
		s := read()
		ch <- prometheus.MustNewConstMetric(open, prometheus.GaugeValue, float64(s.Open))
		for reason, n := range s.Refused {
			ch <- prometheus.MustNewConstMetric(refused, prometheus.CounterValue, float64(n), reason)
		}
	}})
}

// PoolStatser is a go-redis client: its connection pool's figures.
type PoolStatser interface {
	PoolStats() *redis.PoolStats
}

// RegisterRedisPool shows the figures of the Redis client's connection
// pool (a Cluster client's: every node's pool added up), read at each
// scrape.
func (m *Metrics) RegisterRedisPool(client PoolStatser) error {
	if m == nil {
		return nil
	}
	hits := newDesc("redis_pool_hits_total", "Times a free connection was found in the Redis client's pool.")
	misses := newDesc("redis_pool_misses_total", "Times no free connection was in the Redis client's pool (a new one was dialled or waited for).")
	timeouts := newDesc("redis_pool_timeouts_total", "Times a command gave up waiting for a connection from the Redis client's pool.")
	waits := newDesc("redis_pool_waits_total", "Times a command waited for a connection from the Redis client's pool.")
	waited := newDesc("redis_pool_wait_seconds_total", "Time commands spent waiting for a connection from the Redis client's pool.")
	total := newDesc("redis_pool_connections", "Connections in the Redis client's pool, busy and idle.")
	idle := newDesc("redis_pool_idle_connections", "Idle connections in the Redis client's pool.")
	stale := newDesc("redis_pool_stale_connections_total", "Connections the Redis client's pool closed as stale.")
	return m.Register(scrapeCollector{descs: []*prometheus.Desc{hits, misses, timeouts, waits, waited, total, idle, stale},
		collect: func(ch chan<- prometheus.Metric) {
			s := client.PoolStats()
			if s == nil {
				return
			}
			counter := func(d *prometheus.Desc, v float64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
			}
			gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
			counter(hits, float64(s.Hits))
			counter(misses, float64(s.Misses))
			counter(timeouts, float64(s.Timeouts))
			counter(waits, float64(s.WaitCount))
			counter(waited, time.Duration(s.WaitDurationNs).Seconds())
			gauge(total, float64(s.TotalConns))
			gauge(idle, float64(s.IdleConns))
			counter(stale, float64(s.StaleConns))
		}})
}

// RegisterEmbedded shows the embedded store's files, as stats (its Stats
// method) reads them at each scrape. A store that keeps no file shows
// nothing.
func (m *Metrics) RegisterEmbedded(stats func() embedded.Stats) error {
	if m == nil {
		return nil
	}
	age := newDesc("embedded_snapshot_age_seconds", "Time since the embedded store's last snapshot (one is taken only after a change; the log keeps every write meanwhile).")
	size := newDesc("embedded_snapshot_bytes", "Size of the embedded store's snapshot file.")
	failures := newDesc("embedded_snapshot_failures", "Snapshots of the embedded store that failed in a row; from 2 the store is not ready.")
	pause := newDesc("embedded_snapshot_pause_seconds", "How long the last snapshot held the embedded store's writes.")
	logSize := newDesc("embedded_log_bytes", "Size of the embedded store's log of changes since the snapshot.")
	syncs := newDesc("embedded_log_syncs_total", "Fsyncs of the embedded store's log of changes (writes that arrive together share one).")
	records := newDesc("embedded_log_records_total", "Writes appended to the embedded store's log of changes.")
	return m.Register(scrapeCollector{descs: []*prometheus.Desc{age, size, failures, pause, logSize, syncs, records},
		collect: func(ch chan<- prometheus.Metric) {
			s := stats()
			if s.Path == "" {
				return
			}
			gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
			if !s.SnapshotAt.IsZero() {
				gauge(age, time.Since(s.SnapshotAt).Seconds())
				gauge(size, float64(s.SnapshotBytes))
			}
			gauge(failures, float64(s.SnapshotFailures))
			gauge(pause, s.SnapshotPause.Seconds())
			gauge(logSize, float64(s.LogBytes))
			ch <- prometheus.MustNewConstMetric(syncs, prometheus.CounterValue, float64(s.LogFsyncs))
			ch <- prometheus.MustNewConstMetric(records, prometheus.CounterValue, float64(s.LogRecords))
		}})
}

// registerApp shows what the application itself holds: its open live
// streams, whether the store is ready (what /readyz answers), whether it
// is recovering from Redis forgetting writes, and the request bodies held.
func (m *Metrics) registerApp(streamsOpen func() int, st store.Service, bodies *bodyBudget) error {
	if m == nil {
		return nil
	}
	return m.Register(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "request_body_bytes_held",
			Help: "Memory taken now by request bodies being read and handled, in bytes."},
			func() float64 { return float64(bodies.held.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "request_body_budget_bytes",
			Help: "The most memory request bodies may take at once (-body-budget); past it a body gets 503."},
			func() float64 { return float64(bodies.limit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "live_streams_open",
			Help: "Live update streams (text/event-stream) open now."},
			func() float64 { return float64(streamsOpen()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "ready",
			Help: "1 when the store answers (what /readyz says), else 0."},
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if st.Ready(ctx) != nil {
					return 0
				}
				return 1
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "store_recovering",
			Help: "1 while the store recovers from Redis forgetting acknowledged writes (the id counters moved, the indexes repaired), else 0."},
			func() float64 {
				if st.Forgetting().Recovering {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "store_forgetting_detected_total",
			Help: "Times Redis was found to have forgotten acknowledged writes (wiped, restored from a backup, failed over with loss)."},
			func() float64 { return float64(st.Forgetting().Detected) }))
}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(metricsNamespace, "", name), help, labels, nil)
}

// scrapeCollector reads its figures from their owner at each scrape.
type scrapeCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (s scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

func (s scrapeCollector) Collect(ch chan<- prometheus.Metric) { s.collect(ch) }

// routeTable tells a route of the application's own from a middleware's
// ("USE") entry, which Fiber's Route does not say: by the first of its
// handlers, which the routes' table and the copies GetRoutes gives share.
// It is read at the first request, once every route is registered.
type routeTable struct {
	app  *fiber.App
	once sync.Once
	own  map[*fiber.Handler]struct{}
}

// label is the pattern of the route that answered the request
// ("/orders/:id<int>"), or unmatchedRoute when none did: the last entry a
// request reached is then a middleware's.
func (t *routeTable) label(c *fiber.Ctx) string {
	if t == nil {
		return unmatchedRoute
	}
	t.once.Do(func() {
		t.own = map[*fiber.Handler]struct{}{}
		for _, r := range t.app.GetRoutes(true) {
			if len(r.Handlers) > 0 {
				t.own[&r.Handlers[0]] = struct{}{}
			}
		}
	})
	if r := c.Route(); r != nil && len(r.Handlers) > 0 {
		if _, ok := t.own[&r.Handlers[0]]; ok {
			return r.Path
		}
	}
	return unmatchedRoute
}

// responseBytes is the size of the response body as the handlers made it
// (before compression); -1 for a stream whose length is not known ahead.
func responseBytes(c *fiber.Ctx) int {
	if r := c.Response(); r.IsBodyStream() {
		// Reading the body of a stream would consume it.
		return max(r.Header.ContentLength(), -1)
	}
	return len(c.Response().Body())
}
