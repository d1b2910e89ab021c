package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// People: the accounts that sign in to the desk, their sessions and their
// tokens. An account has a sign-in name, a display name, a role and a
// password (kept only as an argon2id hash). Accounts are disabled rather
// than deleted, so the names history keeps still mean someone. While no
// account exists the desk is open to everyone (protected mode); the first
// account must be an admin, and the last enabled admin can be neither
// disabled, demoted nor deleted.

// UserEvents names the accounts' event feed (Service.Feed).
const UserEvents = "u"

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

// Sign-in names are folded to lower case: "Alice" signs in as "alice",
// and two accounts never differ by case alone.

// msgUserName says what a sign-in name may hold.
const msgUserName = "must be 1 to 64 of a-z, 0-9, dot, underscore and hyphen"

// FoldUserName is the stored form of a sign-in name as typed: spaces
// around it trimmed, A-Z folded to a-z. Only ASCII letters are folded
// (Unicode folding would make the Kelvin sign a "k"), and it does not
// check the name.
func FoldUserName(raw string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, strings.TrimSpace(raw))
}

// checkUserName folds and checks a sign-in name.
func checkUserName(raw string) (string, string) {
	v := FoldUserName(raw)
	if v == "" {
		return "", "is required"
	}
	if len(v) > MaxUserName {
		return "", msgUserName
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", msgUserName
		}
	}
	return v, ""
}

// CheckNewPassword is what is wrong with a new password ("" when it is
// good): at least MinPassword characters, at most MaxPassword bytes,
// valid UTF-8 without control characters, and more than white space and
// invisible characters. It is kept as typed, never trimmed.
func CheckNewPassword(pw string) string {
	switch {
	case !utf8.ValidString(pw):
		return "must be valid UTF-8 text"
	case utf8.RuneCountInString(pw) < MinPassword:
		return "must be at least " + strconv.Itoa(MinPassword) + " characters"
	case len(pw) > MaxPassword:
		return "must be at most " + strconv.Itoa(MaxPassword) + " bytes"
	case hasControl(pw, false):
		return "must not contain control characters"
	case blank(pw):
		return "must hold more than spaces and invisible characters"
	}
	return ""
}

// blank reports whether s holds nothing but white space and invisible
// characters: a password of twelve spaces is no secret.
func blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !invisible(r) {
			return false
		}
	}
	return true
}

// ApplyUser validates in against the stored account cur (nil on create)
// and returns the resulting account, or the field errors. A new
// password is checked here and hashed by the store (it is not part of
// User). The display name defaults to the sign-in name. Name, role and
// password are required on a create.
func ApplyUser(cur *User, in UserInput) (User, map[string]string) {
	errs := map[string]string{}
	var u User
	if cur != nil {
		u = *cur
	}
	switch {
	case in.Name != nil:
		if v, msg := checkUserName(*in.Name); msg != "" {
			errs["name"] = msg
		} else {
			u.Name = v
		}
	case cur == nil:
		errs["name"] = "is required"
	}
	if in.DisplayName != nil {
		if v, msg := CheckText(*in.DisplayName, MaxDisplayName, false, false); msg != "" {
			errs["display_name"] = msg
		} else {
			u.DisplayName = v
		}
	}
	if u.DisplayName == "" && errs["display_name"] == "" {
		u.DisplayName = u.Name
	}
	switch {
	case in.Role != nil:
		if r := Role(strings.TrimSpace(*in.Role)); r.Valid() {
			u.Role = r
		} else {
			errs["role"] = "must be one of viewer, clerk, manager, admin"
		}
	case cur == nil:
		errs["role"] = "is required"
	}
	if in.Disabled != nil {
		u.Disabled = *in.Disabled
	}
	switch {
	case in.Password != nil:
		if msg := CheckNewPassword(*in.Password); msg != "" {
			errs["password"] = msg
		}
	case cur == nil:
		errs["password"] = "is required"
	}
	if len(errs) > 0 {
		return User{}, errs
	}
	return u, nil
}

// Passwords are kept as argon2id hashes in the PHC string format,
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash> (base64
// without padding), so the parameters can change and old hashes still
// check. The parameters are the OWASP recommendation for argon2id: 19 MiB
// of memory, 2 passes, 1 lane (about 30 ms on one core of the machine
// this was written on). At most hashSlots hashes run at once, which bounds
// their memory whatever the number of sign-ins.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
	hashSlots    = 4
	// A stored hash asking for more than this (damaged, or from a
	// hostile copy) is not checked.
	argonMaxMemory = 256 * 1024
	argonMaxTime   = 10
)

// hashing bounds the hashes running at once.
var hashing = make(chan struct{}, hashSlots)

// hashSlot waits for a hash slot (or ctx's end); release gives it back.
func hashSlot(ctx context.Context) (release func(), err error) {
	select {
	case hashing <- struct{}{}:
		return func() { <-hashing }, nil
	case <-ctx.Done():
		return nil, &Error{Code: EUNAVAILABLE, Message: "too many sign-ins at once; try again in a moment", Err: ctx.Err()}
	}
}

// HashPassword returns the argon2id hash of pw, with a fresh random salt,
// in the PHC string format.
func HashPassword(ctx context.Context, pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	release, err := hashSlot(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return encodeHash(argonMemory, argonTime, argonThreads, salt, key), nil
}

func encodeHash(m, t uint32, p uint8, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, m, t, p, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// parsedHash is an argon2id hash read from its PHC string.
type parsedHash struct {
	m, t      uint32
	p         uint8
	salt, key []byte
}

// parseHash reads a PHC string; ok is false for anything but an argon2id
// hash of this version with parameters within bounds.
func parseHash(encoded string) (h parsedHash, ok bool) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return h, false
	}
	var p uint32
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &h.m, &h.t, &p); n != 3 || err != nil {
		return h, false
	}
	if h.m < 8 || h.m > argonMaxMemory || h.t < 1 || h.t > argonMaxTime || p < 1 || p > 16 {
		return h, false
	}
	h.p = uint8(p)
	var err1, err2 error
	h.salt, err1 = base64.RawStdEncoding.DecodeString(parts[4])
	h.key, err2 = base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(h.salt) < 8 || len(h.key) < 16 || len(h.key) > 64 {
		return h, false
	}
	return h, true
}

// VerifyPassword reports whether pw is the password encoded hashes (a
// PHC string HashPassword made), comparing in constant time. A hash that
// cannot be read matches nothing, but takes as long to refuse.
func VerifyPassword(ctx context.Context, encoded, pw string) (bool, error) {
	h, ok := parseHash(encoded)
	if !ok {
		h = dummyHash()
	}
	release, err := hashSlot(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	key := argon2.IDKey([]byte(pw), h.salt, h.t, h.m, h.p, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(key, h.key) == 1 && ok, nil
}

// dummyHash is a hash of no one's password with the current parameters:
// a check against it costs what a real one does, so a name that is not
// stored takes as long to refuse as a wrong password.
var dummyHash = sync.OnceValue(func() parsedHash {
	salt := make([]byte, argonSaltLen)
	_, _ = rand.Read(salt)
	key := make([]byte, argonKeyLen)
	_, _ = rand.Read(key)
	return parsedHash{m: argonMemory, t: argonTime, p: argonThreads, salt: salt, key: key}
})

// DummyPasswordCheck costs what a VerifyPassword does and matches
// nothing: for a sign-in whose name is not stored.
func DummyPasswordCheck(ctx context.Context, pw string) error {
	_, err := VerifyPassword(ctx, "", pw)
	return err
}

type actorKey struct{}

// Actor is who changes records, and how ("web" or "api").
type Actor struct{ Name, Via string }

// WithActor returns ctx saying who changes records through it, and how:
// via "web" (the pages) or "api" (JSON). History entries carry both; a
// change without them is "anonymous" via "api".
func WithActor(ctx context.Context, name, via string) context.Context {
	return context.WithValue(ctx, actorKey{}, Actor{name, via})
}

// ActorOf is ctx's actor (WithActor), "anonymous" via "api" when unset.
func ActorOf(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	if a.Name == "" {
		a.Name = "anonymous"
	}
	if a.Via == "" {
		a.Via = "api"
	}
	return a
}
