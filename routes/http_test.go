package routes

// Helpers of the HTTP test suite: one application per Redis target, a small
// request builder, and assertions whose messages say what was got and what
// was wanted.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"orders/store"
	"orders/testutil"
)

// testApp is the application over one Redis target.
type testApp struct {
	target string
	app    *fiber.App
	store  *store.Store
}

// testConfig is the configuration of every test application: main.go's
// but for the files (the repository's copy of the embedded ones), the
// log (the test's) and the host (app.Test's).
func testConfig(t testing.TB, st *store.Store) Config {
	return Config{Store: st, Files: testutil.Files(t), Logger: testutil.Logger(t), AllowedHosts: []string{testutil.Host}}
}

// newTestApp builds the application over st with testConfig, changed by
// each of more.
func newTestApp(t testing.TB, name string, st *store.Store, more ...func(*Config)) *testApp {
	t.Helper()
	cfg := testConfig(t, st)
	for _, f := range more {
		f(&cfg)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatalf("routes.New: %v", err)
	}
	return &testApp{target: name, app: app, store: st}
}

// eachTarget runs fn as a subtest against a fresh application on every
// Redis target testutil offers (miniredis always, a real Redis when one
// answers). Every target starts empty, so order ids start at 1.
func eachTarget(t *testing.T, fn func(t *testing.T, a *testApp)) {
	t.Helper()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			fn(t, newTestApp(t, tg.Name, testutil.NewStore(t, tg)))
		})
	}
}

// H is a set of request headers.
type H map[string]string

// with returns the union of h and more (more wins).
func (h H) with(more H) H {
	out := H{}
	for k, v := range h {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// The request header sets of the representations (CONTRACT §2).
var (
	// hPage is a browser navigation.
	hPage = H{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	// hHX is an htmx partial request.
	hHX = H{"Accept": "text/html", "HX-Request": "true", "HX-Request-Type": "partial"}
	// hJSON is a program.
	hJSON = H{"Accept": "application/json"}
	// hRestore is an htmx 4 history restore: no HX-Request, Accept */*.
	hRestore = H{"Accept": "*/*", "HX-History-Restore-Request": "true", "HX-Request-Type": "full"}
	// hHXFull is an htmx request that asks for the full page (hx-select, body target).
	hHXFull = H{"Accept": "text/html", "HX-Request": "true", "HX-Request-Type": "full"}
)

// hxTo is an htmx partial request whose target is the element tagID ("tr#order-row-1").
func hxTo(tagID string) H { return hHX.with(H{"HX-Target": tagID}) }

// body is a request body with its Content-Type.
type body struct {
	ctype string
	data  []byte
}

// noBody sends nothing.
var noBody = body{}

// form encodes key, value pairs as application/x-www-form-urlencoded, in
// the order given (keys may repeat).
func form(kv ...string) body {
	if len(kv)%2 != 0 {
		panic("form: odd number of arguments")
	}
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	return body{fiber.MIMEApplicationForm, []byte(b.String())}
}

// multipartForm encodes key, value pairs as multipart/form-data.
func multipartForm(kv ...string) body {
	if len(kv)%2 != 0 {
		panic("multipartForm: odd number of arguments")
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
	return body{w.FormDataContentType(), buf.Bytes()}
}

// jsonBody encodes v (a string is sent as it is, so malformed JSON can be sent).
func jsonBody(v any) body {
	if s, ok := v.(string); ok {
		return body{fiber.MIMEApplicationJSON, []byte(s)}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return body{fiber.MIMEApplicationJSON, b}
}

// raw is a body of any media type.
func raw(ctype, s string) body { return body{ctype, []byte(s)} }

// resp is a response read whole.
type resp struct {
	what   string // "GET /orders/1 (json)" for messages
	status int
	header http.Header
	body   string
}

// do sends one request through app.Test with no timeout (PITFALLS).
func (a *testApp) do(t testing.TB, method, target string, b body, h H) *resp {
	t.Helper()
	var r io.Reader
	if b.data != nil {
		r = bytes.NewReader(b.data)
	}
	req := httptest.NewRequest(method, target, r)
	if b.ctype != "" {
		req.Header.Set("Content-Type", b.ctype)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := a.app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: app.Test: %v", method, target, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, target, err)
	}
	return &resp{what: method + " " + target + describe(h), status: res.StatusCode, header: res.Header, body: string(data)}
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

func (a *testApp) get(t testing.TB, target string, h H) *resp {
	t.Helper()
	return a.do(t, http.MethodGet, target, noBody, h)
}

// snippet shortens a body for a failure message.
func snippet(s string) string {
	const n = 1500
	if len(s) > n {
		return s[:n] + fmt.Sprintf("… (%d bytes in all)", len(s))
	}
	return s
}

// wantStatus fails the test when the status is not want.
func (r *resp) wantStatus(t testing.TB, want int) *resp {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: got status %d, want %d; body:\n%s", r.what, r.status, want, snippet(r.body))
	}
	return r
}

// wantHeader fails the test when header k is not exactly want.
func (r *resp) wantHeader(t testing.TB, k, want string) *resp {
	t.Helper()
	if got := r.header.Get(k); got != want {
		t.Errorf("%s: got %s %q, want %q", r.what, k, got, want)
	}
	return r
}

// wantContains fails the test for each part the body does not hold.
func (r *resp) wantContains(t testing.TB, parts ...string) *resp {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.body, p) {
			t.Errorf("%s: body does not contain %q; got body:\n%s", r.what, p, snippet(r.body))
		}
	}
	return r
}

// wantLacks fails the test for each part the body holds.
func (r *resp) wantLacks(t testing.TB, parts ...string) *resp {
	t.Helper()
	for _, p := range parts {
		if i := strings.Index(r.body, p); i >= 0 {
			t.Errorf("%s: body contains %q (at byte %d), want it absent; got body:\n%s", r.what, p, i, snippet(r.body))
		}
	}
	return r
}

// json decodes the body into v, failing unless it is JSON with a JSON
// Content-Type.
func (r *resp) json(t testing.TB, v any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: got Content-Type %q, want application/json; body:\n%s", r.what, ct, snippet(r.body))
	}
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("%s: body is not the JSON wanted (%v):\n%s", r.what, err, snippet(r.body))
	}
}

// object decodes a JSON object body.
func (r *resp) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.json(t, &m)
	return m
}

// wantPage fails unless the body is a full HTML page holding the element rootID.
func (r *resp) wantPage(t testing.TB, rootID string) *resp {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: got Content-Type %q, want text/html", r.what, ct)
	}
	if !strings.HasPrefix(strings.TrimSpace(r.body), "<!doctype html>") {
		t.Errorf("%s: want a full page starting with <!doctype html>; got:\n%s", r.what, snippet(r.body))
	}
	return r.wantContains(t, `id="main"`, `id="notice"`, `id="`+rootID+`"`)
}

// wantFragment fails unless the body is an HTML fragment (no layout)
// holding the element rootID.
func (r *resp) wantFragment(t testing.TB, rootID string) *resp {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: got Content-Type %q, want text/html", r.what, ct)
	}
	return r.wantLacks(t, "<html", "<!doctype", `id="main"`).wantContains(t, `id="`+rootID+`"`)
}

// wantNegotiated checks what every negotiated response says (CONTRACT §2):
// Vary names Accept and HX-Request, and a body has a charset=utf-8 type.
func (r *resp) wantNegotiated(t testing.TB) *resp {
	t.Helper()
	vary := map[string]bool{}
	for _, v := range r.header.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			vary[strings.ToLower(strings.TrimSpace(f))] = true
		}
	}
	for _, k := range []string{"accept", "hx-request"} {
		if !vary[k] {
			t.Errorf("%s: got Vary %q, want it to name %s", r.what, r.header.Values("Vary"), k)
		}
	}
	if r.status != http.StatusNoContent && r.status != http.StatusNotModified && r.body != "" {
		if ct := r.header.Get("Content-Type"); !strings.Contains(strings.ToLower(ct), "charset=utf-8") {
			t.Errorf("%s: got Content-Type %q, want one with charset=utf-8", r.what, ct)
		}
	}
	return r
}

// tag returns the start tag of the element with the given id, or "".
func tag(html, id string) string {
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

// wantFieldError checks an HTML form field: its input (id inputID) is
// marked aria-invalid and points at its message, the message (id
// inputID+"-err") holds msg and comes right after the input, and the input
// still holds the value the person typed.
func (r *resp) wantFieldError(t testing.TB, inputID, msg, value string) {
	t.Helper()
	in := tag(r.body, inputID)
	if in == "" {
		t.Errorf("%s: no element with id %q; body:\n%s", r.what, inputID, snippet(r.body))
		return
	}
	if !strings.Contains(in, `aria-invalid="true"`) || !strings.Contains(in, `aria-describedby="`+inputID+`-err"`) {
		t.Errorf("%s: got input %s, want aria-invalid=\"true\" aria-describedby=\"%s-err\"", r.what, in, inputID)
	}
	if value != "" && !strings.Contains(in, `value="`+value+`"`) {
		t.Errorf("%s: got input %s, want the typed value %q kept", r.what, in, value)
	}
	i := strings.Index(r.body, `id="`+inputID+`"`)
	j := strings.Index(r.body, `id="`+inputID+`-err"`)
	if j < 0 {
		t.Errorf("%s: no message element %s-err beside the input", r.what, inputID)
		return
	}
	if between := r.body[i:j]; j < i || strings.Count(between, "<input")+strings.Count(between, "<select")+strings.Count(between, "<textarea") > 0 {
		t.Errorf("%s: message %s-err is not right after its input (found %d bytes away)", r.what, inputID, j-i)
	}
	end := strings.Index(r.body[j:], "</")
	if got := r.body[j : j+end]; !strings.Contains(got, msg) {
		t.Errorf("%s: message for %s is %q, want it to contain %q", r.what, inputID, got, msg)
	}
}

// orderJSON is the JSON of one order, with money kept as the strings sent.
type orderJSON struct {
	ID        int64      `json:"id"`
	Customer  string     `json:"customer"`
	Email     string     `json:"email"`
	Status    string     `json:"status"`
	Currency  string     `json:"currency"`
	Notes     string     `json:"notes"`
	Items     []itemJSON `json:"items"`
	ItemCount int        `json:"item_count"`
	Total     string     `json:"total"`
	Version   int64      `json:"version"`
	CreatedAt string     `json:"created_at"`
	UpdatedAt string     `json:"updated_at"`
}

type itemJSON struct {
	SKU       string `json:"sku"`
	Name      string `json:"name"`
	Quantity  int64  `json:"quantity"`
	UnitPrice string `json:"unit_price"`
	LineTotal string `json:"line_total"`
}

// errorJSON is the JSON of an error (CONTRACT §3).
type errorJSON struct {
	Error     string            `json:"error"`
	Errors    map[string]string `json:"errors"`
	RequestID string            `json:"request_id"`
	Current   *orderJSON        `json:"current"`
}

// item is a JSON item for requests.
func item(name string, qty any, price any) map[string]any {
	return map[string]any{"name": name, "quantity": qty, "unit_price": price}
}

// create makes an order through POST /orders (JSON) and returns it.
func (a *testApp) create(t testing.TB, v map[string]any) orderJSON {
	t.Helper()
	r := a.do(t, http.MethodPost, "/orders", jsonBody(v), hJSON).wantStatus(t, http.StatusCreated)
	var o orderJSON
	r.json(t, &o)
	return o
}

// createNamed makes an order for customer with one item.
func (a *testApp) createNamed(t testing.TB, customer string) orderJSON {
	t.Helper()
	return a.create(t, map[string]any{"customer": customer, "items": []any{item("Widget", 2, "1.50")}})
}

// update changes an order through PUT /orders/<id> (JSON) and returns it.
func (a *testApp) update(t testing.TB, id int64, v map[string]any) orderJSON {
	t.Helper()
	r := a.do(t, http.MethodPut, path(id), jsonBody(v), hJSON).wantStatus(t, http.StatusOK)
	var o orderJSON
	r.json(t, &o)
	return o
}

// fetch reads an order through GET /orders/<id> (JSON).
func (a *testApp) fetch(t testing.TB, id int64) orderJSON {
	t.Helper()
	var o orderJSON
	a.get(t, path(id), hJSON).wantStatus(t, http.StatusOK).json(t, &o)
	return o
}

// count is the number of orders in the store.
func (a *testApp) count(t testing.TB) int64 {
	t.Helper()
	n, err := a.store.Count(t.Context())
	if err != nil {
		t.Fatalf("counting orders: %v", err)
	}
	return n
}

// wantGone fails unless order id no longer exists.
func (a *testApp) wantGone(t testing.TB, id int64) {
	t.Helper()
	a.get(t, path(id), hJSON).wantStatus(t, http.StatusNotFound)
}

func path(id int64, rest ...string) string {
	return "/orders/" + strconv.FormatInt(id, 10) + strings.Join(rest, "")
}

func rowID(id int64) string { return "order-row-" + strconv.FormatInt(id, 10) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
