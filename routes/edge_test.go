package routes

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store/redisstore"
	"orders/testutil"
)

// behindProxy is the application as a trusted proxy reaches it: app.Test's
// requests come from 0.0.0.0.
func behindProxy(c *Config) { c.TrustedProxies = []string{"0.0.0.0"} }

func TestEveryHostARequestNamesIsChecked(t *testing.T) {
	st := testutil.NewStore(t, testutil.Miniredis(t))
	const allowed, foreign = testutil.Host, "rebound.evil.test"
	for _, c := range []struct {
		name    string
		trusted bool
		host    string
		fwd     string // X-Forwarded-Host; "" sends none
		want    int
	}{
		// From a client that is not a trusted proxy, X-Forwarded-Host is
		// nobody's word: it changes nothing.
		{"a client: allowed Host", false, allowed, "", 200},
		{"a client: foreign Host", false, foreign, "", 421},
		{"a client: allowed Host, foreign forwarded", false, allowed, foreign, 200},
		{"a client: foreign Host, allowed forwarded", false, foreign, allowed, 421},
		// From a trusted proxy every name must be one the server answers to.
		{"a proxy: allowed Host", true, allowed, "", 200},
		{"a proxy: allowed both", true, allowed, allowed + ":443", 200},
		{"a proxy: foreign Host", true, foreign, "", 421},
		{"a proxy: allowed Host, foreign forwarded", true, allowed, foreign, 421},
		{"a proxy: foreign Host, allowed forwarded", true, foreign, allowed, 421},
		{"a proxy: foreign both", true, foreign, foreign, 421},
		{"a proxy: a forwarded list with a foreign name", true, allowed, allowed + ", " + foreign, 421},
		{"a proxy: IP literals", true, "127.0.0.1:3000", "[::1]:8080", 200},
		// A name the server answers to is letters, digits, hyphens, dots and
		// underscores.
		{"a client: a .localhost name", false, "app.localhost", "", 200},
		{"a client: not a name, ending in .localhost", false, "evil.example#.localhost", "", 421},
		{"a proxy: forwarded, not a name, ending in .localhost", true, allowed, "evil.example/.localhost", 421},
	} {
		more := []func(*Config){}
		if c.trusted {
			more = append(more, behindProxy)
		}
		a := newTestApp(t, "miniredis", st, more...)
		h := testutil.HJSON.With(testutil.H{"Host": c.host})
		if c.fwd != "" {
			h = h.With(testutil.H{"X-Forwarded-Host": c.fwd})
		}
		r := a.get(t, "/orders", h)
		if r.Status != c.want {
			t.Errorf("%s (%s): got %d, want %d; body %s", c.name, r.What, r.Status, c.want, testutil.Snippet(r.Body))
		}
	}
}

// exchangeRaw writes raw to addr and reads until the server closes the
// connection or 3 s pass.
func exchangeRaw(t *testing.T, addr, raw string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(conn)
	return string(got)
}

// readResponse reads one response from raw bytes.
func readResponse(t *testing.T, what, raw string) *http.Response {
	t.Helper()
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("%s: no response (%v): %q", what, err, testutil.Snippet(raw))
	}
	return res
}

func TestTwoHostHeadersAreRefused(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	addr := testutil.Serve(t, a.app)
	// The host of an absolute request target counts as well.
	res := readResponse(t, "an absolute target", exchangeRaw(t, addr, "GET http://rebound.evil.test/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nConnection: close\r\n\r\n"))
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET http://rebound.evil.test/orders with Host 127.0.0.1: got %d, want 421", res.StatusCode)
	}
	for _, hosts := range [][2]string{{"rebound.evil.test", "127.0.0.1"}, {"127.0.0.1", "rebound.evil.test"}, {"127.0.0.1", "127.0.0.1"}} {
		raw := "GET /orders HTTP/1.1\r\nHost: " + hosts[0] + "\r\nHost: " + hosts[1] + "\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
		got := exchangeRaw(t, addr, raw)
		res := readResponse(t, "two Host headers", got)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 400 || !strings.Contains(string(body), "Host") {
			t.Errorf("Host %s then Host %s: got %d %s, want 400 saying a request names one Host", hosts[0], hosts[1], res.StatusCode, testutil.Snippet(string(body)))
		}
	}
}

// wantSecurityHeaders fails the test when a response lacks one of the
// headers every response carries.
func wantSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, want := range map[string]string{"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %s %q, want %q", what, k, got, want)
		}
	}
}

func TestRefusalsCarryTheSecurityHeaders(t *testing.T) {
	st := testutil.NewStore(t, testutil.Miniredis(t))
	a := newTestApp(t, "miniredis", st)
	o := a.createNamed(t, "Refused")
	authed := peopleApp(t)
	mib := strings.Repeat("x", MaxBody)
	for _, c := range []struct {
		app    *testApp
		method string
		path   string
		b      testutil.Body
		h      testutil.H
		want   int
	}{
		{a, http.MethodPost, "/orders", testutil.Raw("application/json", "{"), testutil.HJSON, 400},
		{a, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "x"}), testutil.HJSON.With(testutil.H{"Sec-Fetch-Site": "cross-site"}), 403},
		{a, http.MethodPost, "/orders", testutil.Form("customer", "Big", "notes", mib), testutil.HPage, 413},
		{a, http.MethodGet, "/orders", testutil.NoBody, testutil.HPage.With(testutil.H{"Host": "rebound.evil.test"}), 421},
		{a, http.MethodGet, "/orders", testutil.NoBody, testutil.HJSON.With(testutil.H{"Host": "rebound.evil.test"}), 421},
		{a, http.MethodPost, "/orders", testutil.Raw("text/plain", "x"), testutil.HJSON, 415},
		{authed, http.MethodGet, "/orders", testutil.NoBody, testutil.HJSON, 401},
		{authed, http.MethodGet, "/orders", testutil.NoBody, bearer("a-guess", testutil.HJSON), 401},
		{authed, http.MethodGet, "/orders", testutil.NoBody, testutil.HHX, 401},
		{authed, http.MethodGet, "/orders", testutil.NoBody, testutil.HPage, 303},
		{authed, http.MethodPost, sessionPath, signInBody("admin", "wrong", ""), testutil.HPage, 422},
	} {
		r := c.app.do(t, c.method, c.path, c.b, c.h).WantStatus(t, c.want)
		wantSecurityHeaders(t, r.What, r.Header)
	}

	// Redis down: 503.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	down := newTestApp(t, "down", redisstore.New(rdb, redisstore.Options{}))
	r := down.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusServiceUnavailable)
	wantSecurityHeaders(t, r.What, r.Header)

	// What fasthttp refuses itself, before any middleware: headers larger
	// than its read buffer (431), a request it cannot parse (400).
	addr := testutil.Serve(t, a.app)
	for _, c := range []struct {
		name, raw string
		want      int
	}{
		{"headers over 4 KiB", "GET /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("y", 8<<10) + "\r\n\r\n", 431},
		{"a request line it cannot parse", "GET\r\n\r\n", 400},
		{"two Host headers", "GET /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n", 400},
	} {
		res := readResponse(t, c.name, exchangeRaw(t, addr, c.raw))
		if res.StatusCode != c.want {
			t.Errorf("%s: got %d, want %d", c.name, res.StatusCode, c.want)
		}
		wantSecurityHeaders(t, c.name, res.Header)
	}
}

func TestHSTSAndSecureCookiesOnlyBehindATrustedHTTPSProxy(t *testing.T) {
	st := testutil.NewStore(t, testutil.Miniredis(t))
	direct, proxied := newTestApp(t, "miniredis", st), newTestApp(t, "miniredis", st, behindProxy)
	https := testutil.H{"X-Forwarded-Proto": "https"}
	for _, c := range []struct {
		name   string
		app    *testApp
		h      testutil.H
		secure bool
	}{
		{"a trusted proxy over https", proxied, https, true},
		{"a trusted proxy over http", proxied, testutil.H{"X-Forwarded-Proto": "http"}, false},
		{"a trusted proxy saying nothing", proxied, testutil.H{}, false},
		{"a client claiming https", direct, https, false},
	} {
		for _, r := range []*testutil.Resp{
			c.app.get(t, "/orders", testutil.HPage.With(c.h)).WantStatus(t, http.StatusOK),
			c.app.get(t, "/nothing-here", testutil.HJSON.With(c.h)).WantStatus(t, http.StatusNotFound),
			c.app.get(t, "/orders", testutil.HJSON.With(c.h).With(testutil.H{"Host": "rebound.evil.test"})).WantStatus(t, http.StatusMisdirectedRequest),
		} {
			hsts := r.Header.Get("Strict-Transport-Security")
			if c.secure {
				age, err := strconv.Atoi(strings.TrimPrefix(hsts, "max-age="))
				if err != nil || age < 180*24*3600 {
					t.Errorf("%s, %s: Strict-Transport-Security %q, want max-age of at least 180 days", c.name, r.What, hsts)
				}
			} else if hsts != "" {
				t.Errorf("%s, %s: Strict-Transport-Security %q, want none", c.name, r.What, hsts)
			}
		}
		// A plain form post sets the notice cookie; the next page clears it.
		r := c.app.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Cookie "+c.name), testutil.HPage.With(c.h)).WantStatus(t, http.StatusSeeOther)
		clear := c.app.get(t, "/orders", testutil.HPage.With(c.h).With(testutil.H{"Cookie": "notice=Saved."})).WantStatus(t, http.StatusOK)
		for _, sc := range []string{r.Header.Get("Set-Cookie"), clear.Header.Get("Set-Cookie")} {
			if sc == "" {
				t.Fatalf("%s: no Set-Cookie", c.name)
			}
			if got := strings.Contains(strings.ToLower(sc), "; secure"); got != c.secure {
				t.Errorf("%s: Set-Cookie %q: Secure %v, want %v", c.name, sc, got, c.secure)
			}
		}
	}
}

// serveListener serves app as main.go does, through a Listener (no caps),
// until the test ends, and returns its address.
func serveListener(t *testing.T, a *testApp) string {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewListener(tcp, ListenerOptions{Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	go a.app.Listener(ln)
	t.Cleanup(func() { _ = a.app.Shutdown() })
	return tcp.Addr().String()
}

func TestBodiesAreReadAsTheyArriveUpToOneMiB(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	addr := serveListener(t, a)
	post := func(headers, body string) (*http.Response, string) {
		raw := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nConnection: close\r\n" + headers + "\r\n" + body
		res := readResponse(t, "POST", exchangeRaw(t, addr, raw))
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	over := `{"customer":"Big","notes":"` + strings.Repeat("x", MaxBody) + `"}`
	chunked := func(s string) string {
		var b strings.Builder
		for len(s) > 0 {
			n := min(len(s), 64<<10)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", n, s[:n])
			s = s[n:]
		}
		return b.String() + "0\r\n\r\n"
	}
	for _, c := range []struct{ name, headers, body string }{
		{"1 MiB + 1 announced and sent", "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(MaxBody+1) + "\r\n", over[:MaxBody+1]},
		{"over 1 MiB in chunks", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", chunked(over)},
		{"3 MiB announced and sent", "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(3*MaxBody) + "\r\n", strings.Repeat("x", 3*MaxBody)},
		{"6 MiB in chunks", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", chunked(strings.Repeat("x", 6*MaxBody))},
	} {
		res, body := post(c.headers, c.body)
		if res.StatusCode != 413 || !strings.Contains(body, "1 MiB") {
			t.Errorf("%s: got %d %s, want 413 saying 1 MiB", c.name, res.StatusCode, testutil.Snippet(body))
		}
		wantSecurityHeaders(t, c.name, res.Header)
	}
	// Bodies larger than fasthttp's read-ahead (8 KiB) arrive through the
	// stream: forms, multipart forms, chunked JSON all work as before.
	pad := strings.Repeat("p", 200<<10)
	form := testutil.Form("customer", "Streamed form", "pad", pad)
	mp := testutil.Multipart("customer", "Streamed multipart", "pad", pad)
	js := `{"customer":"Streamed JSON"}` + strings.Repeat(" ", 200<<10)
	exact := `{"customer":"Exactly 1 MiB"}`
	exact += strings.Repeat(" ", MaxBody-len(exact))
	for _, c := range []struct{ name, headers, body string }{
		{"a form", "Content-Type: " + form.Type + "\r\nContent-Length: " + strconv.Itoa(len(form.Data)) + "\r\n", string(form.Data)},
		{"a multipart form", "Content-Type: " + mp.Type + "\r\nContent-Length: " + strconv.Itoa(len(mp.Data)) + "\r\n", string(mp.Data)},
		{"chunked JSON", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", chunked(js)},
		{"JSON of exactly 1 MiB", "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(MaxBody) + "\r\n", exact},
		{"JSON of exactly 1 MiB in chunks", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", chunked(exact)},
	} {
		res, body := post(c.headers, c.body)
		if res.StatusCode != 201 {
			t.Errorf("%s of %d bytes: got %d %s, want 201", c.name, len(c.body), res.StatusCode, testutil.Snippet(body))
		}
	}
}

func TestAMethodTheServerDoesNotKnowNeverRunsItsBodyAsARequest(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	addr := serveListener(t, a)
	// The body is longer than fasthttp reads ahead (8 KiB); what lies past
	// that must not be taken for a request of its own.
	inner := "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	for _, c := range []struct{ name, framing, body string }{
		{"Content-Length", "Content-Length: " + strconv.Itoa(8<<10+len(inner)) + "\r\n", strings.Repeat("p", 8<<10) + inner},
		{"chunked", "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n", 9<<10, strings.Repeat("p", 9<<10)) + inner},
	} {
		got := exchangeRaw(t, addr, "FROB /orders HTTP/1.1\r\nHost: 127.0.0.1\r\n"+c.framing+"\r\n"+c.body)
		res := readResponse(t, "FROB with a body", got)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("FROB /orders (%s): got %d, want 400", c.name, res.StatusCode)
		}
		wantSecurityHeaders(t, "FROB /orders ("+c.name+")", res.Header)
		if n := strings.Count(got, "HTTP/1.1 "); n != 1 {
			t.Errorf("FROB /orders with a body (%s) that holds a request: %d answers on the connection, want 1 (the body ran as a request):\n%s", c.name, n, testutil.Snippet(got))
		}
	}
}

func TestARequestRefusedBeforeSignInIsAnsweredWithoutReadingItsBody(t *testing.T) {
	a := peopleApp(t)
	addr := serveListener(t, a)
	inner := "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	for _, c := range []struct {
		name, headers string
		want          int
	}{
		{"no credentials", "Host: 127.0.0.1\r\nAccept: application/json\r\n", 401},
		{"no credentials, a page", "Host: 127.0.0.1\r\n", 303},
		{"a token nobody made", "Host: 127.0.0.1\r\nAuthorization: Bearer a-guess\r\n", 401},
		{"a session nobody has", "Host: 127.0.0.1\r\nCookie: orders_session=a-guess\r\n", 303},
		{"a cross-site write", "Host: 127.0.0.1\r\nSec-Fetch-Site: cross-site\r\n", 403},
		{"a foreign host", "Host: rebound.evil.test\r\n", 421},
	} {
		// 1 MiB announced, 16 KiB sent (a request inside it), the rest held
		// back: the refusal comes without waiting for the body the server
		// never reads, and nothing in the body is run as a request.
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		body := strings.Repeat("p", 8<<10) + inner + strings.Repeat("q", 8<<10-len(inner))
		if _, err := io.WriteString(conn, "POST /orders HTTP/1.1\r\n"+c.headers+"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(MaxBody)+"\r\n\r\n"+body); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(conn)
		conn.Close()
		if len(got) == 0 {
			t.Errorf("%s, 1 MiB announced and 16 KiB sent: no answer in 5 s (the server waits for the body before refusing)", c.name)
			continue
		}
		res := readResponse(t, c.name, string(got))
		if res.StatusCode != c.want {
			t.Errorf("%s: got %d, want %d", c.name, res.StatusCode, c.want)
		}
		wantSecurityHeaders(t, c.name, res.Header)
		if n := strings.Count(string(got), "HTTP/1.1 "); n != 1 {
			t.Errorf("%s: %d answers on the connection, want 1:\n%s", c.name, n, testutil.Snippet(string(got)))
		}
	}
}

// askOnce writes raw to addr and reads one response, whole, without
// waiting for the connection's end.
func askOnce(t *testing.T, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response (%v) to %q", err, testutil.Snippet(raw))
	}
	body, _ := io.ReadAll(res.Body)
	return res, body
}

func TestABodyPastTheBudgetIsRefusedUntilTheBudgetIsGivenBack(t *testing.T) {
	st := testutil.NewStore(t, testutil.Miniredis(t))
	m := NewMetrics()
	a := newTestApp(t, "miniredis", st, func(c *Config) { c.BodyBudget, c.Metrics = 2*MaxBody, m })
	addr := serveListener(t, a)
	order := `{"customer":"Budget","items":[{"name":"Cup","quantity":1,"unit_price":"2.50"}]}`
	whole := order + strings.Repeat(" ", MaxBody-len(order))

	head := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(MaxBody) + "\r\n\r\n"
	hold := func(n, sent int) []net.Conn {
		conns := make([]net.Conn, n)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, head+whole[:sent]); err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		return conns
	}

	// Two bodies of 1 MiB sent but their last byte take the whole budget,
	// once the server has read them.
	held := hold(2, MaxBody-1)
	for deadline := time.Now().Add(10 * time.Second); scrape(t, m)["orders_request_body_bytes_held"] < 2*MaxBody; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("two bodies of 1 MiB − 1 byte sent: %v bytes held after 10 s, want %d", scrape(t, m)["orders_request_body_bytes_held"], 2*MaxBody)
		}
	}
	form := testutil.Form("customer", "Budget form")
	for _, c := range []struct{ name, accept, ctype, body, wantType string }{
		{"JSON", "application/json", "application/json", order, "application/json"},
		{"a form from a page", "text/html", form.Type, string(form.Data), "text/html"},
	} {
		raw := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + c.accept + "\r\nContent-Type: " + c.ctype + "\r\nContent-Length: " + strconv.Itoa(len(c.body)) + "\r\n\r\n" + c.body
		res, body := askOnce(t, addr, raw)
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s, a small body while the budget is taken: got %d %s, want 503", c.name, res.StatusCode, testutil.Snippet(string(body)))
		}
		if res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: the 503 has no Retry-After: %v", c.name, res.Header)
		}
		if !res.Close {
			t.Errorf("%s: the 503 keeps the connection open, its body unread: %v", c.name, res.Header)
		}
		wantSecurityHeaders(t, c.name+" past the budget", res.Header)
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, c.wantType) || !strings.Contains(string(body), "too many request bodies") {
			t.Errorf("%s: the 503 is %q %s, want %s saying too many request bodies", c.name, ct, testutil.Snippet(string(body)), c.wantType)
		}
	}

	// The held bodies end: both are read and served.
	for i, c := range held {
		if _, err := io.WriteString(c, whole[MaxBody-1:]); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(c)
		if res := readResponse(t, "a held body", string(got)); res.StatusCode != http.StatusCreated {
			t.Errorf("held body %d, once sent whole: got %d, want 201", i, res.StatusCode)
		}
	}
	// Every share comes back, from a body refused as too large too: each
	// of these takes over half the budget, and a share kept would refuse
	// the next.
	chunkedOver := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", MaxBody+1, strings.Repeat("x", MaxBody+1))
	for i := range 3 {
		raw := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunkedOver
		if res := readResponse(t, "chunked over 1 MiB", exchangeRaw(t, addr, raw)); res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked body over 1 MiB, try %d: got %d, want 413", i+1, res.StatusCode)
		}
	}
	for i := range 3 {
		raw := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(MaxBody) + "\r\n\r\n" + whole
		if res := readResponse(t, "1 MiB after the flood", exchangeRaw(t, addr, raw)); res.StatusCode != http.StatusCreated {
			t.Errorf("a body of 1 MiB after the held ones ended, try %d: got %d, want 201", i+1, res.StatusCode)
		}
	}
	// Bodies announced and not sent take next to nothing: with four of
	// 1 MiB held at 16 KiB each, a body of 1 MiB is read.
	hold(4, 16<<10)
	if res, body := askOnce(t, addr, head+whole); res.StatusCode != http.StatusCreated {
		t.Errorf("a body of 1 MiB while four bodies of 1 MiB are announced and held at 16 KiB: got %d %s, want 201", res.StatusCode, testutil.Snippet(string(body)))
	}
}

func TestABodyTooLargeThatAsksFirstIsRefusedAtOnce(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	addr := serveListener(t, a)
	ask := func(length int, host ...string) (net.Conn, *bufio.Reader, *http.Response) {
		h := "127.0.0.1"
		if len(host) > 0 {
			h = host[0]
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		head := "POST /orders HTTP/1.1\r\nHost: " + h + "\r\nAccept: application/json\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " + strconv.Itoa(length) + "\r\n\r\n"
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("Expect: 100-continue with %d bytes announced and none sent: no answer (%v)", length, err)
		}
		return conn, br, res
	}
	// Too large: the 413 comes before any body, never "100 Continue".
	_, _, res := ask(2 * MaxBody)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "1 MiB") {
		t.Fatalf("Expect: 100-continue with 2 MiB announced: got %d %s first, want 413 saying 1 MiB", res.StatusCode, testutil.Snippet(string(body)))
	}
	wantSecurityHeaders(t, "the 413 to a body too large that asks first", res.Header)
	if !res.Close {
		t.Errorf("the 413 to a body too large that asks first keeps the connection open: %v", res.Header)
	}
	// Refused before its body would be read: its own refusal, at once, and
	// the connection closed, so a body sent anyway is never a request.
	_, _, res = ask(2*MaxBody, "rebound.evil.test")
	if res.StatusCode != http.StatusMisdirectedRequest || !res.Close {
		t.Errorf("Expect: 100-continue with 2 MiB announced to a foreign host: got %d (closed: %v) first, want 421 and the connection closed", res.StatusCode, res.Close)
	}
	// Within the limit: "100 Continue", then the body is read.
	order := `{"customer":"Asked first","items":[{"name":"Cup","quantity":1,"unit_price":"2.50"}]}`
	conn, br, res := ask(len(order))
	if res.StatusCode != http.StatusContinue {
		t.Fatalf("Expect: 100-continue with %d bytes announced: got %d, want 100 Continue", len(order), res.StatusCode)
	}
	if _, err := io.WriteString(conn, order); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Errorf("the body sent after 100 Continue: got %v (%v), want 201", res, err)
	}
}
