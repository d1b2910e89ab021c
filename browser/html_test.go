package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// vnuJar finds the Nu Html Checker: $VNU_JAR, else the jar .ci/html-check-setup
// installs. Without a jar or java the test skips, said on go test's output, unless
// ORDERS_REQUIRE_HTML_CHECK=1 (CI), when it fails.
func vnuJar(t *testing.T) (java, jar string) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("ORDERS_REQUIRE_HTML_CHECK") == "1" {
			t.Fatalf("%s and ORDERS_REQUIRE_HTML_CHECK=1: run .ci/html-check-setup", why)
		}
		testutil.Skip(t, "no Nu Html Checker: "+why+" (eval \"$(.ci/html-check-setup)\", which needs java and npm)")
	}
	jar = os.Getenv("VNU_JAR")
	if jar == "" {
		home, _ := os.UserHomeDir()
		jar = filepath.Join(home, ".cache", "orders-ci", "node_modules", "vnu-jar", "build", "dist", "vnu.jar")
	}
	if _, err := os.Stat(jar); err != nil {
		missing("no vnu.jar at " + jar + " (set VNU_JAR)")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missing("no java on PATH")
	}
	return java, jar
}

// htmlDocs fetches pages and fragments over real HTTP and keeps each as a
// file for the checker.
type htmlDocs struct {
	t     *testing.T
	base  string
	dir   string
	files []string
	// src keeps each file's text, to show the line a message is about.
	src map[string]string
	// session is the session cookie every request carries once protected
	// mode is over ("" before).
	session string
}

type hreq struct {
	method string
	path   string
	form   url.Values
	// target is the HX-Target header ("tr#order-row-1"); a non-empty
	// target or fragment makes the request an htmx one (HX-Request: true).
	target   string
	fragment bool
	want     int
	// cookie is a Cookie header (a flash notice).
	cookie string
	// session is the person's session cookie, when not the htmlDocs'.
	session string
}

// fetch makes the request, checks the status and stores the body: a page
// as it is, a fragment inside a minimal document.
func (d *htmlDocs) fetch(name string, r hreq) {
	d.t.Helper()
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequest(r.method, d.base+r.path, body)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	cookie, session := r.cookie, r.session
	if session == "" {
		session = d.session
	}
	if session != "" {
		if cookie != "" {
			cookie += "; "
		}
		cookie += sessionCookie + "=" + session
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	fragment := r.fragment || r.target != ""
	if fragment {
		req.Header.Set("HX-Request", "true")
		req.Header.Set("HX-Request-Type", "partial")
		if r.target != "" {
			req.Header.Set("HX-Target", r.target)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		d.t.Fatalf("%s: %v", name, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		d.t.Fatalf("%s: %v", name, err)
	}
	if res.StatusCode != r.want {
		d.t.Fatalf("%s: %s %s answered %d, want %d:\n%s", name, r.method, r.path, res.StatusCode, r.want, b)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		d.t.Fatalf("%s: Content-Type %q, want text/html", name, ct)
	}
	text := string(b)
	kind := "page"
	if fragment {
		kind = "fragment"
		text = wrapFragment(text)
	} else if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(text)), "<!doctype html>") {
		d.t.Errorf("%s: a full page that is not a whole document:\n%.300s", name, text)
	}
	file := filepath.Join(d.dir, fmt.Sprintf("%02d-%s-%s.html", len(d.files)+1, kind, name))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		d.t.Fatal(err)
	}
	d.files = append(d.files, file)
	d.src[file] = text
}

var (
	leadingRow = regexp.MustCompile(`(?s)^\s*(<tr[\s>].*</tr>)`)
	cellStart  = regexp.MustCompile(`(?i)<t[dh][\s>][^>]*`)
	colspan    = regexp.MustCompile(`(?i)\bcolspan="?(\d+)`)
	// leadingTitle is the <title> a page-sized fragment starts with.
	leadingTitle = regexp.MustCompile(`^\s*<title>([^<]*)</title>`)
)

// wrapFragment puts a fragment in the smallest document that is valid
// around it. A row goes into a table body under a header row of as many
// columns as the row spans, as in the page's table (a lone row with a
// colspan would be a table-model error of the wrapper's own); what follows
// the row, such as an <hx-partial> for the notice, goes after the table,
// since htmx takes it out of the row's place.
func wrapFragment(f string) string {
	title := "fragment"
	if m := leadingTitle.FindStringSubmatch(f); m != nil {
		// A page-sized fragment starts with the document's title, which
		// htmx takes out and applies: it goes in the head.
		title, f = m[1], f[len(m[0]):]
	}
	head := "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title + "</title></head><body>\n"
	tail := "\n</body></html>\n"
	m := leadingRow.FindStringSubmatchIndex(f)
	if m == nil {
		return head + f + tail
	}
	row := f[m[2]:m[3]]
	cols := 0
	for _, cell := range cellStart.FindAllString(row, -1) {
		n := 1
		if c := colspan.FindStringSubmatch(cell); c != nil {
			n, _ = strconv.Atoi(c[1])
		}
		cols += n
	}
	return head + "<table><thead><tr>" + strings.Repeat("<th>column</th>", cols) + "</tr></thead><tbody>\n" +
		row + "\n</tbody></table>" + f[m[3]:] + tail
}

// vnuMessage is one message of `vnu --format json`.
type vnuMessage struct {
	Type     string `json:"type"`
	URL      string `json:"url"`
	LastLine int    `json:"lastLine"`
	FirstCol int    `json:"firstColumn"`
	Message  string `json:"message"`
}

var (
	// htmx attributes are not HTML: messages only about them are expected.
	hxAttribute = regexp.MustCompile(`^Attribute “hx-[^”]*”`)
	// <hx-partial> is htmx's custom element for out-of-band content.
	hxPartial = regexp.MustCompile(`^Element “hx-partial”|element “hx-partial”`)
)

func htmxOnly(msg string) bool {
	return hxAttribute.MatchString(msg) || hxPartial.MatchString(msg)
}

// TestHTMLValid fetches every page and every fragment the application
// serves, in each state, and checks them all with the Nu Html Checker.
func TestHTMLValid(t *testing.T) {
	java, jar := vnuJar(t)
	base, st := serve(t)
	ctx := context.Background()
	ada, shipped, cancelled, doomed := seedStates(t, st)
	id := func(o *store.Order) string { return strconv.FormatInt(o.ID, 10) }
	version := func(o *store.Order) string {
		cur, err := st.GetOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(cur.Version, 10)
	}
	stale := func(o *store.Order) string {
		cur, err := st.GetOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Version < 2 {
			t.Fatalf("order %d is at version %d: no stale version to send", cur.ID, cur.Version)
		}
		return strconv.FormatInt(cur.Version-1, 10)
	}
	badCreate := url.Values{"customer": {""}, "email": {"not an address"}, "currency": {"USD"}, "notes": {""},
		"items": {""}, "items[0][sku]": {"OK-1"}, "items[0][name]": {"Notebook"},
		"items[0][quantity]": {"zero"}, "items[0][unit_price]": {"2.999"}}
	badEdit := func(method bool) url.Values {
		v := url.Values{"version": {version(ada)}, "customer": {""}, "email": {"nope"}, "status": {"pending"}}
		if method {
			v.Set("_method", "PUT")
		}
		return v
	}
	staleEdit := func(method bool) url.Values {
		v := url.Values{"version": {stale(ada)}, "customer": {"Ada King"}, "email": {"ada@example.com"}, "status": {"pending"}}
		if method {
			v.Set("_method", "PUT")
		}
		return v
	}
	a, s, c := id(ada), id(shipped), id(cancelled)

	d := &htmlDocs{t: t, base: base, dir: t.TempDir(), src: map[string]string{}}
	// Full pages, and the same addresses as htmx fragments (their main part).
	gets := []struct{ name, path string }{
		{"list-search", "/orders?q=a"},
		{"sign-in", "/session/new?next=%2Forders%3Fq%3Da"},
		{"list-search-none", "/orders?q=zzzz"},
		{"list-shipped", "/orders?status=shipped"},
		{"list-page-99", "/orders?page=99"},
		{"list-paged", "/orders?per_page=2&page=2"},
		{"new-add-row", "/orders/new?customer=Al&currency=USD&items=&items%5B0%5D%5Bname%5D=Pen&add_row=1"},
		{"show-pending", "/orders/" + a},
		{"show-shipped", "/orders/" + s},
		{"show-cancelled", "/orders/" + c},
		{"edit-pending", "/orders/" + a + "/edit"},
		{"edit-shipped", "/orders/" + s + "/edit"},
		{"inquiry", "/orders/inquiry"},
		{"inquiry-search-none", "/orders/inquiry?q=zzzz"},
		{"inquiry-paged", "/orders/inquiry?per_page=2&page=2"},
		// Sorted, page numbers, dates, an empty range, past the end.
		{"list-sorted", "/orders?sort=customer"},
		{"list-page-numbers", "/orders?sort=-total&per_page=1&page=3"},
		{"list-dates", "/orders?from=2000-01-01&to=2999-12-31&q=a&sort=-updated"},
		{"list-empty-range", "/orders?from=2025-02-01&to=2025-01-01"},
		{"inquiry-sorted", "/orders/inquiry?sort=customer&per_page=2&page=2"},
	}
	// Every registered resource's List, New form, record, Edit form,
	// history and delete confirmation.
	regPages, session := registryPages(t, base)
	for _, p := range regPages {
		gets = append(gets, struct{ name, path string }{p.name, p.path})
	}
	d.session = session
	// A viewer's and a clerk's List and order page, and a person's own
	// account page, their tokens and the page that shows a token once.
	for _, p := range rolePages(t, base, st, ada.ID) {
		d.fetch(p.name, hreq{method: "GET", path: p.path, session: p.session, want: 200})
		d.fetch(p.name, hreq{method: "GET", path: p.path, fragment: true, session: p.session, want: 200})
		if p.name == "viewer-tokens" {
			tokens := p.path
			d.fetch("viewer-token-made", hreq{method: "POST", path: tokens, session: p.session, want: 201, form: url.Values{"name": {"sheet"}}})
			d.fetch("viewer-token-made", hreq{method: "POST", path: tokens, session: p.session, want: 201, form: url.Values{"name": {"sheet 2"}}, target: "main#main"})
			d.fetch("viewer-token-422", hreq{method: "POST", path: tokens, session: p.session, want: 422, form: url.Values{"name": {""}, "role": {"admin"}}})
			own := strings.TrimSuffix(tokens, "/tokens")
			d.fetch("viewer-password-422", hreq{method: "POST", path: own, session: p.session, want: 422,
				form: url.Values{"_method": {"PUT"}, "password": {"a new password here"}, "current_password": {"wrong"}}})
		}
	}
	for _, g := range gets {
		d.fetch(g.name, hreq{method: "GET", path: g.path, want: 200})
		d.fetch(g.name, hreq{method: "GET", path: g.path, fragment: true, want: 200})
	}
	for _, g := range []struct{ name, path string }{{"not-found", "/orders/99999"}, {"no-route", "/nothing-here"}} {
		d.fetch(g.name, hreq{method: "GET", path: g.path, want: 404})
		d.fetch(g.name, hreq{method: "GET", path: g.path, fragment: true, want: 404})
	}
	// The parts htmx asks for by target.
	for _, g := range []struct{ name, path string }{
		{"list-results", "/orders?q=a"},
		{"list-results-none", "/orders?q=zzzz&status=cancelled"},
		{"list-results-paged", "/orders?per_page=2&page=2"},
		{"inquiry-results", "/orders/inquiry?q=a"},
		{"inquiry-results-none", "/orders/inquiry?q=zzzz"},
		{"list-results-sorted", "/orders?sort=-total&per_page=1&page=3"},
		{"list-results-past-end", "/orders?page=999&per_page=50"},
		{"inquiry-results-sorted", "/orders/inquiry?sort=customer&per_page=50"},
	} {
		d.fetch(g.name, hreq{method: "GET", path: g.path, target: "div#order-results", want: 200})
	}
	d.fetch("row", hreq{method: "GET", path: "/orders/" + a, target: "tr#order-row-" + a, want: 200})
	d.fetch("row-shipped", hreq{method: "GET", path: "/orders/" + s, target: "tr#order-row-" + s, want: 200})
	d.fetch("row-edit", hreq{method: "GET", path: "/orders/" + a + "/edit", target: "tr#order-row-" + a, want: 200})
	d.fetch("row-edit-shipped", hreq{method: "GET", path: "/orders/" + s + "/edit", target: "tr#order-row-" + s, want: 200})

	// Forms sent back with errors and conflicts: plain posts (pages) and htmx.
	d.fetch("create-422", hreq{method: "POST", path: "/orders", form: badCreate, want: 422})
	d.fetch("create-422", hreq{method: "POST", path: "/orders", form: badCreate, target: "main#main", want: 422})
	d.fetch("edit-422", hreq{method: "POST", path: "/orders/" + a, form: badEdit(true), want: 422})
	d.fetch("edit-422", hreq{method: "PUT", path: "/orders/" + a, form: badEdit(false), target: "main#main", want: 422})
	d.fetch("edit-409", hreq{method: "POST", path: "/orders/" + a, form: staleEdit(true), want: 409})
	d.fetch("edit-409", hreq{method: "PUT", path: "/orders/" + a, form: staleEdit(false), target: "main#main", want: 409})
	d.fetch("row-422", hreq{method: "PUT", path: "/orders/" + a, form: badEdit(false), target: "tr#order-row-" + a, want: 422})
	d.fetch("row-409", hreq{method: "PUT", path: "/orders/" + a, form: staleEdit(false), target: "tr#order-row-" + a, want: 409})
	// A 409 with items that differ (changed, only yours, only theirs), and
	// a row whose status theirs cannot go back from.
	staleItems := func(method bool) url.Values {
		v := staleEdit(method)
		v.Set("notes", "mine")
		v.Set("items", "")
		v.Set("items[0][sku]", "MUG-1")
		v.Set("items[0][name]", "Enamel mug")
		v.Set("items[0][quantity]", "3")
		v.Set("items[0][unit_price]", "12.50")
		v.Set("items[1][name]", "Eraser <b>")
		v.Set("items[1][quantity]", "x")
		v.Set("items[1][unit_price]", "0.5")
		return v
	}
	d.fetch("edit-409-items", hreq{method: "POST", path: "/orders/" + a, form: staleItems(true), want: 409})
	d.fetch("edit-409-items", hreq{method: "PUT", path: "/orders/" + a, form: staleItems(false), target: "main#main", want: 409})
	d.fetch("row-409-status", hreq{method: "PUT", path: "/orders/" + s, target: "tr#order-row-" + s, want: 409,
		form: url.Values{"version": {"1"}, "customer": {"Alan M. Turing"}, "status": {"pending"}}})
	// Each kind of notice on a full page (the flash after a redirect).
	for _, kind := range []string{"success", "warning", "error"} {
		d.fetch("notice-"+kind, hreq{method: "GET", path: "/orders", want: 200,
			cookie: "notice=" + url.QueryEscape(kind+":Order "+a+" & <co> notice.")})
	}

	// Successful writes that answer with HTML: the row and the order, each
	// with the notice for the live region; the row delete's notice.
	d.fetch("row-saved", hreq{method: "PUT", path: "/orders/" + a, target: "tr#order-row-" + a, want: 200,
		form: url.Values{"version": {version(ada)}, "customer": {"Ada King"}, "email": {"ada@example.com"}, "status": {"pending"}}})
	d.fetch("show-saved", hreq{method: "PUT", path: "/orders/" + a, target: "main#main", want: 200,
		form: url.Values{"version": {version(ada)}, "status": {"confirmed"}}})
	d.fetch("created", hreq{method: "POST", path: "/orders", target: "main#main", want: 201,
		form: url.Values{"customer": {"Barbara Liskov"}, "currency": {"EUR"}, "items": {""},
			"items[0][name]": {"Chalk"}, "items[0][quantity]": {"3"}, "items[0][unit_price]": {"0.40"}}})
	d.fetch("row-deleted", hreq{method: "DELETE", path: "/orders/" + id(doomed) + "?version=" + version(doomed),
		target: "tr#order-row-" + id(doomed), want: 200})
	// The delete's notice offers Undo: on the List after a plain form's
	// redirect (the flash), and the restore's answers (htmx, then the
	// plain form's redirect target).
	d.fetch("notice-undo", hreq{method: "GET", path: "/orders", want: 200,
		cookie: "notice=" + url.QueryEscape("success|/orders/"+id(doomed)+":Order "+id(doomed)+" deleted.")})
	d.fetch("restored", hreq{method: "PUT", path: "/orders/" + id(doomed), target: "main#main", want: 200,
		form: url.Values{"restore": {"1"}}})
	d.fetch("row-deleted", hreq{method: "DELETE", path: "/orders/" + id(doomed) + "?version=" + fmt.Sprint(doomed.Version+1),
		target: "tr#order-row-" + id(doomed), want: 200})

	// Delete's confirmation page; a row's Remove without
	// JavaScript; the answers about an order deleted elsewhere (the row, the
	// page after a plain form, the fragment into #main).
	d.fetch("delete-confirm", hreq{method: "GET", path: "/orders/" + a + "?confirm=delete", want: 200})
	d.fetch("delete-confirm", hreq{method: "GET", path: "/orders/" + a + "?confirm=delete", fragment: true, want: 200})
	d.fetch("new-remove-row", hreq{method: "GET", want: 200,
		path: "/orders/new?customer=Al&currency=USD&items=&items%5B0%5D%5Bname%5D=Pen&items%5B1%5D%5Bname%5D=Ink&remove_row=0"})
	gone := "/orders/" + id(doomed)
	d.fetch("row-gone-edit", hreq{method: "GET", path: gone + "/edit", target: "tr#order-row-" + id(doomed), want: 404})
	d.fetch("row-gone-put", hreq{method: "PUT", path: gone, target: "tr#order-row-" + id(doomed), want: 404,
		form: url.Values{"customer": {"Barbara"}}})
	d.fetch("gone-put", hreq{method: "POST", path: gone, form: url.Values{"_method": {"PUT"}, "customer": {"Barbara"}}, want: 404})
	d.fetch("gone-put", hreq{method: "PUT", path: gone, form: url.Values{"status": {"confirmed"}}, target: "main#main", want: 404})

	// The product catalogue, the same way: its pages and their
	// fragments, the parts htmx asks for by target, the forms sent back
	// with errors (a duplicate SKU among them) and conflicts, plain and
	// htmx, the successful writes, Delete's confirmation page, a row and a
	// page of a product deleted elsewhere.
	cat := seedCatalogue(t, st)
	pversion := func(p *store.Product) string {
		cur, err := st.GetProduct(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(cur.Version, 10)
	}
	pid := func(p *store.Product) string { return strconv.FormatInt(p.ID, 10) }
	mug, capID, gonePID := pid(cat.mug), pid(cat.cap), pid(cat.old)
	mugRow := "tr#product-row-" + mug
	for _, g := range []struct{ name, path string }{
		{"products-search", "/products?q=gel"},
		{"products-search-none", "/products?q=zzzz"},
		{"products-inactive", "/products?active=false"},
		{"products-sorted-paged", "/products?sort=-name&per_page=2&page=2"},
		{"product-show", "/products/" + mug},
		{"product-show-inactive", "/products/" + capID},
		{"product-edit", "/products/" + mug + "/edit"},
		{"product-delete-confirm", "/products/" + mug + "?confirm=delete"},
	} {
		d.fetch(g.name, hreq{method: "GET", path: g.path, want: 200})
		d.fetch(g.name, hreq{method: "GET", path: g.path, fragment: true, want: 200})
	}
	d.fetch("product-not-found", hreq{method: "GET", path: "/products/99999", want: 404})
	d.fetch("product-not-found", hreq{method: "GET", path: "/products/99999", fragment: true, want: 404})
	for _, g := range []struct{ name, path string }{
		{"products-results", "/products?q=lamp"},
		{"products-results-none", "/products?q=zzzz&active=true"},
		{"products-results-sorted", "/products?sort=-created&per_page=2&page=2"},
		{"products-results-past-end", "/products?page=999"},
	} {
		d.fetch(g.name, hreq{method: "GET", path: g.path, target: "div#product-results", want: 200})
	}
	d.fetch("product-row", hreq{method: "GET", path: "/products/" + mug, target: mugRow, want: 200})
	d.fetch("product-row-inactive", hreq{method: "GET", path: "/products/" + capID, target: "tr#product-row-" + capID, want: 200})
	d.fetch("product-row-edit", hreq{method: "GET", path: "/products/" + mug + "/edit", target: mugRow, want: 200})

	productForm := func(method bool, version, sku, name, price string, active ...string) url.Values {
		v := url.Values{"sku": {sku}, "name": {name}, "unit_price": {price}, "currency": {"USD"}, "active": append(active, "false")}
		if version != "" {
			v.Set("version", version)
		}
		if method {
			v.Set("_method", "PUT")
		}
		return v
	}
	dupCreate := productForm(false, "", "mug-1", "Travel <mug> & co", "9.90", "true")
	badProduct := productForm(false, "", "no spaces", "", "1.999")
	d.fetch("product-create-422-duplicate", hreq{method: "POST", path: "/products", form: dupCreate, want: 422})
	d.fetch("product-create-422-duplicate", hreq{method: "POST", path: "/products", form: dupCreate, target: "main#main", want: 422})
	d.fetch("product-create-422", hreq{method: "POST", path: "/products", form: badProduct, want: 422})
	d.fetch("product-create-422", hreq{method: "POST", path: "/products", form: badProduct, target: "main#main", want: 422})
	stalePV := strconv.FormatInt(cat.mug.Version-1, 10)
	d.fetch("product-edit-422", hreq{method: "POST", path: "/products/" + mug, want: 422,
		form: productForm(true, pversion(cat.mug), "PEN-2", "Mug", "12.50", "true")})
	d.fetch("product-edit-422", hreq{method: "PUT", path: "/products/" + mug, target: "main#main", want: 422,
		form: productForm(false, pversion(cat.mug), "", "", "x")})
	d.fetch("product-edit-409", hreq{method: "POST", path: "/products/" + mug, want: 409,
		form: productForm(true, stalePV, "MUG-1", "Enamel <b>mug</b>", "13.00")})
	d.fetch("product-edit-409", hreq{method: "PUT", path: "/products/" + mug, target: "main#main", want: 409,
		form: productForm(false, stalePV, "MUG-1", "Enamel <b>mug</b>", "13.00")})
	d.fetch("product-row-422", hreq{method: "PUT", path: "/products/" + mug, target: mugRow, want: 422,
		form: productForm(false, pversion(cat.mug), "", "", "1.999", "true")})
	d.fetch("product-row-409", hreq{method: "PUT", path: "/products/" + mug, target: mugRow, want: 409,
		form: productForm(false, stalePV, "MUG-1", "Enamel mug, blue", "12.50")})
	d.fetch("product-row-saved", hreq{method: "PUT", path: "/products/" + mug, target: mugRow, want: 200,
		form: productForm(false, pversion(cat.mug), "MUG-1", "Enamel mug, blue", "12.50", "true")})
	d.fetch("product-show-saved", hreq{method: "PUT", path: "/products/" + mug, target: "main#main", want: 200,
		form: productForm(false, pversion(cat.mug), "MUG-1", "Enamel mug, blue", "12.50")})
	d.fetch("product-created", hreq{method: "POST", path: "/products", target: "main#main", want: 201,
		form: productForm(false, "", "CUP-5", "Paper cup", "0.20", "true")})
	d.fetch("product-row-deleted", hreq{method: "DELETE", path: "/products/" + pid(cat.pen) + "?version=" + pversion(cat.pen),
		target: "tr#product-row-" + pid(cat.pen), want: 200})
	if err := st.DeleteProduct(ctx, cat.old.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	d.fetch("product-row-gone-edit", hreq{method: "GET", path: "/products/" + gonePID + "/edit", target: "tr#product-row-" + gonePID, want: 404})
	d.fetch("product-row-gone-put", hreq{method: "PUT", path: "/products/" + gonePID, target: "tr#product-row-" + gonePID, want: 404,
		form: url.Values{"name": {"Old stock"}}})
	d.fetch("product-gone-put", hreq{method: "POST", path: "/products/" + gonePID, want: 404,
		form: url.Values{"_method": {"PUT"}, "name": {"Old stock"}}})

	// Histories and notes: a record's page whose timeline holds
	// notes and changes, its history and the older page, a deleted order's
	// history, a product's; a cursor that is no cursor; a note refused
	// (the page without JavaScript, the timeline for htmx) and added.
	hist := seedHistory(t, st)
	for i, p := range hist.pages() {
		name := []string{"history-show", "history", "history-older", "history-deleted", "history-product-show", "history-product"}[i]
		d.fetch(name, hreq{method: "GET", path: p, want: 200})
		d.fetch(name, hreq{method: "GET", path: p, fragment: true, want: 200})
	}
	notes := hist.pages()[1]
	d.fetch("history-bad-cursor", hreq{method: "GET", path: notes + "?before=x", want: 400})
	d.fetch("history-bad-cursor", hreq{method: "GET", path: notes + "?before=x", fragment: true, want: 400})
	d.fetch("note-422", hreq{method: "POST", path: notes, form: url.Values{"note": {" "}}, want: 422})
	d.fetch("note-422", hreq{method: "POST", path: notes, form: url.Values{"note": {strings.Repeat("<&>", 700)}}, target: "section#order-history", want: 422})
	d.fetch("note-added", hreq{method: "POST", path: notes, form: url.Values{"note": {"Checked <b>twice</b> & co.\nOK."}}, target: "section#order-history", want: 201})

	d.validate(java, jar)
}

// validate checks every document fetched with the Nu Html Checker, failing
// the test on each error that is not about htmx's own attributes.
func (d *htmlDocs) validate(java, jar string) {
	t := d.t
	t.Helper()
	started := time.Now()
	msgs := runVNU(t, java, jar, d.files)
	t.Logf("vnu checked %d documents in %s", len(d.files), time.Since(started).Round(time.Millisecond))
	var ignored int
	for _, m := range msgs {
		if m.Type != "error" && m.Type != "non-document-error" {
			continue
		}
		if htmxOnly(m.Message) {
			ignored++
			continue
		}
		file := strings.TrimPrefix(m.URL, "file:")
		line := ""
		if lines := strings.Split(d.src[file], "\n"); m.LastLine >= 1 && m.LastLine <= len(lines) {
			line = strings.TrimSpace(lines[m.LastLine-1])
			if len(line) > 200 {
				line = line[:200] + "…"
			}
		}
		t.Errorf("%s:%d:%d: %s\n\t%s", filepath.Base(file), m.LastLine, m.FirstCol, m.Message, line)
	}
	t.Logf("%d messages about htmx attributes and <hx-partial> ignored", ignored)
}

// runVNU checks every file in one java run and returns the messages.
func runVNU(t *testing.T, java, jar string, files []string) []vnuMessage {
	t.Helper()
	args := append([]string{"-jar", jar, "--errors-only", "--format", "json"}, files...)
	cmd := exec.Command(java, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// The report goes to stderr; the exit status is 1 when there are errors.
	out := stderr.Bytes()
	if len(bytes.TrimSpace(out)) == 0 {
		out = stdout.Bytes()
	}
	var report struct {
		Messages []vnuMessage `json:"messages"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("vnu: %v (%v); stdout:\n%s\nstderr:\n%s", jerr, err, stdout.String(), stderr.String())
	}
	if err != nil && len(report.Messages) == 0 {
		t.Fatalf("vnu failed with no messages: %v\n%s", err, stderr.String())
	}
	return report.Messages
}

// seedStates stores the orders the pages are checked with: a pending order
// with items, notes and a past edit (so a stale version exists), a shipped
// one, a cancelled one without items, one of each other status, and one to
// delete.
func seedStates(t *testing.T, st *redisstore.Store) (pending, shipped, cancelled, doomed *store.Order) {
	t.Helper()
	ctx := context.Background()
	str := func(s string) *string { return &s }
	create := func(customer, email, notes string, items ...store.ItemInput) *store.Order {
		o, err := st.CreateOrder(ctx, store.OrderInput{Customer: str(customer), Email: str(email), Notes: str(notes),
			HasItems: true, Items: items})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	move := func(o *store.Order, statuses ...store.Status) *store.Order {
		for _, s := range statuses {
			var err error
			if o, err = st.UpdateOrder(ctx, o.ID, store.OrderInput{Status: str(string(s))}, 0); err != nil {
				t.Fatal(err)
			}
		}
		return o
	}
	mug := store.ItemInput{SKU: "MUG-1", Name: "Enamel mug", Quantity: "2", UnitPrice: "12.50"}
	pen := store.ItemInput{SKU: "PEN-2", Name: "Gel pen", Quantity: "10", UnitPrice: "1.05"}
	pending = create("Ada Lovelace", "ada@example.com", "Leave at the door.\nRing twice.", mug, pen)
	if _, err := st.UpdateOrder(ctx, pending.ID, store.OrderInput{Notes: str("Leave at the door.\nRing twice, please.")}, 0); err != nil {
		t.Fatal(err)
	}
	shipped = move(create("Alan Turing", "", "", mug), store.Confirmed, store.Shipped)
	cancelled = move(create("Grace Hopper <grace@example.com> & co", "grace@example.com", ""), store.Cancelled)
	move(create("Adele Goldberg", "", "", pen), store.Confirmed)
	move(create("Edsger Dijkstra", "", "", mug), store.Confirmed, store.Shipped, store.Delivered)
	doomed = create("Barbara Liskov", "", "")
	return pending, shipped, cancelled, doomed
}
