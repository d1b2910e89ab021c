package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"orders/store/redisstore"
	"orders/testutil"
)

const (
	deskUser     = "desk"
	deskPassword = "s3cret:x-long-enough"
)

// settableClock is a store clock a test moves.
type settableClock struct{ ns atomic.Int64 }

func newSettableClock() *settableClock {
	c := &settableClock{}
	c.ns.Store(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *settableClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *settableClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// syncBuffer is a log destination tests read while the app writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// signInApp is an application with the admin account deskUser behind a
// trusted proxy (app.Test's requests come from 0.0.0.0), over tg's Redis
// under its prefix, on clock; its log lines go to logs.
func signInApp(t *testing.T, tg testutil.Target, clock *settableClock, logs io.Writer) *fiber.App {
	t.Helper()
	st := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster, Now: clock.Now})
	if _, err := st.EnsureAdmin(context.Background(), deskUser, deskPassword); err != nil {
		t.Fatal(err)
	}
	return newTestApp(t, tg.Name, st, func(c *Config) {
		c.TrustedProxies = []string{"0.0.0.0"}
		// A burst of sign-ins waits its turn for the password hashes
		// (argon2id, a few at once): time enough for all of it.
		c.RequestTimeout = 20 * time.Second
		if logs != nil {
			c.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, testLogWriter{t}), nil))
		}
	}).app
}

type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// signIn sends the sign-in form with user and password (forwarded for
// the client at addr by the trusted proxy) and accept, and returns the
// answer: 303 signed in, 422 refused, 429 throttled.
func signIn(t *testing.T, app *fiber.App, forwardedFor, user, password, accept string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("POST", sessionPath, strings.NewReader(url.Values{"name": {user}, "password": {password}}.Encode()))
	req.Host = testutil.Host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// want429 checks a refusal by a limit: 429, Retry-After (whole seconds,
// at most max), the security headers, and the body in the representation
// asked for.
func want429(t *testing.T, what string, resp *http.Response, max time.Duration, json bool) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s: got %d, want 429", what, resp.StatusCode)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > max {
		t.Errorf("%s: Retry-After %q, want whole seconds from 1 to %v", what, resp.Header.Get("Retry-After"), max.Seconds())
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("%s: the 429 has no %s", what, h)
		}
	}
	if resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("%s: the 429 asks for credentials (WWW-Authenticate): a browser would prompt again", what)
	}
	body, _ := io.ReadAll(resp.Body)
	ct := resp.Header.Get("Content-Type")
	if json {
		var e struct{ Error string }
		if !strings.HasPrefix(ct, "application/json") || jsonUnmarshal(body, &e) != nil || !strings.Contains(e.Error, "try again") {
			t.Errorf("%s: %s %q, want JSON whose error says when to try again", what, ct, body)
		}
	} else if !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(body), "try again") {
		t.Errorf("%s: %s %q, want a page that says when to try again", what, ct, testutil.Snippet(string(body)))
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestWrongPasswordsFromOneAddressGet429EvenWithTheRightOne(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			clock := newSettableClock()
			app := signInApp(t, tg, clock, nil)
			for i := range 10 {
				// The client writes whatever it likes left of the address
				// the proxy appends: it changes nothing.
				if r := signIn(t, app, "10.9.8."+strconv.Itoa(i)+", 192.0.2.1", deskUser, "guess"+strconv.Itoa(i), "application/json"); r.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("wrong password %d: %d, want 422", i+1, r.StatusCode)
				}
				clock.Advance(10 * time.Second)
			}
			want429(t, "11th wrong password", signIn(t, app, "192.0.2.1", deskUser, "guess11", "application/json"), 10*time.Minute, true)
			want429(t, "the right password after 10 wrong ones", signIn(t, app, "192.0.2.1", deskUser, deskPassword, ""), 10*time.Minute, false)
			if r := signIn(t, app, "192.0.2.2", deskUser, deskPassword, ""); r.StatusCode != http.StatusSeeOther {
				t.Errorf("the right password from another address: %d, want 303", r.StatusCode)
			}
			// The first failure leaves the 10-minute window 100 s from the
			// window's end; a second before, still refused.
			clock.Advance(10*time.Minute - 100*time.Second - time.Second)
			if r := signIn(t, app, "192.0.2.1", deskUser, deskPassword, ""); r.StatusCode != http.StatusTooManyRequests {
				t.Errorf("a second before the window passes: %d, want 429", r.StatusCode)
			}
			clock.Advance(time.Second)
			if r := signIn(t, app, "192.0.2.1", deskUser, deskPassword, ""); r.StatusCode != http.StatusSeeOther {
				t.Errorf("once the window passed: %d, want 303", r.StatusCode)
			}
		})
	}
}

func TestRefusedSignInsAreLoggedWithTheClientAddressAndUserName(t *testing.T) {
	logs := &syncBuffer{}
	app := signInApp(t, testutil.Miniredis(t), newSettableClock(), logs)
	lineOf := func(what string) string {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, what) {
				return l
			}
		}
		return ""
	}
	for range 11 {
		signIn(t, app, "192.0.2.1", deskUser, "guess-"+deskPassword, "")
	}
	for _, what := range []string{"sign-in failed", "sign-in throttled"} {
		line := lineOf(what)
		if !strings.Contains(line, "client=192.0.2.1") || !strings.Contains(line, "user="+deskUser) || strings.Contains(line, deskPassword) {
			t.Errorf("the %q log line %q: want client=192.0.2.1 and user=%s, and never the password", what, line, deskUser)
		}
	}
}

func TestForwardedForIsBelievedOnlyFromATrustedProxy(t *testing.T) {
	st := testutil.NewStore(t, testutil.Miniredis(t))
	if _, err := st.EnsureAdmin(context.Background(), deskUser, deskPassword); err != nil {
		t.Fatal(err)
	}
	app := newTestApp(t, "miniredis", st).app
	// Not a trusted proxy: every request is the peer's, whatever it says.
	for i := range 10 {
		if r := signIn(t, app, "192.0.2."+strconv.Itoa(i+1), deskUser, "guess", ""); r.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("wrong password %d: %d, want 422", i+1, r.StatusCode)
		}
	}
	if r := signIn(t, app, "192.0.2.99", deskUser, deskPassword, ""); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("an 11th attempt naming yet another address: %d, want 429 (X-Forwarded-For from an untrusted peer names nothing)", r.StatusCode)
	}
}

func TestWrongPasswordsForOneAccountFromManyAddressesGet429(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			if tg.Name != "miniredis" {
				// Each of its 50 failures hashes a password (argon2id):
				// one target is enough for the quick run.
				testutil.Long(t)
			}
			app := signInApp(t, tg, newSettableClock(), nil)
			for i := range 50 {
				addr := "198.51.100." + strconv.Itoa(i/5+1) // 5 failures per address, under its limit
				if r := signIn(t, app, addr, deskUser, "guess"+strconv.Itoa(i), ""); r.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("wrong password %d from %s: %d, want 422", i+1, addr, r.StatusCode)
				}
			}
			want429(t, "the right password from a fresh address after 50 failures as the account", signIn(t, app, "203.0.113.9", deskUser, deskPassword, "application/json"), time.Hour, true)
			if r := signIn(t, app, "203.0.113.9", "clerk", "guess", ""); r.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("another user name from that address: %d, want 422", r.StatusCode)
			}
		})
	}
}

func TestSignInFailuresAreCountedAcrossInstances(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			clock := newSettableClock()
			apps := []*fiber.App{signInApp(t, tg, clock, nil), signInApp(t, tg, clock, nil)}
			for i := range 10 {
				if r := signIn(t, apps[i%2], "192.0.2.1", deskUser, "guess", ""); r.StatusCode != http.StatusUnprocessableEntity {
					t.Fatalf("wrong password %d on instance %d: %d, want 422", i+1, i%2+1, r.StatusCode)
				}
			}
			for i, app := range apps {
				if r := signIn(t, app, "192.0.2.1", deskUser, deskPassword, ""); r.StatusCode != http.StatusTooManyRequests {
					t.Errorf("instance %d after 5 failures on each: %d, want 429", i+1, r.StatusCode)
				}
			}
		})
	}
}

func TestSignInIs503WhenTheLimitsCannotBeRead(t *testing.T) {
	mr := miniredis.RunT(t)
	o := &redis.Options{Addr: mr.Addr()}
	redisstore.Deadlines(o)
	rc := redis.NewClient(o)
	t.Cleanup(func() { rc.Close() })
	st := redisstore.New(rc, redisstore.Options{})
	if _, err := st.EnsureAdmin(context.Background(), deskUser, deskPassword); err != nil {
		t.Fatal(err)
	}
	app := newTestApp(t, "miniredis", st).app
	mr.Close()
	r := signIn(t, app, "", deskUser, deskPassword, "application/json")
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("the right password while Redis is down: %d, Retry-After %q; want 503 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}
}

func TestLiveStreamsPerAddressAreCappedAcrossInstances(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			behindProxy := func(c *Config) { c.TrustedProxies = []string{"127.0.0.1"} }
			var lives []*liveApp
			for i := range 2 {
				st := redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster})
				lives = append(lives, serveLive(t, "instance"+strconv.Itoa(i+1), st, behindProxy))
			}
			from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
			var open []*testutil.SSE
			for i := range 32 {
				s := testutil.OpenSSE(t, lives[i%2].base, "/orders/events", from("192.0.2.1"))
				if s.Resp.StatusCode != http.StatusOK {
					t.Fatalf("stream %d from one address: %s, want 200", i+1, s.Resp.Status)
				}
				open = append(open, s)
			}
			for i, l := range lives {
				s := testutil.OpenSSE(t, l.base, "/orders/events", from("192.0.2.1"))
				r := s.Resp
				if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || r.Header.Get("Content-Security-Policy") == "" {
					t.Errorf("a 33rd stream from one address on instance %d: %s, Retry-After %q, CSP %q; want 429 with Retry-After and the security headers",
						i+1, r.Status, r.Header.Get("Retry-After"), r.Header.Get("Content-Security-Policy"))
				}
				s.Close()
			}
			if s := testutil.OpenSSE(t, lives[0].base, "/orders/events", from("192.0.2.2")); s.Resp.StatusCode != http.StatusOK {
				t.Errorf("a stream from another address: %s, want 200", s.Resp.Status)
			}
			open[0].Close()
			deadline := time.Now().Add(3 * time.Second)
			for {
				s, err := testutil.DialSSE(lives[1].base, "/orders/events", from("192.0.2.1"))
				if err != nil {
					t.Fatal(err)
				}
				code := s.Resp.StatusCode
				s.Close()
				if code == http.StatusOK {
					break
				}
				if code != http.StatusTooManyRequests || time.Now().After(deadline) {
					t.Fatalf("after one of the address's streams closed: %d, want 200 within 3 s", code)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func TestClientAddressIsTheNearestUntrustedForwardedFor(t *testing.T) {
	ps := newProxies([]string{"0.0.0.0", "10.0.0.0/8", "2001:db8:ffff::/48"})
	app := fiber.New()
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(ps.clientAddr(c)) })
	for _, c := range []struct {
		forwarded []string // header lines
		want      string
	}{
		{nil, "0.0.0.0"},
		{[]string{"192.0.2.1"}, "192.0.2.1"},
		{[]string{"6.6.6.6, 192.0.2.1"}, "192.0.2.1"},           // the client wrote 6.6.6.6
		{[]string{"6.6.6.6, 192.0.2.1, 10.1.2.3"}, "192.0.2.1"}, // two trusted hops
		{[]string{"6.6.6.6", "192.0.2.1"}, "192.0.2.1"},         // two header lines
		{[]string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},            // every hop trusted
		{[]string{"garbage, 192.0.2.1"}, "192.0.2.1"},
		{[]string{"192.0.2.1, garbage"}, "0.0.0.0"},
		{[]string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{[]string{"2001:db8::7, 2001:db8:ffff::1"}, "2001:db8::7"},
		{[]string{"192.0.2.1:4711"}, "192.0.2.1"},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		for _, v := range c.forwarded {
			req.Header.Add("X-Forwarded-For", v)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != c.want {
			t.Errorf("X-Forwarded-For %q from a trusted proxy: client %q, want %q", c.forwarded, got, c.want)
		}
	}
	// From a peer that is no trusted proxy the header means nothing.
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-Forwarded-For", "192.0.2.1")
	app2 := fiber.New()
	none := newProxies([]string{"10.0.0.0/8"})
	app2.Get("/", func(c *fiber.Ctx) error { return c.SendString(none.clientAddr(c)) })
	resp, err := app2.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(resp.Body); string(got) != "0.0.0.0" {
		t.Errorf("X-Forwarded-For from an untrusted peer: client %q, want the peer 0.0.0.0", got)
	}
}

func TestAtMostTheLimitOfConcurrentWrongPasswordsReachThePasswordCheck(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			if tg.Name != "miniredis" {
				// Each of its 50 failures hashes a password (argon2id):
				// one target is enough for the quick run.
				testutil.Long(t)
			}
			app := signInApp(t, tg, newSettableClock(), nil)
			// Guesses sent all at once, as a guesser with many connections
			// does: a 422 says a guess was checked and wrong.
			burst := func(n int, forwardedFor func(i int) string) map[int]int {
				var mu sync.Mutex
				var wg sync.WaitGroup
				got := map[int]int{}
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := signIn(t, app, forwardedFor(i), deskUser, "guess"+strconv.Itoa(i), "")
						mu.Lock()
						got[r.StatusCode]++
						mu.Unlock()
					}()
				}
				wg.Wait()
				return got
			}
			got := burst(60, func(int) string { return "192.0.2.50" })
			if got[http.StatusUnprocessableEntity] != 10 || got[http.StatusTooManyRequests] != 50 {
				t.Errorf("60 wrong passwords at once from one address: %v, want 10 checked (422) and 50 refused (429)", got)
			}
			// 60 at once from 60 fresh addresses: the account's limit holds
			// too (10 of its 50 failures were counted above).
			got = burst(60, func(i int) string { return "198.51.100." + strconv.Itoa(i+1) })
			if got[http.StatusUnprocessableEntity] != 40 || got[http.StatusTooManyRequests] != 20 {
				t.Errorf("60 wrong passwords at once as one account from 60 addresses, after 10: %v, want 40 checked (422) and 20 refused (429)", got)
			}
		})
	}
}
