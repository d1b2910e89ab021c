package routes

// The people who sign in: the resource /users, for admins, by the same
// registry as every resource. A person may also read their own account,
// change their own display name and password (the password only with
// their current one), and manage their own tokens; an admin manages
// everyone's. Passwords are write-only: no page, form or JSON shows one.

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// userResource is the accounts.
var userResource = &resource{Name: "user", Plural: "users", Title: "User", ETagPrefix: "u", Feed: store.UserEvents, Listing: userListing,
	Rights: rights{Read: store.RoleAdmin, Create: store.RoleAdmin, Update: store.RoleAdmin, Delete: store.RoleAdmin, Note: store.RoleAdmin},
	// Everyone reads and changes their own account (what they may change
	// of it, users' update says) and manages their own tokens.
	Own: func(a action) bool { return a == actRead || a == actUpdate },
	Nav: []navEntry{{Key: "users", Label: "Users",
		Description: "The people who use the desk: their sign-in names, roles and tokens."}},
	describe: func(rec any) string {
		u := rec.(*userRecord)
		return fmt.Sprintf("User %s (%s), %s.", u.Name, u.DisplayName, u.Role)
	},
	Example: example{
		Create: func(n int) map[string]any {
			// The first account must be an admin: every example is one.
			return map[string]any{"name": fmt.Sprintf("user-%d", n), "display_name": fmt.Sprintf("User %d", n),
				"role": "admin", "password": fmt.Sprintf("a long password %d", n)}
		},
		Change: "display_name",
	},
}

func init() {
	userResource.serve = func(h *handlers) resourceHandlers {
		m := userMembers(h.store, h.checkSignIn)
		hs := m.handlers(listUsers(h.store), nil)
		t := tokenHandlers{s: h.store}
		hs.Routes = []memberRoute{
			{Method: fiber.MethodGet, Path: "/tokens", Action: actRead, Handler: t.list},
			{Method: fiber.MethodPost, Path: "/tokens", Action: actUpdate, Handler: t.make},
			{Method: fiber.MethodDelete, Path: "/tokens/:tid<int>", Action: actUpdate, Handler: t.revoke},
		}
		hs.API.More = describeTokens
		return hs
	}
}

// userIn is an account's create or change as a request sends it: the
// store's input and, for a person changing their own password, their
// current one.
type userIn struct {
	store.UserInput
	CurrentPassword *string
}

// userRecord is an account as its pages show it: with its tokens on its
// own page (never in its JSON, which is the account's).
type userRecord struct {
	store.User
	Tokens []store.Token `json:"-"`
}

// roleOptions are the choices of a role select, up to most, selected
// the one given.
func roleOptions(most store.Role, selected string) []option {
	var out []option
	for _, r := range store.Roles {
		if !most.AtLeast(r) {
			break
		}
		out = append(out, option{Value: string(r), Label: statusTitle(store.Status(r)), Selected: string(r) == selected})
	}
	return out
}

// userFields are an account's fields as requests send them.
var userFields = fields[userIn]{
	{Name: "name", Label: "Sign-in name", Max: store.MaxUserName, UI: control{Required: true, Pattern: `[a-z0-9._\-]+`, Autocomplete: "off"},
		text: func(in *userIn) **string { return &in.Name }},
	{Name: "display_name", Label: "Display name", Max: store.MaxDisplayName, UI: control{Optional: true, Autocomplete: "name"},
		text: func(in *userIn) **string { return &in.DisplayName }},
	{Name: "role", Label: "Role", UI: control{Tag: "select"},
		text: func(in *userIn) **string { return &in.Role }},
	{Name: "disabled", Label: "Disabled: cannot sign in, and their tokens stop working", History: "Disabled", Kind: kindBool, UI: control{Type: "checkbox"},
		flag: func(in *userIn) **bool { return &in.Disabled }},
	{Name: "password", Label: "New password", Max: store.MaxPassword, History: "Password", UI: control{Type: "password", Autocomplete: "new-password"},
		text: func(in *userIn) **string { return &in.Password }},
	{Name: "current_password", Label: "Current password", Max: store.MaxPassword, UI: control{Type: "password", Autocomplete: "current-password"},
		text: func(in *userIn) **string { return &in.CurrentPassword }},
	{Name: "version", Kind: kindVersion, version: func(in *userIn) **int64 { return &in.Version }},
}

// userSorts are the users' List's sorts: by sign-in name.
var userSorts = []store.Sort{"name"}

// userListing is the users' List: by sign-in name, searched by name or
// display name.
var userListing = &listing{
	Title:      "Users",
	Sorts:      userSorts,
	Columns:    map[string]store.Sort{},
	Words:      func(store.Sort) string { return "by sign-in name" },
	SearchHint: "Sign-in or display name",
	Describe:   func(map[string]string) ([]string, string) { return nil, "" },
}

// userMembers are the account's member routes.
func userMembers(s store.Users, signIn signInCheck) *members[userRecord, userIn] {
	return newMembers[userRecord, userIn](userResource, userFields, userResource.Plural, userMember{s, signIn})
}

// signInCheck checks a name and password from a client address under the
// sign-in throttle (handlers.checkSignIn).
type signInCheck func(ctx context.Context, addr, name, password string) (*store.User, error)

// userMember is the account's recordStore and memberPages.
type userMember struct {
	s store.Users
	// signIn checks a person's current password as a sign-in would: a
	// wrong one counts toward the sign-in throttle, so a session is no way
	// around it.
	signIn signInCheck
}

func record(u *store.User, err error) (*userRecord, error) {
	if err != nil {
		return nil, err
	}
	return &userRecord{User: *u}, nil
}

func (m userMember) get(ctx context.Context, id int64) (*userRecord, error) {
	return record(m.s.GetUser(ctx, id))
}

// shown is an account with its tokens, for its page.
func (m userMember) shown(c *fiber.Ctx, id int64) (*userRecord, error) {
	u, err := m.get(c.UserContext(), id)
	if err != nil {
		return nil, err
	}
	if u.Tokens, err = m.s.Tokens(c.UserContext(), id); err != nil {
		return nil, err
	}
	return u, nil
}

// derived names the tokens an account's page shows: a token made, used
// or revoked changes the page without the account's version.
func (userMember) derived(u *userRecord) string {
	h := fnv.New64a()
	for _, t := range u.Tokens {
		fmt.Fprintf(h, "%d/", t.ID)
		if t.LastUsed != nil {
			fmt.Fprintf(h, "%d", t.LastUsed.Unix())
		}
		h.Write([]byte{';'})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// sentPassword is a password a request sent: nil when none, or empty (a
// form's empty field keeps the password).
func sentPassword(p *string) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

func (m userMember) create(ctx context.Context, in userIn) (*userRecord, error) {
	in.Password = sentPassword(in.Password)
	return record(m.s.CreateUser(ctx, in.UserInput))
}

// update changes an account. Someone not an admin reaches it only for
// their own account, and may change only its display name and password;
// a person changing their own password gives their current one.
func (m userMember) update(ctx context.Context, id int64, in userIn, ifMatch int64) (*userRecord, error) {
	p := personFrom(ctx)
	in.Password = sentPassword(in.Password)
	self := p.User != nil && p.User.ID == id
	if !p.can(store.RoleAdmin) || self {
		cur, err := m.s.GetUser(ctx, id)
		if err != nil {
			return nil, err
		}
		if !p.can(store.RoleAdmin) {
			changes := (in.Name != nil && *in.Name != cur.Name) ||
				(in.Role != nil && store.Role(strings.TrimSpace(*in.Role)) != cur.Role) ||
				(in.Disabled != nil && *in.Disabled != cur.Disabled)
			if changes {
				return nil, store.Errorf(store.EFORBIDDEN,
					"you may change only your own display name and password: a sign-in name, a role or disabling an account takes the admin role, and yours is %s", roleName(p.Role))
			}
		}
		if self && in.Password != nil {
			if in.CurrentPassword == nil || *in.CurrentPassword == "" {
				return nil, &store.Error{Code: store.EINVALID, Message: "your current password is needed to change it",
					Fields: map[string]string{"current_password": "is needed to change your password"}, Current: &userRecord{User: *cur}}
			}
			if _, err := m.signIn(ctx, p.Addr, cur.Name, *in.CurrentPassword); err != nil {
				if store.ErrorCode(err) != store.ENOTFOUND {
					return nil, err
				}
				return nil, &store.Error{Code: store.EINVALID, Message: "the current password is wrong",
					Fields: map[string]string{"current_password": "is not your current password"}, Current: &userRecord{User: *cur}}
			}
		}
	}
	u, err := m.s.UpdateUser(ctx, id, in.UserInput, ifMatch, p.Session)
	if se, ok := err.(*store.Error); ok {
		// A 409 compares with the stored account as the pages show it.
		if cur, ok := se.Current.(*store.User); ok {
			out := *se
			out.Current = &userRecord{User: *cur}
			return nil, &out
		}
	}
	return record(u, err)
}

func (m userMember) remove(ctx context.Context, id, ifMatch, version int64) error {
	return m.s.DeleteUser(ctx, id, ifMatch, version)
}

func (m userMember) history(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return m.s.UserHistory(ctx, id, cursor, perPage)
}

func (m userMember) note(ctx context.Context, id int64, text string) (*store.HistoryEntry, error) {
	return m.s.AddUserNote(ctx, id, text)
}

func (userMember) ident(u *userRecord) (int64, int64) { return u.ID, u.Version }
func (userMember) title(u *userRecord) string {
	return "User " + strconv.FormatInt(u.ID, 10) + " · " + u.Name
}
func (userMember) form(cur *userRecord) memberForm[userIn] { return newUserForm(cur) }
func (userMember) inVersion(in *userIn) *int64             { return in.Version }

func (userMember) newJSON() any {
	return fiber.Map{"name": "", "display_name": "", "role": string(store.RoleViewer), "disabled": false, "password": "", "current_password": ""}
}

func (userMember) editJSON(u *userRecord) any { return fiber.Map{"user": u.User} }

func (userMember) conflict(cur *userRecord, in userIn, row bool) *conflictView {
	// Passwords are never shown, not even the one the person typed.
	in.Password, in.CurrentPassword = nil, nil
	return fieldConflict(userResource, userFields, userInput(cur), in, cur.ID, cur.Version, row)
}

// userInput is a stored account as the request that would set its fields.
func userInput(u *userRecord) userIn {
	text := func(s string) *string { return &s }
	disabled := u.Disabled
	return userIn{UserInput: store.UserInput{Name: text(u.Name), DisplayName: text(u.DisplayName),
		Role: text(string(u.Role)), Disabled: &disabled}}
}

// userForm is the account's New and Edit form: its role is a select, and
// its password fields are always empty.
type userForm struct {
	*recordForm[userIn]
}

func newUserForm(u *userRecord) *userForm {
	if u == nil {
		viewer := string(store.RoleViewer)
		return &userForm{newRecordForm(userResource, userFields, userIn{UserInput: store.UserInput{Role: &viewer}}, 0, 0, userMember{}.inVersion)}
	}
	return &userForm{newRecordForm(userResource, userFields, userInput(u), u.ID, u.Version, userMember{}.inVersion)}
}

// prefill starts the first account (protected mode) as an admin: it
// must be one.
func (f *userForm) prefill(c *fiber.Ctx) {
	if f.New && personOf(c).Open {
		admin := string(store.RoleAdmin)
		f.values.Role = &admin
	}
}

// Field is the view of a field of the form.
func (f *userForm) Field(name string) fieldView { return f.shown(f.recordForm.Field(name)) }

// RowField is the view of a field of a List row's inline form.
func (f *userForm) RowField(name string) fieldView { return f.shown(f.recordForm.RowField(name)) }

func (f *userForm) shown(v fieldView) fieldView {
	switch v.Name {
	case "role":
		v.Options = roleOptions(store.RoleAdmin, v.Value)
	case "password", "current_password":
		v.Value = ""
	}
	if v.Name == "password" && f.New {
		v.Label, v.Required = "Password", true
	}
	return v
}

// listUsers is GET /users: the List, its results alone for an htmx swap,
// or JSON ({"users": [...], page...}).
func listUsers(s store.Users) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		paging, err := parsePaging(c)
		if err != nil {
			return nil, err
		}
		if sort := strings.TrimSpace(c.Query("sort")); sort != "" && !validSort(userSorts, store.Sort(sort)) {
			return nil, badRequest("sort must be one of %s", sortNames(userSorts))
		}
		page, err := s.ListUsers(c.UserContext(), store.UserQuery{Q: paging.Q, Page: paging.Page, PerPage: paging.PerPage})
		if err != nil {
			return nil, err
		}
		if page.Users == nil {
			page.Users = []store.User{}
		}
		if id, ok := store.ParseID(strings.TrimSpace(paging.Q)); ok && page.Page <= 1 {
			// A search by an account's number finds it first, as every
			// List's does.
			if u, err := s.GetUser(c.UserContext(), id); err == nil &&
				!slices.ContainsFunc(page.Users, func(x store.User) bool { return x.ID == id }) {
				page.Users = append([]store.User{*u}, page.Users...)
				page.Total++
			}
		}
		rows := make([]userRecord, len(page.Users))
		for i, u := range page.Users {
			rows[i] = userRecord{User: u}
		}
		l := newListView(userResource, userListing, userResource.Path(), paging.Q, map[string]string{}, userSorts[0],
			false, listResult{Rows: rows, N: len(rows), Page: page.Page, PerPage: page.PerPage, Total: page.Total})
		return userResource.listResponse(c, rp, "list", userResource.Plural, l, page.Users), nil
	}
}

// tokenHandlers serve a person's tokens: /users/<id>/tokens (GET the
// list, POST a new one, whose secret is shown once) and
// /users/<id>/tokens/<token id> (DELETE revokes it at once). The rights
// are the account's: its person, or an admin.
type tokenHandlers struct{ s store.Users }

// tokensView is a person's tokens (their page's section, and the list's
// page): the account, and the role a new token may have at most.
type tokensView struct {
	User   *store.User
	Tokens []store.Token
	// Most is the highest role a new token may have: the account's, and
	// no more than the person making it has.
	Most store.Role
	// Made is a token just made, and Secret its secret, shown this once.
	Made   *store.Token
	Secret string
	// Errors are a refused token's messages by field; Name is what was
	// typed.
	Errors map[string]string
	Name   string
	// zoned writes the tokens' times in the person's zone.
	zoned
}

// Roles are the choices of a new token's role.
func (t *tokensView) Roles() []option { return roleOptions(t.Most, string(t.Most)) }

// Path is the tokens' collection path.
func (t *tokensView) Path() string { return userResource.MemberPath(t.User.ID) + "/tokens" }

// TokenPath is one token's path.
func (t *tokensView) TokenPath(id int64) string { return t.Path() + "/" + strconv.FormatInt(id, 10) }

// Tokens is the tokens of the account a page shows: those just listed or
// made, else the record's.
func (v *view) Tokens() *tokensView {
	if t, ok := v.Form.(*tokensView); ok {
		t.zoned = v.zoned
		return t
	}
	u, ok := v.Record.(*userRecord)
	if !ok {
		return nil
	}
	p := v.who
	if p == nil {
		p = &person{}
	}
	return &tokensView{User: &u.User, Tokens: u.Tokens, Most: mostRole(p, &u.User), zoned: v.zoned}
}

// mostRole is the highest role a token of account u made by p may have.
func mostRole(p *person, u *store.User) store.Role {
	if p.User != nil && p.User.ID == u.ID && !p.Role.AtLeast(u.Role) {
		return p.Role
	}
	return u.Role
}

// tokens reads the account of the path and its tokens.
func (t tokenHandlers) tokens(c *fiber.Ctx) (*tokensView, error) {
	id, err := userResource.parseID(c)
	if err != nil {
		return nil, err
	}
	u, err := t.s.GetUser(c.UserContext(), id)
	if err != nil {
		return nil, err
	}
	list, err := t.s.Tokens(c.UserContext(), id)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []store.Token{}
	}
	return &tokensView{User: u, Tokens: list, Most: mostRole(personOf(c), u)}, nil
}

func (t tokenHandlers) page(tv *tokensView, title string) *view {
	return &view{Title: title, Nav: userResource.Plural, Record: &userRecord{User: *tv.User, Tokens: tv.Tokens}, Form: tv}
}

// list is GET /users/<id>/tokens.
func (t tokenHandlers) list(c *fiber.Ctx, rp repr) (*response, error) {
	tv, err := t.tokens(c)
	if err != nil {
		return nil, err
	}
	return &response{Partial: userResource.Partial("tokens"), CacheControl: noStore,
		View: t.page(tv, "Tokens of "+tv.User.Name), JSON: fiber.Map{"tokens": tv.Tokens}}, nil
}

// tokenIn is a new token as a request sends it.
type tokenIn struct{ Name, Role *string }

var tokenFields = fields[tokenIn]{
	{Name: "name", Label: "Token name", Max: store.MaxTokenName, UI: control{Required: true},
		text: func(in *tokenIn) **string { return &in.Name }},
	{Name: "role", Label: "Role", UI: control{Tag: "select"},
		text: func(in *tokenIn) **string { return &in.Role }},
}

// make is POST /users/<id>/tokens: 201 with the token and its secret
// ("token"), shown this once; the page that shows it says so.
func (t tokenHandlers) make(c *fiber.Ctx, rp repr) (*response, error) {
	if personOf(c).Token != nil {
		// A token that leaked could otherwise make others that outlive its
		// revocation: tokens are made by a person signed in.
		return nil, store.Errorf(store.EFORBIDDEN, "tokens are made by a person signed in, not with a token")
	}
	tv, err := t.tokens(c)
	if err != nil {
		return nil, err
	}
	in, err := decodeBody(c, tokenFields)
	if err != nil {
		return nil, err
	}
	name, role := "", tv.Most
	if in.Name != nil {
		name = strings.TrimSpace(*in.Name)
	}
	if in.Role != nil && strings.TrimSpace(*in.Role) != "" {
		role = store.Role(strings.TrimSpace(*in.Role))
	}
	errs := map[string]string{}
	switch {
	case name == "":
		errs["name"] = "is required"
	case len([]rune(name)) > store.MaxTokenName:
		errs["name"] = fmt.Sprintf("must be at most %d characters", store.MaxTokenName)
	}
	switch {
	case !role.Valid():
		errs["role"] = "must be one of " + roleNames()
	case !tv.Most.AtLeast(role):
		errs["role"] = "may be at most " + string(tv.Most) + ", the role of the person it acts for"
	}
	if len(errs) == 0 {
		tok, secret, err := t.s.CreateToken(c.UserContext(), tv.User.ID, name, role)
		if err == nil {
			tv.Made, tv.Secret = &tok, secret
			tv.Tokens = append([]store.Token{tok}, tv.Tokens...)
			return &response{Status: fiber.StatusCreated, Partial: userResource.Partial("token_made"), CacheControl: noStore,
				View:     t.page(tv, "Token "+tok.Name+" made"),
				JSON:     tokenJSON{Token: tok, Secret: secret},
				Location: tv.TokenPath(tok.ID),
				Notice:   successNotice("Token " + tok.Name + " made. Copy it now: it will not be shown again.")}, nil
		}
		fs := invalidFields(err)
		if fs == nil {
			return nil, err
		}
		errs = fs
	}
	tv.Errors, tv.Name = errs, name
	se := &store.Error{Code: store.EINVALID, Message: "the token was not made", Fields: errs}
	return &response{Status: fiber.StatusUnprocessableEntity, Partial: userResource.Partial("tokens"), CacheControl: noStore,
		View: t.page(tv, "Tokens of "+tv.User.Name), Err: se,
		Notice: errorNotice("The token was not made: please correct the marked fields.")}, nil
}

// tokenJSON is a token just made: as listed, and its secret.
type tokenJSON struct {
	store.Token
	Secret string `json:"token"`
}

// roleNames lists the roles for a message.
func roleNames() string {
	names := make([]string, len(store.Roles))
	for i, r := range store.Roles {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// revoke is DELETE /users/<id>/tokens/<token id>: the token stops
// working at once.
func (t tokenHandlers) revoke(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := userResource.parseID(c)
	if err != nil {
		return nil, err
	}
	tid, ok := store.ParseID(c.Params("tid"))
	if !ok {
		return nil, store.Errorf(store.ENOTFOUND, "there is no token %q", c.Params("tid"))
	}
	if err := t.s.RevokeToken(c.UserContext(), id, tid); err != nil {
		return nil, err
	}
	back := userResource.MemberPath(id)
	return &response{Status: fiber.StatusNoContent, Notice: successNotice("Token revoked: it no longer works."),
		Redirect: back, HXLocation: back}, nil
}

// describeTokens adds a person's tokens to the OpenAPI description.
func describeTokens(d *apiDoc, paths obj) {
	tok := d.schemaOf(reflect.TypeFor[store.Token]())
	made := d.schemaOf(reflect.TypeFor[tokenJSON]())
	tokens := userResource.Path() + "/{id}/tokens"
	in := d.inputSchema(describeFields(tokenFields), reflect.TypeFor[store.Token](), true)
	created := answer("made: token is its secret, shown this once", made)
	created["headers"] = obj{"Location": obj{"schema": obj{"type": "string"}}}
	paths[tokens] = obj{
		"get": op("listTokens", "a person's tokens, newest first (their own, or an admin's)", []any{idParam}, nil,
			responses(map[int]obj{200: answer("the tokens", obj{"type": "object", "additionalProperties": false,
				"required": []string{"tokens"}, "properties": obj{"tokens": obj{"type": "array", "items": tok}}})}, false)),
		"post": op("makeToken", "make a token with a role at most the person's", []any{idParam}, in,
			responses(map[int]obj{201: created, 422: answer("invalid values: a message by field", errorSchema(nil))}, true)),
	}
	tid := obj{"name": "tid", "in": "path", "required": true, "description": "the token's id",
		"schema": obj{"type": "string", "pattern": idPattern}}
	paths[tokens+"/{tid}"] = obj{
		"delete": op("revokeToken", "revoke a token: it stops working at once", []any{idParam, tid}, nil,
			responses(map[int]obj{204: obj{"description": "revoked"}, 200: answer("htmx: revoked", nil),
				303: answer("a plain form's revoke", nil)}, true)),
	}
}
