package routes

// Who a request acts as (its person, set by authenticate) and what each
// role may do to each resource.
//
// Rights: what each role may do to each resource. Every resource declares
// the least role each action takes (its Rights); registerResource checks
// them before any handler runs, so a request without the right changes
// nothing and is answered 403 in the representation it asked for. The
// templates ask the same table through the view's Can, so a page shows
// only the controls its person may use.

import (
	"context"
	"reflect"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// action is what a request does to a resource.
type action int

// The actions the rights name. The New form counts as a create and the
// Edit form as an update: a form the person may not send is not shown.
const (
	actRead action = iota
	actCreate
	actUpdate
	actDelete
	actNote
)

// actions are every action, in the rights table's order.
var actions = []action{actRead, actCreate, actUpdate, actDelete, actNote}

// String is the action as the rights table names it.
func (a action) String() string {
	return [...]string{"read", "create", "update", "delete", "note"}[a]
}

// verb is the action as a sentence says it: "you may not <verb> orders".
func (a action) verb() string {
	return [...]string{"read", "create", "change", "delete", "add notes to"}[a]
}

// rights is the least role each action on a resource takes.
type rights struct {
	Read, Create, Update, Delete, Note store.Role
}

// least is the least role action a takes.
func (r rights) least(a action) store.Role {
	return [...]store.Role{r.Read, r.Create, r.Update, r.Delete, r.Note}[a]
}

// recordRights are the rights of orders and customers: everyone reads,
// clerks create, change and add notes, managers delete.
var recordRights = rights{Read: store.RoleViewer, Create: store.RoleClerk, Update: store.RoleClerk,
	Delete: store.RoleManager, Note: store.RoleClerk}

// permits reports whether p may take action a on the resource, on member
// id (0: the collection). A resource with Own lets a person take those
// actions on their own record whatever their role.
func (r *resource) permits(p *person, a action, id int64) bool {
	if p.can(r.Rights.least(a)) {
		return true
	}
	return r.Own != nil && id != 0 && p.User != nil && p.User.ID == id && r.Own(a)
}

// forbidden is the 403 of p asking for action a on the resource: it says
// which role the action takes.
func (r *resource) forbidden(p *person, a action) error {
	return store.Errorf(store.EFORBIDDEN, "you may not %s %s: that takes the %s role, and yours is %s",
		a.verb(), r.Plural, r.Rights.least(a), roleName(p.Role))
}

// roleName is a role as a message says it ("none" for none).
func roleName(r store.Role) string {
	if !r.Valid() {
		return "none"
	}
	return string(r)
}

// allow checks that c's person may take action a on the resource, reading
// the member's id from the path when there is one: nil, or the 403.
func (r *resource) allow(c *fiber.Ctx, a action) error {
	var id int64
	if raw := c.Params("id"); raw != "" {
		id, _ = store.ParseID(raw)
	}
	p := personOf(c)
	if r.permits(p, a, id) {
		return nil
	}
	return r.forbidden(p, a)
}

// roleMark is a role in an HTML answer's ETag: its first letter ("n" for
// none).
func roleMark(r store.Role) string {
	if !r.Valid() {
		return "n"
	}
	return string(r)[:1]
}

// whoMark is the part of an HTML answer's ETag that names whom it was
// drawn for: "r" and the role's mark, then the account's id and version
// ("rc.7.2": the header names the person, and a change of the account, its
// display name or role, draws it anew); nothing in protected mode (every
// right, and the open desk's banner).
func whoMark(p *person) string {
	if p.Open {
		return ""
	}
	m := "r" + roleMark(p.Role)
	if p.User != nil {
		m += "." + strconv.FormatInt(p.User.ID, 10) + "." + strconv.FormatInt(p.User.Version, 10)
	}
	return m
}

// isWhoMark reports whether part of a tag is a mark whoMark gives.
func isWhoMark(part string) bool {
	role, _, _ := strings.Cut(part, ".")
	if role == "rn" {
		return true
	}
	for _, r := range store.Roles {
		if role == "r"+roleMark(r) {
			return true
		}
	}
	return false
}

// tagsDrawnFor reports whether a tag of the If-None-Match header inm was
// drawn for whom mark names (whoMark) in the zone zmark names (zoneMark):
// those marks among its parts, and no other, whatever coding follows them
// ("o7v3-page-h12-rc.7.2-z1a2b3c4d-gzip").
func tagsDrawnFor(inm, mark, zmark string) bool {
	for _, t := range strings.Split(inm, ",") {
		t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), `"`)
		got, gotZone := "", ""
		for _, part := range strings.Split(t, "-")[1:] {
			switch {
			case isWhoMark(part):
				got = part
			case isZoneMark(part):
				gotZone = part
			}
		}
		if got == mark && gotZone == zmark {
			return true
		}
	}
	return false
}

// need is a middleware that lets through only requests whose person may
// take action a on the resource (its live-event stream).
func (r *resource) need(a action) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := r.allow(c, a); err != nil {
			return err
		}
		return c.Next()
	}
}

// can is what a person may do to the resource a page shows: the
// templates' {{if .Can.Update}}.
type can struct {
	Read, Create, Update, Delete, Note bool
}

// canOf is what p may do to r, on member id (0: the collection).
func canOf(r *resource, p *person, id int64) can {
	if r == nil {
		return can{}
	}
	return can{Read: r.permits(p, actRead, id), Create: r.permits(p, actCreate, id),
		Update: r.permits(p, actUpdate, id), Delete: r.permits(p, actDelete, id),
		Note: r.permits(p, actNote, id)}
}

// Can is what the person the page is for may do to its resource, and to
// its record when it shows one.
func (v *view) Can() can {
	return canOf(v.R, v.whoOrNone(), recordID(v.Record))
}

// whoOrNone is the person the page is for, or no one (no rights but
// what everyone has).
func (v *view) whoOrNone() *person {
	if v.who == nil {
		return &person{}
	}
	return v.who
}

// CanCreate reports whether the page's person may create members of the
// resource whose Plural is plural (the navigation's New buttons).
func (v *view) CanCreate(plural string) bool {
	for _, r := range resources {
		if r.Plural == plural {
			return v.who != nil && r.permits(v.who, actCreate, 0)
		}
	}
	return false
}

// Nav is the site's navigation as the page's person sees it: the entries
// of what they may read, and the New buttons of what they may create.
func (v *view) NavEntries() []navEntry {
	p := v.whoOrNone()
	var out []navEntry
	for _, e := range navEntries() {
		a := actRead
		if e.View == "new" {
			a = actCreate
		}
		if e.r.permits(p, a, 0) {
			out = append(out, e)
		}
	}
	return out
}

// Live reports whether the page follows its resource's live events: the
// resource has a feed and the person may read the whole collection.
func (v *view) Live() bool {
	return v.R != nil && v.R.Feed != "" && v.who != nil && v.R.permits(v.who, actRead, 0)
}

// IsAdmin reports whether the page's person has every right.
func (v *view) IsAdmin() bool { return v.who != nil && v.who.can(store.RoleAdmin) }

// IsSelf reports whether account id is the page's person's own.
func (v *view) IsSelf(id int64) bool {
	return v.who != nil && v.who.User != nil && v.who.User.ID == id
}

// recordID is the ID of a record a view shows (0: none).
func recordID(rec any) int64 {
	v := reflect.ValueOf(rec)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	if f := v.FieldByName("ID"); f.IsValid() && f.CanInt() {
		return f.Int()
	}
	return 0
}

// person is who a request acts as: a signed-in account, a program with one
// of its tokens, or, while no account exists (protected mode), anonymous
// with every right.
type person struct {
	// User is the account; nil for anonymous.
	User *store.User
	// Name is what history records as the actor: the account's name, or
	// "anonymous".
	Name string
	// Role is what the request may do: the account's role, or the lower of
	// it and its token's.
	Role store.Role
	// Token is the token the request came with; nil for none.
	Token *store.Token
	// Session is the session secret of a signed-in browser; "" for none.
	Session string
	// Open is true in protected mode (no account exists).
	Open bool
	// Addr is the client's address (behind a trusted proxy, the one it
	// names): a wrong current password counts toward its sign-in limit.
	Addr string
}

// personLocal holds the request's *person, set by the authentication
// middleware before any route runs.
const personLocal = "person"

// personOf is who c acts as. A request the authentication middleware did
// not see (none should reach a route) acts as no one: a viewer without a
// name, which may do nothing but read.
func personOf(c *fiber.Ctx) *person {
	if p, ok := c.Locals(personLocal).(*person); ok && p != nil {
		return p
	}
	return &person{Name: "anonymous", Role: store.RoleViewer}
}

// via is how c's changes are recorded: "token:<name>" for a token, else
// "api" for JSON and "web" for pages and fragments.
func (p *person) via(json bool) string {
	switch {
	case p.Token != nil:
		return "token:" + p.Token.Name
	case json:
		return "api"
	}
	return "web"
}

// can reports whether p has every right of min.
func (p *person) can(min store.Role) bool { return p.Role.AtLeast(min) }

// personKey holds the request's person in its context: what a store call
// of a resource (an account's change) needs to know of who asks.
type personKey struct{}

// withPerson is ctx carrying p.
func withPerson(ctx context.Context, p *person) context.Context {
	return context.WithValue(ctx, personKey{}, p)
}

// personFrom is the person ctx carries (withPerson): no one, who may only
// read, when none.
func personFrom(ctx context.Context) *person {
	if p, ok := ctx.Value(personKey{}).(*person); ok && p != nil {
		return p
	}
	return &person{Name: "anonymous", Role: store.RoleViewer}
}
