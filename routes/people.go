package routes

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

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
