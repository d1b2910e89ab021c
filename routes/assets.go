package routes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"regexp"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Static files, served compressed and with content-hashed URLs: every
// file of public/ is read, hashed and
// compressed once when the application is built, and served under
// /public/ by two names:
//
//   - the hashed name the templates write ({{asset "css/app.css"}} gives
//     /public/css/app.3f2a9c1b0d.css): cached for a year as immutable, since
//     a changed file gets a new name;
//   - the plain name (/public/css/app.css), which pages rendered before the
//     hashes, bookmarks and /favicon.ico still use: the current file,
//     cached briefly.
//
// A hashed name whose hash is not the current one (a page rendered by the
// previous release, during or after a deploy) answers the current file with
// the brief cache, never immutable: a stale page keeps its styles and
// script, and no cache keeps the wrong bytes under that name for a year.
// Anything else under /public/ is 404.
const (
	immutableCache = "public, max-age=31536000, immutable"
	briefCache     = "public, max-age=300"
	assetHashLen   = 10 // hex digits of the SHA-256 in a hashed name
)

// asset is one file of public/ with its precompressed codings.
type asset struct {
	name   string // css/app.css
	hashed string // css/app.3f2a9c1b0d.css
	ctype  string
	tag    string // ETag of the identity bytes: the hash, quoted
	body   []byte
	coded  map[coding][]byte // only the codings smaller than body
}

// assets is the set of static files, by plain and by hashed name.
type assets struct {
	byName   map[string]*asset
	byHashed map[string]*asset
}

// hashedName matches a name that carries a hash before its extension.
var hashedName = regexp.MustCompile(`^(.+)\.[0-9a-f]{` + fmt.Sprint(assetHashLen) + `}(\.[^./]+)$`)

// Compressing at the best levels takes a while (htmx with brotli 11: tens of
// milliseconds), and tests build many applications from the same files:
// the codings are kept by content hash for the life of the process.
var codedCache sync.Map // [32]byte -> map[coding][]byte

// loadAssets reads every file of fsys (nil: none).
func loadAssets(fsys fs.FS) (*assets, error) {
	a := &assets{byName: map[string]*asset{}, byHashed: map[string]*asset{}}
	if fsys == nil {
		return a, nil
	}
	var wg sync.WaitGroup
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])[:assetHashLen]
		ext, base := "", name[strings.LastIndexByte(name, '/')+1:]
		if i := strings.LastIndexByte(base, '.'); i > 0 {
			ext = base[i:]
		}
		f := &asset{
			name:   name,
			hashed: strings.TrimSuffix(name, ext) + "." + hash + ext,
			ctype:  contentTypeOf(ext),
			tag:    `"` + hex.EncodeToString(sum[:16]) + `"`,
			body:   body,
		}
		if compressible([]byte(f.ctype)) {
			// One file per goroutine: htmx alone takes most of the time.
			wg.Go(func() { f.coded = precompress(sum, body) })
		}
		a.byName[f.name], a.byHashed[f.hashed] = f, f
		return nil
	})
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("reading the static files: %w", err)
	}
	return a, nil
}

// staticTypes are fixed here: mime.TypeByExtension reads the machine's own
// tables, which differ between hosts.
var staticTypes = map[string]string{
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
	".json": "application/json",
	".ico":  "image/x-icon",
	".png":  "image/png",
}

func contentTypeOf(ext string) string {
	if ct, ok := staticTypes[strings.ToLower(ext)]; ok {
		return ct
	}
	ct := mime.TypeByExtension(ext)
	switch {
	case ct == "":
		return "application/octet-stream"
	case strings.HasPrefix(ct, "text/") && !strings.Contains(ct, "charset"):
		ct += "; charset=utf-8"
	}
	return ct
}

func precompress(sum [32]byte, body []byte) map[coding][]byte {
	if v, ok := codedCache.Load(sum); ok {
		return v.(map[coding][]byte)
	}
	coded := map[coding][]byte{}
	if b := fasthttp.AppendBrotliBytesLevel(nil, body, fasthttp.CompressBrotliBestCompression); len(b) < len(body) {
		coded[brotli] = b
	}
	if b := fasthttp.AppendGzipBytesLevel(nil, body, fasthttp.CompressBestCompression); len(b) < len(body) {
		coded[gzipped] = b
	}
	codedCache.Store(sum, coded)
	return coded
}

// url is the template function asset: the hashed URL of a file of public/.
// An unknown name fails the render, so a typo shows in the first test that
// renders the page.
func (a *assets) url(name string) (string, error) {
	f, ok := a.byName[strings.TrimPrefix(name, "/")]
	if !ok {
		return "", fmt.Errorf("asset %q: no such file in public/", name)
	}
	return "/public/" + f.hashed, nil
}

// serve answers GET and HEAD under /public/.
func (a *assets) serve(c *fiber.Ctx) error {
	name := c.Params("*")
	cache := immutableCache
	f, ok := a.byHashed[name]
	if !ok {
		cache = briefCache
		if f, ok = a.byName[name]; !ok {
			if m := hashedName.FindStringSubmatch(name); m != nil {
				f, ok = a.byName[m[1]+m[2]]
			}
		}
	}
	if !ok {
		return fiber.ErrNotFound
	}
	// This handler picks the coding; the compress middleware leaves it be.
	c.Locals(handledEncoding, true)
	enc := identity
	if len(f.coded) > 0 {
		c.Vary(fiber.HeaderAcceptEncoding)
		enc = negotiateEncoding(c.Get(fiber.HeaderAcceptEncoding))
		if f.coded[enc] == nil {
			enc = identity
		}
	}
	c.Set(fiber.HeaderCacheControl, cache)
	c.Set(fiber.HeaderETag, etagFor(f.tag, enc))
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && f.matches(inm) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, f.ctype)
	if enc == identity {
		return c.Send(f.body)
	}
	c.Set(fiber.HeaderContentEncoding, string(enc))
	return c.Send(f.coded[enc])
}

// matches says whether an If-None-Match list names any coding of the file
// (weak comparison, RFC 9110, section 13.1.2): each is the same content.
func (f *asset) matches(inm string) bool {
	base := strings.Trim(f.tag, `"`)
	for _, t := range strings.Split(inm, ",") {
		t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), `"`)
		if t == "*" || t == base || strings.HasPrefix(t, base+"-") {
			return true
		}
	}
	return false
}
