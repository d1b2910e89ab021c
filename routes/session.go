package routes

import (
	"context"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// Sign-in is the singular resource /session: GET /session/new is the form,
// POST /session signs in (a new session, its secret in the cookie),
// DELETE /session signs out (the session ends on the server). The form is
// a plain HTML form, so it works without JavaScript; with it, htmx sends it
// and shows a refusal in place.

const (
	sessionPath = "/session"
	signInPath  = "/session/new"
	// sessionCookie carries a signed-in browser's session secret.
	sessionCookie = "orders_session"
	// maxNext is the longest path a sign-in leads back to.
	maxNext = 2048
	// afterSignIn is where a sign-in without a next leads.
	afterSignIn = "/orders"
)

// msgWrongSignIn is the one answer to a name or a password that is wrong,
// whichever it was.
const msgWrongSignIn = "wrong name or password"

// sessionRoutes registers the session's routes.
func (h *handlers) sessionRoutes(app *fiber.App) {
	app.Get(signInPath, h.signInForm)
	app.Post(sessionPath, h.signIn)
	app.Delete(sessionPath, h.signOut)
}

// signInIn is what POST /session sends.
type signInIn struct{ Name, Password, Next *string }

var signInFields = fields[signInIn]{
	{Name: "name", Label: "Name", Max: store.MaxUserName, text: func(in *signInIn) **string { return &in.Name }},
	{Name: "password", Label: "Password", Max: store.MaxPassword, text: func(in *signInIn) **string { return &in.Password }},
	{Name: "next", Label: "Next", Max: maxNext, text: func(in *signInIn) **string { return &in.Next }},
}

// signInForm is what the sign-in form shows: the name typed (never the
// password), where it leads, and why the last attempt was refused.
type signInForm struct {
	Name, Next, Error string
	// Open: no account exists yet (protected mode), so nobody can sign in.
	Open bool
	// Signed is who the browser is signed in as already (nil: no one).
	Signed *person
	// MaxName and MaxPassword are the fields' limits (maxlength).
	MaxName, MaxPassword int
}

// Action is where the form is sent.
func (f *signInForm) Action() string { return sessionPath }

func (h *handlers) newSignInForm(c *fiber.Ctx, name, next string) *signInForm {
	p := personOf(c)
	f := &signInForm{Name: name, Next: localPath(next), Open: p.Open, MaxName: store.MaxUserName, MaxPassword: store.MaxPassword}
	if p.User != nil {
		f.Signed = p
	}
	return f
}

// signInView is the view of the sign-in form f.
func signInView(f *signInForm) *view {
	return &view{Title: "Sign in", Nav: "session", Form: f}
}

const partialSignIn = "partials/session/new"

// signInForm is GET /session/new: the form, with next (a local path) kept
// for after the sign-in.
func (h *handlers) signInForm(c *fiber.Ctx) error {
	rp, err := negotiate(c)
	if err != nil {
		return err
	}
	f := h.newSignInForm(c, "", c.Query("next"))
	return respond(c, rp, nil, &response{Partial: partialSignIn, View: signInView(f), CacheControl: noStore,
		JSON: fiber.Map{"open": f.Open, "signed_in": f.Signed != nil}})
}

// signIn is POST /session. Failed sign-ins are limited per client address
// and per name (store.Limiter): past a limit every attempt is 429 with
// Retry-After before its password is looked at, the right one too. A
// wrong name and a wrong password get the same 422 ("wrong name or
// password"); an empty field is no attempt and counts nothing. On success
// the browser gets a new session (any session its cookie named ends), and
// goes to next (a local path) or to the orders: 303, or for htmx a full
// load (HX-Redirect); JSON gets 201 with the account. When Redis does not
// answer the sign-in is 503: without the limits guessing would be free.
func (h *handlers) signIn(c *fiber.Ctx) error {
	rp, err := negotiate(c)
	if err != nil {
		return err
	}
	in, err := decodeBody(c, signInFields)
	if err != nil {
		return err
	}
	text := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	name, password, next := strings.TrimSpace(text(in.Name)), text(in.Password), text(in.Next)
	ctx := c.UserContext()
	addr := h.proxies.clientAddr(c)
	refuse := func(msg string) error {
		f := h.newSignInForm(c, name, next)
		if len(f.Name) > store.MaxUserName {
			f.Name = ""
		}
		f.Error = sentence(msg)
		return respond(c, rp, nil, &response{Status: fiber.StatusUnprocessableEntity, Partial: partialSignIn, View: signInView(f),
			CacheControl: noStore, Err: store.Errorf(store.EINVALID, "%s", msg)})
	}
	if name == "" || password == "" {
		return refuse("enter your name and password")
	}
	// Throttled, a person sees the form again with when to try again (429
	// and Retry-After); a program gets the 429 alone.
	throttled := func(th *store.Throttled) error {
		h.log.Warn("sign-in throttled", "client", addr, "user", logName(name), "limit", th.Limit,
			"retry_after_s", int(math.Ceil(th.RetryAfter.Seconds())), "request_id", requestIDOf(c))
		err := tooMany(c, th)
		fe, ok := err.(*fiber.Error)
		if rp == reprJSON || !ok {
			return err
		}
		f := h.newSignInForm(c, name, next)
		if len(f.Name) > store.MaxUserName {
			f.Name = ""
		}
		f.Error = sentence(fe.Message)
		return respond(c, rp, nil, &response{Status: fiber.StatusTooManyRequests, Partial: partialSignIn, View: signInView(f),
			CacheControl: noStore, Err: err})
	}
	u, err := h.checkSignIn(ctx, addr, name, password)
	if th := asThrottled(err); th != nil {
		return throttled(th)
	}
	if err != nil {
		if store.ErrorCode(err) != store.ENOTFOUND {
			h.log.Warn("sign-in refused: the limits or the account cannot be read", "client", addr, "user", logName(name), "err", err, "request_id", requestIDOf(c))
			return err
		}
		h.log.Warn("sign-in failed", "client", addr, "user", logName(name), "request_id", requestIDOf(c))
		return refuse(msgWrongSignIn)
	}
	// A new session at every sign-in: a secret someone planted in the
	// browser before it signed in is worth nothing after.
	if old := c.Cookies(sessionCookie); old != "" && len(old) <= maxSecret {
		if err := h.store.EndSession(ctx, old); err != nil {
			return err
		}
	}
	secret, err := h.store.StartSession(ctx, u.ID)
	if err != nil {
		return err
	}
	setSessionCookie(c, secret)
	who := &person{User: u, Name: u.Name}
	h.log.Info("signed in", "client", addr, "user", u.Name, "request_id", requestIDOf(c))
	dest := localPath(next)
	if dest == "" {
		dest = afterSignIn
	}
	status := fiber.StatusOK // htmx: the redirect is the answer
	if rp == reprJSON {
		status = fiber.StatusCreated
	}
	return respond(c, rp, nil, &response{Status: status, JSON: u, Redirect: dest, HXRedirect: dest, CacheControl: noStore,
		Notice: successNotice("You are signed in as " + who.DisplayName() + ".")})
}

// signInChecks bounds the sign-ins being checked at once (as many as the
// store hashes passwords at once). Within one, the limits are read, the
// password checked and a failure counted, in that order: a sign-in that
// waited for its turn reads the failures counted meanwhile, so of guesses
// sent all at once no more than the limit reach the password check, and a
// burst waits for a few hashes instead of queueing every one of them.
var signInChecks = make(chan struct{}, 4)

// checkSignIn is the account name signs in as with password, from addr:
// a *store.Throttled when addr or name has failed too often (whatever the
// password), ENOTFOUND for a wrong name or password (counted as a
// failure), EUNAVAILABLE when Redis does not answer or the sign-in waited
// too long for its turn.
func (h *handlers) checkSignIn(ctx context.Context, addr, name, password string) (*store.User, error) {
	select {
	case signInChecks <- struct{}{}:
		defer func() { <-signInChecks }()
	case <-ctx.Done():
		return nil, &store.Error{Code: store.EUNAVAILABLE, Message: "too many sign-ins at once; try again in a moment", Err: ctx.Err()}
	}
	if err := h.limits.SignInAllowed(ctx, addr, name); err != nil {
		return nil, err
	}
	var u *store.User
	var err error
	if len(name) <= store.MaxUserName && len(password) <= store.MaxPassword {
		u, err = h.store.CheckPassword(ctx, name, password)
		if err != nil && store.ErrorCode(err) != store.ENOTFOUND {
			return nil, err
		}
	}
	if u != nil {
		return u, nil
	}
	// Counted even when the request's time ran out in the hash: a failure
	// that is checked is always counted.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := h.limits.CountFailedSignIn(cctx, addr, name); err != nil {
		if asThrottled(err) != nil {
			return nil, err
		}
		h.log.Error("a failed sign-in could not be counted", "client", addr, "user", logName(name), "err", err)
		return nil, err
	}
	return nil, store.Errorf(store.ENOTFOUND, msgWrongSignIn)
}

// signOut is DELETE /session (a plain form: POST with _method=DELETE): the
// session the cookie names ends on the server and the cookie is cleared;
// then the sign-in form (303; htmx: a full load), or 204 for JSON. Without
// a session it does the same, and nothing else.
func (h *handlers) signOut(c *fiber.Ctx) error {
	rp, err := negotiate(c)
	if err != nil {
		return err
	}
	if secret := c.Cookies(sessionCookie); secret != "" {
		if len(secret) <= maxSecret {
			if err := h.store.EndSession(c.UserContext(), secret); err != nil {
				return err
			}
		}
		clearSessionCookie(c)
	}
	if p := personOf(c); p.Session != "" {
		h.log.Info("signed out", "client", h.proxies.clientAddr(c), "user", p.Name, "request_id", requestIDOf(c))
	}
	return respond(c, rp, nil, &response{Status: fiber.StatusNoContent, Redirect: signInPath, HXRedirect: signInPath,
		Notice: successNotice("You are signed out."), CacheControl: noStore})
}

// setSessionCookie gives the browser its session: never readable by
// script, sent on this site's own requests and top-level navigations to it
// (not on another site's posts), and only over https when the request came
// that way (directly, or through a trusted proxy that says so).
func setSessionCookie(c *fiber.Ctx, secret string) {
	c.Cookie(&fiber.Cookie{Name: sessionCookie, Value: secret, Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Secure()})
}

// clearSessionCookie tells the browser to forget its session cookie (with
// the Path it was set with, or the browser keeps it).
func clearSessionCookie(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Secure()})
}

// localPath is next when it is a path of this site ("/orders?q=x"), else
// "": a sign-in never leads to another site. Refused: anything not
// starting with one "/" ("//host" and "/\host" name a host to a browser),
// schemes, backslashes and control characters anywhere, and the session's
// own paths.
func localPath(next string) string {
	if next == "" || len(next) > maxNext || next[0] != '/' || strings.HasPrefix(next, "//") {
		return ""
	}
	for i := 0; i < len(next); i++ {
		if b := next[i]; b < 0x20 || b == 0x7f || b == '\\' {
			return ""
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	if u.Path == sessionPath || strings.HasPrefix(u.Path, sessionPath+"/") {
		return ""
	}
	return next
}

// signInURL is the sign-in form that leads back to next (a local path; ""
// for none).
func signInURL(next string) string {
	if next = localPath(next); next == "" {
		return signInPath
	}
	return signInPath + "?next=" + url.QueryEscape(next)
}

// Me is the signed-in person a page is rendered for: nil for no one and in
// protected mode.
func (v *view) Me() *person {
	if v.who != nil && v.who.User != nil {
		return v.who
	}
	return nil
}

// OpenDesk reports whether the page is rendered in protected mode: no
// account exists, and anyone who reaches the desk may do anything.
func (v *view) OpenDesk() bool { return v.who != nil && v.who.Open }

// DisplayName is how the header names p: the display name, else the
// sign-in name.
func (p *person) DisplayName() string {
	if p.User != nil && strings.TrimSpace(p.User.DisplayName) != "" {
		return p.User.DisplayName
	}
	return p.Name
}

// Page is the path of p's own account page (password, tokens); "" for no
// account.
func (p *person) Page() string {
	if p.User == nil {
		return ""
	}
	return accountsPath + "/" + strconv.FormatInt(p.User.ID, 10)
}

// accountsPath is the collection of accounts, where a person's own page is
// and the first account is made.
const accountsPath = "/users"

// SessionPath is where the header's Sign out is sent.
func (v *view) SessionPath() string { return sessionPath }

// AccountsPath is where accounts are made (the protected mode's banner).
func (v *view) AccountsPath() string { return accountsPath }

// sessionAPI adds the session's operations to the OpenAPI description.
func (d *apiDoc) sessionAPI(paths obj) {
	text := func(max int) obj { return obj{"type": "string", "maxLength": max} }
	body := obj{"type": "object", "required": []string{"name", "password"}, "properties": obj{
		"name": text(store.MaxUserName), "password": text(store.MaxPassword),
		"next": obj{"type": "string", "maxLength": maxNext, "description": "a local path to go to after the sign-in (a plain form's or htmx's)"}}}
	refused := answer(msgWrongSignIn+" (either, never which), or a field left empty", errorSchema(nil))
	paths[sessionPath] = obj{
		"post": op("signIn", "sign in: a new session, its secret in the orders_session cookie (programs use tokens instead)", nil, body,
			responses(map[int]obj{201: answer("signed in: the account", d.schemaOf(reflect.TypeFor[store.User]())),
				200: answer("htmx: signed in (HX-Redirect to next)", nil), 303: answer("a plain form's sign-in: to next, else /orders", nil),
				422: refused}, true)),
		"delete": op("signOut", "sign out: the session ends on the server and the cookie is cleared", nil, nil,
			responses(map[int]obj{204: obj{"description": "signed out"}, 200: answer("htmx: signed out (HX-Redirect to the form)", nil),
				303: answer("a plain form's sign-out: to the sign-in form", nil)}, true)),
	}
	form := obj{"type": "object", "required": []string{"open", "signed_in"}, "additionalProperties": false, "properties": obj{
		"open":      obj{"type": "boolean", "description": "no account exists yet (protected mode): the desk is open to anyone"},
		"signed_in": obj{"type": "boolean", "description": "the request came with a session or a token"}}}
	paths[signInPath] = obj{"get": op("signInForm", "the sign-in form",
		[]any{query("next", "the local path to go to after the sign-in", obj{"type": "string"})}, nil,
		responses(map[int]obj{200: answer("the form", form)}, false))}
}
