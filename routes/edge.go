package routes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"orders/store"
	"orders/store/embedded"
)

// edge sets up the edge: what happens to every request before a handler
// sees it. Its steps follow in the order a request meets them, then the
// pieces they use: the bodies' memory budget, client addresses and
// throttle answers, the log's summary of repeated lines, and the metrics.
//
// Before Fiber: an unknown method is refused (refuseUnknownMethods) and
// the memory a body took is given back once the answer is written
// (returnBodies). Then, in Fiber's chain: the in-flight count, compress,
// securityHeaders, requestID, logRequests (the access log line and the
// metrics, the error handler run for the status logged), recoverPanics,
// closeUnreadBody, checkFraming, checkHost, guardWrites, authenticate (who
// the request acts as; to sign in without one), readBody (within the
// budget), methodOverride, and the request's deadline against Redis (with
// the feeds liveAfter reads). The refusals that need neither Redis nor the
// body come first.
func (h *handlers) edge(app *fiber.App, cfg Config) {
	app.Server().Handler = h.bodies.returnBodies(refuseUnknownMethods(app.Config().RequestMethods, app.Server().Handler))
	app.Server().HeaderReceived = func(hdr *fasthttp.RequestHeader) fasthttp.RequestConfig {
		// A client that asks before sending a body too large to read
		// (Expect: 100-continue) is not told to go on: fasthttp would
		// answer "100 Continue" and wait for the body, and its own refusal
		// of an expectation (417) carries none of the security headers and
		// leaves the connection open. Without the expectation and with no
		// body to wait for, the request reaches the handlers at once, and
		// readBody answers 413 (a refusal before it, its own status), both
		// closing the connection.
		if hdr.ContentLength() > MaxBody && len(hdr.Peek(fiber.HeaderExpect)) > 0 {
			hdr.Del(fiber.HeaderExpect)
			hdr.SetContentLength(0)
			hdr.Set(tooLargeHeader, "1")
		}
		return fasthttp.RequestConfig{ReadTimeout: BodyTimeout}
	}

	if n := cfg.InFlight; n != nil {
		app.Use(func(c *fiber.Ctx) error {
			n.Add(1)
			defer n.Add(-1)
			return c.Next()
		})
	}
	// compress comes first: it sees every response as sent, errors included;
	// then the security headers, which every answer carries, refusals too.
	// The body is read only once the host, the origin of a write and the
	// credentials have passed: a client nobody signed in takes no memory
	// for its body. A refusal before that closes the connection
	// (closeUnreadBody), so the unread bytes are never taken for a request.
	app.Use(compress, securityHeaders, h.requestID, h.logRequests, h.recoverPanics, closeUnreadBody, checkFraming, checkHost(cfg.AllowedHosts))
	app.Use(h.guardWrites, h.authenticate(cfg.RequestTimeout), h.readBody, methodOverride)
	app.Use(func(c *fiber.Ctx) error {
		c.Locals(feedsKey, h.feeds)
		c.Locals(viewsStoreLocal, store.Views(h.store))
		ctx, cancel := context.WithTimeout(c.UserContext(), cfg.RequestTimeout)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	})
}

// refuseUnknownMethods answers a request whose method is none of methods
// with 400, the security headers, and the end of its connection. Left to
// Fiber, such a request is answered before any middleware runs: without
// the security headers, and without its body being read, so that on a
// connection kept open the body's bytes past fasthttp's read-ahead were
// taken for the next request (behind a proxy that passes any method on,
// a request smuggled inside another). The connection lingers, so that a
// client still sending its body reads the answer instead of a reset.
func refuseUnknownMethods(methods []string, next fasthttp.RequestHandler) fasthttp.RequestHandler {
	known := make(map[string]bool, len(methods))
	for _, m := range methods {
		known[m] = true
	}
	return func(ctx *fasthttp.RequestCtx) {
		if known[string(ctx.Method())] {
			next(ctx)
			return
		}
		ctx.Error("this server does not know the request's method\n", fasthttp.StatusBadRequest)
		setBaseSecurityHeaders(&ctx.Response.Header)
		ctx.SetConnectionClose()
		lingerOnClose(ctx.Conn())
	}
}

// Response compression: HTML, CSS and JS are served compressed when the
// client accepts it.
//
// Not Fiber's compress middleware: fasthttp reads Accept-Encoding by
// substring (q-values ignored), adds Vary only to the responses it
// compressed (a shared cache then keeps an identity answer without knowing
// it depends on Accept-Encoding), compresses event streams, and leaves a
// strong ETag on the compressed bytes, the same tag as the identity ones.

const (
	// minCompress: smaller bodies gain little or grow (headers of the
	// coding, a round trip either way).
	minCompress = 512
	// Dynamic bodies are compressed per request: fast levels. Static files
	// are compressed once at start at the best levels (assets.go).
	dynamicBrotliLevel = 4
	dynamicGzipLevel   = 6
	// handledEncoding marks a response whose handler chose its coding
	// itself (a precompressed static file, its 304).
	handledEncoding = "encoding-handled"
)

// coding is a content coding the server produces.
type coding string

const (
	identity coding = ""
	brotli   coding = "br"
	gzipped  coding = "gzip"
)

// negotiateEncoding picks br or gzip from Accept-Encoding (RFC 9110,
// section 12.5.3): the highest q above 0 wins, br on a tie; "*" stands for a
// coding not named; no header, or none acceptable, is identity.
func negotiateEncoding(header string) coding {
	if header == "" {
		return identity
	}
	qBr, qGzip, qStar := -1.0, -1.0, -1.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0 // a malformed weight is no consent
				}
				q = f
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			qBr = q
		case "gzip", "x-gzip":
			qGzip = q
		case "*":
			qStar = q
		}
	}
	if qBr < 0 {
		qBr = qStar
	}
	if qGzip < 0 {
		qGzip = qStar
	}
	switch {
	case qBr > 0 && qBr >= qGzip:
		return brotli
	case qGzip > 0:
		return gzipped
	}
	return identity
}

// compressible says whether a Content-Type is text that compresses well.
// Event streams are left alone: each event must reach the client at once.
func compressible(ct []byte) bool {
	ct = bytes.ToLower(ct)
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = bytes.TrimSpace(ct)
	switch {
	case bytes.Equal(ct, []byte("text/event-stream")):
		return false
	case bytes.HasPrefix(ct, []byte("text/")),
		bytes.Equal(ct, []byte("application/json")),
		bytes.Equal(ct, []byte("application/javascript")),
		bytes.Equal(ct, []byte("application/xml")),
		bytes.Equal(ct, []byte("application/manifest+json")),
		bytes.Equal(ct, []byte("image/svg+xml")),
		bytes.HasSuffix(ct, []byte("+json")),
		bytes.HasSuffix(ct, []byte("+xml")):
		return true
	}
	return false
}

// etagFor gives the ETag of the coded bytes: a strong ETag names one byte
// sequence, so a compressed body gets its own tag ("o1v3-page" becomes
// "o1v3-page-br"). Weak tags get the suffix too, which keeps page, fragment
// and JSON tags in one shape; every tag of a version still matches
// If-None-Match and If-Match (etagVersions reads up to the first '-').
func etagFor(tag string, enc coding) string {
	if enc == identity || !strings.HasSuffix(tag, `"`) || len(tag) < 2 {
		return tag
	}
	return tag[:len(tag)-1] + "-" + string(enc) + `"`
}

// compress is the outermost middleware, so it sees every response as sent,
// error pages included: it compresses HTML, JSON, CSS, JS and SVG bodies by
// Accept-Encoding, names Accept-Encoding in Vary on every response that
// could be compressed, and gives a compressed body its own ETag.
//
// A response with an ETag is compressed whatever its size, so a 304 — which
// has no body to measure — can carry the tag its 200 would have: the tag
// depends only on the request's Accept-Encoding.
func compress(c *fiber.Ctx) error {
	err := c.Next()
	if err != nil {
		return err // not reached: logRequests has answered every error
	}
	if c.Locals(handledEncoding) != nil {
		return nil
	}
	resp := c.Response()
	status := resp.StatusCode()
	if status == fiber.StatusNotModified {
		c.Vary(fiber.HeaderAcceptEncoding)
		if tag := string(resp.Header.Peek(fiber.HeaderETag)); tag != "" {
			resp.Header.Set(fiber.HeaderETag, etagFor(tag, negotiateEncoding(c.Get(fiber.HeaderAcceptEncoding))))
		}
		return nil
	}
	if status < 200 || status == fiber.StatusNoContent || resp.IsBodyStream() ||
		len(resp.Header.ContentEncoding()) > 0 || !compressible(resp.Header.ContentType()) {
		return nil
	}
	c.Vary(fiber.HeaderAcceptEncoding)
	body := resp.Body()
	tag := string(resp.Header.Peek(fiber.HeaderETag))
	if len(body) < minCompress && tag == "" {
		return nil
	}
	enc := negotiateEncoding(c.Get(fiber.HeaderAcceptEncoding))
	var out []byte
	switch enc {
	case brotli:
		out = fasthttp.AppendBrotliBytesLevel(nil, body, dynamicBrotliLevel)
	case gzipped:
		out = fasthttp.AppendGzipBytesLevel(nil, body, dynamicGzipLevel)
	default:
		return nil
	}
	resp.SetBodyRaw(out)
	resp.Header.Set(fiber.HeaderContentEncoding, string(enc))
	if tag != "" {
		resp.Header.Set(fiber.HeaderETag, etagFor(tag, enc))
	}
	return nil
}

// csp allows only the application's own scripts, styles and images: no
// inline script or style anywhere, no framing.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// hsts asks a browser to use only https for the next 180 days.
const hsts = "max-age=15552000"

func securityHeaders(c *fiber.Ctx) error {
	setSecurityHeaders(c)
	return c.Next()
}

// setSecurityHeaders sets the headers every response carries, refusals
// too; the error handler sets them again for the answers fasthttp gives
// before any middleware runs (a request too large or too slow to read).
// Strict-Transport-Security only when the request came over https (through
// a trusted proxy that says so): over plain http it would mean nothing.
func setSecurityHeaders(c *fiber.Ctx) {
	setBaseSecurityHeaders(&c.Response().Header)
	if c.Secure() {
		c.Set(fiber.HeaderStrictTransportSecurity, hsts)
	}
}

// setBaseSecurityHeaders sets the security headers that do not depend on
// how the request arrived.
func setBaseSecurityHeaders(h *fasthttp.ResponseHeader) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// Request ids are a random prefix chosen at start and a counter: unique
// across restarts and instances without a random read per request.
var (
	idPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	idCounter atomic.Uint64
)

func (h *handlers) requestID(c *fiber.Ctx) error {
	id := idPrefix + strconv.FormatUint(idCounter.Add(1)+1<<32, 16)[1:]
	c.Locals("request_id", id)
	c.Set("X-Request-Id", id)
	return c.Next()
}

func requestIDOf(c *fiber.Ctx) string {
	id, _ := c.Locals("request_id").(string)
	return id
}

// logRequests writes one line per request to the log, and counts it in the
// metrics: who asked (request id, client address, person), what (method,
// route pattern, path without the query), and the answer (status,
// duration, body bytes). A server error is logged at level ERROR.
func (h *handlers) logRequests(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// The error handler writes the response; run it now so the line
		// below logs the status the client gets.
		h.handleError(c, err)
	}
	d := time.Since(start)
	status, route := c.Response().StatusCode(), h.routes.label(c)
	h.metrics.observe(c.Method(), route, status, d)
	level := slog.LevelInfo
	if status >= fiber.StatusInternalServerError {
		level = slog.LevelError
	}
	// Every request's line is written, even among many alike (an outage's
	// 503s): the access log is one line per request.
	h.log.LogAttrs(everyLine(context.Background()), level, "request",
		slog.String("request_id", requestIDOf(c)),
		slog.String("method", c.Method()),
		slog.String("route", route),
		slog.String("path", c.Path()),
		slog.Int("status", status),
		slog.Duration("duration", d),
		slog.Int("bytes", responseBytes(c)),
		slog.String("client_ip", h.proxies.clientAddr(c)),
		slog.String("person", personOf(c).Name))
	return nil
}

// handleError runs the error handler; should that fail or panic too (a
// template that cannot render), the answer is a plain 500 with the request
// id, and the process keeps serving.
func (h *handlers) handleError(c *fiber.Ctx, err error) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("panic in the error handler", "value", fmt.Sprint(r), "err", err, "request_id", requestIDOf(c), "stack", string(debug.Stack()))
			c.Response().ResetBody()
			c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
			_ = c.Status(fiber.StatusInternalServerError).SendString("something went wrong on our side; request id " + requestIDOf(c) + "\n")
		}
	}()
	if herr := c.App().ErrorHandler(c, err); herr != nil {
		_ = c.SendStatus(fiber.StatusInternalServerError)
	}
}

// recoverPanics turns a panic in any later handler into an error (so the
// error handler answers 500 with the request id, in the representation
// asked for) and logs its stack; the process keeps serving.
func (h *handlers) recoverPanics(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("panic", "value", fmt.Sprint(r), "path", c.Path(), "request_id", requestIDOf(c), "stack", string(debug.Stack()))
			// What the handler set before it panicked does not belong to
			// the 500: a validator, a redirect, a cookie (clearing a notice
			// the person never saw), htmx instructions, a half body.
			for _, k := range []string{fiber.HeaderETag, fiber.HeaderLocation, fiber.HeaderSetCookie, fiber.HeaderCacheControl,
				"HX-Push-Url", "HX-Location", "HX-Redirect", "HX-Trigger", "HX-Reswap", "HX-Retarget"} {
				c.Response().Header.Del(k)
			}
			c.Response().ResetBody()
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// tooLargeHeader marks a request whose body was too large to read before
// any of it was sent: one that asked first (Expect), whose Content-Length
// is then set to 0 so that nothing waits for a body that must not come
// (New, HeaderReceived). A client that sends it itself only has its own
// request refused.
const tooLargeHeader = "X-Orders-Body-Too-Large"

// announcedTooLarge says whether a request announced a body larger than
// MaxBody.
func announcedTooLarge(h *fasthttp.RequestHeader) bool {
	return h.ContentLength() > MaxBody || len(h.Peek(tooLargeHeader)) > 0
}

// bodyReadLocal marks a request whose body readBody has taken.
const bodyReadLocal = "body_read"

// closeUnreadBody closes the connection of a request answered without its
// body having been read (refused before readBody), when it announced one:
// fasthttp would take the bytes that follow for the next request. The
// connection lingers, so that a client still sending reads the answer
// instead of a reset; what it still sends is thrown away, never kept.
func closeUnreadBody(c *fiber.Ctx) error {
	err := c.Next()
	if read, _ := c.Locals(bodyReadLocal).(bool); !read {
		if n := c.Request().Header.ContentLength(); n > 0 || n == -1 || announcedTooLarge(&c.Request().Header) { // -1: chunked
			c.Context().SetConnectionClose()
			lingerOnClose(c.Context().Conn())
		}
	}
	return err
}

// checkFraming refuses requests whose framing is ambiguous, before any
// handler sees the body:
//   - two Content-Length headers, Content-Length beside Transfer-Encoding,
//     or a Transfer-Encoding other than one "chunked": fasthttp believes
//     the last length, or takes any coding for chunked, while a proxy in
//     front may believe another; the bytes one of them takes for a body
//     the other runs as a request of its own (request smuggling). The
//     connection is closed after the 400, so nothing that followed on it is
//     ever read as a request.
//   - a Content-Encoding other than identity, on any of its header lines:
//     Fiber's c.Body() inflates gzip, deflate and br without a limit, and
//     reads the last Content-Encoding line where c.Get reads the first.
//
// The raw header lines are read: fasthttp keeps one Content-Length however
// many were sent, and rewrites Transfer-Encoding to "chunked".
func checkFraming(c *fiber.Ctx) error {
	lengths, transfers, encoded := 0, 0, false
	visitRawHeaders(c.Request().Header.RawHeaders(), func(k, v []byte) {
		switch {
		case bytes.EqualFold(k, []byte(fiber.HeaderContentLength)):
			lengths++
		case bytes.EqualFold(k, []byte(fiber.HeaderTransferEncoding)):
			transfers++
			if !bytes.EqualFold(v, []byte("chunked")) {
				transfers++ // a list of codings, or one fasthttp does not decode
			}
		case bytes.EqualFold(k, []byte(fiber.HeaderContentEncoding)):
			for _, coding := range bytes.Split(v, []byte{','}) {
				if coding = bytes.TrimSpace(coding); len(coding) > 0 && !bytes.EqualFold(coding, []byte("identity")) {
					encoded = true
				}
			}
		}
	})
	if lengths > 1 || transfers > 1 || lengths > 0 && transfers > 0 {
		c.Context().SetConnectionClose()
		return fiber.NewError(fiber.StatusBadRequest, "a request carries one Content-Length or one Transfer-Encoding: chunked, not more, not both")
	}
	if encoded {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "compressed request bodies are not accepted; send the body without Content-Encoding")
	}
	return c.Next()
}

// visitRawHeaders calls fn with the trimmed name and value of each raw
// request header line.
func visitRawHeaders(raw []byte, fn func(k, v []byte)) {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if k, v, ok := bytes.Cut(line, []byte{':'}); ok {
			fn(bytes.TrimSpace(k), bytes.TrimSpace(v))
		}
	}
}

// checkHost refuses, before any work, a request that names a host the
// server does not answer to: 421 (a DNS-rebinding page reaches the server
// under a name of its own). Every name counts: the Host header, the host
// of an absolute request target, and, from a trusted proxy, every
// X-Forwarded-Host (the proxy passes on what the client said, so a
// foreign Host behind an allowed forwarded one is refused too). IP
// literals (a rebinding needs a name), localhost and the configured names
// pass. Two Host headers are 400: which one a proxy believed is unknown.
func checkHost(allowed []string) fiber.Handler {
	names := map[string]bool{"localhost": true}
	for _, n := range allowed {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names[n] = true
		}
	}
	answersTo := func(host string) bool {
		host = strings.ToLower(strings.TrimSpace(host))
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if net.ParseIP(host) != nil {
			return true
		}
		return hostName(host) && (names[host] || strings.HasSuffix(host, ".localhost"))
	}
	refuse := func(host string) error {
		host = strings.ToLower(strings.TrimSpace(host))
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return fiber.NewError(fiber.StatusMisdirectedRequest, "this server does not answer to the host "+strconv.Quote(host)+"; add it to -hosts (ALLOWED_HOSTS)")
	}
	return func(c *fiber.Ctx) error {
		hostLines := 0
		var forwarded []string
		trusted := c.IsProxyTrusted()
		visitRawHeaders(c.Request().Header.RawHeaders(), func(k, v []byte) {
			switch {
			case bytes.EqualFold(k, []byte(fiber.HeaderHost)):
				hostLines++
			case trusted && bytes.EqualFold(k, []byte(fiber.HeaderXForwardedHost)):
				forwarded = append(forwarded, strings.Split(string(v), ",")...)
			}
		})
		if hostLines > 1 {
			c.Context().SetConnectionClose()
			return badRequest("a request carries one Host header, not more")
		}
		// The request target's host, else the Host header's.
		if h := string(c.Request().URI().Host()); !answersTo(h) {
			return refuse(h)
		}
		if hostLines == 1 && !answersTo(string(c.Request().Header.Host())) {
			return refuse(string(c.Request().Header.Host()))
		}
		for _, h := range forwarded {
			if !answersTo(h) {
				return refuse(h)
			}
		}
		return c.Next()
	}
}

// hostName reports whether h is made of what a host name is made of:
// letters, digits, hyphens, dots (and underscores, which container
// names have).
func hostName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

// authenticate says who every request acts as (personOf): the person of
// a token (Authorization: Bearer) or of a session cookie (orders_session),
// or, while no account exists (protected mode), anonymous with every right.
// Once accounts exist, a request without a valid credential reaches only
// the paths open to everyone (the health checks, static files, the
// sign-in form and /session itself); anything else is sent to sign in
// (unsigned). A token that is not known counts as a failed sign-in from
// the client's address, so guessing tokens meets the sign-in throttle. A
// session that is not known is no attempt (sessions expire): its cookie
// is cleared. A valid token is never throttled: 256 random bits are not
// guessed, and a program behind the address of a guesser keeps working.
//
// Static files and the health checks ask nothing of Redis: they act as
// no one, whatever credential they carry.
func (h *handlers) authenticate(timeout time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if alwaysOpen(c.Path()) {
			c.Locals(personLocal, &person{Name: anonymous})
			return c.Next()
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), timeout)
		defer cancel()
		p, failed, err := h.identify(ctx, c)
		if err != nil {
			return err
		}
		if p != nil {
			c.Locals(personLocal, p)
			return c.Next()
		}
		has, err := h.store.HasUsers(ctx)
		if err != nil {
			return err
		}
		if has {
			h.sawAccounts.Store(true)
		} else if h.sawAccounts.Load() {
			// Accounts this instance has seen are gone: Redis forgot them
			// (a wipe, a restore, a failover with loss), since the last
			// enabled admin cannot be removed. The desk stays closed rather
			// than open to anyone until someone makes an account again
			// (orders user add, or ORDERS_ADMIN at a restart).
			h.log.Error("the accounts are gone from the store; the desk stays closed until an account is made (orders user add, or ORDERS_ADMIN at start)",
				"request_id", requestIDOf(c))
		}
		if !has && !h.sawAccounts.Load() {
			c.Locals(personLocal, &person{Name: anonymous, Role: store.RoleAdmin, Open: true})
			return c.Next()
		}
		c.Locals(personLocal, &person{Name: anonymous})
		switch failed {
		case failedToken:
			addr := h.proxies.clientAddr(c)
			if err := h.limits.CountFailedSignIn(ctx, addr, ""); err != nil {
				if th := asThrottled(err); th != nil {
					h.log.Warn("sign-in throttled", "client", addr, "via", "token", "limit", th.Limit,
						"retry_after_s", int(math.Ceil(th.RetryAfter.Seconds())), "request_id", requestIDOf(c))
					return tooMany(c, th)
				}
				h.log.Error("a failed sign-in could not be counted", "client", addr, "via", "token", "err", err, "request_id", requestIDOf(c))
			}
			h.log.Warn("sign-in failed", "client", addr, "via", "token", "request_id", requestIDOf(c))
			// A program's credential: 401 whatever it accepts, never a
			// redirect to a form.
			return store.Errorf(store.EUNSIGNED, "the token is not known: it was revoked, its person disabled, or it was never made")
		case failedSession:
			clearSessionCookie(c)
		}
		if signInOpen(c) {
			return c.Next()
		}
		return unsigned(c)
	}
}

// anonymous is the name history and the logs give a request of no one.
const anonymous = "anonymous"

// credential failures identify tells apart.
const (
	failedNone    = iota // no credential
	failedToken          // a Bearer token that is not known (or revoked, or of a disabled account)
	failedSession        // a session cookie that is not known (ended, expired, ...)
)

// maxSecret is the longest token or session secret read; a longer one is
// no secret the store made.
const maxSecret = 128

// identify is the person c's credential names: its Bearer token, else its
// session cookie. Another Authorization scheme (a browser's remembered
// basic auth) is no credential. With no valid one, failed says what was
// wrong; err is Redis failing.
func (h *handlers) identify(ctx context.Context, c *fiber.Ctx) (p *person, failed int, err error) {
	if auth := strings.TrimSpace(c.Get(fiber.HeaderAuthorization)); auth != "" {
		scheme, secret, _ := strings.Cut(auth, " ")
		if strings.EqualFold(scheme, "Bearer") {
			secret = strings.TrimSpace(secret)
			if secret == "" || len(secret) > maxSecret {
				return nil, failedToken, nil
			}
			u, t, err := h.store.TokenUser(ctx, secret)
			if store.ErrorCode(err) == store.ENOTFOUND {
				return nil, failedToken, nil
			}
			if err != nil {
				return nil, failedNone, err
			}
			return &person{User: u, Name: u.Name, Role: lowerRole(u.Role, t.Role), Token: t, Addr: h.proxies.clientAddr(c)}, failedNone, nil
		}
	}
	secret := c.Cookies(sessionCookie)
	if secret == "" {
		return nil, failedNone, nil
	}
	if len(secret) > maxSecret {
		return nil, failedSession, nil
	}
	u, err := h.store.SessionUser(ctx, secret)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return nil, failedSession, nil
	}
	if err != nil {
		return nil, failedNone, err
	}
	return &person{User: u, Name: u.Name, Role: u.Role, Session: strings.Clone(secret), Addr: h.proxies.clientAddr(c)}, failedNone, nil
}

// lowerRole is the one of a and b with fewer rights (no role when either
// is none).
func lowerRole(a, b store.Role) store.Role {
	if !a.Valid() || !b.Valid() {
		return ""
	}
	if a.AtLeast(b) {
		return b
	}
	return a
}

// alwaysOpen reports whether path is served to anyone without looking for
// a person: the health checks and the static files.
func alwaysOpen(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/favicon.ico":
		return true
	}
	return strings.HasPrefix(path, "/public/")
}

// signInOpen reports whether c may go on without a signed-in person: the
// sign-in form and the session itself (signing in, and signing out, which
// ends only the session its cookie names).
func signInOpen(c *fiber.Ctx) bool {
	switch c.Path() {
	case signInPath:
		return c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead
	case sessionPath:
		return true
	}
	return false
}

// unsigned answers a request that needs a signed-in person and has none:
// a program (JSON) gets 401 with WWW-Authenticate: Bearer (errorHandler);
// htmx gets 401 with HX-Redirect to the sign-in form, which htmx follows
// before swapping anything, and back to the page it was on; a page gets
// 303 to the sign-in form, and back.
func unsigned(c *fiber.Ctx) error {
	rp, err := negotiate(c)
	unsignedErr := store.Errorf(store.EUNSIGNED, "sign in first: a browser at %s, a program with Authorization: Bearer and a token", signInPath)
	switch {
	case err != nil || rp == reprJSON:
		return unsignedErr
	case c.Get("HX-Request") == "true":
		back := ""
		if u, err := url.Parse(c.Get("HX-Current-URL")); err == nil {
			back = localPath(u.RequestURI())
		}
		c.Set("HX-Redirect", signInURL(back))
		return unsignedErr
	}
	back := ""
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead:
		back = localPath(string(c.Request().RequestURI()))
	default:
		// A form sent without a session: back to the page it was on.
		if u, err := url.Parse(c.Get(fiber.HeaderReferer)); err == nil && strings.EqualFold(u.Host, c.Hostname()) {
			back = localPath(u.RequestURI())
		}
	}
	c.Set(fiber.HeaderCacheControl, noStore)
	return c.Redirect(signInURL(back), fiber.StatusSeeOther)
}

// logName is a user name a client sent, cut to 64 bytes for the log.
func logName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// readBody reads the request's body as it arrives, growing its buffer
// with the bytes received (never by the Content-Length announced), and
// refuses one larger than MaxBody with 413 as soon as it knows: from the
// Content-Length, else once MaxBody+1 bytes have come. As it arrives, the
// body takes its share of the bodies' budget (bodyBudget); past the budget
// it is 503 with Retry-After, the rest unread. A body that does not arrive within
// BodyTimeout is 408. All close the connection; the 413's and the 503's
// connections linger (listener.go), so that a client still sending reads
// the answer instead of a reset. What follows sees the body in memory:
// c.Body, BodyParser, PostArgs and MultipartForm work as they would
// without streaming.
func (h *handlers) readBody(c *fiber.Ctx) error {
	c.Locals(bodyReadLocal, true)
	req := c.Request()
	closeGently := func() {
		c.Context().SetConnectionClose()
		lingerOnClose(c.Context().Conn())
	}
	tooLarge := func() error {
		closeGently()
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, "the request body is larger than 1 MiB")
	}
	if announcedTooLarge(&req.Header) {
		return tooLarge()
	}
	if !req.IsBodyStream() {
		return c.Next()
	}
	limit := req.Header.ContentLength()
	if limit < 0 { // chunked: length unknown
		limit = MaxBody + 1
	}
	body, taken, err := h.bodies.read(req.BodyStream(), limit)
	c.Locals(bodyHeldLocal, taken) // given back by returnBodies
	if errors.Is(err, errBodyBudget) {
		closeGently()
		c.Set(fiber.HeaderRetryAfter, "1")
		return err
	}
	if err != nil {
		c.Context().SetConnectionClose()
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return fiber.NewError(fiber.StatusRequestTimeout, "the request body did not arrive in time")
		}
		return badRequest("the request body cannot be read")
	}
	if len(body) > MaxBody {
		return tooLarge()
	}
	req.SetBodyRaw(body)
	return c.Next()
}

func unsafeMethod(m string) bool {
	return m != fiber.MethodGet && m != fiber.MethodHead && m != fiber.MethodOptions
}

// guardWrites refuses unsafe requests from other origins with 403, and
// nothing changes: a
// browser says where a request comes from in Sec-Fetch-Site and Origin.
// Clients that send neither (curl, programs) are not browsers and pass.
func (h *handlers) guardWrites(c *fiber.Ctx) error {
	if !unsafeMethod(c.Method()) {
		return c.Next()
	}
	if site := c.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return fiber.NewError(fiber.StatusForbidden, "cross-origin writes are refused")
	}
	if origin := c.Get(fiber.HeaderOrigin); origin != "" {
		// Scheme and host must match. Behind a proxy that ends TLS, the
		// proxy must send X-Forwarded-Proto (docs/operations.md). "null" (a
		// sandboxed or file page) has no host and is refused.
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, c.Hostname()) || !strings.EqualFold(u.Scheme, c.Protocol()) {
			return fiber.NewError(fiber.StatusForbidden, "cross-origin writes are refused")
		}
	}
	return c.Next()
}

// methodOverride lets a plain HTML form send PUT and DELETE as a POST with
// a _method field (_method=PUT or _method=DELETE). Only POST is overridden.
func methodOverride(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodPost {
		return c.Next()
	}
	ct := mediaType(c.Get(fiber.HeaderContentType))
	if ct != fiber.MIMEApplicationForm && ct != fiber.MIMEMultipartForm {
		return c.Next()
	}
	// Only the form body counts: a _method in the query string would let a
	// link or a cross-site GET-shaped form pick the method.
	var method string
	if ct == fiber.MIMEMultipartForm {
		// A body that is no form is a 400, not a POST that lost its _method.
		f, err := c.MultipartForm()
		if err != nil {
			return badRequest("the multipart form cannot be read")
		}
		if v := f.Value["_method"]; len(v) > 0 {
			method = v[0]
		}
	} else {
		method = string(c.Request().PostArgs().Peek("_method"))
	}
	switch m := strings.ToUpper(strings.TrimSpace(method)); m {
	case "":
	case fiber.MethodPut, fiber.MethodDelete:
		c.Method(m)
	default:
		return fiber.NewError(fiber.StatusBadRequest, "_method must be PUT or DELETE")
	}
	return c.Next()
}

// mediaType is the lower-cased media type of a Content-Type, without parameters.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// DefaultBodyBudget is the most memory, in bytes, that request bodies take
// at once across every connection while they are read and handled, unless
// Config.BodyBudget says otherwise.
const DefaultBodyBudget = 64 << 20

// errBodyBudget answers a request whose body would take the bodies being
// read past the budget: the server is busy, not the request wrong, and the
// same request a moment later is read.
var errBodyBudget = fiber.NewError(fiber.StatusServiceUnavailable, "the server is reading too many request bodies at once; try again in a moment")

// bodyBudget bounds the memory request bodies hold across every
// connection. A body takes its share as it arrives, before each time its
// buffer grows (read), and gives it back once the handler is done with it
// (returnBodies). Each connection is bounded by MaxBody already; the
// budget bounds them all together, which the connection caps alone only
// do at MaxBody times the number of connections. Charged as they arrive,
// bodies announced and not sent take next to nothing of it: a client
// must send a body to hold its share.
type bodyBudget struct {
	limit int64
	held  atomic.Int64
}

// take reserves n bytes, unless that would take the total past the limit.
func (b *bodyBudget) take(n int64) bool {
	for {
		cur := b.held.Load()
		if cur+n > b.limit {
			return false
		}
		if b.held.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *bodyBudget) give(n int64) { b.held.Add(-n) }

// bodyHeldLocal is the local under which readBody leaves the bytes it took
// of the budget for the request's body.
const bodyHeldLocal = "body_held"

// returnBodies wraps the server's handler: when it has finished with a
// request, the request's body is dropped and its share of the budget given
// back. That is before the answer is written, which does not need the body
// and may wait long on a client that reads slowly.
func (b *bodyBudget) returnBodies(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		defer func() {
			if n, ok := ctx.UserValue(bodyHeldLocal).(int64); ok {
				ctx.RemoveUserValue(bodyHeldLocal)
				ctx.Request.ResetBody()
				b.give(n)
			}
		}()
		next(ctx)
	}
}

// read reads r to its end, or to limit bytes, into memory that grows with
// what arrives: it starts at 4 KiB and doubles, never past limit, and
// takes each growth from the budget first. A body announced and not sent
// takes next to nothing, and the buffer kept is never larger than limit.
// taken is what read took of the budget (the buffer's size), to be given
// back whatever err is; err is errBodyBudget when the budget ran out.
func (b *bodyBudget) read(r io.Reader, limit int) (body []byte, taken int64, err error) {
	size := min(limit, 4<<10)
	if !b.take(int64(size)) {
		return nil, 0, errBodyBudget
	}
	taken = int64(size)
	body = make([]byte, 0, size)
	for len(body) < limit {
		if len(body) == cap(body) {
			next := min(limit, 2*cap(body))
			if !b.take(int64(next - cap(body))) {
				return body, taken, errBodyBudget
			}
			taken += int64(next - cap(body))
			grown := make([]byte, len(body), next)
			copy(grown, body)
			body = grown
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, taken, nil
		}
		if err != nil {
			return body, taken, err
		}
	}
	return body, taken, nil
}

// proxies are the trusted proxies' addresses and ranges.
type proxies []*net.IPNet

// newProxies parses the list checkNetConfig accepted.
func newProxies(list []string) proxies {
	var out proxies
	for _, p := range list {
		p = strings.TrimSpace(p)
		if _, n, err := net.ParseCIDR(p); err == nil {
			out = append(out, n)
		} else if ip := net.ParseIP(p); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
		}
	}
	return out
}

func (ps proxies) trusted(ip net.IP) bool {
	for _, n := range ps {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the client a request comes from, as the
// limits count it and the logs name it: the connection's peer, unless the
// peer is a trusted proxy; then the nearest address in X-Forwarded-For
// that is not a trusted proxy. Each proxy appends the address it got the
// request from, so only the entries right of the first untrusted one were
// written by proxies; whatever lies left of it the client wrote itself.
// (Fiber's c.IP(), given a ProxyHeader, answers the header whole, or with
// IP validation its leftmost address: what the client wrote.) When every entry is a
// trusted proxy the leftmost is taken; an entry that is no address ends
// the walk at the last good one.
func (ps proxies) clientAddr(c *fiber.Ctx) string {
	peer := c.Context().RemoteIP()
	if len(ps) == 0 || !ps.trusted(peer) {
		return peer.String()
	}
	var entries [][]byte
	c.Request().Header.VisitAll(func(k, v []byte) {
		if bytes.EqualFold(k, []byte(fiber.HeaderXForwardedFor)) {
			entries = append(entries, bytes.Split(v, []byte{','})...)
		}
	})
	addr := peer
	for i := len(entries) - 1; i >= 0; i-- {
		ip := parseForwarded(string(bytes.TrimSpace(entries[i])))
		if ip == nil {
			break
		}
		addr = ip
		if !ps.trusted(ip) {
			break
		}
	}
	return addr.String()
}

// parseForwarded reads one X-Forwarded-For entry: an address, possibly
// with a port ("192.0.2.1:4711", "[2001:db8::1]:443").
func parseForwarded(s string) net.IP {
	if ip := net.ParseIP(s); ip != nil {
		return ip
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		return net.ParseIP(h)
	}
	return net.ParseIP(strings.Trim(s, "[]"))
}

// tooMany is the 429 of a request a limit refused, with Retry-After in
// whole seconds (rounded up).
func tooMany(c *fiber.Ctx, th *store.Throttled) error {
	secs := int64(math.Ceil(th.RetryAfter.Seconds()))
	c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	var msg string
	switch th.Limit {
	case store.LimitSignInAddress:
		msg = "too many failed sign-ins from your address; try again in " + waitText(th.RetryAfter)
	case store.LimitSignInAccount:
		msg = "too many failed sign-ins for this user name; try again in " + waitText(th.RetryAfter)
	case store.LimitStreamsAddress:
		msg = "too many live update streams are open from your address; close a tab or try again in a moment"
	default:
		msg = "too many requests; try again in " + waitText(th.RetryAfter)
	}
	return fiber.NewError(fiber.StatusTooManyRequests, msg)
}

// waitText is a wait in words: "5 minutes", "1 minute", "40 seconds".
func waitText(d time.Duration) string {
	if d > 90*time.Second {
		m := int(math.Ceil(d.Minutes()))
		return strconv.Itoa(m) + " minutes"
	}
	s := max(int(math.Ceil(d.Seconds())), 1)
	if s == 1 {
		return "1 second"
	}
	return strconv.Itoa(s) + " seconds"
}

// asThrottled returns err's *store.Throttled, or nil.
func asThrottled(err error) *store.Throttled {
	var th *store.Throttled
	if errors.As(err, &th) {
		return th
	}
	return nil
}

// LogSummary is a slog.Handler that keeps an outage from flooding the log:
// a warning or an error of one kind (the same level and message) is
// written in full the first time, and its repeats within the interval that
// follows are only counted; at the end of the interval one line says how
// many there were, with the attributes of the last one under "last" and
// the client addresses the repeats named (a "client" attribute: a
// refused sign-in names its address even when summarised). While
// they go on, one such line per interval; an interval with none ends the
// summary, and the next one is written in full again. Lines below WARN,
// and the one line per request (the access log), pass through untouched.
type LogSummary struct {
	next slog.Handler
	s    *summaries
}

// summaries is the state every handler derived from one LogSummary
// (WithAttrs, WithGroup) shares.
type summaries struct {
	mu     sync.Mutex
	every  time.Duration
	kinds  map[summaryKey]*summary
	closed bool
}

type summaryKey struct {
	level slog.Level
	msg   string
}

// summary is one kind's interval under way: the repeats counted, and the
// last of them with the handler it came through.
type summary struct {
	n     int
	last  slog.Record
	h     slog.Handler
	timer *time.Timer
	// clients are the distinct client addresses the repeats named, the
	// first maxClients of them; unlisted counts the repeats of others.
	clients  []string
	unlisted int
}

// maxClients is how many client addresses a summary line lists.
const maxClients = 32

// maxSummaries bounds the kinds followed at once; past it a line is
// written as it is (messages are fixed strings in the code: a handful).
const maxSummaries = 256

// NewLogSummary wraps next so that repeated warnings and errors are
// summarised once per every (10 s when 0).
func NewLogSummary(next slog.Handler, every time.Duration) *LogSummary {
	if every <= 0 {
		every = 10 * time.Second
	}
	return &LogSummary{next: next, s: &summaries{every: every, kinds: map[summaryKey]*summary{}}}
}

// everyLineKey marks a context whose log line is always written (the
// access log: one line per request, by contract).
type everyLineKey struct{}

// everyLine returns ctx marked so that LogSummary writes its line whatever
// came before.
func everyLine(ctx context.Context) context.Context {
	return context.WithValue(ctx, everyLineKey{}, true)
}

// Enabled reports whether next writes records of level.
func (h *LogSummary) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle writes r, or counts it when one of its kind was written within
// the interval.
func (h *LogSummary) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || ctx.Value(everyLineKey{}) != nil {
		return h.next.Handle(ctx, r)
	}
	s, k := h.s, summaryKey{r.Level, r.Message}
	s.mu.Lock()
	if sm := s.kinds[k]; sm != nil {
		sm.n++
		sm.last, sm.h = r.Clone(), h.next
		sm.addClient(r)
		s.mu.Unlock()
		return nil
	}
	if !s.closed && len(s.kinds) < maxSummaries {
		sm := &summary{}
		sm.timer = time.AfterFunc(s.every, func() { s.flush(k, false) })
		s.kinds[k] = sm
	}
	s.mu.Unlock()
	return h.next.Handle(ctx, r)
}

// flush writes kind k's summary when it had repeats, and ends it (at
// once when final) or starts its next interval.
func (s *summaries) flush(k summaryKey, final bool) {
	s.mu.Lock()
	sm := s.kinds[k]
	if sm == nil {
		s.mu.Unlock()
		return
	}
	n, last, h, clients, unlisted := sm.n, sm.last, sm.h, sm.clients, sm.unlisted
	if n == 0 || final {
		sm.timer.Stop()
		delete(s.kinds, k)
	} else {
		sm.n, sm.clients, sm.unlisted = 0, nil, 0
		sm.timer.Reset(s.every)
	}
	s.mu.Unlock()
	if n == 0 {
		return
	}
	out := slog.NewRecord(time.Now(), last.Level, last.Message, 0)
	out.AddAttrs(slog.Int("repeated", n), slog.Duration("in_last", s.every))
	if len(clients) > 0 {
		out.AddAttrs(slog.String("clients", strings.Join(clients, " ")))
		if unlisted > 0 {
			out.AddAttrs(slog.Int("from_other_clients", unlisted))
		}
	}
	attrs := make([]any, 0, last.NumAttrs())
	last.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	out.AddAttrs(slog.Group("last", attrs...))
	_ = h.Handle(context.Background(), out)
}

// addClient notes the client address r names, if any.
func (sm *summary) addClient(r slog.Record) {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "client" {
			return true
		}
		c := a.Value.String()
		switch {
		case slices.Contains(sm.clients, c):
		case len(sm.clients) < maxClients:
			sm.clients = append(sm.clients, c)
		default:
			sm.unlisted++
		}
		return false
	})
}

// Flush writes every summary under way and stops summarising: what is
// logged after it is written as it is. For the end of the process, so
// that the repeats of its last seconds are not lost.
func (h *LogSummary) Flush() {
	s := h.s
	s.mu.Lock()
	s.closed = true
	keys := make([]summaryKey, 0, len(s.kinds))
	for k := range s.kinds {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.flush(k, true)
	}
}

// WithAttrs returns a handler with attrs that shares h's summaries.
func (h *LogSummary) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogSummary{next: h.next.WithAttrs(attrs), s: h.s}
}

// WithGroup returns a handler with a group that shares h's summaries.
func (h *LogSummary) WithGroup(name string) slog.Handler {
	return &LogSummary{next: h.next.WithGroup(name), s: h.s}
}

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
func (m *Metrics) registerApp(streamsOpen func() int, st store.Service, bodies *bodyBudget, drawn *fragments) error {
	if m == nil {
		return nil
	}
	if drawn != nil {
		if err := m.Register(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "render_cache_hits_total",
				Help: "Fragments (List rows) copied from the render cache instead of drawn."},
				func() float64 { return float64(drawn.hits.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "render_cache_misses_total",
				Help: "Fragments (List rows) drawn because the render cache did not hold them."},
				func() float64 { return float64(drawn.misses.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "render_cache_bytes",
				Help: "Bytes the render cache holds now, keys and fragments counted (at most -render-cache MiB)."},
				func() float64 { return float64(drawn.cache.WeightedSize()) }),
		); err != nil {
			return err
		}
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

// LogWriter buffers the log's lines (one a request: the access log) and
// writes them out every 100 ms (and when 32 KiB are waiting, and on
// Close), so a busy server makes a few write calls a second instead of
// one per request. A crash loses at most the last 100 ms of log lines.
type LogWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// NewLogWriter starts a LogWriter writing to w.
func NewLogWriter(w io.Writer) *LogWriter {
	l := &LogWriter{w: bufio.NewWriterSize(w, 32<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.flush()
			case <-l.stop:
				l.flush()
				return
			}
		}
	}()
	return l
}

func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *LogWriter) flush() {
	l.mu.Lock()
	_ = l.w.Flush()
	l.mu.Unlock()
}

// Close writes what is waiting and stops the flusher.
func (l *LogWriter) Close() {
	close(l.stop)
	<-l.done
}
