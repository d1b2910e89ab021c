package testutil

// HTTP helpers of the routes, e2e and main tests: headers and bodies of a
// request, one function that sends it (in process through app.Test, or
// over HTTP to a server), and assertions on the response whose messages
// say what was got and what was wanted.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// H is a set of request headers.
type H map[string]string

// With returns the union of h and more (more wins).
func (h H) With(more H) H {
	out := H{}
	for k, v := range h {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// The request header sets of the representations.
var (
	// HPage is a browser navigation.
	HPage = H{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	// HHX is an htmx partial request.
	HHX = H{"Accept": "text/html", "HX-Request": "true", "HX-Request-Type": "partial"}
	// HJSON is a program.
	HJSON = H{"Accept": "application/json"}
	// HRestore is an htmx 4 history restore: no HX-Request, Accept */*.
	HRestore = H{"Accept": "*/*", "HX-History-Restore-Request": "true", "HX-Request-Type": "full"}
	// HHXFull is an htmx request that asks for the full page (hx-select, body target).
	HHXFull = H{"Accept": "text/html", "HX-Request": "true", "HX-Request-Type": "full"}
)

// HXTo is an htmx partial request whose target is the element tagID ("tr#order-row-1").
func HXTo(tagID string) H { return HHX.With(H{"HX-Target": tagID}) }

// Body is a request body with its Content-Type.
type Body struct {
	Type string
	Data []byte
}

// NoBody sends nothing.
var NoBody = Body{}

// Form encodes key, value pairs as application/x-www-form-urlencoded, in
// the order given (keys may repeat).
func Form(kv ...string) Body {
	if len(kv)%2 != 0 {
		panic("Form: odd number of arguments")
	}
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	return Body{fiber.MIMEApplicationForm, []byte(b.String())}
}

// Multipart encodes key, value pairs as multipart/form-data.
func Multipart(kv ...string) Body {
	if len(kv)%2 != 0 {
		panic("Multipart: odd number of arguments")
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i < len(kv); i += 2 {
		if err := w.WriteField(kv[i], kv[i+1]); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return Body{w.FormDataContentType(), buf.Bytes()}
}

// JSON encodes v (a string is sent as it is, so malformed JSON can be sent).
func JSON(v any) Body {
	if s, ok := v.(string); ok {
		return Body{fiber.MIMEApplicationJSON, []byte(s)}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return Body{fiber.MIMEApplicationJSON, b}
}

// Raw is a body of any media type.
func Raw(ctype, s string) Body { return Body{ctype, []byte(s)} }

// Client sends requests to the application: in process through app.Test
// (InProcess), or over HTTP to a server (Over).
type Client struct {
	app  *fiber.App
	base string
}

// InProcess sends requests through app.Test, with no time limit
// (PITFALLS: its default is one second).
func InProcess(app *fiber.App) *Client { return &Client{app: app} }

// Over sends requests over HTTP to the server at base
// ("http://127.0.0.1:port"): within 10 s each, redirects not followed,
// bodies not decompressed.
func Over(base string) *Client { return &Client{base: base} }

// overHTTP is the HTTP client of Over, shared so connections are reused.
var overHTTP = &http.Client{
	Timeout: 10 * time.Second,
	Transport: &http.Transport{
		MaxIdleConns: 200, MaxIdleConnsPerHost: 100, IdleConnTimeout: 30 * time.Second,
		DisableCompression: true,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Send sends one request and reads its response whole; err is a
// transport error (none through app.Test but its own failures) or, in
// process, a JSON exchange the application's OpenAPI description does not
// allow (openapi.go).
func (c *Client) Send(method, target string, b Body, h H) (*Resp, error) {
	var body io.Reader
	if b.Data != nil {
		body = bytes.NewReader(b.Data)
	}
	var req *http.Request
	if c.app != nil {
		req = httptest.NewRequest(method, target, body)
	} else {
		var err error
		if req, err = http.NewRequest(method, c.base+target, body); err != nil {
			return nil, err
		}
	}
	if b.Type != "" {
		req.Header.Set("Content-Type", b.Type)
	}
	for k, v := range h {
		if strings.EqualFold(k, "Host") {
			req.Host = v // Go sends req.Host, never a Host header
			continue
		}
		req.Header.Set(k, v)
	}
	start := time.Now()
	var res *http.Response
	var err error
	if c.app != nil {
		res, err = c.app.Test(req, -1)
	} else {
		res, err = overHTTP.Do(req)
	}
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	r := &Resp{What: method + " " + target + describe(h), Status: res.StatusCode, Header: res.Header,
		Body: string(data), Took: time.Since(start)}
	if c.app != nil {
		return r, c.checkAPI(method, target, b, h, r)
	}
	return r, nil
}

// Do is Send that fails the test on an error: a transport error, or a
// JSON exchange the OpenAPI description does not allow.
func (c *Client) Do(t testing.TB, method, target string, b Body, h H) *Resp {
	t.Helper()
	r, err := c.Send(method, target, b, h)
	if err != nil {
		t.Fatalf("%s %s%s (body %s): %v", method, target, describe(h), Snippet(string(b.Data)), err)
	}
	return r
}

// Get is Do of a GET.
func (c *Client) Get(t testing.TB, target string, h H) *Resp {
	t.Helper()
	return c.Do(t, http.MethodGet, target, NoBody, h)
}

// describe names a header set in failure messages.
func describe(h H) string {
	var parts []string
	for _, k := range []string{"Accept", "HX-Request", "HX-Request-Type", "HX-History-Restore-Request", "HX-Target", "If-Match", "If-None-Match", "Origin", "Sec-Fetch-Site"} {
		if v, ok := h[k]; ok {
			parts = append(parts, k+": "+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, "; ") + "]"
}

// Snippet shortens a body for a failure message.
func Snippet(s string) string {
	const n = 1500
	if len(s) > n {
		return s[:n] + fmt.Sprintf("… (%d bytes in all)", len(s))
	}
	return s
}

// Resp is a response read whole.
type Resp struct {
	What   string // "GET /orders/1 [Accept: application/json]", for messages
	Status int
	Header http.Header
	Body   string
	Took   time.Duration // from sending the request to the end of the body
}

func (r *Resp) String() string { return r.What }

// WantStatus fails the test at once when the status is not want.
func (r *Resp) WantStatus(t testing.TB, want int) *Resp {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: got status %d, want %d; body:\n%s", r.What, r.Status, want, Snippet(r.Body))
	}
	return r
}

// WantHeader fails the test when header k is not exactly want.
func (r *Resp) WantHeader(t testing.TB, k, want string) *Resp {
	t.Helper()
	if got := r.Header.Get(k); got != want {
		t.Errorf("%s: got %s %q, want %q", r.What, k, got, want)
	}
	return r
}

// WantContains fails the test for each part the body does not hold.
func (r *Resp) WantContains(t testing.TB, parts ...string) *Resp {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.Body, p) {
			t.Errorf("%s: body does not contain %q; got body:\n%s", r.What, p, Snippet(r.Body))
		}
	}
	return r
}

// WantLacks fails the test for each part the body holds.
func (r *Resp) WantLacks(t testing.TB, parts ...string) *Resp {
	t.Helper()
	for _, p := range parts {
		if i := strings.Index(r.Body, p); i >= 0 {
			t.Errorf("%s: body contains %q (at byte %d), want it absent; got body:\n%s", r.What, p, i, Snippet(r.Body))
		}
	}
	return r
}

// JSON decodes the body into v, failing the test at once unless it is
// JSON with a JSON Content-Type.
func (r *Resp) JSON(t testing.TB, v any) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: got Content-Type %q, want application/json; body:\n%s", r.What, ct, Snippet(r.Body))
	}
	if err := r.Decode(v); err != nil {
		t.Fatalf("%s: body is not the JSON wanted (%v):\n%s", r.What, err, Snippet(r.Body))
	}
}

// Decode decodes the body as JSON into v, whatever its Content-Type.
func (r *Resp) Decode(v any) error { return json.Unmarshal([]byte(r.Body), v) }

// Object decodes a JSON object body.
func (r *Resp) Object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// WantPage fails unless the body is a full HTML page holding the element rootID.
func (r *Resp) WantPage(t testing.TB, rootID string) *Resp {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: got Content-Type %q, want text/html", r.What, ct)
	}
	if !strings.HasPrefix(strings.TrimSpace(r.Body), "<!doctype html>") {
		t.Errorf("%s: want a full page starting with <!doctype html>; got:\n%s", r.What, Snippet(r.Body))
	}
	return r.WantContains(t, `id="main"`, `id="notice"`, `id="`+rootID+`"`)
}

// WantFragment fails unless the body is an HTML fragment (no layout)
// holding the element rootID.
func (r *Resp) WantFragment(t testing.TB, rootID string) *Resp {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: got Content-Type %q, want text/html", r.What, ct)
	}
	return r.WantLacks(t, "<html", "<!doctype", `id="main"`).WantContains(t, `id="`+rootID+`"`)
}

// WantNegotiated checks what every negotiated response says:
// Vary names Accept and HX-Request, and a body has a charset=utf-8 type.
func (r *Resp) WantNegotiated(t testing.TB) *Resp {
	t.Helper()
	vary := map[string]bool{}
	for _, v := range r.Header.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			vary[strings.ToLower(strings.TrimSpace(f))] = true
		}
	}
	for _, k := range []string{"accept", "hx-request"} {
		if !vary[k] {
			t.Errorf("%s: got Vary %q, want it to name %s", r.What, r.Header.Values("Vary"), k)
		}
	}
	if r.Status != http.StatusNoContent && r.Status != http.StatusNotModified && r.Body != "" {
		if ct := r.Header.Get("Content-Type"); !strings.Contains(strings.ToLower(ct), "charset=utf-8") {
			t.Errorf("%s: got Content-Type %q, want one with charset=utf-8", r.What, ct)
		}
	}
	return r
}

// Tag returns the start tag of the element with the given id, or "".
func Tag(html, id string) string {
	i := strings.Index(html, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(html[:i], '<')
	end := strings.IndexByte(html[i:], '>')
	if start < 0 || end < 0 {
		return ""
	}
	return html[start : i+end+1]
}

// WantFieldError checks an HTML form field: its input (id inputID) is
// marked aria-invalid and points at its message, the message (id
// inputID+"-err") holds msg and comes right after the input, and the input
// still holds the value the person typed.
func (r *Resp) WantFieldError(t testing.TB, inputID, msg, value string) {
	t.Helper()
	in := Tag(r.Body, inputID)
	if in == "" {
		t.Errorf("%s: no element with id %q; body:\n%s", r.What, inputID, Snippet(r.Body))
		return
	}
	if !strings.Contains(in, `aria-invalid="true"`) || !strings.Contains(in, `aria-describedby="`+inputID+`-err"`) {
		t.Errorf("%s: got input %s, want aria-invalid=\"true\" aria-describedby=\"%s-err\"", r.What, in, inputID)
	}
	if value != "" && !strings.Contains(in, `value="`+value+`"`) {
		t.Errorf("%s: got input %s, want the typed value %q kept", r.What, in, value)
	}
	i := strings.Index(r.Body, `id="`+inputID+`"`)
	j := strings.Index(r.Body, `id="`+inputID+`-err"`)
	if j < 0 {
		t.Errorf("%s: no message element %s-err beside the input", r.What, inputID)
		return
	}
	if between := r.Body[i:j]; j < i || strings.Count(between, "<input")+strings.Count(between, "<select")+strings.Count(between, "<textarea") > 0 {
		t.Errorf("%s: message %s-err is not right after its input (found %d bytes away)", r.What, inputID, j-i)
	}
	end := strings.Index(r.Body[j:], "</")
	if got := r.Body[j : j+end]; !strings.Contains(got, msg) {
		t.Errorf("%s: message for %s is %q, want it to contain %q", r.What, inputID, got, msg)
	}
}

// SyncBuffer collects output written from several goroutines (a server's
// log, a subprocess's output) for failure messages.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
