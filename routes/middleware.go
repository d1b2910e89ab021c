package routes

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// csp allows only the application's own scripts, styles and images: no
// inline script or style anywhere, no framing.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

func securityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", csp)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("X-Frame-Options", "DENY")
	return c.Next()
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

func (h *handlers) logRequests(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// The error handler writes the response; run it now so the line
		// below logs the status the client gets.
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	h.log.Info("request",
		"method", c.Method(),
		"path", c.Path(),
		"status", c.Response().StatusCode(),
		"ms", time.Since(start).Milliseconds(),
		"request_id", requestIDOf(c))
	return nil
}

func unsafeMethod(m string) bool {
	return m != fiber.MethodGet && m != fiber.MethodHead && m != fiber.MethodOptions
}

// guardWrites refuses unsafe requests from other origins (CONTRACT §3): a
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
	if len(c.Body()) > MaxBody {
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, "the request body is larger than 1 MiB")
	}
	return c.Next()
}

// methodOverride lets a plain HTML form send PUT and DELETE as a POST with
// a _method field (CONTRACT §2). Only POST is overridden.
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

// basicAuth asks for the configured user and password on every path but
// the health checks, comparing in constant time (hashes of equal length,
// so neither the length nor a prefix of the secret leaks through timing).
func basicAuth(user, password string) fiber.Handler {
	want := sha256.Sum256([]byte(user + ":" + password))
	return func(c *fiber.Ctx) error {
		if p := c.Path(); p == "/healthz" || p == "/readyz" {
			return c.Next()
		}
		got := [32]byte{}
		if h := c.Get(fiber.HeaderAuthorization); len(h) > 6 && strings.EqualFold(h[:6], "basic ") {
			if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:])); err == nil {
				got = sha256.Sum256(raw)
			}
		}
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="Orders", charset="UTF-8"`)
			return fiber.NewError(fiber.StatusUnauthorized, "sign in with the order desk's user name and password")
		}
		return c.Next()
	}
}

// recoverPanics turns a panic in any later handler into an error (so the
// error handler answers 500 with the request id, in the representation
// asked for) and logs its stack; the process keeps serving (CONTRACT §8).
func (h *handlers) recoverPanics(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			h.log.Error("panic", "value", fmt.Sprint(r), "path", c.Path(), "request_id", requestIDOf(c), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// checkHost refuses a Host the server does not answer to with 421 before
// any work: a DNS-rebinding page reaches the server under its own name
// (CONTRACT §8). IP literals (a rebinding needs a name), localhost and
// the configured names pass.
func checkHost(allowed []string) fiber.Handler {
	names := map[string]bool{"localhost": true}
	for _, n := range allowed {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names[n] = true
		}
	}
	return func(c *fiber.Ctx) error {
		host := strings.ToLower(c.Hostname())
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if names[host] || strings.HasSuffix(host, ".localhost") || net.ParseIP(host) != nil {
			return c.Next()
		}
		return fiber.NewError(fiber.StatusMisdirectedRequest, "this server does not answer to the host "+strconv.Quote(host)+"; add it to -hosts (ALLOWED_HOSTS)")
	}
}

// checkFraming refuses requests whose length is ambiguous: two
// Content-Length headers (fasthttp uses the last one, a proxy in front may
// use the first: request smuggling), and request bodies with a
// Content-Encoding, which Fiber would inflate without a limit (CONTRACT §8).
func checkFraming(c *fiber.Ctx) error {
	if n := countHeader(c.Request().Header.RawHeaders(), "content-length"); n > 1 {
		return fiber.NewError(fiber.StatusBadRequest, "a request may carry one Content-Length")
	}
	if ce := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); ce != "" && !strings.EqualFold(ce, "identity") {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "compressed request bodies are not accepted; send the body without Content-Encoding")
	}
	return c.Next()
}

// countHeader counts the header lines named name (lower case) in raw.
func countHeader(raw []byte, name string) int {
	n := 0
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if k, _, ok := bytes.Cut(line, []byte{':'}); ok && strings.EqualFold(strings.TrimSpace(string(k)), name) {
			n++
		}
	}
	return n
}
