package routes

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

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
