package routes

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"orders/store"
	"orders/testutil"
)

// errorPageShape is an error page in the one voice: a heading saying what
// happened, a sentence (a capital, or a quoted name, first; a full stop
// last), and a line saying what to do that ends with a link back.
var errorPageShape = regexp.MustCompile(`<section id="error" class="error-page">\s*<h1>([^<]+)</h1>\s*<p>([^<]+)</p>\s*(?:<p class="muted">.*</p>\s*)?<p>([A-Z][^<]*) <a href="(/[a-z]+)">(go back to the [a-z]+)</a>\.</p>\s*</section>`)

// wantErrorVoice checks r is an error page of that shape, titled title,
// whose sentence contains says.
func wantErrorVoice(t *testing.T, r *testutil.Resp, title, says string) {
	t.Helper()
	m := errorPageShape.FindStringSubmatch(r.Body)
	if m == nil {
		i := strings.Index(r.Body, `<section id="error"`)
		t.Errorf("%s: want a heading, a sentence and a line with a link back; got %.600s", r.What, r.Body[max(i, 0):])
		return
	}
	if m[1] != title {
		t.Errorf("%s: heading %q, want %q", r.What, m[1], title)
	}
	sentence := unescape(m[2])
	if first := []rune(sentence)[0]; !(first >= 'A' && first <= 'Z' || first == '“') || !strings.HasSuffix(sentence, ".") {
		t.Errorf("%s: sentence %q, want a capital first and a full stop last", r.What, sentence)
	}
	if !strings.Contains(sentence, says) {
		t.Errorf("%s: sentence %q, want it to say %q", r.What, sentence, says)
	}
}

// capitalized is msg as an error page starts it: its first letter a capital.
func capitalized(msg string) string {
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// quotedFirst is a message that starts with a query parameter's name as an
// error page writes it: the name in quotes ("“active” must be …").
func quotedFirst(msg string) string {
	name, rest, _ := strings.Cut(msg, " ")
	return "“" + name + "” " + rest
}

func unescape(s string) string {
	return strings.NewReplacer("&#34;", `"`, "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// TestErrorPagesSpeakInOneVoice: a 404 of no resource and of a missing
// order, a 405, a 400, a 403 and a 422 page each have a heading saying
// what happened (never "Cannot do that"), a sentence starting with a
// capital, and a line saying what to do with a link back to a list.
func TestErrorPagesSpeakInOneVoice(t *testing.T) {
	a := newRightsApp(t)
	wantErrorVoice(t, a.get(t, "/nope", a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusNotFound),
		"Not found", "There is nothing at /nope.")
	wantErrorVoice(t, a.get(t, "/orders/0", a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusNotFound),
		"Not found", `There is no order "0".`)
	wantErrorVoice(t, a.do(t, http.MethodDelete, "/orders", testutil.NoBody, a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusMethodNotAllowed),
		"Not possible here", "DELETE is not allowed here.")
	wantErrorVoice(t, a.get(t, "/orders?status=lost", a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusBadRequest),
		"That request cannot be read", "“status” must be one of")
	wantErrorVoice(t, a.get(t, "/products/new", a.as(store.RoleClerk, testutil.HPage)).WantStatus(t, http.StatusForbidden),
		"Not allowed", "")
	own := userResource.MemberPath(a.user[store.RoleAdmin].ID)
	wantErrorVoice(t, a.do(t, http.MethodPost, own, testutil.Form("_method", "DELETE"), a.as(store.RoleAdmin, testutil.HPage)).
		WantStatus(t, http.StatusUnprocessableEntity), "That cannot be done", "The last enabled admin")
	// JSON keeps the message as it was: programs match on it.
	var e errorJSON
	a.get(t, "/nope", a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusNotFound).JSON(t, &e)
	if e.Error != "there is nothing at /nope" {
		t.Errorf("GET /nope as JSON: error %q, want the message unchanged", e.Error)
	}
}

// emptyShape is an empty list in the error pages' voice: a heading that
// says what happened, a line saying what to do with a link.
var emptyShape = regexp.MustCompile(`<div class="empty">\s*<h2 class="empty-head" id="results-count" tabindex="-1">([^<]+)</h2>\s*<p>([A-Z][^<]*) <a href="([^"]+)">([^<]+)</a>\.</p>\s*</div>`)

// TestEmptyListsSayItOnce: an empty List says so once (never "No orders."
// twice), as a heading with a line saying what to do and a link: a new
// record when there are none, all of them when a search or filter leaves
// none, and the dates the other way round when to is before from.
func TestEmptyListsSayItOnce(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for _, c := range []struct {
			target, results, heading, link, text string
		}{
			{"/orders", "order-results", "No orders yet", "/orders/new", "a new order"},
			{"/orders/inquiry", "order-results", "No orders yet", "/orders/new", "a new order"},
			{"/products", "product-results", "No products yet", "/products/new", "a new product"},
			{"/customers", "customer-results", "No customers yet", "/customers/new", "a new customer"},
		} {
			wantEmpty(t, a.get(t, c.target, testutil.HPage).WantStatus(t, http.StatusOK), c.heading, c.link, c.text)
			wantEmpty(t, a.get(t, c.target, testutil.HXTo("div#"+c.results)).WantStatus(t, http.StatusOK), c.heading, c.link, c.text)
		}
		a.createNamed(t, "Ada Lovelace")
		wantEmpty(t, a.get(t, "/orders?q=zz", testutil.HPage).WantStatus(t, http.StatusOK), "No orders match “zz”", "/orders", "show all orders")
		wantEmpty(t, a.get(t, "/orders?status=shipped", testutil.HPage).WantStatus(t, http.StatusOK), "No orders with status shipped", "/orders", "show all orders")
		wantEmpty(t, a.get(t, "/orders?from=2026-02-01&to=2026-01-01", testutil.HPage).WantStatus(t, http.StatusOK),
			"No orders: the “to” date 2026-01-01 is before the “from” date 2026-02-01", "/orders", "show all orders")
		// A page past the end says why in the summary, once.
		r := a.get(t, "/orders?page=9", testutil.HPage).WantStatus(t, http.StatusOK)
		if n := strings.Count(r.Body, "No orders"); n != 1 {
			t.Errorf("%s: says No orders %d times, want once", r.What, n)
		}
	})
}

func wantEmpty(t *testing.T, r *testutil.Resp, heading, link, text string) {
	t.Helper()
	main := r.Body
	if i := strings.Index(main, "<main"); i >= 0 {
		main = main[i:]
	}
	m := emptyShape.FindStringSubmatch(main)
	if m == nil {
		t.Errorf("%s: want the empty state (a heading, a line with a link); got %.800s", r.What, main)
		return
	}
	if m[1] != heading || m[3] != link || m[4] != text {
		t.Errorf("%s: got heading %q and link %q (%q), want %q and %q (%q)", r.What, m[1], m[3], m[4], heading, link, text)
	}
	noun := strings.Fields(heading)[1]
	if n := strings.Count(main, "No "+noun); n != 1 {
		t.Errorf("%s: says No %s %d times, want once", r.What, noun, n)
	}
}

// TestVersionStaysWithItsTime: "(version N)" on a record's page cannot
// wrap onto a line of its own: it sits in one unbreakable span with the
// time before it.
func TestVersionStaysWithItsTime(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		a.createNamed(t, "Ada Lovelace")
		r := a.get(t, "/orders/1", testutil.HPage).WantStatus(t, http.StatusOK)
		if !regexp.MustCompile(`<span class="nowrap"><time [^>]+>[^<]+</time> \(version 1\)</span>`).MatchString(r.Body) {
			t.Errorf("%s: want the update time and (version 1) in one nowrap span", r.What)
		}
	})
}
