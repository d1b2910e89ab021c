// Package e2e tries to break the promises "Never lose an order,
// never let a stranger in") from the outside: the built binary as a
// subprocess on its own redis-server, and the application in process for
// the request-level checks. It holds tests only.
package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"orders/routes"
	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := testutil.Run(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// appBinary builds the application once per test run and returns its path.
func appBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "orders-e2e-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "orders")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", buildBin, ".")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		fmt.Printf("e2e: built the app in %v\n", time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatalf("building the app: %v", buildErr)
	}
	return buildBin
}

// redisServerPath returns redis-server's path, or skips (fails with
// ORDERS_REQUIRE_REDIS=1) when it is not installed.
func redisServerPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("ORDERS_REQUIRE_REDIS") == "1" {
			t.Fatalf("*** redis-server is not installed (%v), and ORDERS_REQUIRE_REDIS=1 ***", err)
		}
		testutil.Skip(t, testutil.NoRedisServer)
	}
	return p
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// proc is a subprocess the test started; it is killed when the test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *testutil.SyncBuffer
	exited chan struct{}
	err    error // valid after exited is closed
}

func startProc(t testing.TB, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, out: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process (it must still run).
func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if !p.running() {
		t.Fatalf("%s exited before %v (%v); its output:\n%s", p.name, sig, p.err, tail(p.out.String(), 20))
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v to %s: %v", sig, p.name, err)
	}
}

// kill sends SIGKILL (and SIGCONT, should it be stopped) and waits for the
// process to end.
func (p *proc) kill() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// redisServer is a redis-server of the test's own on a loopback port.
type redisServer struct {
	*proc
	port int
}

func (r *redisServer) url() string { return "redis://127.0.0.1:" + strconv.Itoa(r.port) + "/0" }
func (r *redisServer) addr() string {
	return "127.0.0.1:" + strconv.Itoa(r.port)
}

// startRedis starts redis-server on port (a free one when 0), without
// persistence, and waits until it answers PING.
func startRedis(t testing.TB, port int) *redisServer {
	t.Helper()
	bin := redisServerPath(t)
	if port == 0 {
		port = freePort(t)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no")
	r := &redisServer{proc: startProc(t, "redis-server :"+strconv.Itoa(port), cmd), port: port}
	c := redis.NewClient(&redis.Options{Addr: r.addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return r
		}
		if !r.running() || time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer PING (%v); its output:\n%s", port, err, tail(r.out.String(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client returns a go-redis client to r for the test's own checks.
func (r *redisServer) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.addr(), DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// appServer is the built binary, serving on its own port over a redis URL.
type appServer struct {
	*proc
	base string // http://127.0.0.1:port
}

// startApp runs the binary with -addr and -redis (empty: the embedded
// store, keeping nothing) and waits until /healthz answers. env adds
// variables ("ORDERS_ADMIN=name:password").
func startApp(t testing.TB, redisURL string, env ...string) *appServer {
	t.Helper()
	return startAppVia(t, nil, redisURL, env...)
}

// startAppVia is startApp with the binary started through a command (prlimit
// and its arguments), or directly when via is empty.
func startAppVia(t testing.TB, via []string, redisURL string, env ...string) *appServer {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	argv := append(append(via, appBinary(t)), "-addr", addr, "-redis", redisURL, "-data", "")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = appEnv(env...)
	a := &appServer{proc: startProc(t, "app "+addr, cmd), base: "http://" + addr}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := quick.Get(a.base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return a
			}
		}
		if !a.running() || time.Now().After(deadline) {
			t.Fatalf("the app on %s did not answer /healthz (%v); its output:\n%s", addr, err, tail(a.out.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// appEnv is the test's environment without the app's own variables (the
// flags set what matters; ORDERS_ADMIN would make an account).
func appEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "ADDR", "REDIS_URL", "DATA_FILE", "SEED", "ORDERS_ADMIN", "ALLOWED_HOSTS", "TRUSTED_PROXIES", "MAX_CONNS", "MAX_CONNS_PER_IP", "BODY_BUDGET":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// quick polls /healthz.
var quick = &http.Client{Timeout: 500 * time.Millisecond}

// call sends one request to the app subprocess at base; err is a transport
// error.
func call(base, method, path, ctype string, body []byte, h testutil.H) (*testutil.Resp, error) {
	return testutil.Over(base).Send(method, path, testutil.Body{Type: ctype, Data: body}, h)
}

// mustCall is call that fails the test on a transport error.
func mustCall(t testing.TB, base, method, path, ctype string, body []byte, h testutil.H) *testutil.Resp {
	t.Helper()
	return testutil.Over(base).Do(t, method, path, testutil.Body{Type: ctype, Data: body}, h)
}

func jsonOf(v any) []byte { return testutil.JSON(v).Data }

// orderJSON is an order as the JSON representation shows it.
type orderJSON struct {
	ID       int64  `json:"id"`
	Customer string `json:"customer"`
	// CustomerID is the linked customer (0: none).
	CustomerID int64       `json:"customer_id"`
	Status     string      `json:"status"`
	Items      []itemJSON  `json:"items"`
	ItemCount  int         `json:"item_count"`
	Total      store.Money `json:"total"`
	Version    int64       `json:"version"`
}

type itemJSON struct {
	SKU       string      `json:"sku"`
	Name      string      `json:"name"`
	Quantity  int64       `json:"quantity"`
	UnitPrice store.Money `json:"unit_price"`
	LineTotal store.Money `json:"line_total"`
}

type listJSON struct {
	Orders  []orderJSON `json:"orders"`
	Page    int         `json:"page"`
	PerPage int         `json:"per_page"`
	Total   int64       `json:"total"`
	Next    *string     `json:"next"`
}

// inProcess is the application over rdb, for app.Test: routes.New as
// main.go calls it, with the repository's copy of the embedded files.
func inProcess(t testing.TB, rdb redis.UniversalClient) *fiber.App {
	t.Helper()
	app, err := routes.New(routes.Config{
		Store:        redisstore.New(rdb, redisstore.Options{}),
		Files:        testutil.Files(t),
		Logger:       testutil.Logger(t),
		AllowedHosts: []string{testutil.Host},
	})
	if err != nil {
		t.Fatalf("routes.New: %v", err)
	}
	return app
}

// figure prints a measured figure and, when ORDERS_FIGURES names a file,
// appends it there, so .ci/run can show the figures of passing tests
// (go test prints a passing package's output only with -v).
func figure(line string) {
	fmt.Println(line)
	if path := os.Getenv("ORDERS_FIGURES"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// matchesSearch is the documented search of one list row, written plainly
// for the checks here: every space-separated part of q, its words (split at
// anything but letters and digits: "3-1" is "3 1", "o'b" is "o b") in a
// row, is the row's id or the start of the customer's words from one of
// them on (case and accents folded). The rows these tests make carry no
// email and no SKU a query here starts.
func matchesSearch(o orderJSON, q string) bool {
	sep := func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }
	words := strings.FieldsFunc(foldText(o.Customer), sep)
	for _, part := range strings.Fields(foldText(q)) {
		t := strings.Join(strings.FieldsFunc(part, sep), " ")
		if t == "" {
			continue
		}
		ok := strconv.FormatInt(o.ID, 10) == t
		for i := range words {
			ok = ok || strings.HasPrefix(strings.Join(words[i:], " "), t)
		}
		if !ok {
			return false
		}
	}
	return true
}

// foldText lower-cases s and drops its combining marks ("Émile" → "emile").
func foldText(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		out = s
	}
	return strings.ToLower(out)
}
