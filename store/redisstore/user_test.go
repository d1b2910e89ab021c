package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

const goodPassword = "correct horse battery"

// mkUser makes an account or fails the test.
func mkUser(t *testing.T, s *redisstore.Store, name string, role store.Role) *store.User {
	t.Helper()
	u, err := s.CreateUser(context.Background(), store.UserInput{Name: ptr(name), Role: ptr(string(role)), Password: ptr(goodPassword)})
	if err != nil {
		t.Fatalf("CreateUser(%s, %s): %v", name, role, err)
	}
	return u
}

// enabledAdmins counts the enabled admins as the accounts say.
func enabledAdmins(t *testing.T, s *redisstore.Store) int {
	t.Helper()
	p, err := s.ListUsers(context.Background(), store.UserQuery{PerPage: store.MaxPerPage})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range p.Users {
		if u.Role == store.RoleAdmin && !u.Disabled {
			n++
		}
	}
	return n
}

// TestTheFirstAccountIsAnAdminAndTheLastAdminStays: while no account
// exists HasUsers is false and a first account that is not an enabled
// admin is refused (changing nothing: the next id is still 1); the last
// enabled admin cannot be demoted, disabled or deleted, and can once
// another admin exists.
func TestTheFirstAccountIsAnAdminAndTheLastAdminStays(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		if has, err := s.HasUsers(ctx); has || err != nil {
			t.Fatalf("HasUsers on an empty store: %v, %v", has, err)
		}
		_, err := s.CreateUser(ctx, store.UserInput{Name: ptr("clerk"), Role: ptr("clerk"), Password: ptr(goodPassword)})
		wantCode(t, "a first account that is a clerk", err, store.EINVALID)
		_, err = s.CreateUser(ctx, store.UserInput{Name: ptr("off"), Role: ptr("admin"), Password: ptr(goodPassword), Disabled: ptr(true)})
		wantCode(t, "a first account that is a disabled admin", err, store.EINVALID)
		if has, _ := s.HasUsers(ctx); has {
			t.Fatalf("HasUsers after refused creates: true")
		}
		a := mkUser(t, s, "Root", store.RoleAdmin)
		if a.ID != 1 || a.Name != "root" || a.Version != 1 {
			t.Errorf("the first admin: %+v; want id 1 (refused creates draw no id), name root", a)
		}
		if has, err := s.HasUsers(ctx); !has || err != nil {
			t.Errorf("HasUsers with an account: %v, %v", has, err)
		}
		c := mkUser(t, s, "clerk", store.RoleClerk)

		_, err = s.UpdateUser(ctx, a.ID, store.UserInput{Role: ptr("manager")}, 0, "")
		wantCode(t, "demoting the last enabled admin", err, store.EINVALID)
		if se, ok := err.(*store.Error); !ok || se.Fields["role"] == "" {
			t.Errorf("demoting the last enabled admin: %#v; want a message on role", err)
		} else if _, ok := se.Current.(*store.User); !ok {
			t.Errorf("the refusal's stored record is a %T; want *store.User", se.Current)
		}
		_, err = s.UpdateUser(ctx, a.ID, store.UserInput{Disabled: ptr(true)}, 0, "")
		wantCode(t, "disabling the last enabled admin", err, store.EINVALID)
		wantCode(t, "deleting the last enabled admin", s.DeleteUser(ctx, a.ID, 0, 0), store.EINVALID)
		if u, _ := s.GetUser(ctx, a.ID); u == nil || u.Role != store.RoleAdmin || u.Disabled || u.Version != 1 {
			t.Errorf("the last admin after refused writes: %+v; want unchanged", u)
		}

		// A second admin frees the first.
		if _, err := s.UpdateUser(ctx, c.ID, store.UserInput{Role: ptr("admin")}, 0, ""); err != nil {
			t.Fatalf("making the clerk an admin: %v", err)
		}
		if _, err := s.UpdateUser(ctx, a.ID, store.UserInput{Disabled: ptr(true)}, 0, ""); err != nil {
			t.Errorf("disabling one of two admins: %v", err)
		}
		wantCode(t, "deleting the one admin left enabled", s.DeleteUser(ctx, c.ID, 0, 0), store.EINVALID)
		if err := s.DeleteUser(ctx, a.ID, 0, 0); err != nil {
			t.Errorf("deleting a disabled admin: %v", err)
		}
		if n := enabledAdmins(t, s); n != 1 {
			t.Errorf("%d enabled admins; want 1", n)
		}
		r, err := s.Repair(ctx, false)
		if err != nil || r.Problems() != 0 {
			t.Errorf("Repair after the writes: %+v, %v", r, err)
		}
	})
}

// TestTwoAdminsDemotingEachOtherLeaveOne: two admins demote, disable or
// delete each other at the same moment, many times over: every round
// leaves exactly one enabled admin, whatever the interleaving.
func TestTwoAdminsDemotingEachOtherLeaveOne(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		// The first admin, like every admin of the rounds before, steps
		// down once the round's pair exists: the pair are then the only
		// enabled admins.
		mkUser(t, s, "first", store.RoleAdmin)
		moves := []struct {
			name string
			do   func(id int64) error
		}{
			{"demote", func(id int64) error {
				_, err := s.UpdateUser(ctx, id, store.UserInput{Role: ptr("viewer")}, 0, "")
				return err
			}},
			{"disable", func(id int64) error {
				_, err := s.UpdateUser(ctx, id, store.UserInput{Disabled: ptr(true)}, 0, "")
				return err
			}},
			{"delete", func(id int64) error { return s.DeleteUser(ctx, id, 0, 0) }},
		}
		rounds := 20
		for round := range rounds {
			x := mkUser(t, s, fmt.Sprintf("x%d", round), store.RoleAdmin)
			y := mkUser(t, s, fmt.Sprintf("y%d", round), store.RoleAdmin)
			// Everyone else steps down.
			p, _ := s.ListUsers(ctx, store.UserQuery{PerPage: store.MaxPerPage})
			for _, u := range p.Users {
				if u.ID != x.ID && u.ID != y.ID && u.Role == store.RoleAdmin && !u.Disabled {
					if _, err := s.UpdateUser(ctx, u.ID, store.UserInput{Disabled: ptr(true)}, 0, ""); err != nil {
						t.Fatalf("round %d: disabling admin %d: %v", round, u.ID, err)
					}
				}
			}
			mx, my := moves[round%3], moves[(round/3)%3]
			var wg sync.WaitGroup
			var ex, ey error
			start := make(chan struct{})
			wg.Add(2)
			go func() { defer wg.Done(); <-start; ex = mx.do(y.ID) }()
			go func() { defer wg.Done(); <-start; ey = my.do(x.ID) }()
			close(start)
			wg.Wait()
			if n := enabledAdmins(t, s); n != 1 {
				t.Fatalf("round %d (%s and %s at once): %d enabled admins; want 1 (errors: %v, %v)", round, mx.name, my.name, n, ex, ey)
			}
			if (ex == nil) == (ey == nil) {
				t.Errorf("round %d (%s and %s): errors %v and %v; want exactly one refused", round, mx.name, my.name, ex, ey)
			}
			for _, err := range []error{ex, ey} {
				if err != nil && store.ErrorCode(err) != store.EINVALID {
					t.Errorf("round %d: the refusal is %v; want invalid (the last-admin rule)", round, err)
				}
			}
		}
	})
}

// TestSessionsEndWithANewPasswordButTheOneThatChangedIt: a password
// change ends every session of the person at once except keep, which
// goes on; a session of someone else is untouched; EndSession ends one.
func TestSessionsEndWithANewPasswordButTheOneThatChangedIt(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		a := mkUser(t, s, "alice", store.RoleAdmin)
		b := mkUser(t, s, "bob", store.RoleClerk)
		sessions := map[string]string{}
		for _, n := range []string{"a1", "a2", "a3"} {
			sessions[n] = start(t, s, a.ID)
		}
		sessions["b"] = start(t, s, b.ID)
		if len(sessions["a1"]) != 43 || sessions["a1"] == sessions["a2"] {
			t.Fatalf("secrets %q and %q: want two different 43-character secrets", sessions["a1"], sessions["a2"])
		}
		for n, sec := range sessions {
			if _, err := s.SessionUser(ctx, sec); err != nil {
				t.Fatalf("session %s before the change: %v", n, err)
			}
		}
		u, err := s.UpdateUser(ctx, a.ID, store.UserInput{Password: ptr("another good password")}, 0, sessions["a2"])
		if err != nil || u.Version != 2 {
			t.Fatalf("the password change: %+v, %v", u, err)
		}
		for n, live := range map[string]bool{"a1": false, "a2": true, "a3": false, "b": true} {
			got, err := s.SessionUser(ctx, sessions[n])
			if live && (err != nil || got.Name == "") {
				t.Errorf("session %s after alice's password change: %v; want it to go on", n, err)
			}
			if !live {
				wantCode(t, "session "+n+" after alice's password change", err, store.ENOTFOUND)
			}
		}
		if _, err := s.CheckPassword(ctx, "alice", goodPassword); err == nil {
			t.Errorf("the old password still signs in")
		}
		if _, err := s.CheckPassword(ctx, "ALICE", "another good password"); err != nil {
			t.Errorf("the new password, the name in capitals: %v", err)
		}
		// An admin who sets bob's password, keeping their own session,
		// ends bob's sessions and none of their own.
		if _, err := s.UpdateUser(ctx, b.ID, store.UserInput{Password: ptr("bob's new password")}, 0, sessions["a2"]); err != nil {
			t.Fatal(err)
		}
		_, err = s.SessionUser(ctx, sessions["b"])
		wantCode(t, "bob's session after an admin set his password", err, store.ENOTFOUND)
		if _, err := s.SessionUser(ctx, sessions["a2"]); err != nil {
			t.Errorf("the admin's own session after setting bob's password: %v", err)
		}
		// A change of the display name ends nothing.
		if _, err := s.UpdateUser(ctx, a.ID, store.UserInput{DisplayName: ptr("Alice")}, 0, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SessionUser(ctx, sessions["a2"]); err != nil {
			t.Errorf("the kept session after a change of the display name: %v", err)
		}
		if err := s.EndSession(ctx, sessions["a2"]); err != nil {
			t.Fatal(err)
		}
		_, err = s.SessionUser(ctx, sessions["a2"])
		wantCode(t, "a session after EndSession", err, store.ENOTFOUND)
		for _, bad := range []string{"", "x", strings.Repeat("A", 43), sessions["b"] + "A", strings.ToUpper(sessions["b"])} {
			if bad == sessions["b"] {
				continue
			}
			_, err := s.SessionUser(ctx, bad)
			wantCode(t, fmt.Sprintf("the secret %q", bad), err, store.ENOTFOUND)
		}
	})
}

func start(t *testing.T, s *redisstore.Store, id int64) string {
	t.Helper()
	sec, err := s.StartSession(context.Background(), id)
	if err != nil {
		t.Fatalf("StartSession(%d): %v", id, err)
	}
	return sec
}

// TestADisabledPersonsSessionsAndTokensFail: disabling a person ends
// their sessions and their tokens at once, and enabling them again brings
// back neither (whoever held a token of theirs must be given a new one);
// a password check of a disabled person fails as a wrong one does.
func TestADisabledPersonsSessionsAndTokensFail(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		mkUser(t, s, "root", store.RoleAdmin)
		c := mkUser(t, s, "carol", store.RoleManager)
		sec := start(t, s, c.ID)
		_, tok, err := s.CreateToken(ctx, c.ID, "ci", store.RoleClerk)
		if err != nil {
			t.Fatal(err)
		}
		if u, tk, err := s.TokenUser(ctx, tok); err != nil || u.ID != c.ID || tk.Role != store.RoleClerk || tk.Name != "ci" {
			t.Fatalf("the token before the disable: %+v %+v %v", u, tk, err)
		}
		if _, err := s.UpdateUser(ctx, c.ID, store.UserInput{Disabled: ptr(true)}, 0, ""); err != nil {
			t.Fatal(err)
		}
		_, err = s.SessionUser(ctx, sec)
		wantCode(t, "a disabled person's session", err, store.ENOTFOUND)
		_, _, err = s.TokenUser(ctx, tok)
		wantCode(t, "a disabled person's token", err, store.ENOTFOUND)
		_, err = s.CheckPassword(ctx, "carol", goodPassword)
		wantCode(t, "a disabled person's right password", err, store.ENOTFOUND)
		_, err = s.StartSession(ctx, c.ID)
		if err == nil {
			t.Errorf("a session was started for a disabled person")
		}
		_, _, err = s.CreateToken(ctx, c.ID, "more", store.RoleViewer)
		wantCode(t, "a token for a disabled person", err, store.EINVALID)

		if _, err := s.UpdateUser(ctx, c.ID, store.UserInput{Disabled: ptr(false)}, 0, ""); err != nil {
			t.Fatal(err)
		}
		_, err = s.SessionUser(ctx, sec)
		wantCode(t, "a session ended by a disable, after the enable", err, store.ENOTFOUND)
		_, _, err = s.TokenUser(ctx, tok)
		wantCode(t, "a token ended by a disable, after the enable", err, store.ENOTFOUND)
		if list, err := s.Tokens(ctx, c.ID); err != nil || len(list) != 0 {
			t.Errorf("the tokens listed after a disable and an enable: %+v, %v; want none", list, err)
		}
		_, fresh, err := s.CreateToken(ctx, c.ID, "ci", store.RoleClerk)
		if err != nil {
			t.Fatalf("a token of the same name after the enable: %v", err)
		}
		if u, _, err := s.TokenUser(ctx, fresh); err != nil || u.ID != c.ID {
			t.Errorf("a token made after the enable: %+v, %v", u, err)
		}
	})
}

// TestTokensAreNamedLimitedAndRevokedAtOnce: a token's role is at most
// its person's; its name is required, at most 64 characters and unique
// per person (case aside); a person has at most MaxTokens; the list is
// newest first with the last use; a revoked token fails at once, on
// another instance too; a deleted person's tokens fail.
func TestTokensAreNamedLimitedAndRevokedAtOnce(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		f := fresh(t, tg)
		s := f.s
		other := redisstore.New(tg.Client, redisstore.Options{Prefix: f.prefix, Cluster: tg.Cluster, Now: f.clock.Now})
		ctx := context.Background()
		mkUser(t, s, "root", store.RoleAdmin)
		c := mkUser(t, s, "carl", store.RoleClerk)
		_, _, err := s.CreateToken(ctx, c.ID, "too much", store.RoleManager)
		wantCode(t, "a token above its person's role", err, store.EINVALID)
		_, _, err = s.CreateToken(ctx, c.ID, " ", store.RoleViewer)
		wantCode(t, "a token without a name", err, store.EINVALID)
		_, _, err = s.CreateToken(ctx, c.ID, strings.Repeat("n", 65), store.RoleViewer)
		wantCode(t, "a token name of 65 characters", err, store.EINVALID)
		_, _, err = s.CreateToken(ctx, c.ID, "r", store.Role("root"))
		wantCode(t, "a token of an unknown role", err, store.EINVALID)
		_, _, err = s.CreateToken(ctx, 999, "x", store.RoleViewer)
		wantCode(t, "a token of no one", err, store.ENOTFOUND)

		first, sec1, err := s.CreateToken(ctx, c.ID, "Deploy", store.RoleViewer)
		if err != nil || !strings.HasPrefix(sec1, "orders_") || first.Role != store.RoleViewer || first.LastUsed != nil {
			t.Fatalf("a token: %+v %q %v", first, sec1, err)
		}
		_, _, err = s.CreateToken(ctx, c.ID, "deploy", store.RoleViewer)
		wantCode(t, "a second token named deploy", err, store.EINVALID)
		second, sec2, err := s.CreateToken(ctx, c.ID, "backup", store.RoleClerk)
		if err != nil {
			t.Fatal(err)
		}
		u, tk, err := other.TokenUser(ctx, sec1)
		if err != nil || u.ID != c.ID || tk.ID != first.ID || tk.LastUsed == nil {
			t.Fatalf("the token on another instance: %+v %+v %v; want carl's, its use recorded", u, tk, err)
		}
		list, err := s.Tokens(ctx, c.ID)
		if err != nil || len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID {
			t.Fatalf("Tokens: %+v, %v; want backup then Deploy", list, err)
		}
		if list[1].LastUsed == nil || list[0].LastUsed != nil {
			t.Errorf("last uses: %v and %v; want Deploy's only", list[0].LastUsed, list[1].LastUsed)
		}
		for _, l := range list {
			if strings.Contains(fmt.Sprintf("%+v", l), sec1[7:20]) {
				t.Errorf("the list shows the secret: %+v", l)
			}
		}
		// The last use is written at most once a minute.
		used := *list[1].LastUsed
		f.clock.Advance(30 * time.Second)
		_, tk, _ = s.TokenUser(ctx, sec1)
		if tk == nil || !tk.LastUsed.Equal(used) {
			t.Errorf("a use 30 s later: last use %v; want it kept at %v", tk, used)
		}
		f.clock.Advance(31 * time.Second)
		_, tk, _ = s.TokenUser(ctx, sec1)
		if tk == nil || !tk.LastUsed.After(used) {
			t.Errorf("a use 61 s later: last use %v; want it moved past %v", tk, used)
		}

		if err := s.RevokeToken(ctx, c.ID, first.ID); err != nil {
			t.Fatal(err)
		}
		_, _, err = other.TokenUser(ctx, sec1)
		wantCode(t, "a revoked token on another instance", err, store.ENOTFOUND)
		wantCode(t, "revoking it again", s.RevokeToken(ctx, c.ID, first.ID), store.ENOTFOUND)
		wantCode(t, "revoking someone else's token by its id", s.RevokeToken(ctx, 1, second.ID), store.ENOTFOUND)
		for _, bad := range []string{"", sec2[7:], "orders_", "orders_" + strings.Repeat("A", 43), sec2 + "x"} {
			_, _, err := s.TokenUser(ctx, bad)
			wantCode(t, fmt.Sprintf("the token %q", bad), err, store.ENOTFOUND)
		}

		// At most MaxTokens.
		for i := len(list) - 1; i < store.MaxTokens; i++ {
			if _, _, err := s.CreateToken(ctx, c.ID, fmt.Sprintf("t%d", i), store.RoleViewer); err != nil {
				t.Fatalf("token %d of %d: %v", i+1, store.MaxTokens, err)
			}
		}
		_, _, err = s.CreateToken(ctx, c.ID, "one too many", store.RoleViewer)
		wantCode(t, fmt.Sprintf("token %d", store.MaxTokens+1), err, store.EINVALID)

		if err := s.DeleteUser(ctx, c.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.TokenUser(ctx, sec2)
		wantCode(t, "a deleted person's token", err, store.ENOTFOUND)
		_, err = s.Tokens(ctx, c.ID)
		wantCode(t, "the tokens of a deleted person", err, store.ENOTFOUND)
	})
}

// TestTokensMadeAtOnceKeepTheirLimits: many tokens of one name made at
// once give one token; made at once past MaxTokens, no more than
// MaxTokens.
func TestTokensMadeAtOnceKeepTheirLimits(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		a := mkUser(t, s, "root", store.RoleAdmin)
		var wg sync.WaitGroup
		for i := range store.MaxTokens + 10 {
			wg.Add(2)
			go func() { defer wg.Done(); _, _, _ = s.CreateToken(ctx, a.ID, "same", store.RoleViewer) }()
			go func() { defer wg.Done(); _, _, _ = s.CreateToken(ctx, a.ID, fmt.Sprintf("n%d", i), store.RoleViewer) }()
		}
		wg.Wait()
		list, err := s.Tokens(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		same := 0
		for _, tk := range list {
			if tk.Name == "same" {
				same++
			}
		}
		if len(list) != store.MaxTokens || same > 1 {
			t.Errorf("%d tokens, %d named same; want %d tokens and at most one named same", len(list), same, store.MaxTokens)
		}
	})
}

// TestSessionsEndWhenIdleOrOld: a session unused for 12 hours ends; one
// used every 11 hours goes on until 7 days after sign-in, then ends.
// The store's clock decides; on miniredis the key's TTL also ends it in
// Redis (FastForward).
func TestSessionsEndWhenIdleOrOld(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		f := fresh(t, tg)
		s, ctx := f.s, context.Background()
		a := mkUser(t, s, "root", store.RoleAdmin)
		idle := start(t, s, a.ID)
		busy := start(t, s, a.ID)
		f.clock.Advance(11 * time.Hour)
		if _, err := s.SessionUser(ctx, busy); err != nil {
			t.Fatalf("a session used after 11 h: %v", err)
		}
		f.clock.Advance(time.Hour + time.Second)
		_, err := s.SessionUser(ctx, idle)
		wantCode(t, "a session unused for 12 h and a second", err, store.ENOTFOUND)
		used := 12*time.Hour + time.Second
		for used+11*time.Hour < store.SessionAbsolute {
			if _, err := s.SessionUser(ctx, busy); err != nil {
				t.Fatalf("a session used every 11 h, %v after sign-in: %v", used, err)
			}
			f.clock.Advance(11 * time.Hour)
			used += 11 * time.Hour
		}
		if _, err := s.SessionUser(ctx, busy); err != nil {
			t.Fatalf("a session used every 11 h, %v after sign-in: %v", used, err)
		}
		f.clock.Advance(store.SessionAbsolute - used + time.Second)
		_, err = s.SessionUser(ctx, busy)
		wantCode(t, "a session used every 11 h, 7 days and a second after sign-in", err, store.ENOTFOUND)
	})
	t.Run("miniredis TTL", func(t *testing.T) {
		mr := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer c.Close()
		clk := &clock{}
		clk.unix.Store(time.Now().Unix())
		s := redisstore.New(c, redisstore.Options{Now: clk.Now})
		forward := func(d time.Duration) { clk.Advance(d); mr.FastForward(d) }
		ctx := context.Background()
		a := mkUser(t, s, "root", store.RoleAdmin)
		sec := start(t, s, a.ID)
		forward(11 * time.Hour)
		if _, err := s.SessionUser(ctx, sec); err != nil {
			t.Fatalf("after 11 h: %v", err)
		}
		forward(11 * time.Hour) // 22 h after sign-in, 11 h after its use
		if _, err := s.SessionUser(ctx, sec); err != nil {
			t.Fatalf("used again 11 h after its last use: %v", err)
		}
		ttl := mr.TTL(sessionKeyOf(t, mr))
		if ttl <= 11*time.Hour || ttl > store.SessionIdle {
			t.Errorf("the session's TTL after a use: %v; want about 12 h", ttl)
		}
		mr.FastForward(store.SessionIdle + time.Second)
		if n := len(sessionKeys(mr)); n != 0 {
			t.Errorf("%d session keys 12 h after the last use; want none", n)
		}
	})
}

func sessionKeys(mr *miniredis.Miniredis) []string {
	var out []string
	for _, k := range mr.Keys() {
		if strings.Contains(k, "u:{u}:s:") {
			out = append(out, k)
		}
	}
	return out
}

func sessionKeyOf(t *testing.T, mr *miniredis.Miniredis) string {
	t.Helper()
	keys := sessionKeys(mr)
	if len(keys) != 1 {
		t.Fatalf("session keys %v; want one", keys)
	}
	return keys[0]
}

// TestSessionsAreSharedByInstances: a session started on one instance is
// good on another over the same Redis, and signing out on the second ends
// it on the first.
func TestSessionsAreSharedByInstances(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		f := fresh(t, tg)
		one := f.s
		two := redisstore.New(tg.Client, redisstore.Options{Prefix: f.prefix, Cluster: tg.Cluster, Now: f.clock.Now})
		ctx := context.Background()
		a := mkUser(t, one, "root", store.RoleAdmin)
		sec := start(t, one, a.ID)
		if u, err := two.SessionUser(ctx, sec); err != nil || u.ID != a.ID {
			t.Fatalf("instance two reading instance one's session: %+v, %v", u, err)
		}
		if err := two.EndSession(ctx, sec); err != nil {
			t.Fatal(err)
		}
		_, err := one.SessionUser(ctx, sec)
		wantCode(t, "instance one after sign-out on instance two", err, store.ENOTFOUND)
	})
}

// TestNoPasswordHashIsEverStoredOutsideItsAccount: after creates,
// password changes, disables and a delete, no history entry, event or
// other key holds a password, its hash or a secret; the history says
// "password": "set" or "changed".
func TestNoPasswordHashIsEverStoredOutsideItsAccount(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		f := fresh(t, tg)
		s, ctx := f.s, store.WithActor(context.Background(), "tester", "web")
		a := mkUser(t, s, "root", store.RoleAdmin)
		b := mkUser(t, s, "bob", store.RoleClerk)
		sec := start(t, s, b.ID)
		_, tok, _ := s.CreateToken(ctx, b.ID, "t", store.RoleClerk)
		for _, pw := range []string{"second password!", "third password!!"} {
			if _, err := s.UpdateUser(ctx, b.ID, store.UserInput{Password: ptr(pw)}, 0, sec); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.UpdateUser(ctx, b.ID, store.UserInput{Disabled: ptr(true), Role: ptr("viewer")}, 0, ""); err != nil {
			t.Fatal(err)
		}
		h, err := s.UserHistory(ctx, b.ID, "", 0)
		if err != nil || len(h.Entries) != 4 {
			t.Fatalf("bob's history: %+v, %v; want 4 entries", h, err)
		}
		if c := h.Entries[3].Changes["password"]; c.To != "set" || c.From != nil {
			t.Errorf("the create's password change: %+v; want to \"set\" and nothing else", c)
		}
		if c := h.Entries[1].Changes["password"]; c.To != "changed" || c.From != nil || h.Entries[1].Actor != "tester" {
			t.Errorf("a new password in the history: %+v by %s; want to \"changed\" by tester", c, h.Entries[1].Actor)
		}
		if _, ok := h.Entries[0].Changes["password"]; ok {
			t.Errorf("a disable says the password changed: %+v", h.Entries[0].Changes)
		}
		if err := s.DeleteUser(ctx, b.ID, 0, 0); err != nil {
			t.Fatal(err)
		}
		// Every key of the store but the accounts' own hashes.
		secrets := []string{"$argon2id$", goodPassword, "second password!", "third password!!", sec, tok[7:]}
		seen := 0
		keys := scanNodes(t, tg.Client, f.prefix+"*")
		for _, k := range keys {
			if strings.HasPrefix(k, f.prefix+"u:{u}:") && !strings.Contains(k[len(f.prefix+"u:{u}:"):], ":") {
				continue // an account's own hash
			}
			text := dumpKey(t, tg.Client, k)
			seen++
			for _, x := range secrets {
				if strings.Contains(text, x) {
					t.Errorf("key %s holds %q: %s", k, x, text)
				}
			}
		}
		if seen < 5 {
			t.Errorf("only %d keys looked at (%v): the test reads nothing", seen, keys)
		}
		_ = a
	})
}

// scanNodes lists the keys matching pattern on every node.
func scanNodes(t *testing.T, c redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out = append(out, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dumpKey is everything key holds, as text.
func dumpKey(t *testing.T, c redis.UniversalClient, key string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var v any
	switch typ {
	case "string":
		v, err = c.Get(ctx, key).Result()
	case "hash":
		v, err = c.HGetAll(ctx, key).Result()
	case "zset":
		v, err = c.ZRangeWithScores(ctx, key, 0, -1).Result()
	case "set":
		v, err = c.SMembers(ctx, key).Result()
	case "list":
		v, err = c.LRange(ctx, key, 0, -1).Result()
	case "stream":
		v, err = c.XRange(ctx, key, "-", "+").Result()
	case "none":
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%v", v)
}

// TestEnsureAdminMakesOrResetsTheAccount: EnsureAdmin makes a missing
// account an admin; over a disabled viewer of that name it makes an
// enabled admin with the new password (its sessions end); run again with
// the same password it changes nothing (the sessions go on).
func TestEnsureAdminMakesOrResetsTheAccount(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		u, err := s.EnsureAdmin(ctx, "Boss", goodPassword)
		if err != nil || u.Name != "boss" || u.Role != store.RoleAdmin || u.Version != 1 {
			t.Fatalf("EnsureAdmin on an empty store: %+v, %v", u, err)
		}
		sec := start(t, s, u.ID)
		again, err := s.EnsureAdmin(ctx, "boss", goodPassword)
		if err != nil || again.Version != 1 {
			t.Errorf("EnsureAdmin again with the same password: %+v, %v; want nothing changed", again, err)
		}
		if _, err := s.SessionUser(ctx, sec); err != nil {
			t.Errorf("the session after EnsureAdmin changed nothing: %v", err)
		}
		v := mkUser(t, s, "vic", store.RoleViewer)
		if _, err := s.UpdateUser(ctx, v.ID, store.UserInput{Disabled: ptr(true)}, 0, ""); err != nil {
			t.Fatal(err)
		}
		vs, err := s.EnsureAdmin(ctx, "vic", "vic's new password")
		if err != nil || vs.ID != v.ID || vs.Role != store.RoleAdmin || vs.Disabled {
			t.Fatalf("EnsureAdmin over a disabled viewer: %+v, %v", vs, err)
		}
		if _, err := s.CheckPassword(ctx, "vic", "vic's new password"); err != nil {
			t.Errorf("the new password: %v", err)
		}
		if _, err := s.EnsureAdmin(ctx, "boss", "a different password"); err != nil {
			t.Fatal(err)
		}
		_, err = s.SessionUser(ctx, sec)
		wantCode(t, "the session after EnsureAdmin set a new password", err, store.ENOTFOUND)
		_, err = s.EnsureAdmin(ctx, "bad name!", goodPassword)
		wantCode(t, "EnsureAdmin with a bad name", err, store.EINVALID)
		_, err = s.EnsureAdmin(ctx, "shorty", "short")
		wantCode(t, "EnsureAdmin with a short password", err, store.EINVALID)
	})
}

// TestListUsersByNameAndSearch: the List is by name, paged, with the
// total; a search keeps the accounts whose name or display name contains
// it (case aside), and a number finds that account first.
func TestListUsersByNameAndSearch(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		for _, n := range []string{"root", "zed", "amy", "bob2", "carl"} {
			role := store.RoleClerk
			if n == "root" {
				role = store.RoleAdmin
			}
			mkUser(t, s, n, role)
		}
		if _, err := s.UpdateUser(ctx, 5, store.UserInput{DisplayName: ptr("Carl Zwei")}, 0, ""); err != nil {
			t.Fatal(err)
		}
		names := func(p store.UserPage) string {
			var out []string
			for _, u := range p.Users {
				out = append(out, u.Name)
			}
			return fmt.Sprintf("%v of %d", out, p.Total)
		}
		for _, c := range []struct {
			q    store.UserQuery
			want string
		}{
			{store.UserQuery{}, "[amy bob2 carl root zed] of 5"},
			{store.UserQuery{PerPage: 2, Page: 2}, "[carl root] of 5"},
			{store.UserQuery{PerPage: 2, Page: 9}, "[] of 5"},
			{store.UserQuery{Q: "Z"}, "[carl zed] of 2"},
			{store.UserQuery{Q: "2"}, "[zed bob2] of 2"},
			{store.UserQuery{Q: "o", PerPage: 1, Page: 2}, "[root] of 2"},
			{store.UserQuery{Q: "nobody"}, "[] of 0"},
		} {
			p, err := s.ListUsers(ctx, c.q)
			if got := names(p); err != nil || got != c.want {
				t.Errorf("ListUsers(%+v): %s, %v; want %s", c.q, got, err, c.want)
			}
		}
	})
}

// TestCheckPasswordSaysOnlyWrongNameOrPassword: an unknown name, a wrong
// password, a disabled account and an overlong password all get the same
// not-found error; the right one gets the account, its name folded.
func TestCheckPasswordSaysOnlyWrongNameOrPassword(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		s := fresh(t, tg).s
		ctx := context.Background()
		mkUser(t, s, "root", store.RoleAdmin)
		d := mkUser(t, s, "dora", store.RoleClerk)
		if _, err := s.UpdateUser(ctx, d.ID, store.UserInput{Disabled: ptr(true)}, 0, ""); err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, c := range [][2]string{{"nobody", goodPassword}, {"root", "wrong password!"}, {"dora", goodPassword},
			{"root", strings.Repeat("p", 300)}, {"", goodPassword}, {strings.Repeat("r", 200), goodPassword}} {
			_, err := s.CheckPassword(ctx, c[0], c[1])
			wantCode(t, "CheckPassword("+c[0]+")", err, store.ENOTFOUND)
			if err != nil {
				msgs = append(msgs, err.Error())
			}
		}
		for _, m := range msgs {
			if m != msgs[0] {
				t.Errorf("refusals differ: %q and %q", m, msgs[0])
			}
		}
		if u, err := s.CheckPassword(ctx, " Root ", goodPassword); err != nil || u.Name != "root" {
			t.Errorf("the right password, the name typed \" Root \": %+v, %v", u, err)
		}
	})
}

// onTargets runs test on every target testutil finds, each a subtest.
func onTargets(t *testing.T, test func(t *testing.T, tg testutil.Target)) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) { test(t, tg) })
	}
}

// TestASessionsUseIsWrittenAtMostOnceAMinute: reading a session many
// times within a minute writes nothing (no request is a write); past a
// minute its use is written and its idle end moves.
func TestASessionsUseIsWrittenAtMostOnceAMinute(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	clk := &clock{}
	clk.unix.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix())
	s := redisstore.New(c, redisstore.Options{Now: clk.Now})
	ctx := context.Background()
	a := mkUser(t, s, "root", store.RoleAdmin)
	sec := start(t, s, a.ID)
	key := sessionKeyOf(t, mr)
	seen := mr.HGet(key, "ls")
	for range 20 {
		clk.Advance(2 * time.Second)
		if _, err := s.SessionUser(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	if got := mr.HGet(key, "ls"); got != seen {
		t.Errorf("40 s of reads moved the last use from %s to %s; want no write", seen, got)
	}
	clk.Advance(21 * time.Second)
	if _, err := s.SessionUser(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if got := mr.HGet(key, "ls"); got == seen {
		t.Errorf("a read 61 s after sign-in left the last use at %s; want it written", got)
	}
}

// TestInstancesStartingTogetherMakeOneAdmin: several instances running
// EnsureAdmin for one name at once (containers starting together) make
// one account, and every one of them gets it.
func TestInstancesStartingTogetherMakeOneAdmin(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		f := fresh(t, tg)
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]int64, 4)
		errs := make([]error, 4)
		for i := range ids {
			s := redisstore.New(tg.Client, redisstore.Options{Prefix: f.prefix, Cluster: tg.Cluster, Now: f.clock.Now})
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, err := s.EnsureAdmin(ctx, "boss", goodPassword)
				if u != nil {
					ids[i] = u.ID
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		p, err := f.s.ListUsers(ctx, store.UserQuery{})
		if err != nil || p.Total != 1 {
			t.Fatalf("accounts after 4 EnsureAdmin at once: %+v, %v; want one", p, err)
		}
		for i := range ids {
			if errs[i] != nil || ids[i] != p.Users[0].ID {
				t.Errorf("instance %d: id %d, %v; want %d", i, ids[i], errs[i], p.Users[0].ID)
			}
		}
	})
}

// TestAPasswordChangeWhileItsSessionIsInUse: the session that changes its
// person's password goes on even while other requests of it renew it at
// the same moment, and the person's other session ends.
func TestAPasswordChangeWhileItsSessionIsInUse(t *testing.T) {
	onTargets(t, func(t *testing.T, tg testutil.Target) {
		f := fresh(t, tg)
		s, ctx := f.s, context.Background()
		a := mkUser(t, s, "root", store.RoleAdmin)
		for round := range 10 {
			keep, other := start(t, s, a.ID), start(t, s, a.ID)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						f.clock.Advance(time.Minute) // every read renews
						_, _ = s.SessionUser(ctx, keep)
					}
				}()
			}
			_, err := s.UpdateUser(ctx, a.ID, store.UserInput{Password: ptr(fmt.Sprintf("password number %d", round))}, 0, keep)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("round %d: the password change while its session is in use: %v", round, err)
			}
			if _, err := s.SessionUser(ctx, keep); err != nil {
				t.Errorf("round %d: the kept session: %v", round, err)
			}
			_, err = s.SessionUser(ctx, other)
			wantCode(t, fmt.Sprintf("round %d: the other session", round), err, store.ENOTFOUND)
		}
	})
}

// commandCounter counts the commands and pipelines a client sends.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// TestWhatEachRequestCostsRedis: HasUsers (asked on every request) is one
// command; a session's check is two round trips, a token's two (three
// when its use is written).
func TestWhatEachRequestCostsRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	s := redisstore.New(c, redisstore.Options{})
	ctx := context.Background()
	a := mkUser(t, s, "root", store.RoleAdmin)
	sec := start(t, s, a.ID)
	_, tok, _ := s.CreateToken(ctx, a.ID, "t", store.RoleAdmin)
	if _, _, err := s.TokenUser(ctx, tok); err != nil { // its first use is written
		t.Fatal(err)
	}
	cc := &commandCounter{}
	c.AddHook(cc)
	for _, m := range []struct {
		what string
		do   func() error
		want int64
	}{
		{"HasUsers", func() error { _, err := s.HasUsers(ctx); return err }, 1},
		{"SessionUser", func() error { _, err := s.SessionUser(ctx, sec); return err }, 2},
		{"TokenUser", func() error { _, _, err := s.TokenUser(ctx, tok); return err }, 2},
	} {
		cc.n.Store(0)
		if err := m.do(); err != nil {
			t.Fatalf("%s: %v", m.what, err)
		}
		if got := cc.n.Load(); got != m.want {
			t.Errorf("%s: %d round trips; want %d", m.what, got, m.want)
		}
	}
}
