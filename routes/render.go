package routes

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// repr is one of the three representations of every GET: the full page,
// the fragment htmx asks for, and JSON.
type repr int

const (
	reprPage     repr = iota // the layout around the partial
	reprFragment             // the partial alone, for htmx
	reprJSON                 // for programs
)

const (
	layoutPage = "layouts/main"
	// Fragments go through a layout of their own: it adds what every
	// fragment carries besides its partial, the document title of a
	// page-sized swap and both notice regions (notice.go).
	layoutBare = "layouts/bare"
)

var errNotAcceptable = fiber.NewError(fiber.StatusNotAcceptable, "this resource is available as text/html or application/json")

// negotiate picks the representation from Accept and the htmx headers.
func negotiate(c *fiber.Ctx) (repr, error) {
	c.Vary("Accept", "HX-Request", "HX-Request-Type", "HX-History-Restore-Request", "HX-Target")
	html, json, jsonFirst := acceptQ(c.Get(fiber.HeaderAccept))
	switch {
	case json > html || (json == html && json > 0 && jsonFirst):
		return reprJSON, nil
	case html == 0:
		return reprPage, errNotAcceptable
	}
	if isFragment(c) {
		return reprFragment, nil
	}
	return reprPage, nil
}

// acceptQ returns the quality an Accept header gives text/html and
// application/json, each from its most specific matching range (RFC 9110,
// section 12.5.1): "text/html;q=0, */*" refuses HTML and takes JSON. On a tie,
// jsonFirst says JSON was named more specifically, or as specifically and
// earlier ("application/json, text/html"). No header accepts anything.
func acceptQ(accept string) (html, json float64, jsonFirst bool) {
	if strings.TrimSpace(accept) == "" {
		return 1, 1, false
	}
	htmlSpec, jsonSpec, htmlPos, jsonPos := -1, -1, 0, 0
	for pos, r := range strings.Split(accept, ",") {
		typ, params, _ := strings.Cut(r, ";")
		typ = strings.ToLower(strings.TrimSpace(typ))
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
		spec := func(want string) int {
			switch {
			case typ == want:
				return 3
			case typ == want[:strings.IndexByte(want, '/')]+"/*":
				return 2
			case typ == "*/*" || typ == "*":
				return 1
			}
			return -1
		}
		if sp := spec("text/html"); sp > htmlSpec {
			htmlSpec, html, htmlPos = sp, q, pos
		}
		if sp := spec("application/json"); sp > jsonSpec {
			jsonSpec, json, jsonPos = sp, q, pos
		}
	}
	jsonFirst = jsonSpec > htmlSpec || (jsonSpec == htmlSpec && jsonPos < htmlPos)
	return html, json, jsonFirst
}

func isFragment(c *fiber.Ctx) bool {
	return c.Get("HX-Request") == "true" &&
		c.Get("HX-History-Restore-Request") != "true" &&
		c.Get("HX-Request-Type") != "full"
}

// hxTarget returns the id of the element htmx will swap into, from a
// "tag#id" HX-Target header ("" when there is none).
func hxTarget(c *fiber.Ctx) string {
	t := c.Get("HX-Target")
	if i := strings.IndexByte(t, '#'); i >= 0 {
		return t[i+1:]
	}
	return ""
}

// view is what every template receives.
type view struct {
	// R is the resource the page is about (respond sets it): its paths,
	// target ids and names for the templates (resource.go). Nil on an
	// error page of no resource.
	R      *resource
	Title  string
	Nav    string  // which navigation entry is current: a resource's Plural, inquiry, new
	Notice *notice // a message for the live regions (notice.go)

	// ID is the member a fragment is about when none is stored (row_gone).
	ID int64
	// Record is the member a page or fragment shows (a *store.Order, a
	// *store.Product): nil on the New form and on collection pages.
	Record any
	// Form is the resource's form (*orderForm, or a *recordForm).
	Form  any
	List  *listView
	Error *errorView
	// History is a record's history: its page, or the timeline on the
	// record's page.
	History *historyView

	// TitleSwap says a fragment replaces a page-sized part (#main or the
	// results): it carries the document title, which htmx applies (it takes
	// a <title> from any response it swaps). Row fragments carry none.
	TitleSwap bool
	// LiveAfter is the cursor of the resource's newest event when a page
	// was rendered: the page's event stream starts after it (?after=), so
	// nothing made between the render and the connection is missed.
	LiveAfter string
}

// DocTitle is the document title: "<Title> · Orders", or the site name alone.
func (v *view) DocTitle() string {
	if v.Title == "" {
		return "Orders"
	}
	return v.Title + " · Orders"
}

// Row gives a List row (a record, as the page's Rows hold it) the view a
// single-row fragment gets: the record by its address, as a member's
// page has it.
func (v *view) Row(rec any) *view {
	p := reflect.New(reflect.TypeOf(rec))
	p.Elem().Set(reflect.ValueOf(rec))
	return &view{R: v.R, Record: p.Interface()}
}

// Description is the page's meta description: what the record shows, or
// what the navigation entry the page is under offers (the first
// resource's collection when none).
func (v *view) Description() string {
	if v.Record != nil && v.R != nil && v.R.describe != nil {
		return v.R.describe(v.Record)
	}
	for _, e := range navEntries() {
		if e.Key == v.Nav && e.Description != "" {
			return e.Description
		}
	}
	return navEntries()[0].Description
}

// Ids of the layout's elements, for every resource: the main element,
// where a page-sized htmx swap goes, and the two live regions of notices
// (notice.go). The templates have them as {{mainID}}, {{noticeID}} and
// {{alertID}}; app.js finds the regions by their class, notice-region.
const (
	mainID   = "main"
	noticeID = "notice"
	alertID  = "notice-alert"
)

// titleSwap reports whether an htmx request swaps a page-sized part: the
// main element, the resource's results, or (no HX-Target) the body.
func titleSwap(c *fiber.Ctx, res *resource) bool {
	switch t := hxTarget(c); {
	case t == mainID, res != nil && t == res.ResultsID():
		return true
	}
	return c.Get("HX-Target") == ""
}

type errorView struct {
	Status    int
	Message   string
	RequestID string
}

func sendJSON(c *fiber.Ctx, status int, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	c.Status(status)
	c.Set(fiber.HeaderContentType, "application/json; charset=utf-8")
	return c.Send(b)
}

// flash carries a notice across the redirect that follows a plain form post.
// Over https (a trusted proxy's X-Forwarded-Proto) the cookie is Secure.
const flashCookie = "notice"

func setFlash(c *fiber.Ctx, n *notice) {
	c.Cookie(&fiber.Cookie{Name: flashCookie, Value: url.QueryEscape(encodeFlash(n)), Path: "/",
		MaxAge: 60, HTTPOnly: true, SameSite: "Lax", Secure: c.Secure()})
}

func takeFlash(c *fiber.Ctx) *notice {
	v := c.Cookies(flashCookie)
	if v == "" {
		return nil
	}
	// Cleared with the Path it was set with, or the browser keeps it.
	c.Cookie(&fiber.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1,
		Expires: time.Unix(0, 0), HTTPOnly: true, SameSite: "Lax", Secure: c.Secure()})
	// A one-time notice is never kept: no cache replays it.
	c.Set(fiber.HeaderCacheControl, "no-store")
	msg, err := url.QueryUnescape(v)
	if err != nil || len(msg) > 200 {
		return nil
	}
	return decodeFlash(msg)
}

// errorHandler is the one place that turns an error into a response: the
// status from the error's code, the body in the representation asked for.
func (h *handlers) errorHandler(c *fiber.Ctx, err error) error {
	setSecurityHeaders(c)
	status := fiber.StatusInternalServerError
	msg := "something went wrong on our side; the request id helps us find it"
	var (
		fields  map[string]string
		current any
		fe      *fiber.Error
		se      *store.Error
	)
	switch {
	case errors.As(err, &se):
		switch se.Code {
		case store.ENOTFOUND:
			status, msg = fiber.StatusNotFound, se.Message
		case store.EINVALID:
			status, msg, fields = fiber.StatusUnprocessableEntity, se.Message, se.Fields
		case store.ECONFLICT:
			status, msg, current = fiber.StatusConflict, se.Message, se.Current
		case store.EPRECONDITION:
			status, msg, current = fiber.StatusPreconditionFailed, se.Message, se.Current
		case store.EBROAD:
			// A query too costly to answer: the message says what to narrow.
			status, msg = fiber.StatusBadRequest, se.Message
		case store.EUNAVAILABLE:
			status, msg = fiber.StatusServiceUnavailable, se.Message
			c.Set(fiber.HeaderRetryAfter, "1")
		}
	case errors.As(err, &fe):
		status, msg = fe.Code, fe.Message
		if status == fiber.StatusNotFound {
			msg = "there is nothing at " + c.Path()
		}
		if status == fiber.StatusMethodNotAllowed {
			msg = c.Method() + " is not allowed here"
		}
		if status == fiber.StatusRequestEntityTooLarge {
			msg = "the request body is larger than 1 MiB"
		}
		if status == fiber.StatusBadRequest && requestIDOf(c) == "" {
			// fasthttp refused the request while reading it (the middleware
			// never ran); its message quotes its parser and the raw request.
			msg = "the request cannot be read"
		}
	}
	if status == fiber.StatusUnauthorized {
		// No page around it: the browser shows its own sign-in prompt.
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Status(status).SendString(msg + "\n")
	}
	if status >= 500 && status != fiber.StatusServiceUnavailable {
		h.log.Error("request failed", "err", err, "path", c.Path(), "request_id", requestIDOf(c))
	} else if status == fiber.StatusServiceUnavailable {
		what := "redis unavailable"
		if errors.Is(err, errTooManyStreams) {
			what = "too many live update streams"
		}
		if errors.Is(err, errBodyBudget) {
			what = "too many request bodies being read"
		}
		h.log.Warn(what, "err", err, "request_id", requestIDOf(c))
	}
	r, nerr := negotiate(c)
	if nerr != nil {
		// Neither HTML nor JSON is acceptable: plain text is all that is left.
		c.Set(fiber.HeaderCacheControl, noStore)
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Status(status).SendString(msg + "\n")
	}
	body := fiber.Map{"error": msg, "request_id": requestIDOf(c)}
	if fields != nil {
		body["errors"] = fields
	}
	if current != nil {
		body["current"] = current
	}
	out := &response{Status: status, CacheControl: noStore, Partial: partialError, JSON: body,
		View: &view{Title: errorTitle(status), Error: &errorView{Status: status, Message: msg, RequestID: requestIDOf(c)}}}
	if r == reprFragment {
		// htmx swaps the error wherever the request aimed (or, for a row's
		// delete, nowhere): the alert region says it, and replaces any
		// earlier notice. A page says it once, in its body.
		out.Notice = errorNotice(sentence(msg))
	}
	// The page links back to the list of the resource the path is about.
	out.View.R = resourceOf(c.Path())
	return respond(c, r, nil, out)
}

// sentence starts msg with a capital letter and ends it with a full stop.
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	r, n := utf8.DecodeRuneInString(msg)
	msg = string(unicode.ToUpper(r)) + msg[n:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

func errorTitle(status int) string {
	switch status {
	case fiber.StatusNotFound:
		return "Not found"
	case fiber.StatusServiceUnavailable:
		return "Try again shortly"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "Cannot do that"
}
