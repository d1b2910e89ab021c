package routes

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"orders/store"
)

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
		slog.String("person", actorName(c)))
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

// actorLocal holds the signed-in user's name (basicAuth).
const actorLocal = "actor"

// actorName is who the request comes from: the signed-in user, else
// "anonymous" (the actor history records).
func actorName(c *fiber.Ctx) string {
	if u, _ := c.Locals(actorLocal).(string); u != "" {
		return u
	}
	return "anonymous"
}

// basicAuth asks for the configured user and password on every path but
// the health checks, comparing in constant time (hashes of equal length,
// so neither the length nor a prefix of the secret leaks through timing).
//
// Failed attempts are limited (store.Limiter): an address or a user name
// that has failed too often lately gets 429 with Retry-After before its
// password is looked at, so a right password from it is refused too and
// a guesser learns nothing. A wrong password is counted only while the
// limit allows it, in one step that reads and counts: of guesses sent at
// once, all let through before any was counted, those past the limit get
// 429 too. A request without credentials (a browser's first, which brings
// up its prompt) is no attempt and counts nothing.
// When Redis does not answer, sign-in answers 503: the limits cannot be
// read, and without them guessing would be free.
func (h *handlers) basicAuth(user, password string, timeout time.Duration) fiber.Handler {
	want := sha256.Sum256([]byte(user + ":" + password))
	return func(c *fiber.Ctx) error {
		if p := c.Path(); p == "/healthz" || p == "/readyz" {
			return c.Next()
		}
		hdr := c.Get(fiber.HeaderAuthorization)
		if len(hdr) <= 6 || !strings.EqualFold(hdr[:6], "basic ") {
			return errSignIn(c)
		}
		raw, decodeErr := base64.StdEncoding.DecodeString(strings.TrimSpace(hdr[6:]))
		var account string
		if decodeErr == nil {
			account, _, _ = strings.Cut(string(raw), ":")
		}
		addr := h.proxies.clientAddr(c)
		ctx, cancel := context.WithTimeout(c.UserContext(), timeout)
		defer cancel()
		throttled := func(th *store.Throttled) error {
			h.log.Warn("sign-in throttled", "client", addr, "user", logName(account), "limit", th.Limit,
				"retry_after_s", int(math.Ceil(th.RetryAfter.Seconds())), "request_id", requestIDOf(c))
			return tooMany(c, th)
		}
		if err := h.limits.SignInAllowed(ctx, addr, account); err != nil {
			if th := asThrottled(err); th != nil {
				return throttled(th)
			}
			h.log.Warn("sign-in refused: the limits cannot be read", "client", addr, "user", logName(account), "err", err, "request_id", requestIDOf(c))
			return err
		}
		got := [32]byte{}
		if decodeErr == nil {
			got = sha256.Sum256(raw)
		}
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			if err := h.limits.CountFailedSignIn(ctx, addr, account); err != nil {
				if th := asThrottled(err); th != nil {
					return throttled(th)
				}
				h.log.Error("a failed sign-in could not be counted", "client", addr, "user", logName(account), "err", err, "request_id", requestIDOf(c))
			}
			h.log.Warn("sign-in failed", "client", addr, "user", logName(account), "request_id", requestIDOf(c))
			return errSignIn(c)
		}
		c.Locals(actorLocal, user)
		return c.Next()
	}
}

// errSignIn is the 401 that brings up a browser's sign-in prompt.
func errSignIn(c *fiber.Ctx) error {
	c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="Orders", charset="UTF-8"`)
	return fiber.NewError(fiber.StatusUnauthorized, "sign in with the order desk's user name and password")
}

// logName is a user name a client sent, cut to 64 bytes for the log.
func logName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
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
