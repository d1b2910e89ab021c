package store

import (
	"context"
	"time"
)

// People: the accounts that sign in to the desk, their sessions and their
// tokens. An account has a sign-in name, a display name, a role and a
// password (kept only as an argon2id hash). Accounts are disabled rather
// than deleted, so the names history keeps still mean someone. While no
// account exists the desk is open to everyone (protected mode); the first
// account must be an admin, and the last enabled admin can be neither
// disabled, demoted nor deleted.

// Role is what a person may do. Each role has the rights of the ones
// before it.
type Role string

// The roles, from fewest rights to most.
const (
	RoleViewer  Role = "viewer"  // reads everything
	RoleClerk   Role = "clerk"   // creates and changes orders and customers, adds notes
	RoleManager Role = "manager" // products, deletes, bulk actions, imports, exports
	RoleAdmin   Role = "admin"   // people and their tokens
)

// Roles are the roles, fewest rights first.
var Roles = []Role{RoleViewer, RoleClerk, RoleManager, RoleAdmin}

// rank is r's place in Roles, -1 for no role.
func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i
		}
	}
	return -1
}

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return r.rank() >= 0 }

// AtLeast reports whether r has every right of min (an unknown role has
// none).
func (r Role) AtLeast(min Role) bool { return r.rank() >= 0 && r.rank() >= min.rank() }

// Account limits.
const (
	MaxUserName    = 64  // a-z 0-9 . _ -
	MaxDisplayName = 120 //
	MinPassword    = 12  // characters
	MaxPassword    = 256 // bytes: argon2id hashes all of it
	MaxTokenName   = 64
	MaxTokens      = 50 // per person
)

// Session lifetimes.
const (
	SessionIdle     = 12 * time.Hour     // unused this long, a session ends
	SessionAbsolute = 7 * 24 * time.Hour // and at the latest this long after sign-in
)

// User is one account. Its password hash never leaves the store.
type User struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	DisplayName string    `json:"display_name"`
	Role        Role      `json:"role"`
	Disabled    bool      `json:"disabled"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// UserInput is a create or a change of an account: nil fields were not
// sent. Password sets a new password; CurrentPassword must come with it
// when a person changes their own (the routes decide when it is needed
// and check it with CheckPassword).
type UserInput struct {
	Name        *string
	DisplayName *string
	Role        *string
	Disabled    *bool
	Password    *string
	Version     *int64
}

// UserQuery asks for one page of the accounts, by name.
type UserQuery struct {
	Page, PerPage int
	// Q keeps accounts whose name or display name contains it (folded).
	Q string
}

// UserPage is one page of accounts.
type UserPage struct {
	Users   []User `json:"users"`
	Page    int    `json:"page"`
	PerPage int    `json:"per_page"`
	Total   int64  `json:"total"`
}

// Token is a person's token for programs, as listed: the secret itself is
// shown once, when it is made, and stored only as its SHA-256.
type Token struct {
	ID        int64      `json:"id"`
	UserID    int64      `json:"user_id"`
	Name      string     `json:"name"`
	Role      Role       `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	LastUsed  *time.Time `json:"last_used"`
}

// Session is a signed-in person's session as the store keeps it.
type Session struct {
	UserID    int64
	CreatedAt time.Time
	LastSeen  time.Time
}

// Users are the accounts, and how people prove who they are.
type Users interface {
	GetUser(ctx context.Context, id int64) (*User, error)
	// UserByName is the account signed in as name (ENOTFOUND when none).
	UserByName(ctx context.Context, name string) (*User, error)
	ListUsers(ctx context.Context, q UserQuery) (UserPage, error)
	// CreateUser makes an account; its password is required. The first
	// account must be an admin.
	CreateUser(ctx context.Context, in UserInput) (*User, error)
	// UpdateUser changes an account. A new password, or disabling it,
	// ends every session of the person but keep (the session that made
	// the change; "" for none).
	UpdateUser(ctx context.Context, id int64, in UserInput, ifMatch int64, keep string) (*User, error)
	DeleteUser(ctx context.Context, id int64, ifMatch, version int64) error
	UserHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddUserNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)

	// HasUsers reports whether any account exists: while none does the
	// desk is open (protected mode).
	HasUsers(ctx context.Context) (bool, error)
	// CheckPassword answers the enabled account name whose password is
	// password, else ENOTFOUND (whichever was wrong), taking as long
	// either way.
	CheckPassword(ctx context.Context, name, password string) (*User, error)
	// EnsureAdmin makes the admin account name with password, or makes an
	// existing one an enabled admin with that password (a container's
	// ORDERS_ADMIN at start).
	EnsureAdmin(ctx context.Context, name, password string) (*User, error)

	// StartSession begins a session for account id: the secret for the
	// cookie (256 random bits, kept only hashed).
	StartSession(ctx context.Context, id int64) (secret string, err error)
	// SessionUser is the account of the session secret, renewing its idle
	// expiry; ENOTFOUND when the session is unknown, expired, ended, or its
	// account is disabled or gone.
	SessionUser(ctx context.Context, secret string) (*User, error)
	// EndSession ends the session secret (signing out).
	EndSession(ctx context.Context, secret string) error

	// CreateToken makes a token for account id with role (at most the
	// account's): the token as listed and its secret, shown once.
	CreateToken(ctx context.Context, id int64, name string, role Role) (Token, string, error)
	// Tokens lists account id's tokens, newest first.
	Tokens(ctx context.Context, id int64) ([]Token, error)
	// RevokeToken ends account id's token tokenID at once.
	RevokeToken(ctx context.Context, id, tokenID int64) error
	// TokenUser is the account and token of a token secret, recording its
	// use; ENOTFOUND when revoked, unknown, or its account is disabled.
	// The role a request with it has is the lower of the two.
	TokenUser(ctx context.Context, secret string) (*User, *Token, error)
}
