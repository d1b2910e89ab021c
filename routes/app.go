// Package routes builds the whole HTTP application: one constructor, one
// place that lists every route, one render helper and one error handler.
package routes

import (
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// Config is what the application needs from the outside.
type Config struct {
	// Store holds the orders.
	Store store.Service
	// Files holds the folders layouts/ and partials/ (the templates) and
	// public/ (the static files, read, hashed and compressed once in New
	// and served under /public/ by content-hashed names: assets.go).
	// main.go gives the copy embedded in the binary; tests give the
	// repository's folders (testutil.Files), which main's tests check are
	// the same files.
	Files fs.FS
	// Logger receives one line per request; slog.Default() when nil.
	Logger *slog.Logger
	// RequestTimeout bounds each request's work against Redis (default 1.5 s),
	// so a hung Redis gives 503 instead of a hang.
	RequestTimeout time.Duration
	// AllowedHosts are the host names (no port) the server answers to
	// besides IP literals, localhost and *.localhost, which always pass: a
	// DNS-rebinding page needs a name of its own. Any other Host gets 421
	// before any work. Empty means IP literals and localhost
	// only: a default install on 127.0.0.1 answers to nothing a page on
	// another site can point its name at. main.go adds the -addr host when
	// it is a name.
	AllowedHosts []string
	// TrustedProxies are the IP addresses or CIDR ranges whose
	// X-Forwarded-Proto, -Host and -For are believed. Empty means nobody's:
	// from a client not named here those headers change nothing.
	TrustedProxies []string
	// EventHeartbeat is the interval of the event streams' heartbeat
	// comments (default DefaultHeartbeat); MaxStreams the most event
	// streams open at once (default DefaultMaxStreams).
	EventHeartbeat time.Duration
	MaxStreams     int
	// Limits are the figures of the limits on failed sign-ins and live
	// streams per client address, kept in the store's Redis (zero fields:
	// the defaults), and a function told of each refusal (for metrics).
	Limits store.LimitOptions
	// InFlight, when set, counts the requests whose handlers are running:
	// at shutdown, main tells a drain cut short with requests in hand
	// from one left waiting only on connections that hold none.
	InFlight *atomic.Int64
	// Metrics, when set, counts every request (by method, route pattern
	// and status) and shows the open live streams and the store's
	// readiness; main serves it on a listener of its own. One Metrics
	// serves one application.
	Metrics *Metrics
	// BodyBudget is the most memory, in bytes, that request bodies take at
	// once across every connection while they are read and handled
	// (default DefaultBodyBudget); a body that would go past it is 503
	// with Retry-After.
	BodyBudget int64
	// RenderCacheMiB is the most memory, in MiB, that drawn fragments (the
	// List's rows) kept for reuse take (0: DefaultRenderCache; negative:
	// none kept, every fragment drawn every time).
	RenderCacheMiB int
}

func httpFS(f fs.FS) http.FileSystem { return http.FS(f) }

// MaxBody is the largest request body the application reads (1 MiB); a
// larger one is 413.
const MaxBody = 1 << 20

// HeaderTimeout is how long a request's headers may take to arrive;
// BodyTimeout how long its body may take after them.
const (
	HeaderTimeout = 10 * time.Second
	BodyTimeout   = 30 * time.Second
)

// New returns the application with every route registered.
func New(cfg Config) (*fiber.App, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 1500 * time.Millisecond
	}
	if cfg.BodyBudget == 0 {
		cfg.BodyBudget = DefaultBodyBudget
	}
	if err := checkNetConfig(cfg.AllowedHosts, cfg.TrustedProxies); err != nil {
		return nil, err
	}
	public, err := fs.Sub(cfg.Files, "public")
	if err != nil {
		return nil, err
	}
	static, err := loadAssets(public)
	if err != nil {
		return nil, err
	}
	fm := template.FuncMap{"asset": static.url}
	for k, f := range funcs {
		fm[k] = f
	}
	cacheMiB := cfg.RenderCacheMiB
	switch {
	case cacheMiB == 0:
		cacheMiB = DefaultRenderCache
	case cacheMiB < 0:
		cacheMiB = 0
	}
	engine, err := newViews(cfg.Files, fm, []string{layoutPage, layoutBare}, cacheMiB)
	if err != nil {
		return nil, err
	}
	if engine.set.Lookup("partials/error") == nil {
		return nil, fmt.Errorf("template partials/error is missing")
	}
	if lim := cfg.Limits; lim.OnThrottle == nil {
		cfg.Limits.OnThrottle = cfg.Metrics.Throttled
	} else if cfg.Metrics != nil {
		cfg.Limits.OnThrottle = func(limit string) { lim.OnThrottle(limit); cfg.Metrics.Throttled(limit) }
	}
	h := &handlers{store: cfg.Store, log: cfg.Logger, limits: cfg.Store.Limits(cfg.Limits),
		proxies: newProxies(cfg.TrustedProxies), metrics: cfg.Metrics, bodies: &bodyBudget{limit: cfg.BodyBudget}}
	app := fiber.New(fiber.Config{
		Views: engine,
		// Request strings are kept past handlers (errors, logs): no reuse.
		Immutable: true,
		// Bodies are streamed: fasthttp hands the handlers a reader after
		// the headers (with at most 8 KiB read ahead), and readBody takes
		// memory as the bytes arrive, up to MaxBody, answering 413 itself
		// above it. Read whole, fasthttp would allocate the announced
		// Content-Length (up to BodyLimit) before a byte of it arrived;
		// streaming, it never refuses a body by its size, so BodyLimit
		// only bounds its read-ahead.
		StreamRequestBody: true,
		BodyLimit:         MaxBody,
		// A request's headers must arrive within HeaderTimeout of its first
		// byte (of the connection, for its first request): 408 then.
		// HeaderReceived (below) gives the body BodyTimeout more.
		ReadTimeout:           HeaderTimeout,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           60 * time.Second,
		DisableStartupMessage: true,
		ErrorHandler:          h.errorHandler,

		// fasthttp would parse a multipart body while reading the request
		// and, when it is malformed, reset the request (its Accept too) and
		// answer with its own parser's message; parsed in the handler, a bad
		// form is a 400 in the representation asked for.
		DisablePreParseMultipartForm: true,

		// X-Forwarded-Proto, -Host and -For only from the proxies named.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          proxyList(cfg.TrustedProxies),
	})
	h.routes = &routeTable{app: app}
	h.feeds = make(map[string]store.Feed, len(resources))
	for _, r := range resources {
		if r.Feed != "" {
			h.feeds[r.Feed] = cfg.Store.Feed(r.Feed)
		}
	}

	h.edge(app, cfg)
	app.Get("/public/*", static.serve)
	app.Get("/favicon.ico", func(c *fiber.Ctx) error { return c.Redirect("/public/favicon.svg", fiber.StatusMovedPermanently) })
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok\n") })
	app.Get("/readyz", h.ready)
	app.Get("/", func(c *fiber.Ctx) error { return c.Redirect(resources[0].Path(), fiber.StatusSeeOther) })
	h.sessionRoutes(app)

	live := newStreams(cfg.MaxStreams, cfg.EventHeartbeat, h.limits, h.proxies, h.log)
	if err := cfg.Metrics.registerApp(func() int { return len(live.slots) }, cfg.Store, h.bodies, engine.drawn); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	for _, r := range resources {
		if r.Feed != "" {
			app.Get(r.EventsPath(), r.need(actRead), live.events(h.feeds[r.Feed]))
		}
	}
	apis := make([]apiResource, 0, len(resources))
	for _, r := range resources {
		hs := r.serve(h)
		hs.log = h.log
		registerResource(app, r, hs)
		apis = append(apis, hs.API)
	}
	app.Get(OpenAPIPath, serveOpenAPI(apis...))
	return app, nil
}

// checkNetConfig refuses host names and proxy addresses that could never
// match (Fiber would silently ignore them): a host with a port or a path, a
// proxy that is not an IP address or CIDR range.
func checkNetConfig(hosts, proxies []string) error {
	for _, h := range hosts {
		if h = strings.TrimSpace(h); net.ParseIP(strings.Trim(h, "[]")) != nil {
			continue // IP literals always pass
		}
		if h == "" || strings.ContainsAny(h, ":/ @[]") {
			return fmt.Errorf("allowed host %q: give a host name without scheme, port or path, like orders.example.com", h)
		}
	}
	for _, p := range proxies {
		p = strings.TrimSpace(p)
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			return fmt.Errorf("trusted proxy %q: give an IP address or a CIDR range, like 10.0.0.0/8", p)
		}
	}
	return nil
}

// proxyList writes each proxy address the way Fiber compares it with the
// client's: trimmed, an IP address in its canonical form ("::1", not
// "0:0::1").
func proxyList(list []string) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = strings.TrimSpace(v)
		if ip := net.ParseIP(out[i]); ip != nil {
			out[i] = ip.String()
		}
	}
	return out
}

type handlers struct {
	store   store.Service
	log     *slog.Logger
	metrics *Metrics
	// routes: the application's routes, to name the one a request took.
	routes *routeTable
	// feeds are the resources' event feeds by name: a page starts its
	// stream where the page was rendered (liveAfter).
	feeds map[string]store.Feed
	// limits are the throttles shared through Redis; proxies name the
	// client behind a trusted proxy.
	limits  store.Limiter
	proxies proxies
	// bodies bounds the memory request bodies take across connections.
	bodies *bodyBudget
	// sawAccounts is set once this instance has seen an account: from then
	// on no account means the store forgot them, not an open desk.
	sawAccounts atomic.Bool
}

func (h *handlers) ready(c *fiber.Ctx) error {
	if err := h.store.Ready(c.UserContext()); err != nil {
		c.Set(fiber.HeaderRetryAfter, "1")
		return c.Status(fiber.StatusServiceUnavailable).SendString("redis is not answering\n")
	}
	return c.SendString("ready\n")
}
