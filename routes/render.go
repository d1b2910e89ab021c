package routes

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"io/fs"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/template/html/v2"
	"github.com/maypok86/otter/v2"

	"orders/store"
)

// The answers, in one file: the representation a request asks for
// (negotiate), what a handler decides (response) and the one place that
// writes it (respond), the one error handler (errorHandler), the notices,
// the templates' engine (views) and the helpers the templates call.

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
	// page-sized swap and both notice regions (notice).
	layoutBare = "layouts/bare"
)

var errNotAcceptable = fiber.NewError(fiber.StatusNotAcceptable, "this resource is available as text/html or application/json")

// negotiate picks the representation from Accept and the htmx headers.
func negotiate(c *fiber.Ctx) (repr, error) {
	// A page shows who it is for (the header, the controls their rights
	// allow): a browser that signs in as someone else must not reuse it.
	c.Vary("Accept", "HX-Request", "HX-Request-Type", "HX-History-Restore-Request", "HX-Target", "Cookie")
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

// response is what a handler decides (golang/pkgsite's shape): the outcome
// of a request in every representation at once. respond decides how it is
// written for the representation asked for; no handler writes a status,
// a body, a cookie or the headers of an outcome (Location, HX-*, ETag,
// Cache-Control) itself.
type response struct {
	// Status is the status of the answer; 200 when 0. A plain form's write
	// that succeeded answers 303 to Redirect instead; a 204 is a 200 in
	// HTML.
	Status int
	// Partial and View are the HTML answer: the partial alone (htmx) or
	// inside the layout. respond gives View the resource (R) and Notice.
	Partial string
	View    *view
	// JSON is the JSON body; nil answers Status with no body (204).
	JSON any
	// Err, when set, is what JSON answers (through errorHandler) instead of
	// JSON: a form shown again with its messages is the HTML answer to the
	// same error (a 422 or a 409).
	Err error
	// Notice is the notice of the outcome: in the live regions of the page
	// or fragment, or in the flash cookie across a redirect.
	Notice *notice

	// Location is where the created member lives: JSON's Location header.
	Location string
	// Redirect is where a plain form's write leads (303, the notice as a
	// flash): a full page is never the answer to a successful write.
	Redirect string
	// PushURL and ReplaceURL are the URL htmx shows after the swap: pushed
	// (a new page: Back returns to the form) or replacing the form's entry
	// (Back leads to the page before the form).
	PushURL, ReplaceURL string
	// HXLocation sends htmx to another page (nothing is left to show where
	// the request came from): no body, the notice as a flash.
	HXLocation string
	// HXRedirect sends the browser to another page, loaded whole (the
	// header changes with who is signed in): no body, the notice as a flash.
	HXRedirect string
	// Trigger is an HX-Trigger header: events for elements of the page.
	Trigger string

	// ETag is the representation's ETag; NotModified answers 304 with it.
	ETag        string
	NotModified bool
	// CacheControl is "no-cache" unless set ("no-store": a form, an error,
	// a row that is gone).
	CacheControl string
}

// Partials of no resource.
const (
	partialError = "partials/error"
	// partialNotice is no content of its own: only the notice travels.
	partialNotice = "partials/notice"
)

// respond writes out in representation rp for resource res (nil for an
// error of no resource): the one place that turns an outcome into headers,
// cookies, a status and a body.
func respond(c *fiber.Ctx, rp repr, res *resource, out *response) error {
	status := out.Status
	if status == 0 {
		status = fiber.StatusOK
	}
	if status == fiber.StatusNoContent && rp != reprJSON {
		// htmx swaps nothing on a 204: an HTML answer is a 200, whose
		// (empty) swap removes the target and whose notice travels.
		status = fiber.StatusOK
	}
	// A representation says how it may be cached; a redirect or an empty
	// answer has nothing to keep.
	cache := func() {
		switch {
		case out.CacheControl != "":
			c.Set(fiber.HeaderCacheControl, out.CacheControl)
		case len(c.Response().Header.Peek(fiber.HeaderCacheControl)) == 0:
			c.Set(fiber.HeaderCacheControl, "no-cache")
		}
		if out.ETag != "" {
			c.Set(fiber.HeaderETag, out.ETag)
		}
	}
	if rp == reprPage && c.Cookies(flashCookie) != "" {
		// This page carries a one-time notice: neither a 304 nor an ETag,
		// so the notice is neither lost nor replayed from a cache.
		out.ETag, out.NotModified = "", false
	}
	if rp != reprJSON && out.ETag != "" {
		// A page or fragment shows the controls its person's role allows,
		// and a page of the open desk says the desk is open: the tag names
		// the role it was drawn for (the open desk's none), and a tag drawn
		// for another is no match (a person whose role changed, or who
		// signs in where the desk was open, gets the page anew).
		// Its times are written in the person's zone: the tag names the
		// zone too (none for UTC), and a tag drawn for another is no match.
		mark := whoMark(personOf(c))
		for _, m := range []string{mark, zoneMark(zoneOf(c))} {
			if m != "" {
				out.ETag = strings.TrimSuffix(out.ETag, `"`) + "-" + m + `"`
			}
		}
		zmark := zoneMark(zoneOf(c))
		if inm := c.Get(fiber.HeaderIfNoneMatch); out.NotModified && strings.TrimSpace(inm) != "*" && !tagsDrawnFor(inm, mark, zmark) {
			out.NotModified = false
		}
	}
	if out.NotModified {
		cache()
		return c.SendStatus(fiber.StatusNotModified)
	}
	switch rp {
	case reprJSON:
		if out.Err != nil {
			return out.Err
		}
		if out.Location != "" {
			c.Location(out.Location)
		}
		if out.JSON == nil {
			return c.SendStatus(status)
		}
		cache()
		return sendJSON(c, status, out.JSON)
	case reprFragment:
		if out.HXLocation != "" {
			setFlash(c, out.Notice)
			c.Set("HX-Location", out.HXLocation)
			return c.Status(status).Send(nil)
		}
		if out.HXRedirect != "" {
			setFlash(c, out.Notice)
			c.Set("HX-Redirect", out.HXRedirect)
			return c.Status(status).Send(nil)
		}
		for _, h := range [...][2]string{{"HX-Push-Url", out.PushURL}, {"HX-Replace-Url", out.ReplaceURL}, {"HX-Trigger", out.Trigger}} {
			if h[1] != "" {
				c.Set(h[0], h[1])
			}
		}
		cache()
		v := out.view(c, res)
		v.TitleSwap = titleSwap(c, res)
		c.Status(status)
		return c.Render(out.Partial, v, layoutBare)
	}
	if out.Redirect != "" {
		setFlash(c, out.Notice)
		return c.Redirect(out.Redirect, fiber.StatusSeeOther)
	}
	cache()
	v := out.view(c, res)
	if v.Notice == nil {
		v.Notice = takeFlash(c) // after cache(): a one-time notice is no-store
	}
	if status < 400 {
		v.LiveAfter = liveAfter(c, v.R)
	}
	c.Status(status)
	return c.Render(out.Partial, v, layoutPage)
}

// view is out's View (an empty one when it has none) with the resource,
// the notice and the person it is rendered for.
func (out *response) view(c *fiber.Ctx, res *resource) *view {
	v := out.View
	if v == nil {
		v = &view{}
	}
	v.who = personOf(c)
	v.last = lastQueries(c)
	v.views, _ = c.App().Config().Views.(*views)
	v.zoned = zoned{zoneOf(c)}
	if v.History != nil {
		v.History.zoned = v.zoned
	}
	if v.R == nil {
		v.R = res
	}
	if v.Notice == nil {
		v.Notice = out.Notice
	}
	return v
}

// noStore keeps an answer out of every cache, the back/forward cache
// included (CacheControl): an error, a row that is gone, and every form:
// Back after a save (a plain form's 303) fetches the form again with the
// stored values and version, instead of showing the old ones, which a
// second save would send as a stale edit.
const noStore = "no-store"

// view is what every template receives.
type view struct {
	// R is the resource the page is about (respond sets it): its paths,
	// target ids and names for the templates (resource.go). Nil on an
	// error page of no resource.
	R      *resource
	Title  string
	Nav    string  // which navigation entry is current: a resource's Plural, inquiry, new
	Notice *notice // a message for the live regions (notice, below)

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
	// Import is the product import's page (import.go).
	Import *importView

	// TitleSwap says a fragment replaces a page-sized part (#main or the
	// results): it carries the document title, which htmx applies (it takes
	// a <title> from any response it swaps). Row fragments carry none.
	TitleSwap bool
	// who is the person the page is rendered for: what it offers follows
	// their rights (Can, NavEntries).
	who *person
	// LiveAfter is the cursor of the resource's newest event when a page
	// was rendered: the page's event stream starts after it (?after=), so
	// nothing made between the render and the connection is missed.
	LiveAfter string
	// orderRow is the List row of Record, when the List worked it out
	// (OrderRows).
	orderRow *orderRow
	// zoned writes the page's times in the person's zone (Date).
	zoned
	// views draws the fragments a page keeps drawn (DrawnOrderRows).
	views *views
	// frame is what the layout shows around the page (DrawnFrame).
	frame *frame
	// last are the queries the person last listed each List with
	// (lastQueries): the navigation leads back to them.
	last map[string]string
}

// frame is what the layout shows around a page's part that follows only
// the page's place and its person (partials/frame_top: the head, the
// navigation, who is signed in, the open desk's banner; and
// partials/shortcuts): drawn once for each such set of values and kept.
type frame struct {
	Title, Description, Nav   string
	NavEntries                []navEntry
	Can                       can
	MeName, MePage            string
	OpenDesk                  bool
	SessionPath, AccountsPath string
}

// DrawnFrame is part of the layout (a template that reads nothing but a
// frame) drawn for the view, or from the render cache.
func (v *view) DrawnFrame(part string) (template.HTML, error) {
	if v.frame == nil {
		f := &frame{Title: v.Title, Description: v.Description(), Nav: v.Nav, NavEntries: v.NavEntries(), Can: v.Can(),
			OpenDesk: v.OpenDesk(), SessionPath: v.SessionPath(), AccountsPath: v.AccountsPath()}
		if me := v.Me(); me != nil {
			f.MeName, f.MePage = me.DisplayName(), me.Page()
		}
		v.frame = f
	}
	return v.views.draw(part, fmt.Appendf(nil, "%v", *v.frame), v.frame)
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
	return &view{R: v.R, Record: p.Interface(), who: v.who, zoned: v.zoned}
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
// (notice). The templates have them as {{mainID}}, {{noticeID}} and
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

// errorView is an error page, in the voice every error page and empty
// list shares: the title says what happened, Message says it in a
// sentence, and Todo, then the link to LinkURL, what to do about it.
type errorView struct {
	Status            int
	Message           string
	RequestID         string
	Todo              string
	LinkURL, LinkText string
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

// errorHandler is the one place that turns an error into a response: the
// status from the error's code, the body in the representation asked for.
func (h *handlers) errorHandler(c *fiber.Ctx, err error) error {
	setSecurityHeaders(c)
	if th := asThrottled(err); th != nil {
		// A limit reached inside a handler (a wrong current password):
		// 429 with Retry-After, as the edge answers it.
		err = tooMany(c, th)
	}
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
		case store.EGONE:
			status, msg = fiber.StatusGone, se.Message
		case store.EINVALID:
			status, msg, fields = fiber.StatusUnprocessableEntity, se.Message, se.Fields
		case store.ECONFLICT:
			status, msg, current = fiber.StatusConflict, se.Message, se.Current
		case store.EPRECONDITION:
			status, msg, current = fiber.StatusPreconditionFailed, se.Message, se.Current
		case store.EBROAD:
			// A query too costly to answer: the message says what to narrow.
			status, msg = fiber.StatusBadRequest, se.Message
		case store.EFORBIDDEN:
			status, msg = fiber.StatusForbidden, se.Message
		case store.EUNSIGNED:
			status, msg = fiber.StatusUnauthorized, se.Message
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
		// Programs sign in with a token; a browser is sent to the sign-in
		// form instead (unsigned), and Bearer brings up no prompt.
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="Orders"`)
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
	ev := &errorView{Status: status, Message: pageSentence(c, msg), RequestID: requestIDOf(c), Todo: errorTodo(status)}
	out := &response{Status: status, CacheControl: noStore, Partial: partialError, JSON: body,
		View: &view{Title: errorTitle(status), Error: ev}}
	if r == reprFragment {
		// htmx swaps the error wherever the request aimed (or, for a row's
		// delete, nowhere): the alert region says it, and replaces any
		// earlier notice. A page says it once, in its body.
		out.Notice = errorNotice(sentence(msg))
	}
	// The page links back to the list of the resource the path is about
	// (the first resource's when it is about none).
	out.View.R = resourceOf(c.Path())
	back := out.View.R
	if back == nil {
		back = resources[0]
	}
	ev.LinkURL, ev.LinkText = back.Path(), "go back to the "+back.Plural
	return respond(c, r, nil, out)
}

// pageSentence is msg as an error page says it: a sentence, with a query
// parameter it starts with quoted ("“from” must be a date …"), as a name
// is not a word to capitalise.
func pageSentence(c *fiber.Ctx, msg string) string {
	if first, rest, ok := strings.Cut(msg, " "); ok && c.Request().URI().QueryArgs().Has(first) {
		msg = "“" + first + "” " + rest
	}
	return sentence(msg)
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

// errorTitle is an error page's heading: what happened, in a few words.
func errorTitle(status int) string {
	switch status {
	case fiber.StatusBadRequest:
		return "That request cannot be read"
	case fiber.StatusUnauthorized:
		return "Sign in first"
	case fiber.StatusForbidden:
		return "Not allowed"
	case fiber.StatusNotFound:
		return "Not found"
	case fiber.StatusMethodNotAllowed:
		return "Not possible here"
	case fiber.StatusConflict, fiber.StatusPreconditionFailed:
		return "Changed meanwhile"
	case fiber.StatusRequestEntityTooLarge:
		return "Too large"
	case fiber.StatusUnprocessableEntity:
		return "That cannot be done"
	case fiber.StatusTooManyRequests:
		return "Too many tries"
	case fiber.StatusServiceUnavailable:
		return "Try again shortly"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "That cannot be done"
}

// errorTodo is the start of an error page's last line, which ends with a
// link back to a list: what to do about it.
func errorTodo(status int) string {
	switch status {
	case fiber.StatusBadRequest:
		return "Correct the address, or"
	case fiber.StatusUnauthorized:
		return "Sign in and try again, or"
	case fiber.StatusForbidden:
		return "Ask an admin for the role it takes, or"
	case fiber.StatusNotFound:
		return "Check the address, or"
	case fiber.StatusMethodNotAllowed:
		return "Use the page's own buttons and links, or"
	case fiber.StatusConflict, fiber.StatusPreconditionFailed:
		return "Open it again to see the latest, or"
	case fiber.StatusRequestEntityTooLarge:
		return "Send less at once, or"
	case fiber.StatusUnprocessableEntity:
		return "Open the page again to see what it allows now, or"
	case fiber.StatusTooManyRequests, fiber.StatusServiceUnavailable:
		return "Wait a moment and try again, or"
	}
	if status >= 500 {
		return "Try again in a moment, or"
	}
	return "Open the page again, or"
}

// Notice kinds: success, warning and error. Each looks different (an icon
// and a word as well as a colour) and is announced in its own live region:
// a success in #notice (role=status, polite), a warning or an error in
// #notice-alert (role=alert), so a problem interrupts and a confirmation
// waits its turn.
const (
	noticeSuccess = "success"
	noticeWarning = "warning"
	noticeError   = "error"
)

// notice is one message for the live regions. Every response that carries
// the layout, or that htmx swaps, says the notice of its own outcome: the
// bare layout always sends both regions, so a new notice replaces the old
// one and a response with none clears them (never a stale "saved" beside
// an error).
type notice struct {
	Kind string // noticeSuccess, noticeWarning or noticeError
	Text string
	// Undo, when set, is the member path of a record just deleted: the
	// notice offers to bring it back (a PUT there with restore=1).
	Undo string
}

// UndoWindow says how long an Undo is offered: "10 minutes".
func (n *notice) UndoWindow() string { return undoWindowWords }

// undoWindowWords is store.UndoWindow as a person reads it.
var undoWindowWords = strconv.Itoa(int(store.UndoWindow/time.Minute)) + " minutes"

func successNotice(text string) *notice { return &notice{Kind: noticeSuccess, Text: text} }
func warningNotice(text string) *notice { return &notice{Kind: noticeWarning, Text: text} }
func errorNotice(text string) *notice   { return &notice{Kind: noticeError, Text: text} }

// Alert reports whether the notice belongs in the role=alert region.
func (n *notice) Alert() bool { return n.Kind == noticeWarning || n.Kind == noticeError }

// Label is the word shown before the text: the kind, not by colour alone.
func (n *notice) Label() string {
	switch n.Kind {
	case noticeWarning:
		return "Warning"
	case noticeError:
		return "Error"
	}
	return "Success"
}

// Status is the notice for the role=status region, or nil.
func (v *view) StatusNotice() *notice {
	if v.Notice != nil && !v.Notice.Alert() {
		return v.Notice
	}
	return nil
}

// AlertNotice is the notice for the role=alert region, or nil.
func (v *view) AlertNotice() *notice {
	if v.Notice != nil && v.Notice.Alert() {
		return v.Notice
	}
	return nil
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

// encodeFlash and decodeFlash carry a notice in the flash cookie as
// "kind:text"; a value without a known kind is shown whole as a success
// (a plain text flash), so no cookie's text is lost.
// A notice with an Undo carries its path after the kind: "kind|path:text";
// a path that is no registered resource's member is dropped.
func encodeFlash(n *notice) string {
	if n.Undo != "" {
		return n.Kind + "|" + n.Undo + ":" + n.Text
	}
	return n.Kind + ":" + n.Text
}

func decodeFlash(s string) *notice {
	if head, text, ok := strings.Cut(s, ":"); ok {
		kind, undo, _ := strings.Cut(head, "|")
		switch kind {
		case noticeSuccess, noticeWarning, noticeError:
			n := &notice{Kind: kind, Text: text}
			if undoPath(undo) {
				n.Undo = undo
			}
			return n
		}
	}
	return successNotice(s)
}

// undoPath reports whether p is the member path of a registered resource
// whose deletes can be undone.
func undoPath(p string) bool {
	for _, r := range resources {
		if rest, ok := strings.CutPrefix(p, r.Path()+"/"); ok && r.Restores {
			id, ok := store.ParseID(rest)
			return ok && r.MemberPath(id) == p
		}
	}
	return false
}

// views renders the templates that gofiber/template/html loads, without its
// Render: v2.1.3 takes one engine-wide lock for every render with a layout
// (so renders never run in parallel) and swaps the "embed" function of the
// shared template set on every render: rendering without a layout while
// another request renders with one can then fail with "call of nil
// function".
//
// Instead, for each layout and each partial, views adds one template
// "<layout>|<partial>" to a copy of the loaded set: the layout's source with
// {{embed}} replaced by {{template "<partial>" .}}. A render is then one
// lookup and one Execute of a set that never changes after start, which
// html/template runs concurrently.
//
// Fragments drawn once are kept (drawn): a List row is drawn the first
// time its values are shown and copied from the cache after that.
type views struct {
	set   *template.Template
	drawn *fragments
}

// DefaultRenderCache is the memory, in MiB, the drawn fragments take at
// most unless Config.RenderCacheMiB says otherwise.
const DefaultRenderCache = 64

// fragments are drawn fragments, each under the name of its template and
// every value it shows: a changed record shows other values (its version
// among them), so its fragment is drawn again under another key, and a
// fragment from the cache is the one its template would draw now. Old
// ones leave as the cache fills: it holds at most its budget of bytes
// (keys and fragments counted), the least used going first.
type fragments struct {
	cache        *otter.Cache[string, template.HTML]
	hits, misses atomic.Uint64
}

// newFragments returns a cache of at most mib MiB of fragments; nil (no
// cache: every fragment drawn every time) when mib is 0.
func newFragments(mib int) (*fragments, error) {
	if mib == 0 {
		return nil, nil
	}
	c, err := otter.New(&otter.Options[string, template.HTML]{
		MaximumWeight: uint64(mib) << 20,
		Weigher: func(k string, v template.HTML) uint32 {
			return uint32(min(len(k)+len(v)+fragmentOverhead, math.MaxUint32))
		},
	})
	if err != nil {
		return nil, err
	}
	return &fragments{cache: c}, nil
}

// fragmentOverhead is what an entry of the cache costs besides its key's
// and fragment's bytes: the two string headers and the cache's node.
const fragmentOverhead = 96

// draw is template name drawn with data, from the cache when it was drawn
// before with the same values: key must name every value the template
// reads from data.
func (v *views) draw(name string, key []byte, data any) (template.HTML, error) {
	f := v.drawn
	k := ""
	if f != nil {
		k = name + "\x00" + string(key)
		if h, ok := f.cache.GetIfPresent(k); ok {
			f.hits.Add(1)
			return h, nil
		}
		f.misses.Add(1)
	}
	t := v.set.Lookup(name)
	if t == nil {
		return "", fmt.Errorf("render: template %s does not exist", name)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	h := template.HTML(b.String())
	if f != nil {
		f.cache.Set(k, h)
	}
	return h, nil
}

// newViews loads every template of fsys through the html engine (funcs are
// registered before parsing) and builds the layout pairs.
func newViews(fsys fs.FS, funcs template.FuncMap, layouts []string, cacheMiB int) (*views, error) {
	drawn, err := newFragments(cacheMiB)
	if err != nil {
		return nil, err
	}
	engine := html.NewFileSystem(httpFS(fsys), ".html")
	engine.AddFuncMap(funcs)
	// A template that fails to parse is otherwise only logged, and every
	// later render of it fails with "template does not exist".
	if err := engine.Load(); err != nil {
		return nil, fmt.Errorf("loading templates: %w", err)
	}
	set, err := engine.Templates.Clone()
	if err != nil {
		return nil, err
	}
	var partials []string
	for _, t := range engine.Templates.Templates() {
		if strings.HasPrefix(t.Name(), "partials/") {
			partials = append(partials, t.Name())
		}
	}
	for _, layout := range layouts {
		src, err := fs.ReadFile(fsys, layout+".html")
		if err != nil {
			return nil, fmt.Errorf("template %s is missing: %w", layout, err)
		}
		if !strings.Contains(string(src), "{{embed}}") {
			return nil, fmt.Errorf("layout %s has no {{embed}}", layout)
		}
		for _, p := range partials {
			pair := strings.ReplaceAll(string(src), "{{embed}}", `{{template "`+p+`" .}}`)
			if _, err := set.New(layout + "|" + p).Parse(pair); err != nil {
				return nil, fmt.Errorf("%s around %s: %w", layout, p, err)
			}
		}
	}
	return &views{set: set, drawn: drawn}, nil
}

// Load is done by newViews.
func (v *views) Load() error { return nil }

// Render writes partial name inside layout[0], or alone.
func (v *views) Render(out io.Writer, name string, binding any, layout ...string) error {
	key := name
	if len(layout) > 0 && layout[0] != "" {
		key = layout[0] + "|" + name
	}
	t := v.set.Lookup(key)
	if t == nil {
		return fmt.Errorf("render: template %s does not exist", key)
	}
	return t.Execute(out, binding)
}

// TemplateFuncs returns the helpers the templates call, with asset giving
// the plain static URLs: for bench/floor, which renders the same templates
// without the app around them.
func TemplateFuncs() template.FuncMap {
	m := template.FuncMap{"asset": func(name string) string { return "/public/" + name }}
	for k, v := range funcs {
		m[k] = v
	}
	return m
}

var funcs = template.FuncMap{
	"isodate": formatISODate,
	"title":   statusTitle,
	// roleTitle is a role as a label: "Clerk".
	"roleTitle": func(r store.Role) string { return statusTitle(store.Status(r)) },
	"statuses":  func() []store.Status { return store.Statuses },
	"mainID":    func() string { return mainID },
	// home is the resource "/" leads to; nav is the site's navigation.
	"home": func() *resource { return resources[0] },
	// memberPath is the path of a member of another resource (an order's
	// customer), by its plural.
	"memberPath": func(plural string, id int64) string {
		for _, r := range resources {
			if r.Plural == plural {
				return r.MemberPath(id)
			}
		}
		return ""
	},
	"nav": navEntries,
	// money is an amount as pages show it: in its currency's decimals,
	// digits grouped in threes ("12,345.00", "350" for JPY).
	"money":    func(m store.Money, code string) string { return m.Grouped(code) },
	"noticeID": func() string { return noticeID },
	"alertID":  func() string { return alertID },
	// wbrEmail lets an email address break after "@" and before ".".
	"wbrEmail": wbrEmail,
	"actionLabel": func(s store.Status) string {
		return map[store.Status]string{store.Confirmed: "Confirm", store.Shipped: "Mark shipped",
			store.Delivered: "Mark delivered", store.Cancelled: "Cancel order"}[s]
	},
}

// formatISODate is a time as a <time datetime> carries it: RFC 3339, UTC.
func formatISODate(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// statusTitle is a status as a label: "Pending".
func statusTitle(s store.Status) string {
	if s == "" {
		return ""
	}
	return strings.ToUpper(string(s[:1])) + string(s[1:])
}

// The person's time zone: pages write times in it, and the List's from and
// to are dates in it. The browser says its zone (app.js writes the IANA
// name it reports into the tz cookie); without one, or with one that is not
// a zone, pages are in UTC and say so.

const (
	// zoneCookie carries the browser's IANA time zone ("Europe/Berlin").
	zoneCookie = "tz"
	// zoneMaxLen bounds the name read: the longest IANA name is 32
	// characters ("America/Argentina/ComodRivadavia").
	zoneMaxLen = 64
	zoneLocal  = "orders.zone"
	// timeLayout is how pages write a time: the date as YYYY-MM-DD, the
	// time to the minute, and the zone's abbreviation ("UTC", "CET").
	timeLayout = "2006-01-02 15:04 MST"
)

// zones keeps the locations already loaded: loading reads the zone
// database. Only names that loaded are kept, so it holds at most the
// database's few hundred zones.
var zones sync.Map // name → *time.Location

// zoneOf is the zone c's person reads times in: the tz cookie's zone when
// it names one, else UTC.
func zoneOf(c *fiber.Ctx) *time.Location {
	if loc, ok := c.Locals(zoneLocal).(*time.Location); ok {
		return loc
	}
	loc := parseZone(c.Cookies(zoneCookie))
	c.Locals(zoneLocal, loc)
	return loc
}

// parseZone is the zone an IANA name names, or UTC for anything else: an
// empty or over-long value, "Local" (the server's zone, not the person's),
// a path out of the zone database, a name the database does not know.
func parseZone(name string) *time.Location {
	if name == "" || len(name) > zoneMaxLen || name == "Local" {
		return time.UTC
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9',
			b == '/', b == '_', b == '-', b == '+':
		default:
			return time.UTC
		}
	}
	if name[0] == '/' || strings.Contains(name, "..") {
		return time.UTC
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	zones.Store(name, loc)
	return loc
}

// zoneMark is the part of an HTML answer's ETag that names the zone its
// times are written in: "z" and a hash of the zone's name, nothing for UTC.
// A page drawn for one zone is no match for a browser in another.
func zoneMark(loc *time.Location) string {
	if loc == time.UTC {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(loc.String()))
	return fmt.Sprintf("z%08x", h.Sum32())
}

// isZoneMark reports whether part of a tag is a mark zoneMark gives.
func isZoneMark(part string) bool {
	if len(part) != 9 || part[0] != 'z' {
		return false
	}
	for i := 1; i < len(part); i++ {
		if b := part[i]; !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f') {
			return false
		}
	}
	return true
}

// zoned writes times for the person a page is drawn for: in their zone,
// labelled with it. The zero value writes UTC.
type zoned struct{ loc *time.Location }

func (z zoned) zone() *time.Location {
	if z.loc == nil {
		return time.UTC
	}
	return z.loc
}

// Date is t as pages show it: "2025-01-31 15:05 CET", "2025-01-31 14:05 UTC".
func (z zoned) Date(t time.Time) string { return t.In(z.zone()).Format(timeLayout) }

// ZoneName is the zone's IANA name ("Europe/Berlin", "UTC"): what the
// date filters' days are in.
func (z zoned) ZoneName() string { return z.zone().String() }
