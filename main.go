// Command orders serves the order desk: pages, htmx fragments and JSON over
// one set of resource URIs, with the orders in Redis (an embedded one by
// default).
package main

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with ORDERS_PPROF
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/term"

	"orders/routes"
	"orders/store"
	"orders/store/embedded"
	"orders/store/redisstore"
)

// files are the templates and static files the binary carries; tests read
// the same folders from disk (TestEmbeddedFilesAreTheRepositorys).
//
//go:embed layouts partials public
var files embed.FS

// logSummaryEvery is how often repeated warnings and errors of one kind
// are summarised in one line.
const logSummaryEvery = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := run
	if len(os.Args) > 1 && os.Args[1] == "user" {
		run = func(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
			return runUser(ctx, args[1:], lookupEnv, os.Stdin, stdout, stderr)
		}
	}
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

// config is what flags and environment say; a flag wins over its variable.
type config struct {
	addr  string
	redis string
	data  string
	seed  int
	// repair: check and fix every index entry of the collection, then exit.
	repair bool
	// hosts the server answers to besides IP literals and localhost, and
	// proxies whose X-Forwarded-* headers are trusted.
	hosts, trustedProxies []string
	// snapshotEvery: the embedded store's snapshot interval; 0 is its
	// default (2 s). Only ORDERS_SNAPSHOT_INTERVAL sets it (for tests).
	snapshotEvery time.Duration
	// open: serve on an address other than loopback while no account
	// exists (protected mode: anyone who reaches the desk may do anything).
	open bool
	// eventHeartbeat and maxStreams: the live update streams' heartbeat
	// interval and most streams open at once; 0 is routes' default (20 s,
	// 1000). Only ORDERS_EVENT_HEARTBEAT and ORDERS_MAX_STREAMS set them.
	eventHeartbeat time.Duration
	maxStreams     int
	// maxConns and maxConnsPerIP cap the connections open at once, in all
	// and from one client address; maxConns 0 means three quarters of the
	// open-file limit.
	maxConns, maxConnsPerIP int
	// bodyBudgetMiB: the most memory, in MiB, request bodies take at once
	// across every connection while they are read and handled.
	bodyBudgetMiB int
	// renderCacheMiB: the most memory, in MiB, drawn fragments kept for
	// reuse take (0: none kept).
	renderCacheMiB int
	// metricsAddr: where Prometheus's /metrics is served; "" serves none.
	metricsAddr string
	// logFormat: "text" or "json".
	logFormat string
	// admin, when set, is ORDERS_ADMIN's account: made, or made an
	// enabled admin with this password, at start.
	admin *adminAccount
}

// adminAccount is the name and password of ORDERS_ADMIN.
type adminAccount struct{ name, password string }

// parseConfig reads the flags in args and the variables lookupEnv finds
// (os.LookupEnv in main; tests give their own, so the environment they run
// in changes nothing).
func parseConfig(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (config, error) {
	env := func(name, def string) string {
		// An empty variable counts as unset, except DATA_FILE="": keep nothing.
		if v, ok := lookupEnv(name); v != "" || ok && name == "DATA_FILE" {
			return v
		}
		return def
	}
	fl := flag.NewFlagSet("orders", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprint(stderr, "Usage:\n  orders [flags]                           serve the order desk\n"+
			"  orders user add NAME -role ROLE [flags]  make an account (its password on stdin)\n\nFlags:\n")
		fl.PrintDefaults()
	}
	var c config
	fl.StringVar(&c.addr, "addr", env("ADDR", "127.0.0.1:3000"), "listen address (env ADDR)")
	fl.StringVar(&c.redis, "redis", env("REDIS_URL", ""), "one Redis: a redis:// or rediss:// URL, or host:port; a Redis Cluster: two or more host:port separated by commas; empty: the embedded store (env REDIS_URL)")
	fl.StringVar(&c.data, "data", env("DATA_FILE", "data/orders.json"), "embedded store only: snapshot file; empty keeps nothing (env DATA_FILE)")
	seed := env("SEED", "0")
	n, err := strconv.Atoi(seed)
	if err != nil || n < 0 {
		return c, fmt.Errorf("SEED must be a whole number, not %q", seed)
	}
	fl.IntVar(&c.seed, "seed", n, "when the store holds no orders, create this many demo orders (env SEED)")
	fl.BoolVar(&c.repair, "repair", false, "check every order against every index, fix what is wrong, print a report and exit; safe while the service runs")
	hosts := fl.String("hosts", env("ALLOWED_HOSTS", ""), "comma-separated host names the server answers to, besides IP addresses and localhost; any other Host header gets 421 (env ALLOWED_HOSTS)")
	proxies := fl.String("trusted-proxies", env("TRUSTED_PROXIES", ""), "comma-separated proxy addresses or CIDR ranges whose X-Forwarded-* headers are trusted (env TRUSTED_PROXIES)")
	maxConns, err := envInt(env, "MAX_CONNS", 0)
	if err != nil {
		return c, err
	}
	fl.IntVar(&c.maxConns, "max-conns", maxConns, "most connections open at once; past it a new connection is closed at once; 0: three quarters of the open-file limit (env MAX_CONNS)")
	perIP, err := envInt(env, "MAX_CONNS_PER_IP", routes.DefaultMaxConnsPerIP)
	if err != nil {
		return c, err
	}
	fl.IntVar(&c.maxConnsPerIP, "max-conns-per-ip", perIP, "most connections open at once from one client address; a -trusted-proxies address is exempt (env MAX_CONNS_PER_IP)")
	budget, err := envInt(env, "BODY_BUDGET", routes.DefaultBodyBudget>>20)
	if err != nil {
		return c, err
	}
	fl.IntVar(&c.bodyBudgetMiB, "body-budget", budget, "most memory in MiB that request bodies take at once, across every connection, while they are read; a body past it gets 503 (env BODY_BUDGET)")
	renderCache, err := envInt(env, "RENDER_CACHE", routes.DefaultRenderCache)
	if err != nil {
		return c, err
	}
	fl.IntVar(&c.renderCacheMiB, "render-cache", renderCache, "most memory in MiB that drawn List rows kept for reuse take; 0: none kept (env RENDER_CACHE)")
	fl.StringVar(&c.metricsAddr, "metrics-addr", env("METRICS_ADDR", ""), "serve Prometheus metrics at /metrics on this address, apart from the application's; empty: none (env METRICS_ADDR)")
	fl.StringVar(&c.logFormat, "log-format", env("LOG_FORMAT", "text"), "log lines as text (key=value) or json (env LOG_FORMAT)")
	fl.BoolVar(&c.open, "open", false, "serve on an address other than loopback even while no account exists, when anyone who reaches the desk may do anything")
	if err := fl.Parse(args); err != nil {
		return c, err
	}
	if c.maxConns < 0 {
		return c, errors.New("-max-conns must not be negative")
	}
	if c.maxConnsPerIP <= 0 {
		return c, errors.New("-max-conns-per-ip must be a positive whole number")
	}
	if c.bodyBudgetMiB < 1 || c.bodyBudgetMiB > 1<<20 {
		return c, errors.New("-body-budget must be a whole number of MiB from 1 to 1048576")
	}
	if c.renderCacheMiB < 0 || c.renderCacheMiB > 1<<20 {
		return c, errors.New("-render-cache must be a whole number of MiB from 0 to 1048576")
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return c, fmt.Errorf("-log-format must be text or json, not %q", c.logFormat)
	}
	c.hosts, c.trustedProxies = splitList(*hosts), splitList(*proxies)
	if h, _, err := net.SplitHostPort(c.addr); err == nil && h != "" && net.ParseIP(h) == nil {
		c.hosts = append(c.hosts, h) // -addr orders.internal:3000 answers to that name
	}
	if c.seed < 0 {
		return c, errors.New("-seed must not be negative")
	}
	if v := env("ORDERS_ADMIN", ""); v != "" {
		if c.admin, err = parseAdmin(v); err != nil {
			return c, err
		}
	}
	if v := env("ORDERS_SNAPSHOT_INTERVAL", ""); v != "" {
		if c.snapshotEvery, err = time.ParseDuration(v); err != nil || c.snapshotEvery <= 0 {
			return c, fmt.Errorf("ORDERS_SNAPSHOT_INTERVAL must be a positive duration such as 500ms, not %q", v)
		}
	}
	if v := env("ORDERS_EVENT_HEARTBEAT", ""); v != "" {
		if c.eventHeartbeat, err = time.ParseDuration(v); err != nil || c.eventHeartbeat <= 0 {
			return c, fmt.Errorf("ORDERS_EVENT_HEARTBEAT must be a positive duration such as 15s, not %q", v)
		}
	}
	if v := env("ORDERS_MAX_STREAMS", ""); v != "" {
		if c.maxStreams, err = strconv.Atoi(v); err != nil || c.maxStreams <= 0 {
			return c, fmt.Errorf("ORDERS_MAX_STREAMS must be a positive whole number, not %q", v)
		}
	}
	return c, nil
}

// parseAdmin reads ORDERS_ADMIN, name:password. The error never repeats
// the password.
func parseAdmin(v string) (*adminAccount, error) {
	name, password, ok := strings.Cut(v, ":")
	if !ok {
		return nil, errors.New("ORDERS_ADMIN must be name:password (a sign-in name, a colon, then the password)")
	}
	if _, errs := store.ApplyUser(nil, store.UserInput{Name: &name, Role: ptr(string(store.RoleAdmin)), Password: &password}); errs != nil {
		if msg := errs["name"]; msg != "" {
			return nil, fmt.Errorf("ORDERS_ADMIN must be name:password: the name %s", msg)
		}
		return nil, fmt.Errorf("ORDERS_ADMIN must be name:password: the password %s", errs["password"])
	}
	return &adminAccount{store.FoldUserName(name), password}, nil
}

func ptr[T any](v T) *T { return &v }

// envInt reads a whole number that is not negative from the variable
// name, def when it is unset.
func envInt(env func(name, def string) string, name string, def int) (int, error) {
	v := env(name, strconv.Itoa(def))
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a whole number, not %q", name, v)
	}
	return n, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// run starts the application and blocks until ctx ends, then shuts down:
// in-flight requests finish, the embedded store is written, nil returns.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (err error) {
	cfg, err := parseConfig(args, lookupEnv, stderr)
	if err != nil {
		return err
	}
	logOut := routes.NewLogWriter(stdout)
	defer logOut.Close()
	var handler slog.Handler = slog.NewTextHandler(logOut, nil)
	if cfg.logFormat == "json" {
		handler = slog.NewJSONHandler(logOut, nil)
	}
	// Repeated warnings and errors (an outage's) are summarised once per
	// logSummaryEvery; the access log keeps its line per request.
	quiet := routes.NewLogSummary(handler, logSummaryEvery)
	defer quiet.Flush()
	log := slog.New(quiet)
	if addr, _ := lookupEnv("ORDERS_PPROF"); addr != "" {
		servePprof(addr, log)
	}

	// Every connection takes a file descriptor: raise the limit before
	// anything opens one.
	files, ferr := raiseFileLimit()
	if ferr != nil {
		log.Warn("the open-file limit could not be raised", "err", ferr, "limit", files)
	}

	if cfg.repair {
		st, closeStore, oerr := openStore(cfg, nil, log, stderr)
		if oerr != nil {
			return oerr
		}
		defer closeAndKeep(closeStore, &err)
		return repair(ctx, st, stdout)
	}
	var inFlight atomic.Int64
	var metrics *routes.Metrics
	if cfg.metricsAddr != "" {
		metrics = routes.NewMetrics()
	}
	app, closeStore, err := newApp(ctx, cfg, &inFlight, metrics, log, stderr)
	if err != nil {
		return err
	}
	defer closeAndKeep(closeStore, &err)
	maxConns := cfg.maxConns
	if maxConns == 0 {
		maxConns = max(int(min(files, 1<<30)/4*3), 1)
	}
	tcp, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	ln, err := routes.NewListener(tcp, routes.ListenerOptions{MaxConns: maxConns, MaxConnsPerIP: cfg.maxConnsPerIP,
		TrustedProxies: cfg.trustedProxies, Logger: log})
	if err != nil {
		tcp.Close()
		return err
	}
	if metrics != nil {
		if err := metrics.RegisterConnections(func() routes.ConnStats {
			refused := map[string]int64{}
			for _, reason := range routes.RefusalReasons {
				refused[reason] = int64(ln.Refused(reason))
			}
			return routes.ConnStats{Open: ln.Open(), Refused: refused}
		}); err != nil {
			ln.Close()
			return fmt.Errorf("metrics: %w", err)
		}
		stopMetrics, err := serveMetrics(cfg.metricsAddr, metrics, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopMetrics()
	}
	log.Info("serving", "url", "http://"+ln.Addr().String()+"/orders", "open_file_limit", files, "max_conns", maxConns, "max_conns_per_ip", cfg.maxConnsPerIP, "body_budget_mib", cfg.bodyBudgetMiB)
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = app.ShutdownWithContext(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// fasthttp waits for every connection, not only for requests: a
		// connection with no request in it (a client's spare one, dialled
		// and never used, which fasthttp closes only after 5 s) is no work
		// cut short. The process exits 0 then, and says so; requests still
		// being handled make it exit non-zero.
		open := app.Server().GetOpenConnectionsCount()
		if n := inFlight.Load(); n > 0 {
			log.Error("the drain ended with requests still being handled", "requests", n, "connections", open)
			return err
		}
		log.Warn("the drain ended with connections open but no request being handled; they are closed", "connections", open)
		return nil
	}
	return err
}

// raiseFileLimit raises the process's soft limit on open files to its hard
// limit (every connection takes a file descriptor) and returns the soft
// limit in force afterwards.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024, err
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return lim.Cur, err
		}
		lim = want
	}
	return lim.Cur, nil
}

// closeAndKeep calls closeStore and makes its error *err unless there is
// one already. The embedded store writes its last snapshot when it closes:
// a failure there is the run's error, so the process exits non-zero
// rather than report success with the last writes lost.
func closeAndKeep(closeStore func() error, err *error) {
	if cerr := closeStore(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// newApp builds the application as the server runs it, from the
// configuration: the store over the configured Redis (openStore), its
// indexes upgraded to this version's layout, its reconciler started and,
// with -seed, demo orders; then routes.New over it with the templates and
// static files embedded in the binary. closeStore closes the store (the
// embedded one writes its last snapshot); the reconciler and a pending
// upgrade stop with ctx.
func newApp(ctx context.Context, cfg config, inFlight *atomic.Int64, metrics *routes.Metrics, log *slog.Logger, stderr io.Writer) (app *fiber.App, closeStore func() error, err error) {
	st, closeSt, err := openStore(cfg, metrics, log, stderr)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			_ = closeSt()
		}
	}()
	// Data written by an earlier version gets this version's indexes. A
	// Redis that does not answer yet is no reason not to start (the app
	// answers 503 meanwhile): the upgrade is tried again every second.
	upgrade := func() error {
		ran, r, err := st.Upgrade(ctx)
		if err == nil && ran {
			log.Info("rebuilt the indexes for this version's layout", "layout", redisstore.Layout, "report", r.String())
		}
		return err
	}
	if err := upgrade(); store.ErrorCode(err) == store.EUNAVAILABLE {
		log.Warn("the index layout could not be checked yet; trying again every second", "err", err)
		go func() {
			for ctx.Err() == nil && store.ErrorCode(upgrade()) == store.EUNAVAILABLE {
				time.Sleep(time.Second)
			}
		}()
	} else if err != nil {
		return nil, nil, fmt.Errorf("upgrading the indexes: %w", err)
	}
	// Index changes a writer could not finish (a crash, a timeout: on a
	// Cluster its intents, on any Redis the customers it left to place by
	// their last order) are settled by every instance within a few seconds.
	go st.Reconcile(ctx, 0)
	// A Redis that forgot acknowledged writes (wiped, restored, or failed
	// over with loss) is noticed within a few seconds and recovered from.
	go st.WatchForgetting(ctx, 0)

	if cfg.admin != nil {
		if err := ensureAdmin(ctx, st, cfg.admin, log); err != nil {
			return nil, nil, err
		}
	}

	if err := refuseOpenDesk(ctx, cfg, st, log); err != nil {
		return nil, nil, err
	}

	if cfg.seed > 0 {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		start := time.Now()
		seeded, wrote, err := st.SeedIfEmpty(sctx, cfg.seed)
		if seeded {
			log.Info("seeded demo orders", "orders", wrote, "seconds", time.Since(start).Seconds())
		}
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("seeding: %w", err)
		}
	}

	app, err = routes.New(routes.Config{Store: st, Files: files, Logger: log,
		AllowedHosts: cfg.hosts, TrustedProxies: cfg.trustedProxies,
		EventHeartbeat: cfg.eventHeartbeat, MaxStreams: cfg.maxStreams, InFlight: inFlight, Metrics: metrics,
		BodyBudget: int64(cfg.bodyBudgetMiB) << 20, RenderCacheMiB: cmp.Or(cfg.renderCacheMiB, -1)})
	if err != nil {
		return nil, nil, err
	}
	return app, closeSt, nil
}

// refuseOpenDesk refuses to serve an open desk (protected mode: no account
// exists, so anyone who reaches it may do anything) on an address other
// than loopback, unless -open says to. The store is asked for a while
// (it may be starting); a store that never answers is refused too, since
// it cannot say the desk is closed.
func refuseOpenDesk(ctx context.Context, cfg config, st store.Users, log *slog.Logger) error {
	if cfg.open || loopback(cfg.addr) {
		if cfg.open && !loopback(cfg.addr) {
			log.Warn("-open: while no account exists, anyone who reaches this address may do anything", "addr", cfg.addr)
		}
		return nil
	}
	deadline := time.Now().Add(openDeskWait)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		has, err := st.HasUsers(cctx)
		cancel()
		switch {
		case err == nil && has:
			return nil
		case err == nil:
			return fmt.Errorf("no account exists yet, so the desk would be open to anyone who reaches %s: "+
				"make an admin account first (ORDERS_ADMIN=name:password, or orders user add NAME -role admin), "+
				"listen on a loopback address (-addr 127.0.0.1:3000), or give -open to serve it open anyway", cfg.addr)
		case time.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Errorf("cannot tell whether any account exists (%v), so the desk might be open to anyone who reaches %s: "+
				"start once the store answers, listen on a loopback address, or give -open", err, cfg.addr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// openDeskWait is how long refuseOpenDesk waits for the store to answer.
const openDeskWait = 10 * time.Second

// loopback reports whether the listen address addr ("host:port") can be
// reached only from this machine: a 127.0.0.0/8 or ::1 address, or
// localhost. An empty host listens on every address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// adminWait is how long the start waits for Redis to take ORDERS_ADMIN's
// account: the service does not answer while the desk could still be
// open to everyone against the operator's wish.
const adminWait = 30 * time.Second

// ensureAdmin makes ORDERS_ADMIN's account an enabled admin with its
// password, trying again every second while Redis does not answer (at
// most adminWait).
func ensureAdmin(ctx context.Context, st *redisstore.Store, a *adminAccount, log *slog.Logger) error {
	actx := store.WithActor(ctx, "ORDERS_ADMIN", "start")
	deadline := time.Now().Add(adminWait)
	for {
		u, err := st.EnsureAdmin(actx, a.name, a.password)
		if err == nil {
			log.Info("ORDERS_ADMIN: the account is an enabled admin", "name", u.Name, "id", u.ID)
			return nil
		}
		if store.ErrorCode(err) != store.EUNAVAILABLE || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("ORDERS_ADMIN: %w", err)
		}
		log.Warn("ORDERS_ADMIN: Redis does not answer yet; trying again in a second", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// runUser is the user subcommand: "user add NAME -role ROLE" makes an
// account with the password read from stdin (one line), against the
// Redis the server is configured with (-redis, REDIS_URL; the embedded
// store's -data file when none, which only a stopped server leaves free).
func runUser(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) (err error) {
	const usage = "usage: orders user add NAME -role viewer|clerk|manager|admin [-redis URL] [-data FILE] < password"
	if len(args) == 0 || args[0] != "add" {
		return errors.New(usage)
	}
	args = args[1:]
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	env := func(v, def string) string {
		if s, ok := lookupEnv(v); s != "" || ok && v == "DATA_FILE" {
			return s
		}
		return def
	}
	fl := flag.NewFlagSet("orders user add", flag.ContinueOnError)
	fl.SetOutput(stderr)
	role := fl.String("role", "", "the account's role: viewer, clerk, manager or admin (the first account must be an admin)")
	var cfg config
	fl.StringVar(&cfg.redis, "redis", env("REDIS_URL", ""), "the server's Redis, as its -redis (env REDIS_URL)")
	fl.StringVar(&cfg.data, "data", env("DATA_FILE", "data/orders.json"), "the embedded store's snapshot file, as the server's -data; the server must be stopped (env DATA_FILE)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if name == "" && fl.NArg() > 0 {
		name = fl.Arg(0)
	} else if fl.NArg() > 0 {
		return fmt.Errorf("unexpected %q; %s", fl.Arg(0), usage)
	}
	if name == "" {
		return errors.New("the account's name is missing; " + usage)
	}
	if *role == "" {
		return errors.New("-role is required: viewer, clerk, manager or admin; " + usage)
	}
	var password string
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// Typed at a terminal: asked for, and not shown.
		fmt.Fprintf(stderr, "password for %s (at least %d characters): ", store.FoldUserName(name), store.MinPassword)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return fmt.Errorf("reading the password: %w", err)
		}
		password = string(b)
	} else if password, err = readPasswordLine(stdin); err != nil {
		return err
	}
	if _, errs := store.ApplyUser(nil, store.UserInput{Name: &name, Role: role, Password: &password}); errs != nil {
		for _, f := range []string{"name", "role", "password"} {
			if msg := errs[f]; msg != "" {
				return fmt.Errorf("the %s %s", f, msg)
			}
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, closeStore, err := openStore(cfg, nil, log, stderr)
	if err != nil {
		if cfg.redis == "" {
			return fmt.Errorf("%w (the embedded store %s can only be changed while the server is stopped: run this with the server's -redis, or use the Users page)", err, cfg.data)
		}
		return err
	}
	defer closeAndKeep(closeStore, &err)
	cctx, cancel := context.WithTimeout(store.WithActor(ctx, "orders user add", "cli"), 30*time.Second)
	defer cancel()
	u, err := st.CreateUser(cctx, store.UserInput{Name: &name, Role: role, Password: &password})
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) && len(se.Fields) > 0 {
			for f, msg := range se.Fields {
				return fmt.Errorf("the %s %s", f, msg)
			}
		}
		return err
	}
	fmt.Fprintf(stdout, "made user %d, %s (%s)\n", u.ID, u.Name, u.Role)
	return nil
}

// readPasswordLine reads one line from r: the password, without its line
// end. Nothing past the first line is read, and a line far longer than
// any password is refused rather than read whole.
func readPasswordLine(r io.Reader) (string, error) {
	buf := make([]byte, 0, 64)
	one := make([]byte, 1)
	for {
		n, err := r.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				break
			}
			if len(buf) > store.MaxPassword+1 {
				return "", fmt.Errorf("the password must be at most %d bytes", store.MaxPassword)
			}
			buf = append(buf, one[0])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("reading the password from stdin: %w", err)
		}
	}
	pw := strings.TrimSuffix(string(buf), "\r")
	if pw == "" {
		return "", errors.New("no password on stdin: give it as one line, e.g. printf '%s\\n' \"$PASSWORD\" | orders user add NAME -role ROLE")
	}
	return pw, nil
}

// embeddedIOTimeout bounds a read of the embedded store's answer.
const embeddedIOTimeout = 5 * time.Second

// openStore opens the configured Redis (openRedis) and the store over it,
// and shows metrics (when not nil) the Redis client's pool and the
// embedded store's files.
func openStore(cfg config, metrics *routes.Metrics, log *slog.Logger, stderr io.Writer) (*redisstore.Store, func() error, error) {
	rdb, cluster, health, closeRedis, err := openRedis(cfg, metrics, log, stderr)
	if err != nil {
		return nil, nil, err
	}
	if err := metrics.RegisterRedisPool(rdb); err != nil {
		_ = closeRedis()
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	return redisstore.New(rdb, redisstore.Options{Cluster: cluster, Logger: log, Health: health}), closeRedis, nil
}

// serveMetrics serves metrics at /metrics on addr, a listener of its own
// (nothing else is served there, and nothing there is counted), until
// stop is called.
func serveMetrics(addr string, metrics *routes.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving metrics", "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { _ = srv.Close() }, nil
}

// repair runs Store.Repair over the whole collection and prints what it
// found and fixed. It exits non-zero only when it could not finish.
func repair(ctx context.Context, st *redisstore.Store, stdout io.Writer) error {
	start := time.Now()
	r, err := st.Repair(ctx, true)
	fmt.Fprintf(stdout, "orders -repair: %v in %v\n", r, time.Since(start).Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("repair stopped: %w", err)
	}
	return nil
}

// servePprof serves net/http/pprof on addr, with mutex and block profiles,
// for bench/run.sh. It is off unless ORDERS_PPROF names an address: keep that
// address on loopback.
func servePprof(addr string, log *slog.Logger) {
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(100_000)
	go func() { log.Error("pprof", "err", http.ListenAndServe(addr, nil)) }()
	log.Info("serving pprof", "addr", addr)
}

// openRedis connects to the configured Redis, or starts the embedded one.
// It returns the client, whether it is a Cluster, a health check for the
// store's readiness (the embedded store's snapshots; nil otherwise), and a
// function that closes it (and for the embedded store writes the last
// snapshot, returning its error).
func openRedis(cfg config, metrics *routes.Metrics, log *slog.Logger, stderr io.Writer) (redis.UniversalClient, bool, func() error, func() error, error) {
	switch {
	case cfg.redis == "":
		o := &redis.Options{}
		redisstore.Deadlines(o)
		// The embedded store answers a write once its log is on disk: a
		// disk busy for a moment (a machine under load) delays the answer
		// without anything being wrong, and a write answered as failed
		// that then lands is worse than a slow one. A request's own
		// deadline still bounds it (ContextTimeoutEnabled).
		o.ReadTimeout = embeddedIOTimeout
		e, err := embedded.Open(embedded.Options{Path: cfg.data, Interval: cfg.snapshotEvery, Log: log, Stderr: stderr}, o)
		if err != nil {
			return nil, false, nil, nil, err
		}
		log.Info("using the embedded store", "data", cfg.data)
		if err := metrics.RegisterEmbedded(e.Stats); err != nil {
			_ = e.Close()
			return nil, false, nil, nil, fmt.Errorf("metrics: %w", err)
		}
		return e.Client(), false, e.Health, func() error {
			if err := e.Close(); err != nil {
				return fmt.Errorf("writing the last snapshot %s: %w", cfg.data, err)
			}
			return nil
		}, nil
	case strings.Contains(cfg.redis, ","):
		addrs := splitList(cfg.redis)
		opt := &redis.ClusterOptions{Addrs: addrs}
		redisstore.ClusterDeadlines(opt)
		rdb, closeCluster := redisstore.NewClusterClient(opt)
		log.Info("using Redis Cluster", "nodes", addrs)
		return rdb, true, nil, closeCluster, nil
	default:
		// A URL, or one bare host:port: a single Redis at that address.
		url := cfg.redis
		if !strings.Contains(url, "://") {
			url = "redis://" + url
		}
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, false, nil, nil, fmt.Errorf("-redis: %w", err)
		}
		redisstore.Deadlines(o)
		rdb := redis.NewClient(o)
		if clusterNode(rdb) {
			rdb.Close()
			return nil, false, nil, nil, fmt.Errorf("-redis %s is a node of a Redis Cluster: list the Cluster's nodes separated by commas (one node: end it with a comma)", cfg.redis)
		}
		log.Info("using Redis", "addr", o.Addr, "db", o.DB)
		return rdb, false, nil, rdb.Close, nil
	}
}

// clusterNode reports whether rdb answers as a node of a Redis Cluster. A
// plain client to one would get MOVED for most keys: that is refused at
// start instead. A Redis that does not answer within half a second is not
// taken for one (the app starts and answers 503 until it does).
func clusterNode(rdb *redis.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	info, err := rdb.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}
