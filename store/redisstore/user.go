package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Accounts are a kind like products: every key of theirs (records,
// indexes, the name claim, sessions and tokens) carries the hash tag {u},
// so a write of an account and everything its rules read change in one
// transaction on a Cluster too. The people of one desk are few.
//
// Keys (with the store's prefix):
//
//	u:{u}:<id>              hash: n name, dn display name, r role, d "1" when disabled, ph password hash, ep epoch, v, ca, ua
//	seq:{u}                 the id counter
//	uu:{u}:name:<name>      the id that holds the sign-in name
//	ux:{u}:created          by created time, score timeScore, member the id
//	ux:{u}:name             by name, member "name NUL inverted-id" (lex)
//	ux:{u}:admins           the enabled admins, member the id (score 0)
//	u:{u}:s:<sha256 hex>    a session: u account id, ep the account's epoch, ca created, ls last use (Unix s); TTL its idle or absolute end
//	u:{u}:t:<sha256 hex>    a token's secret: u account id, i token id
//	u:{u}:<id>:tokens       hash: the account's tokens, token id -> JSON (name, role, created, secret's hash)
//	u:{u}:<id>:used         hash: token id -> last use (Unix s)
//	u:{u}:tseq              the token id counter
//	u:{u}:turns             moved by every write of an account (userTurns)
//
// The epoch is a random value the account's hash holds; a session is good
// while it names the account's epoch. A new password or a disable writes
// a new epoch in the account's own write, which ends every session at
// once (the session that made the change is given the new epoch in that
// same transaction).

// User hash fields.
const (
	ufName     = "n"
	ufDisplay  = "dn"
	ufRole     = "r"
	ufDisabled = "d"
	ufHash     = "ph"
	ufEpoch    = "ep"
	ufVersion  = "v"
	ufCreated  = "ca"
	ufUpdated  = "ua"
)

// userRec is an account as stored: the record and what never leaves the
// store (its password hash and its session epoch).
type userRec struct {
	store.User
	hash  string
	epoch string
}

func encodeUser(u *userRec) []any {
	args := []any{ufName, u.Name, ufDisplay, u.DisplayName, ufRole, string(u.Role), ufHash, u.hash, ufEpoch, u.epoch,
		ufVersion, u.Version, ufCreated, u.CreatedAt.Unix(), ufUpdated, u.UpdatedAt.Unix()}
	if u.Disabled {
		args = append(args, ufDisabled, "1")
	}
	return args
}

func decodeUser(id int64, h map[string]string) (*userRec, bool) {
	if len(h) == 0 {
		return nil, false
	}
	u := &userRec{User: store.User{ID: id, Name: h[ufName], DisplayName: h[ufDisplay], Role: store.Role(h[ufRole]),
		Disabled: h[ufDisabled] == "1"}, hash: h[ufHash], epoch: h[ufEpoch]}
	v, err1 := strconv.ParseInt(h[ufVersion], 10, 64)
	ca, err2 := strconv.ParseInt(h[ufCreated], 10, 64)
	ua, err3 := strconv.ParseInt(h[ufUpdated], 10, 64)
	if errors.Join(err1, err2, err3) != nil || u.Name == "" || !u.Role.Valid() || u.hash == "" || u.epoch == "" || v < 1 {
		return nil, false
	}
	u.Version = v
	u.CreatedAt, u.UpdatedAt = time.Unix(ca, 0).UTC(), time.Unix(ua, 0).UTC()
	return u, true
}

// enabledAdmin reports whether u is an admin who may sign in.
func enabledAdmin(u *userRec) bool { return u != nil && u.Role == store.RoleAdmin && !u.Disabled }

// userIndex names a user index ("created", "name", "admins").
func (s *Store) userIndex(ix string) string { return s.prefix + "ux:{u}:" + ix }

// userNameClaim is the key that holds a sign-in name for one account.
func (s *Store) userNameClaim(name string) string { return s.prefix + "uu:{u}:name:" + name }

func (s *Store) userEntries(u *userRec) []ixEntry {
	out := []ixEntry{
		{s.userIndex("created"), strconv.FormatInt(u.ID, 10), timeScore(u.CreatedAt, u.ID)},
		{s.userIndex("name"), nameMember(u.Name, u.ID), 0},
	}
	if enabledAdmin(u) {
		out = append(out, ixEntry{s.userIndex("admins"), strconv.FormatInt(u.ID, 10), 0})
	}
	return out
}

// exampleHash is the password hash of the shared suite's example
// accounts: one hash, so that two examples of one n are the same record.
var exampleHash = sync.OnceValue(func() string {
	h, _ := store.HashPassword(context.Background(), "example password")
	return h
})

// userKind is how accounts are stored.
var userKind = register(&kind[userRec]{
	// An account's delete ends its sessions and tokens: bringing it back
	// would be a new account, not an undo.
	final:          true,
	name:           store.UserEvents,
	noun:           "user",
	seq:            "seq:{u}",
	slot:           "u",
	versionField:   ufVersion,
	decode:         decodeUser,
	encode:         encodeUser,
	meta:           func(u *userRec) recordMeta { return recordMeta{&u.ID, &u.Version, &u.CreatedAt, &u.UpdatedAt} },
	same:           func(a, b *userRec) bool { return *a == *b },
	entries:        (*Store).userEntries,
	deleteConflict: "someone else changed this user; review the current values",
	fields: []recordField[userRec]{
		{"name", func(u *userRec) any { return u.Name }},
		{"display_name", func(u *userRec) any { return u.DisplayName }},
		{"role", func(u *userRec) any { return string(u.Role) }},
		{"disabled", func(u *userRec) any { return u.Disabled }},
		{"password", func(u *userRec) any { return secret(u.hash) }},
	},
	event: func(u *userRec) []byte {
		b, _ := json.Marshal(struct {
			ID       int64      `json:"id"`
			Version  int64      `json:"version"`
			Role     store.Role `json:"role"`
			Disabled bool       `json:"disabled"`
		}{u.ID, u.Version, u.Role, u.Disabled})
		return b
	},
	indexes: func(s *Store) []indexKey {
		byID := func(m string) (int64, bool) { return store.ParseID(m) }
		return []indexKey{{s.userIndex("created"), byID}, {s.userIndex("name"), memberID}, {s.userIndex("admins"), byID}}
	},
	claims: func(s *Store, u *userRec) []string { return []string{s.userNameClaim(u.Name)} },
	claimTaken: func(u *userRec, _ string, owner int64) error {
		return &store.Error{Code: store.EINVALID, Message: "the user has invalid values",
			Fields: map[string]string{"name": "is already the name of user " + strconv.FormatInt(owner, 10)}}
	},
	example: func(n int) (userRec, map[string]string) {
		name, role, pw := "user"+strconv.Itoa(n), string(store.RoleClerk), "example password"
		u, errs := store.ApplyUser(nil, store.UserInput{Name: &name, Role: &role, Password: &pw})
		return userRec{User: u, hash: exampleHash(), epoch: "e" + strconv.Itoa(n)}, errs
	},
})

// publicUser is the account as the store's callers see it.
func publicUser(u *userRec) *store.User {
	if u == nil {
		return nil
	}
	out := u.User
	return &out
}

// userErr gives the callers an error whose stored record is a
// *store.User (never the stored form with its hash).
func userErr(err error) error {
	var se *store.Error
	if errors.As(err, &se) {
		if u, ok := se.Current.(*userRec); ok {
			se.Current = publicUser(u)
		}
	}
	return err
}

// newEpoch is a fresh session epoch.
func newEpoch() string { return newToken() + newToken() }

// GetUser reads one account.
func (s *Store) GetUser(ctx context.Context, id int64) (*store.User, error) {
	u, err := getRecord(ctx, s, s.rdb, userKind, id)
	if err != nil {
		return nil, wrap(err)
	}
	return publicUser(u), nil
}

// userByName is the stored account named name (folded), nil when none:
// two round trips (the claim, then the record).
func (s *Store) userByName(ctx context.Context, name string) (*userRec, error) {
	name = store.FoldUserName(name)
	if name == "" || len(name) > store.MaxUserName {
		return nil, nil
	}
	owner, err := s.rdb.Get(ctx, s.userNameClaim(name)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	id, ok := store.ParseID(owner)
	if !ok {
		return nil, nil
	}
	u, err := getRecord(ctx, s, s.rdb, userKind, id)
	if store.ErrorCode(err) == store.ENOTFOUND || (err == nil && u.Name != name) {
		return nil, nil
	}
	return u, wrap(err)
}

// UserByName is the account signed in as name (folded to lower case).
func (s *Store) UserByName(ctx context.Context, name string) (*store.User, error) {
	u, err := s.userByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, store.Errorf(store.ENOTFOUND, "no user is named %q", store.FoldUserName(name))
	}
	return publicUser(u), nil
}

// maxUsersScanned bounds the accounts a List with a query reads.
const maxUsersScanned = 10000

// ListUsers answers one page of the accounts by name. Without q it is
// O(log N + page) in the name index; with q it reads the accounts by
// name (at most maxUsersScanned: people are few) and keeps those whose
// name or display name contains q, case aside, and the account whose
// number q is, first.
func (s *Store) ListUsers(ctx context.Context, q store.UserQuery) (store.UserPage, error) {
	page, perPage := max(q.Page, 1), min(max(q.PerPage, 1), store.MaxPerPage)
	if q.PerPage == 0 {
		perPage = store.DefaultPerPage
	}
	out := store.UserPage{Users: []store.User{}, Page: page, PerPage: perPage}
	key := s.userIndex("name")
	needle := strings.ToLower(strings.TrimSpace(q.Q))
	if needle == "" {
		start := int64(page-1) * int64(perPage)
		var n *redis.IntCmd
		var members *redis.StringSliceCmd
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			n = p.ZCard(ctx, key)
			members = p.ZRange(ctx, key, start, start+int64(perPage)-1)
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return out, wrap(err)
		}
		recs, err := readRecords(ctx, s, userKind, membersIDs(members.Val()), func(*userRec) bool { return true })
		if err != nil {
			return out, err
		}
		out.Total = n.Val()
		for i := range recs {
			out.Users = append(out.Users, recs[i].User)
		}
		return out, nil
	}
	members, err := s.rdb.ZRange(ctx, key, 0, maxUsersScanned-1).Result()
	if err != nil {
		return out, wrap(err)
	}
	byID, _ := store.ParseID(needle)
	recs, err := readRecords(ctx, s, userKind, membersIDs(members), func(u *userRec) bool {
		return u.ID == byID || strings.Contains(u.Name, needle) || strings.Contains(strings.ToLower(u.DisplayName), needle)
	})
	if err != nil {
		return out, err
	}
	// A search by an account's number finds it first, as every List's does.
	if i := slices.IndexFunc(recs, func(u userRec) bool { return u.ID == byID }); i > 0 {
		u := recs[i]
		copy(recs[1:i+1], recs[:i])
		recs[0] = u
	}
	out.Total = int64(len(recs))
	for i := (page - 1) * perPage; i < len(recs) && i < page*perPage; i++ {
		out.Users = append(out.Users, recs[i].User)
	}
	return out, nil
}

// membersIDs are the ids a name index's members name, in order.
func membersIDs(members []string) []int64 {
	ids := make([]int64, 0, len(members))
	for _, m := range members {
		if id, ok := memberID(m); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// The rules of accounts, checked inside each write's transaction: the
// first account must be an enabled admin, and no write may leave the
// accounts without one. The write WATCHes the admins index and the
// created index with the record, so of two admins demoting each other at
// once one commits and the other reads again and is refused.

// msgLastAdmin is the error of a write that would leave no enabled admin.
const msgLastAdmin = "is the last enabled admin's: another admin must be made first"

// userTurns is a counter every guarded write of an account moves, in its
// transaction, and every one WATCHes: the rules' reads are stale once
// another account's write commits. The indexes alone are not enough to
// watch on a bare miniredis (the test suites' in-process server): it does
// not count a ZREM that leaves members as a change of the key, so a WATCH
// of the admins index misses an admin leaving it. Redis counts it, and
// the embedded store makes every WATCH see it (store/embedded/watch.go).
func (s *Store) userTurns() string { return s.prefix + "u:{u}:turns" }

// errFirstUser refuses a first account that is not an enabled admin.
func errFirstUser() error {
	return &store.Error{Code: store.EINVALID, Message: "the first user must be an enabled admin",
		Fields: map[string]string{"role": "must be admin: the first user must be an enabled admin"}}
}

// userGuard is the guard of a write of account id. next is the account
// the write would store (nil: a delete), set by the write's fn before the
// guard's check runs; keep, when not "", is a session of the account
// that is given the account's new epoch in the same transaction.
func (s *Store) userGuard(id int64, next **userRec, keep string) guard {
	key := userKind.key(s, id)
	admins, created, turns := s.userIndex("admins"), s.userIndex("created"), s.userTurns()
	idText := strconv.FormatInt(id, 10)
	g := guard{key: key, watch: []string{admins, created, turns}}
	g.reads = func(ctx context.Context, p redis.Pipeliner) func(h map[string]string) error {
		members := p.ZRange(ctx, admins, 0, 1)
		count := p.ZCard(ctx, created)
		return func(h map[string]string) error {
			cur, _ := decodeUser(id, h)
			n := *next
			if cur == nil && n != nil && count.Val() == 0 && !enabledAdmin(n) {
				return errFirstUser()
			}
			if !enabledAdmin(cur) || enabledAdmin(n) {
				return nil
			}
			for _, m := range members.Val() {
				if m != idText {
					return nil // another enabled admin stays
				}
			}
			field := "role"
			if n != nil && n.Role == store.RoleAdmin {
				field = "disabled"
			}
			msg := "the last enabled admin cannot be demoted, disabled or deleted"
			if n == nil {
				return &store.Error{Code: store.EINVALID, Message: msg, Current: cur,
					Fields: map[string]string{"id": "is the last enabled admin: another admin must be made first"}}
			}
			return &store.Error{Code: store.EINVALID, Message: msg, Current: cur, Fields: map[string]string{field: msgLastAdmin}}
		}
	}
	g.also = func(ctx context.Context, p redis.Pipeliner) {
		p.Incr(ctx, turns)
		if n := *next; keep != "" && n != nil {
			// A script in the MULTI, not a WATCH of the session: its own
			// requests renew it meanwhile, and would make the write retry.
			p.Eval(ctx, keepSession, []string{s.sessionKey(keep)}, idText, n.epoch)
		}
	}
	return g
}

// keepSession gives a session of the account its new epoch, if it is
// still there and the account's: KEYS the session, ARGV the account id
// and the epoch.
const keepSession = `
if redis.call('HGET', KEYS[1], 'u') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'ep', ARGV[2])
  return 1
end
return 0
`

// CreateUser makes an account with a fresh id; its password is required.
// The first account must be an enabled admin; a name another account has
// is a field error naming it.
func (s *Store) CreateUser(ctx context.Context, in store.UserInput) (*store.User, error) {
	u, errs := store.ApplyUser(nil, in)
	if errs != nil {
		return nil, userKind.invalid(errs, nil)
	}
	r := userRec{User: u, epoch: newEpoch()}
	// Refused before an id is drawn (and before the password is hashed),
	// so a refused create changes nothing; the write checks both again
	// under its WATCH.
	if err := claimsFree(ctx, s, userKind, &r); err != nil {
		return nil, err
	}
	if !enabledAdmin(&r) {
		some, err := s.HasUsers(ctx)
		if err != nil {
			return nil, err
		}
		if !some {
			return nil, errFirstUser()
		}
	}
	hash, err := store.HashPassword(ctx, *in.Password)
	if err != nil {
		return nil, err
	}
	r.hash = hash
	for range 100 {
		id, err := s.nextID(ctx, userKind.counter)
		if err != nil {
			return nil, wrap(err)
		}
		next := &r
		created, err := createRecordAs(guarded(ctx, s.userGuard(id, &next, "")), s, userKind, id, r)
		if err != errRecordExists {
			return publicUser(created), userErr(err)
		}
		s.log.Warn("the id counter handed out a used id; skipping it", "kind", userKind.noun, "id", id)
	}
	return nil, &store.Error{Code: store.EINTERNAL, Message: "the user id counter keeps handing out used ids; run orders -repair", Err: errRecordExists}
}

// UpdateUser changes account id, with the same version checks as every
// record. A new password or a disable gives the account a new epoch in
// the same write, which ends every session of the person but keep; a
// disable also ends the account's tokens, so enabling it again brings
// none of them back.
func (s *Store) UpdateUser(ctx context.Context, id int64, in store.UserInput, ifMatch int64, keep string) (*store.User, error) {
	var hash string
	if in.Password != nil && store.CheckNewPassword(*in.Password) == "" {
		h, err := store.HashPassword(ctx, *in.Password)
		if err != nil {
			return nil, err
		}
		hash = h
	}
	var next *userRec
	disabling := false // a disable ends the account's tokens with its sessions
	g := s.endingTokens(s.userGuard(id, &next, keep), id, func() bool { return disabling })
	u, err := updateRecord(guarded(ctx, g), s, userKind, id, ifMatch, in.Version,
		func(cur *userRec) (userRec, map[string]string) {
			next, disabling = nil, false
			u, errs := store.ApplyUser(&cur.User, in)
			if errs != nil {
				return userRec{}, errs
			}
			disabling = u.Disabled && !cur.Disabled
			r := userRec{User: u, hash: cur.hash, epoch: cur.epoch}
			if hash != "" {
				r.hash = hash
			}
			if hash != "" || (u.Disabled && !cur.Disabled) {
				r.epoch = newEpoch()
			}
			next = &r
			return r, nil
		})
	if err != nil {
		return nil, userErr(err)
	}
	return publicUser(u), nil
}

// DeleteUser removes account id, its name claim, its sessions (through
// its epoch: they name an account no longer stored) and its tokens. The
// last enabled admin is not deleted.
func (s *Store) DeleteUser(ctx context.Context, id int64, ifMatch, version int64) error {
	var v *int64
	if version != 0 {
		v = &version
	}
	var next *userRec // a delete stores nothing
	g := s.endingTokens(s.userGuard(id, &next, ""), id, func() bool { return true })
	_, err := write(guarded(ctx, g), s, userKind, id, func(cur *userRec) (*userRec, error) {
		return nil, checkVersions(userKind, cur, id, ifMatch, v, true)
	})
	return userErr(err)
}

// endingTokens is g that also ends account id's tokens in its
// transaction when end says so (asked after the write's fn ran): their
// secrets and the list go, under a WATCH of the list, so a token made
// meanwhile is ended too.
func (s *Store) endingTokens(g guard, id int64, end func() bool) guard {
	tokens, used := s.userTokensKey(id), s.userTokensUsedKey(id)
	g.watch = append(g.watch, tokens)
	reads, also := g.reads, g.also
	var held *redis.MapStringStringCmd
	g.reads = func(ctx context.Context, p redis.Pipeliner) func(h map[string]string) error {
		held = p.HGetAll(ctx, tokens)
		return reads(ctx, p)
	}
	g.also = func(ctx context.Context, p redis.Pipeliner) {
		also(ctx, p)
		if !end() {
			return
		}
		for _, raw := range held.Val() {
			if t, ok := decodeToken(raw); ok {
				p.Del(ctx, s.tokenKey(t.SHA))
			}
		}
		p.Del(ctx, tokens, used)
	}
	return g
}

// UserHistory is a page of account id's history, newest first. It never
// holds a password or its hash: a new one is "changed".
func (s *Store) UserHistory(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return historyOf(ctx, s, userKind, id, cursor, perPage)
}

// AddUserNote appends a note to account id's history.
func (s *Store) AddUserNote(ctx context.Context, id int64, note string) (*store.HistoryEntry, error) {
	return noteOn(ctx, s, userKind, id, note)
}

// HasUsers reports whether any account exists: one command, which asks
// two indexes (an account is in the first; an enabled admin, of whom
// there is one while any account exists, in the second), so that an
// index that lost its entries alone does not open the desk.
func (s *Store) HasUsers(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.userIndex("created"), s.userIndex("admins")).Result()
	return n > 0, wrap(err)
}

// CheckPassword answers the enabled account name whose password is
// password, else ENOTFOUND saying "wrong name or password" whatever was
// wrong. It hashes the password whether the name is stored or not, so
// the answer takes as long either way.
func (s *Store) CheckPassword(ctx context.Context, name, password string) (*store.User, error) {
	wrong := store.Errorf(store.ENOTFOUND, "wrong name or password")
	if len(password) > store.MaxPassword {
		// Not hashed: a password that long was never accepted.
		return nil, wrong
	}
	u, err := s.userByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if u == nil {
		if err := store.DummyPasswordCheck(ctx, password); err != nil {
			return nil, err
		}
		return nil, wrong
	}
	ok, err := store.VerifyPassword(ctx, u.hash, password)
	if err != nil {
		return nil, err
	}
	if !ok || u.Disabled {
		return nil, wrong
	}
	return publicUser(u), nil
}

// EnsureAdmin makes the admin account name with password, or makes the
// stored one an enabled admin with that password. An account that is
// already an enabled admin with that password is left as it is (its
// sessions go on); a new password ends them.
func (s *Store) EnsureAdmin(ctx context.Context, name, password string) (*store.User, error) {
	role, enabled := string(store.RoleAdmin), false
	for range 3 {
		u, err := s.userByName(ctx, name)
		if err != nil {
			return nil, err
		}
		if u == nil {
			created, err := s.CreateUser(ctx, store.UserInput{Name: &name, Role: &role, Password: &password})
			if se, ok := err.(*store.Error); ok && se.Code == store.EINVALID && strings.HasPrefix(se.Fields["name"], "is already") {
				continue // made meanwhile: change it
			}
			return created, err
		}
		in := store.UserInput{Role: &role, Disabled: &enabled, Password: &password}
		same, err := store.VerifyPassword(ctx, u.hash, password)
		if err != nil {
			return nil, err
		}
		if same {
			// The password is already this one: it is not written again,
			// so a start of every instance leaves the sessions alone.
			if enabledAdmin(u) {
				return publicUser(u), nil
			}
			in.Password = nil
		}
		updated, err := s.UpdateUser(ctx, u.ID, in, 0, "")
		if store.ErrorCode(err) == store.ENOTFOUND {
			continue // deleted meanwhile: make it
		}
		return updated, err
	}
	return nil, &store.Error{Code: store.EUNAVAILABLE, Message: fmt.Sprintf("the account %q kept changing; try again", name)}
}

// sortTokens orders tokens newest first.
func sortTokens(ts []store.Token) {
	slices.SortFunc(ts, func(a, b store.Token) int {
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
}
