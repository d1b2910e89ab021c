package redisstore

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Sessions and tokens: a secret is 256 random bits, given to the person
// once (base64url); Redis keeps only its SHA-256, as the name of the key
// that says whose it is. Both live in the accounts' slot ({u}), so a
// write of an account can end them in its own transaction.

// secretBytes is the length of a session's or a token's secret.
const secretBytes = 32

// tokenPrefix starts every token, so a leaked one is recognised (and
// told from a session's secret).
const tokenPrefix = "orders_"

// newSecret is a fresh secret, base64url without padding (43 characters).
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := crand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// secretHash is the SHA-256 of a well-formed secret, hex; ok is false for
// anything that is not one (refused without asking Redis).
func secretHash(secret string) (string, bool) {
	if len(secret) != base64.RawURLEncoding.EncodedLen(secretBytes) {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret); err != nil {
		return "", false
	}
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:]), true
}

// sessionKey is the key of the session whose secret is secret ("" for a
// secret that is not one).
func (s *Store) sessionKey(secret string) string {
	h, ok := secretHash(secret)
	if !ok {
		return s.prefix + "u:{u}:s:-"
	}
	return s.prefix + "u:{u}:s:" + h
}

// Session hash fields.
const (
	sfUser    = "u"
	sfEpoch   = "ep"
	sfCreated = "ca"
	sfSeen    = "ls" // last use (Unix s)
)

// sessionTTL is how long a session created at created lives from now
// unused: its idle time, cut at its absolute end (0 or less: ended).
func (s *Store) sessionTTL(created time.Time) time.Duration {
	return min(store.SessionIdle, created.Add(store.SessionAbsolute).Sub(s.now()))
}

// StartSession begins a session for the enabled account id: the secret for
// the cookie. The session names the account's epoch: a new password or a
// disable ends it.
func (s *Store) StartSession(ctx context.Context, id int64) (string, error) {
	u, err := getRecord(ctx, s, s.rdb, userKind, id)
	if err != nil {
		return "", wrap(err)
	}
	if u.Disabled {
		return "", store.Errorf(store.EFORBIDDEN, "user %d is disabled", id)
	}
	secret, err := newSecret()
	if err != nil {
		return "", err
	}
	now := s.now()
	key := s.sessionKey(secret)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, sfUser, id, sfEpoch, u.epoch, sfCreated, now.Unix(), sfSeen, now.Unix())
		p.PExpire(ctx, key, s.sessionTTL(now))
		return nil
	})
	if err != nil {
		return "", wrap(err)
	}
	return secret, nil
}

// noSession is SessionUser's answer for any session that does not hold.
func noSession() error { return store.Errorf(store.ENOTFOUND, "no such session") }

// SessionUser is the account of session secret, renewing its idle expiry
// (never past its absolute end; at most once a minute): two round trips. ENOTFOUND when the
// session is unknown, expired or ended, or its account is disabled, gone,
// or has a new epoch (a new password, a disable). The session's times
// are checked by the store's clock, and its key's TTL ends it in Redis
// too.
func (s *Store) SessionUser(ctx context.Context, secret string) (*store.User, error) {
	if _, ok := secretHash(secret); !ok {
		return nil, noSession()
	}
	key := s.sessionKey(secret)
	h, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	id, ok := store.ParseID(h[sfUser])
	ca, err1 := strconv.ParseInt(h[sfCreated], 10, 64)
	seen, err2 := strconv.ParseInt(h[sfSeen], 10, 64)
	if err2 != nil {
		seen, err2 = ca, nil
	}
	if !ok || err1 != nil || h[sfEpoch] == "" {
		if len(h) > 0 {
			s.rdb.Del(ctx, key) // not a session: a leftover
		}
		return nil, noSession()
	}
	now := s.now()
	ttl := s.sessionTTL(time.Unix(ca, 0))
	if ttl <= 0 || now.Sub(time.Unix(seen, 0)) > store.SessionIdle {
		s.rdb.Del(ctx, key)
		return nil, noSession()
	}
	var uc *redis.MapStringStringCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		uc = p.HGetAll(ctx, userKind.key(s, id))
		if now.Sub(time.Unix(seen, 0)) >= sessionRenewEvery {
			// Renewed with the read (a session refused below is deleted);
			// a session ended meanwhile stays ended.
			p.Eval(ctx, renewSession, []string{key}, now.Unix(), ttl.Milliseconds())
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	u, ok := decodeUser(id, uc.Val())
	if !ok || u.Disabled {
		s.rdb.Del(ctx, key)
		return nil, noSession()
	}
	if u.epoch != h[sfEpoch] {
		// Ended by a new password, or given the new epoch since it was
		// read (the session that made the change): read again. Never
		// deleted on a read that may be stale; its TTL ends it.
		ep, err := s.rdb.HGet(ctx, key, sfEpoch).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap(err)
		}
		if ep != u.epoch {
			return nil, noSession()
		}
	}
	return publicUser(u), nil
}

// sessionRenewEvery is how often a session's use is written at most: a
// request is not a write (the embedded store syncs every write to disk),
// and a session ends between 12 h less this and 12 h after its last use.
const sessionRenewEvery = time.Minute

// renewSession records a session's use and sets its TTL, if it is still
// there: KEYS the session, ARGV the time (Unix s) and the TTL (ms).
const renewSession = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'ls', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`

// EndSession ends session secret (signing out); ending one that is not
// there is no error.
func (s *Store) EndSession(ctx context.Context, secret string) error {
	if _, ok := secretHash(secret); !ok {
		return nil
	}
	return wrap(s.rdb.Del(ctx, s.sessionKey(secret)).Err())
}

// Tokens.

// tokenKey is the key of the token whose secret hashes to sha.
func (s *Store) tokenKey(sha string) string { return s.prefix + "u:{u}:t:" + sha }

// userTokensKey is account id's tokens; userTokensUsedKey their last uses.
func (s *Store) userTokensKey(id int64) string {
	return userKind.key(s, id) + ":tokens"
}

func (s *Store) userTokensUsedKey(id int64) string {
	return userKind.key(s, id) + ":used"
}

func (s *Store) tokenSeqKey() string { return s.prefix + "u:{u}:tseq" }

// storedToken is a token as its account's tokens hash holds it.
type storedToken struct {
	Name    string     `json:"n"`
	Role    store.Role `json:"r"`
	Created int64      `json:"ca"`
	SHA     string     `json:"h"` // the secret's SHA-256
}

func decodeToken(raw string) (storedToken, bool) {
	var t storedToken
	if json.Unmarshal([]byte(raw), &t) != nil || t.SHA == "" || t.Name == "" {
		return t, false
	}
	return t, true
}

// listed is the token as Tokens lists it.
func (t storedToken) listed(uid, tid int64, used string) store.Token {
	out := store.Token{ID: tid, UserID: uid, Name: t.Name, Role: t.Role, CreatedAt: time.Unix(t.Created, 0).UTC()}
	if u, err := strconv.ParseInt(used, 10, 64); err == nil {
		at := time.Unix(u, 0).UTC()
		out.LastUsed = &at
	}
	return out
}

// tokenTries bounds the attempts of a token write that other writes keep
// getting in the way of.
const tokenTries = 50

// CreateToken makes a token for the enabled account id with role (at
// most the account's): the token as listed and its secret, shown once.
// Its name (1 to MaxTokenName characters) is the account's only token of
// that name; an account has at most MaxTokens.
func (s *Store) CreateToken(ctx context.Context, id int64, name string, role store.Role) (store.Token, string, error) {
	name, msg := store.CheckText(name, store.MaxTokenName, true, false)
	errs := map[string]string{}
	if msg != "" {
		errs["name"] = msg
	}
	if !role.Valid() {
		errs["role"] = "must be one of viewer, clerk, manager, admin"
	}
	if len(errs) > 0 {
		return store.Token{}, "", &store.Error{Code: store.EINVALID, Message: "the token has invalid values", Fields: errs}
	}
	raw, err := newSecret()
	if err != nil {
		return store.Token{}, "", err
	}
	secret := tokenPrefix + raw
	sha, _ := secretHash(raw)
	ukey, tokens := userKind.key(s, id), s.userTokensKey(id)
	now := s.now().UTC().Truncate(time.Second)
	for range tokenTries {
		tid, err := s.rdb.Incr(ctx, s.tokenSeqKey()).Result()
		if err != nil {
			return store.Token{}, "", wrap(err)
		}
		t := storedToken{Name: name, Role: role, Created: now.Unix(), SHA: sha}
		err = s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var uc *redis.MapStringStringCmd
			var held *redis.MapStringStringCmd
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				uc, held = p.HGetAll(ctx, ukey), p.HGetAll(ctx, tokens)
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			u, ok := decodeUser(id, uc.Val())
			if !ok {
				return userKind.notFound(id)
			}
			if u.Disabled {
				return store.Errorf(store.EINVALID, "user %d is disabled: a disabled user has no tokens", id)
			}
			if !u.Role.AtLeast(role) {
				return &store.Error{Code: store.EINVALID, Message: "the token has invalid values",
					Fields: map[string]string{"role": "must be at most the user's role (" + string(u.Role) + ")"}}
			}
			if _, taken := held.Val()[strconv.FormatInt(tid, 10)]; taken {
				return errRecordExists // a counter that went back: another id
			}
			if len(held.Val()) >= store.MaxTokens {
				return &store.Error{Code: store.EINVALID, Message: "the token has invalid values",
					Fields: map[string]string{"name": "is one more than the " + strconv.Itoa(store.MaxTokens) + " tokens a user may have; revoke one first"}}
			}
			for _, raw := range held.Val() {
				if o, ok := decodeToken(raw); ok && strings.EqualFold(o.Name, name) {
					return &store.Error{Code: store.EINVALID, Message: "the token has invalid values",
						Fields: map[string]string{"name": "is already the name of one of this user's tokens"}}
				}
			}
			b, _ := json.Marshal(t)
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, tokens, strconv.FormatInt(tid, 10), b)
				p.HSet(ctx, s.tokenKey(sha), "u", id, "i", tid)
				return nil
			})
			return err
		}, ukey, tokens)
		if errors.Is(err, redis.TxFailedErr) || err == errRecordExists {
			continue
		}
		if err != nil {
			return store.Token{}, "", wrap(err)
		}
		return t.listed(id, tid, ""), secret, nil
	}
	return store.Token{}, "", &store.Error{Code: store.EUNAVAILABLE, Message: "too many changes to this user's tokens at once; try again in a moment"}
}

// Tokens lists account id's tokens, newest first: one round trip.
func (s *Store) Tokens(ctx context.Context, id int64) ([]store.Token, error) {
	var uc *redis.IntCmd
	var held, used *redis.MapStringStringCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		uc = p.Exists(ctx, userKind.key(s, id))
		held, used = p.HGetAll(ctx, s.userTokensKey(id)), p.HGetAll(ctx, s.userTokensUsedKey(id))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	if uc.Val() == 0 {
		return nil, userKind.notFound(id)
	}
	out := []store.Token{}
	for f, raw := range held.Val() {
		tid, ok1 := store.ParseID(f)
		t, ok2 := decodeToken(raw)
		if ok1 && ok2 {
			out = append(out, t.listed(id, tid, used.Val()[f]))
		}
	}
	sortTokens(out)
	return out, nil
}

// RevokeToken ends account id's token tokenID at once: its secret no
// longer names anyone.
func (s *Store) RevokeToken(ctx context.Context, id, tokenID int64) error {
	tokens, f := s.userTokensKey(id), strconv.FormatInt(tokenID, 10)
	raw, err := s.rdb.HGet(ctx, tokens, f).Result()
	if errors.Is(err, redis.Nil) {
		return store.Errorf(store.ENOTFOUND, "user %d has no token %d", id, tokenID)
	}
	if err != nil {
		return wrap(err)
	}
	t, _ := decodeToken(raw)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if t.SHA != "" {
			p.Del(ctx, s.tokenKey(t.SHA))
		}
		p.HDel(ctx, tokens, f)
		p.HDel(ctx, s.userTokensUsedKey(id), f)
		return nil
	})
	return wrap(err)
}

// tokenUseEvery is how often a token's last use is written at most.
const tokenUseEvery = time.Minute

// noToken is TokenUser's answer for any token that does not hold.
func noToken() error { return store.Errorf(store.ENOTFOUND, "no such token") }

// TokenUser is the account and token of a token secret, recording its
// use (at most once a minute): two round trips, three when the use is
// written. ENOTFOUND when the token is revoked or unknown, or its account
// is disabled or gone. The role a request with it has is the lower of
// the two.
func (s *Store) TokenUser(ctx context.Context, secret string) (*store.User, *store.Token, error) {
	raw, ok := strings.CutPrefix(secret, tokenPrefix)
	if !ok {
		return nil, nil, noToken()
	}
	sha, ok := secretHash(raw)
	if !ok {
		return nil, nil, noToken()
	}
	h, err := s.rdb.HGetAll(ctx, s.tokenKey(sha)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, wrap(err)
	}
	uid, ok1 := store.ParseID(h["u"])
	tid, ok2 := store.ParseID(h["i"])
	if !ok1 || !ok2 {
		return nil, nil, noToken()
	}
	f := strconv.FormatInt(tid, 10)
	var uc *redis.MapStringStringCmd
	var tc, used *redis.StringCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		uc = p.HGetAll(ctx, userKind.key(s, uid))
		tc, used = p.HGet(ctx, s.userTokensKey(uid), f), p.HGet(ctx, s.userTokensUsedKey(uid), f)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, wrap(err)
	}
	u, ok := decodeUser(uid, uc.Val())
	t, ok2 := decodeToken(tc.Val())
	if !ok || !ok2 || t.SHA != sha || u.Disabled {
		return nil, nil, noToken()
	}
	now := s.now().UTC().Truncate(time.Second)
	last := used.Val()
	if l, err := strconv.ParseInt(last, 10, 64); err != nil || now.Sub(time.Unix(l, 0)) >= tokenUseEvery {
		// Best effort: a use not written is no reason to refuse it. Only
		// while the token is listed (a revoke meanwhile leaves no trace).
		if recordTokenUse.Run(ctx, s.rdb, []string{s.userTokensKey(uid), s.userTokensUsedKey(uid)}, f, now.Unix()).Err() == nil {
			last = strconv.FormatInt(now.Unix(), 10)
		}
	}
	listed := t.listed(uid, tid, last)
	return publicUser(u), &listed, nil
}

// recordTokenUse writes a token's last use while its account lists it:
// KEYS the account's tokens and their uses, ARGV the token id and the
// time.
var recordTokenUse = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  return 1
end
return 0
`)
