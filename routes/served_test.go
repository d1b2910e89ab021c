package routes

// Served like a fast site: compressed responses, content-hashed
// static URLs cached for a year, a meta description on every page.

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"orders/testutil"
)

// servedApp is the application over miniredis, with one order.
func servedApp(t *testing.T) (*testApp, orderJSON) {
	t.Helper()
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	o := a.create(t, map[string]any{"customer": "Grace Hopper", "email": "grace@example.com",
		"notes": strings.Repeat("A note long enough to be worth compressing. ", 10),
		"items": []any{item("Keyboard", 2, "49.50"), item("Mouse", 1, "19.99")}})
	return a, o
}

// decoded is the body of r after its Content-Encoding.
func decoded(t *testing.T, r *testutil.Resp) string {
	t.Helper()
	var (
		out []byte
		err error
	)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "":
		return r.Body
	case "br":
		out, err = fasthttp.AppendUnbrotliBytes(nil, []byte(r.Body))
	case "gzip":
		out, err = fasthttp.AppendGunzipBytes(nil, []byte(r.Body))
	default:
		t.Fatalf("%s: Content-Encoding %q, want br, gzip or none", r.What, enc)
	}
	if err != nil {
		t.Fatalf("%s: body does not decode as %s: %v", r.What, r.Header.Get("Content-Encoding"), err)
	}
	return string(out)
}

// varyNames is the set of header names in every Vary line of r.
func varyNames(r *testutil.Resp) map[string]bool {
	names := map[string]bool{}
	for _, line := range r.Header.Values("Vary") {
		for _, n := range strings.Split(line, ",") {
			names[strings.ToLower(strings.TrimSpace(n))] = true
		}
	}
	return names
}

func wantVary(t *testing.T, r *testutil.Resp, names ...string) {
	t.Helper()
	got := varyNames(r)
	for _, n := range names {
		if !got[strings.ToLower(n)] {
			t.Errorf("%s: Vary %q, want it to name %s", r.What, r.Header.Values("Vary"), n)
		}
	}
}

func TestNegotiateEncoding(t *testing.T) {
	for _, c := range []struct {
		header string
		want   coding
	}{
		{"", identity},
		{"identity", identity},
		{"gzip, deflate, br, zstd", brotli}, // Chromium
		{"gzip, deflate", gzipped},          // Go's client, curl --compressed without brotli
		{"br", brotli},
		{"BR", brotli},
		{"x-gzip", gzipped},
		{"gzip;q=1.0, br;q=0.5", gzipped},
		{"br;q=0, gzip", gzipped},
		{"br;q=0, gzip;q=0", identity},
		{"*", brotli},
		{"*;q=0", identity},
		{"gzip, *;q=0", gzipped},
		{"br;q=0.5, *", gzipped}, // gzip is not named: * gives it 1
		{"deflate", identity},
		{"br;q=nonsense, gzip", gzipped},
		{"brotli, gzipped", identity},
	} {
		if got := negotiateEncoding(c.header); got != c.want {
			t.Errorf("Accept-Encoding %q: got %q, want %q", c.header, got, c.want)
		}
	}
}

// TestCompressedResponses: pages, fragments, JSON, CSS and JS decode to the
// bytes of the uncompressed answer, say so in Vary, and keep Vary: Accept,
// HX-Request.
func TestCompressedResponses(t *testing.T) {
	a, o := servedApp(t)
	page := a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK)
	css, js := assetURL(t, page, "css/app"), assetURL(t, page, "js/htmx.min")
	for _, c := range []struct {
		target string
		h      testutil.H
		vary   []string
	}{
		{"/orders", testutil.HPage, []string{"Accept", "HX-Request"}},
		{"/orders", testutil.HHX, []string{"Accept", "HX-Request"}},
		{"/orders", testutil.HJSON, []string{"Accept", "HX-Request"}},
		{"/orders/new", testutil.HPage, []string{"Accept", "HX-Request"}},
		{"/orders/inquiry", testutil.HPage, []string{"Accept", "HX-Request"}},
		{path(o.ID), testutil.HPage, []string{"Accept", "HX-Request"}},
		{path(o.ID), testutil.HHX, []string{"Accept", "HX-Request"}},
		{path(o.ID), testutil.HJSON, []string{"Accept", "HX-Request"}},
		{path(o.ID, "/edit"), testutil.HPage, []string{"Accept", "HX-Request"}},
		{css, testutil.H{}, nil},
		{js, testutil.H{}, nil},
		{"/public/js/app.js", testutil.H{}, nil},
	} {
		plain := a.get(t, c.target, c.h).WantStatus(t, http.StatusOK)
		if enc := plain.Header.Get("Content-Encoding"); enc != "" {
			t.Errorf("%s without Accept-Encoding: Content-Encoding %q, want none", plain.What, enc)
		}
		wantVary(t, plain, append([]string{"Accept-Encoding"}, c.vary...)...)
		for _, ae := range []struct{ header, want string }{
			{"gzip, deflate, br, zstd", "br"},
			{"gzip", "gzip"},
			{"br;q=0.5, gzip", "gzip"},
		} {
			r := a.get(t, c.target, c.h.With(testutil.H{"Accept-Encoding": ae.header}))
			r.What += " [Accept-Encoding: " + ae.header + "]"
			r.WantStatus(t, http.StatusOK)
			if got := r.Header.Get("Content-Encoding"); got != ae.want {
				t.Errorf("%s: Content-Encoding %q, want %q", r.What, got, ae.want)
				continue
			}
			if got := decoded(t, r); got != plain.Body {
				t.Errorf("%s: decoded body (%d bytes) differs from the uncompressed one (%d bytes)", r.What, len(got), len(plain.Body))
			}
			if len(r.Body) >= len(plain.Body) {
				t.Errorf("%s: %d bytes compressed, %d plain: want smaller", r.What, len(r.Body), len(plain.Body))
			}
			wantVary(t, r, append([]string{"Accept-Encoding"}, c.vary...)...)
			if ct, pct := r.Header.Get("Content-Type"), plain.Header.Get("Content-Type"); ct != pct {
				t.Errorf("%s: Content-Type %q, uncompressed %q: want the same", r.What, ct, pct)
			}
		}
	}

	t.Run("error pages and 422 forms are compressed too", func(t *testing.T) {
		br := testutil.H{"Accept-Encoding": "br"}
		r := a.get(t, "/orders/999", testutil.HPage.With(br)).WantStatus(t, http.StatusNotFound).WantHeader(t, "Content-Encoding", "br")
		if !strings.Contains(decoded(t, r), "there is nothing") && !strings.Contains(decoded(t, r), "not found") {
			t.Errorf("%s: decoded body does not say the order was not found:\n%s", r.What, testutil.Snippet(decoded(t, r)))
		}
		r = a.do(t, http.MethodPost, "/orders", testutil.Form("customer", ""), testutil.HPage.With(br)).WantStatus(t, http.StatusUnprocessableEntity)
		r.WantHeader(t, "Content-Encoding", "br")
	})

	t.Run("tiny bodies, redirects and non-text stay as they are", func(t *testing.T) {
		ae := testutil.H{"Accept-Encoding": "gzip, br"}
		for _, r := range []*testutil.Resp{
			a.get(t, "/healthz", ae).WantStatus(t, http.StatusOK),
			a.get(t, "/", testutil.HPage.With(ae)).WantStatus(t, http.StatusSeeOther),
			a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Redirected"), testutil.HPage.With(ae)).WantStatus(t, http.StatusSeeOther),
		} {
			if enc := r.Header.Get("Content-Encoding"); enc != "" {
				t.Errorf("%s: Content-Encoding %q, want none for a %d-byte body", r.What, enc, len(r.Body))
			}
		}
	})

	t.Run("HEAD says what GET would", func(t *testing.T) {
		br := testutil.HPage.With(testutil.H{"Accept-Encoding": "br"})
		get := a.get(t, path(o.ID), br).WantStatus(t, http.StatusOK)
		head := a.do(t, http.MethodHead, path(o.ID), testutil.NoBody, br).WantStatus(t, http.StatusOK)
		for _, k := range []string{"Content-Encoding", "ETag", "Vary", "Content-Type"} {
			if head.Header.Get(k) != get.Header.Get(k) {
				t.Errorf("HEAD %s: %s %q, GET %q: want the same", path(o.ID), k, head.Header.Get(k), get.Header.Get(k))
			}
		}
	})
}

// TestCompressedETags: a compressed body has an ETag of its own (never the
// identity body's strong tag), and If-None-Match and If-Match still work.
func TestCompressedETags(t *testing.T) {
	a, o := servedApp(t)
	for _, h := range []testutil.H{testutil.HPage, testutil.HHX, testutil.HJSON, testutil.HXTo("tr#" + rowID(o.ID))} {
		plain := a.get(t, path(o.ID), h).WantStatus(t, http.StatusOK)
		tags := map[string]string{"": plain.Header.Get("ETag")}
		for _, enc := range []string{"br", "gzip"} {
			ae := h.With(testutil.H{"Accept-Encoding": enc})
			r := a.get(t, path(o.ID), ae).WantStatus(t, http.StatusOK).WantHeader(t, "Content-Encoding", enc)
			tag := r.Header.Get("ETag")
			if tag == "" || strings.HasPrefix(tag, "W/") {
				t.Fatalf("%s: ETag %q, want a strong one", r.What, tag)
			}
			for other, otag := range tags {
				if tag == otag {
					t.Errorf("%s [%s]: ETag %q is also the ETag of the %q coding", r.What, enc, tag, other)
				}
			}
			tags[enc] = tag
			// A 304 carries what its 200 would: ETag, Vary, Cache-Control.
			for _, inm := range []string{tag, tags[""], `"nope", ` + tag} {
				nm := a.get(t, path(o.ID), ae.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusNotModified)
				for _, k := range []string{"ETag", "Vary", "Cache-Control"} {
					if nm.Header.Get(k) != r.Header.Get(k) {
						t.Errorf("%s [If-None-Match: %s, %s]: 304 %s %q, 200 %q: want the same", r.What, inm, enc, k, nm.Header.Get(k), r.Header.Get(k))
					}
				}
				if len(nm.Body) != 0 || nm.Header.Get("Content-Encoding") != "" {
					t.Errorf("%s: 304 with a body (%d bytes) or Content-Encoding %q", nm.What, len(nm.Body), nm.Header.Get("Content-Encoding"))
				}
			}
		}
		// The uncompressed answer's 304 keeps its own tag.
		nm := a.get(t, path(o.ID), h.With(testutil.H{"If-None-Match": tags["br"]})).WantStatus(t, http.StatusNotModified)
		if nm.Header.Get("ETag") != tags[""] {
			t.Errorf("%s: 304 without Accept-Encoding has ETag %q, want the identity tag %q", nm.What, nm.Header.Get("ETag"), tags[""])
		}
	}
	// A compressed response's tag is a tag of the current version for If-Match.
	r := a.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"Accept-Encoding": "br"}))
	a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"notes": "changed"}), testutil.HJSON.With(testutil.H{"If-Match": r.Header.Get("ETag")})).WantStatus(t, http.StatusOK)
	a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"notes": "again"}), testutil.HJSON.With(testutil.H{"If-Match": r.Header.Get("ETag")})).WantStatus(t, http.StatusPreconditionFailed)
	a.get(t, path(o.ID), testutil.HJSON.With(testutil.H{"Accept-Encoding": "br", "If-None-Match": r.Header.Get("ETag")})).WantStatus(t, http.StatusOK)
}

var assetRef = regexp.MustCompile(`(?:href|src)="(/public/[^"]+)"`)

// assetURL is the URL a page gives the static file prefix + ".<hash>.ext".
func assetURL(t *testing.T, page *testutil.Resp, prefix string) string {
	t.Helper()
	for _, m := range assetRef.FindAllStringSubmatch(page.Body, -1) {
		if strings.HasPrefix(m[1], "/public/"+prefix+".") {
			return m[1]
		}
	}
	t.Fatalf("%s: no reference to /public/%s.<hash>.*:\n%s", page.What, prefix, testutil.Snippet(page.Body))
	return ""
}

// TestHashedAssets: pages name static files by content hash; those URLs are
// cached for a year as immutable; the plain URL still answers, briefly
// cached; a stale hash answers the current file, never as immutable.
func TestHashedAssets(t *testing.T) {
	a, o := servedApp(t)
	hashed := regexp.MustCompile(`^/public/(.+)\.([0-9a-f]{10})(\.[a-z]+)$`)
	for _, target := range []string{"/orders", "/orders/new", "/orders/inquiry", path(o.ID), path(o.ID, "/edit"), "/orders/999"} {
		page := a.get(t, target, testutil.HPage)
		refs := assetRef.FindAllStringSubmatch(page.Body, -1)
		if len(refs) < 4 {
			t.Errorf("%s: %d static references, want the icon, the stylesheet and two scripts", page.What, len(refs))
		}
		for _, m := range refs {
			url := m[1]
			parts := hashed.FindStringSubmatch(url)
			if parts == nil {
				t.Errorf("%s: static URL %s has no content hash", page.What, url)
				continue
			}
			plainName := parts[1] + parts[3]
			file, err := os.ReadFile("../public/" + plainName)
			if err != nil {
				t.Errorf("%s: %s names public/%s, which cannot be read: %v", page.What, url, plainName, err)
				continue
			}
			r := a.get(t, url, testutil.H{}).WantStatus(t, http.StatusOK).WantHeader(t, "Cache-Control", "public, max-age=31536000, immutable")
			if r.Body != string(file) {
				t.Errorf("%s: body differs from public/%s", r.What, plainName)
			}
			etag := r.Header.Get("ETag")
			a.get(t, url, testutil.H{"If-None-Match": etag}).WantStatus(t, http.StatusNotModified).
				WantHeader(t, "ETag", etag).WantHeader(t, "Cache-Control", "public, max-age=31536000, immutable")

			// The plain name: the same file, cached briefly.
			p := a.get(t, "/public/"+plainName, testutil.H{}).WantStatus(t, http.StatusOK).WantHeader(t, "Cache-Control", "public, max-age=300")
			if p.Body != string(file) || p.Header.Get("Content-Type") != r.Header.Get("Content-Type") {
				t.Errorf("%s: want the body and Content-Type of %s", p.What, url)
			}
			// A hash that is not the current one: the current file, briefly.
			stale := "/public/" + parts[1] + ".0123456789" + parts[3]
			s := a.get(t, stale, testutil.H{}).WantStatus(t, http.StatusOK).WantHeader(t, "Cache-Control", "public, max-age=300")
			if s.Body != string(file) {
				t.Errorf("%s: want the current public/%s", s.What, plainName)
			}
		}
	}

	t.Run("precompressed codings and their ETags", func(t *testing.T) {
		page := a.get(t, "/orders", testutil.HPage)
		for _, prefix := range []string{"css/app", "js/htmx.min", "js/app", "favicon"} {
			url := assetURL(t, page, prefix)
			plain := a.get(t, url, testutil.H{}).WantStatus(t, http.StatusOK)
			wantVary(t, plain, "Accept-Encoding")
			seen := map[string]string{plain.Header.Get("ETag"): "identity"}
			for _, enc := range []string{"br", "gzip"} {
				ae := testutil.H{"Accept-Encoding": enc}
				r := a.get(t, url, ae).WantStatus(t, http.StatusOK)
				if len(plain.Body) < 300 && r.Header.Get("Content-Encoding") == "" {
					continue // too small to gain
				}
				r.WantHeader(t, "Content-Encoding", enc).WantHeader(t, "Cache-Control", "public, max-age=31536000, immutable")
				if decoded(t, r) != plain.Body {
					t.Errorf("%s [%s]: decoded body differs from the file", r.What, enc)
				}
				tag := r.Header.Get("ETag")
				if prev, dup := seen[tag]; dup {
					t.Errorf("%s [%s]: ETag %s is also the %s coding's", r.What, enc, tag, prev)
				}
				seen[tag] = enc
				for _, inm := range []string{tag, plain.Header.Get("ETag")} {
					a.get(t, url, ae.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusNotModified).WantHeader(t, "ETag", tag)
				}
			}
		}
	})

	t.Run("unknown files and names", func(t *testing.T) {
		for _, target := range []string{"/public/nope.css", "/public/css/nope.0123456789.css", "/public/", "/public/css", "/public/../main.go", "/public/css/app.css/x"} {
			a.get(t, target, testutil.H{}).WantStatus(t, http.StatusNotFound)
		}
	})

	t.Run("favicon", func(t *testing.T) {
		page := a.get(t, "/orders", testutil.HPage)
		if !regexp.MustCompile(`<link rel="icon" href="/public/favicon\.[0-9a-f]{10}\.svg"`).MatchString(page.Body) {
			t.Errorf("%s: the icon link has no hashed URL:\n%s", page.What, testutil.Snippet(page.Body))
		}
		a.get(t, "/favicon.ico", testutil.H{}).WantStatus(t, http.StatusMovedPermanently).WantHeader(t, "Location", "/public/favicon.svg")
		a.get(t, "/public/favicon.svg", testutil.H{}).WantStatus(t, http.StatusOK).WantHeader(t, "Content-Type", "image/svg+xml")
	})
}

// TestMetaDescription: every page has a description, the order's names it.
func TestMetaDescription(t *testing.T) {
	a, o := servedApp(t)
	desc := regexp.MustCompile(`<meta name="description" content="([^"]{20,160})">`)
	for _, c := range []struct{ target, want string }{
		{"/orders", "order desk"},
		{"/orders/inquiry", "items"},
		{"/orders/new", "new order"},
		{path(o.ID), "Order " + itoa(o.ID) + " for Grace Hopper: pending, 2 items."},
		{path(o.ID, "/edit"), "order"},
		{"/orders/999", "order"},
	} {
		r := a.get(t, c.target, testutil.HPage)
		m := desc.FindStringSubmatch(r.Body)
		if m == nil {
			t.Errorf("%s: no meta description of 20–160 characters:\n%s", r.What, testutil.Snippet(r.Body))
			continue
		}
		if !strings.Contains(strings.ToLower(m[1]), strings.ToLower(c.want)) {
			t.Errorf("%s: description %q, want it to contain %q", r.What, m[1], c.want)
		}
	}
	// Fragments have no head.
	a.get(t, "/orders", testutil.HHX).WantLacks(t, `name="description"`)
}

// BenchmarkCompressPage: the cost of compressing the list page per request
// at the dynamic levels (docs/performance.md, Lighthouse section).
func BenchmarkCompressPage(b *testing.B) {
	a := newTestApp(b, "miniredis", testutil.NewStore(b, testutil.Miniredis(b)))
	for i := 0; i < 25; i++ {
		a.create(b, map[string]any{"customer": "Customer " + itoa(int64(i)), "items": []any{item("Keyboard", 2, "49.50")}})
	}
	page := []byte(a.get(b, "/orders", testutil.HPage).Body)
	for _, c := range []struct {
		name string
		f    func() []byte
	}{
		{"br4", func() []byte { return fasthttp.AppendBrotliBytesLevel(nil, page, dynamicBrotliLevel) }},
		{"gzip6", func() []byte { return fasthttp.AppendGzipBytesLevel(nil, page, dynamicGzipLevel) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			var n int
			for b.Loop() {
				n = len(c.f())
			}
			b.ReportMetric(float64(n), "out-bytes")
			b.ReportMetric(float64(len(page)), "in-bytes")
		})
	}
}
