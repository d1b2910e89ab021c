package routes

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

func init() {
	noteAdders["users"] = (*redisstore.Store).AddUserNote
}

// TestAPersonsOwnAccount: someone not an admin reads their own account
// and changes its display name and password (the password only with the
// current one), in every representation; they may not change its name,
// role or whether it is disabled (403, nothing changed), nor read anyone
// else's account or the List.
func TestAPersonsOwnAccount(t *testing.T) {
	a := newRightsApp(t)
	admin := a.user[store.RoleAdmin]
	for _, role := range []store.Role{store.RoleViewer, store.RoleClerk, store.RoleManager} {
		t.Run(string(role), func(t *testing.T) {
			me := a.user[role]
			own := userResource.MemberPath(me.ID)
			page := a.get(t, own, a.as(role, testutil.HPage)).WantStatus(t, http.StatusOK).WantPage(t, "user")
			page.WantContains(t, "Your account", `autocomplete="current-password"`, `autocomplete="new-password"`, `type="password"`,
				`id="user-tokens"`, "Make a token").WantLacks(t, `href="`+userResource.EditPath(me.ID)+`"`, ">Delete<", `name="role" value`)
			a.get(t, own, a.as(role, testutil.HJSON)).WantStatus(t, http.StatusOK).WantLacks(t, "password", "hash")
			a.get(t, userResource.EditPath(me.ID), a.as(role, testutil.HPage)).WantStatus(t, http.StatusOK).
				WantContains(t, `name="display_name"`, `name="current_password"`).WantLacks(t, `name="role"`, `name="disabled"`, `name="name"`)
			for _, target := range []string{userResource.Path(), userResource.MemberPath(admin.ID), userResource.NewPath(), userResource.HistoryPath(admin.ID)} {
				for _, rp := range rightsReprs {
					wantForbidden(t, a.get(t, target, a.as(role, rp.h)), rp.name, store.RoleAdmin)
				}
			}
			// The navigation offers the accounts to admins only.
			page.WantLacks(t, `href="/users">Users<`)
			a.get(t, "/orders", a.as(store.RoleAdmin, testutil.HPage)).WantContains(t, `href="/users">Users<`)

			version := me.Version
			for i, rp := range rightsReprs {
				name := "Display " + string(role) + " " + itoa(int64(i))
				var r *testutil.Resp
				switch rp.name {
				case "json":
					r = a.do(t, http.MethodPut, own, testutil.JSON(map[string]any{"display_name": name, "version": version}), a.as(role, rp.h))
				case "page":
					r = a.do(t, http.MethodPost, own, testutil.Form("_method", "PUT", "display_name", name, "version", itoa(version)), a.as(role, rp.h))
				default:
					r = a.do(t, http.MethodPut, own, testutil.Form("display_name", name, "version", itoa(version)), a.as(role, rp.h))
				}
				if r.Status >= 400 {
					t.Fatalf("%s: got %d, want their own display name changed; body:\n%s", r.What, r.Status, testutil.Snippet(r.Body))
				}
				u, _ := a.store.GetUser(context.Background(), me.ID)
				if u.DisplayName != name {
					t.Errorf("%s: display name %q, want %q", r.What, u.DisplayName, name)
				}
				version = u.Version
			}
			for _, change := range []map[string]any{{"role": "admin"}, {"disabled": true}, {"name": "someone-else"}} {
				for _, rp := range rightsReprs {
					var b testutil.Body
					if rp.name == "json" {
						b = testutil.JSON(change)
					} else {
						var kv []string
						for k, v := range change {
							kv = append(kv, k, itoaAny(v))
						}
						b = testutil.Form(kv...)
					}
					r := a.do(t, http.MethodPut, own, b, a.as(role, rp.h)).WantStatus(t, http.StatusForbidden)
					if rp.name == "json" {
						r.WantContains(t, "takes the admin role")
					}
					u, _ := a.store.GetUser(context.Background(), me.ID)
					if u.Version != version || u.Role != role || u.Disabled {
						t.Fatalf("%s: refused, yet the account changed: %+v", r.What, u)
					}
				}
			}
			// The password: never without the current one.
			other := a.signIn(t, string(role)) // a second browser
			newPW := "a brand new password for " + string(role)
			r := a.do(t, http.MethodPut, own, testutil.JSON(map[string]any{"password": newPW}), a.as(role, testutil.HJSON)).
				WantStatus(t, http.StatusUnprocessableEntity)
			r.WantContains(t, `"current_password"`)
			r = a.do(t, http.MethodPost, own, testutil.Form("_method", "PUT", "password", newPW, "current_password", "not my password at all"), a.as(role, testutil.HPage)).
				WantStatus(t, http.StatusUnprocessableEntity)
			r.WantContains(t, "is not your current password").WantLacks(t, "not my password at all", newPW)
			if _, err := a.store.CheckPassword(context.Background(), string(role), passwordOf(string(role))); err != nil {
				t.Fatalf("a refused password change changed the password: %v", err)
			}
			a.do(t, http.MethodPut, own, testutil.Form("password", newPW, "current_password", passwordOf(string(role))), a.as(role, testutil.HXTo("main#main"))).
				WantStatus(t, http.StatusOK).WantLacks(t, newPW)
			if _, err := a.store.CheckPassword(context.Background(), string(role), newPW); err != nil {
				t.Fatalf("the new password does not sign in: %v", err)
			}
			// The session that changed it stays; the other ends at once.
			a.get(t, own, a.as(role, testutil.HJSON)).WantStatus(t, http.StatusOK)
			a.get(t, own, as(other, testutil.HJSON)).WantStatus(t, http.StatusUnauthorized)
		})
	}
	t.Run("an admin", func(t *testing.T) {
		clerk := a.user[store.RoleClerk]
		u := a.do(t, http.MethodPut, userResource.MemberPath(clerk.ID), testutil.JSON(map[string]any{"role": "manager"}), a.as(store.RoleAdmin, testutil.HJSON)).
			WantStatus(t, http.StatusOK).Object(t)
		if u["role"] != "manager" {
			t.Errorf("an admin's change of a role: got %v", u)
		}
		// An admin's own password needs the current one too.
		a.do(t, http.MethodPut, userResource.MemberPath(admin.ID), testutil.JSON(map[string]any{"password": "the admin's new password"}), a.as(store.RoleAdmin, testutil.HJSON)).
			WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, `"current_password"`)
		// Another's password does not (it is how an admin resets one).
		a.do(t, http.MethodPut, userResource.MemberPath(clerk.ID), testutil.JSON(map[string]any{"password": "reset by the admin"}), a.as(store.RoleAdmin, testutil.HJSON)).
			WantStatus(t, http.StatusOK)
		// A password is never shown: not in a form, not in a page.
		a.get(t, userResource.EditPath(clerk.ID), a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusOK).
			WantContains(t, `name="role"`, `name="disabled"`, `autocomplete="new-password"`).WantLacks(t, "reset by the admin")
	})
}

func itoaAny(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "true"
		}
		return "false"
	case string:
		return v
	}
	return ""
}

// tokenOut is a token's JSON.
type tokenOut struct {
	ID       int64   `json:"id"`
	Name     string  `json:"name"`
	Role     string  `json:"role"`
	LastUsed *string `json:"last_used"`
	Secret   string  `json:"token"`
}

// TestTokensMadeUsedListedRevoked: a person makes a token on their own page (its secret shown
// once, with a note that says so), a program uses it (Bearer), history
// names the person and the token, the list shows its last use, a token
// has at most its person's role, and a revoked one is refused at once.
// Only its person and admins manage it.
func TestTokensMadeUsedListedRevoked(t *testing.T) {
	a := newRightsApp(t)
	clerk := a.user[store.RoleClerk]
	tokens := userResource.MemberPath(clerk.ID) + "/tokens"

	// Made on the page (a plain form): 201, the secret shown once.
	r := a.do(t, http.MethodPost, tokens, testutil.Form("name", "till", "role", "clerk"), a.as(store.RoleClerk, testutil.HPage)).
		WantStatus(t, http.StatusCreated).WantPage(t, "token-made").WantContains(t, "it will not be shown again")
	i := strings.Index(r.Body, `id="token-secret" value="`)
	if i < 0 {
		t.Fatalf("%s: no secret shown:\n%s", r.What, testutil.Snippet(r.Body))
	}
	secret := r.Body[i+len(`id="token-secret" value="`):]
	secret = secret[:strings.IndexByte(secret, '"')]
	for _, h := range []testutil.H{testutil.HPage, testutil.HJSON} {
		a.get(t, userResource.MemberPath(clerk.ID), a.as(store.RoleClerk, h)).WantStatus(t, http.StatusOK).WantLacks(t, secret)
		a.get(t, tokens, a.as(store.RoleClerk, h)).WantStatus(t, http.StatusOK).WantLacks(t, secret).WantContains(t, "till")
	}

	// Used: the program acts as the clerk, and history says through which token.
	a.get(t, "/orders", bearer(secret, testutil.HJSON)).WantStatus(t, http.StatusOK)
	o := a.do(t, http.MethodPost, "/orders", testutil.JSON(orderResource.Example.Create(1)), bearer(secret, testutil.HJSON)).WantStatus(t, http.StatusCreated).Object(t)
	id := int64(o["id"].(float64))
	var h struct {
		Entries []store.HistoryEntry `json:"entries"`
	}
	a.get(t, orderResource.HistoryPath(id), a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusOK).JSON(t, &h)
	if len(h.Entries) != 1 || h.Entries[0].Actor != "clerk" || h.Entries[0].Via != "token:till" {
		t.Errorf("history of an order made with a token: %+v, want created by clerk via token:till", h.Entries)
	}
	a.get(t, orderResource.MemberPath(id), a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusOK).WantContains(t, "Created by clerk")

	// Listed with its last use.
	var list struct {
		Tokens []tokenOut `json:"tokens"`
	}
	a.get(t, tokens, a.as(store.RoleClerk, testutil.HJSON)).WantStatus(t, http.StatusOK).JSON(t, &list)
	if len(list.Tokens) != 1 || list.Tokens[0].Name != "till" || list.Tokens[0].LastUsed == nil || list.Tokens[0].Secret != "" {
		t.Errorf("tokens after a use: %+v, want till with its last use and no secret", list.Tokens)
	}
	a.get(t, userResource.MemberPath(clerk.ID), a.as(store.RoleClerk, testutil.HPage)).WantContains(t, "till").WantLacks(t, ">never<")

	// Made by a program: 201 with the token once; a role above the
	// person's is refused; a lower one holds.
	var made tokenOut
	a.do(t, http.MethodPost, tokens, testutil.JSON(map[string]any{"name": "reader", "role": "viewer"}), a.as(store.RoleClerk, testutil.HJSON)).
		WantStatus(t, http.StatusCreated).JSON(t, &made)
	if made.Secret == "" || made.Role != "viewer" {
		t.Fatalf("a token made in JSON: %+v, want its secret and role viewer", made)
	}
	for _, body := range []testutil.Body{testutil.JSON(map[string]any{"name": "boss", "role": "manager"}), testutil.Form("name", "boss", "role", "admin")} {
		a.do(t, http.MethodPost, tokens, body, a.as(store.RoleClerk, testutil.HJSON)).WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "may be at most clerk")
	}
	a.do(t, http.MethodPost, tokens, testutil.JSON(map[string]any{"name": "boss", "role": "admin"}), a.as(store.RoleAdmin, testutil.HJSON)).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "may be at most clerk")
	a.get(t, "/orders", bearer(made.Secret, testutil.HJSON)).WantStatus(t, http.StatusOK)
	wantForbidden(t, a.do(t, http.MethodPost, "/orders", testutil.JSON(orderResource.Example.Create(2)), bearer(made.Secret, testutil.HJSON)), "json", store.RoleClerk)

	// Only the person and admins manage their tokens.
	for _, role := range []store.Role{store.RoleViewer, store.RoleManager} {
		wantForbidden(t, a.get(t, tokens, a.as(role, testutil.HJSON)), "json", store.RoleAdmin)
		wantForbidden(t, a.do(t, http.MethodPost, tokens, testutil.JSON(map[string]any{"name": "x"}), a.as(role, testutil.HJSON)), "json", store.RoleAdmin)
		wantForbidden(t, a.do(t, http.MethodDelete, tokens+"/"+itoa(made.ID), testutil.NoBody, a.as(role, testutil.HJSON)), "json", store.RoleAdmin)
	}
	a.get(t, "/orders", bearer(made.Secret, testutil.HJSON)).WantStatus(t, http.StatusOK)
	a.get(t, tokens, a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusOK).WantContains(t, "reader")

	// Revoked: refused at once (by the admin here; by its person below,
	// as a plain form).
	a.do(t, http.MethodDelete, tokens+"/"+itoa(made.ID), testutil.NoBody, a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusNoContent)
	a.get(t, "/orders", bearer(made.Secret, testutil.HJSON)).WantStatus(t, http.StatusUnauthorized)
	a.do(t, http.MethodPost, tokens+"/"+itoa(list.Tokens[0].ID), testutil.Form("_method", "DELETE"), a.as(store.RoleClerk, testutil.HPage)).
		WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", userResource.MemberPath(clerk.ID))
	a.get(t, "/orders", bearer(secret, testutil.HJSON)).WantStatus(t, http.StatusUnauthorized)
	a.get(t, tokens, a.as(store.RoleClerk, testutil.HJSON)).WantStatus(t, http.StatusOK).WantLacks(t, "till", "reader")
}

// TestTheLastAdminStays: the only enabled admin cannot be demoted,
// disabled or deleted: 422 in every representation, with the reason;
// with a second admin, they can.
func TestTheLastAdminStays(t *testing.T) {
	a := newRightsApp(t)
	admin := a.user[store.RoleAdmin]
	own := userResource.MemberPath(admin.ID)
	reason := "the last enabled admin"
	for _, change := range []map[string]any{{"role": "manager"}, {"disabled": true}} {
		a.do(t, http.MethodPut, own, testutil.JSON(change), a.as(store.RoleAdmin, testutil.HJSON)).
			WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, reason)
	}
	a.do(t, http.MethodPost, own, testutil.Form("_method", "PUT", "role", "manager", "version", "1"), a.as(store.RoleAdmin, testutil.HPage)).
		WantStatus(t, http.StatusUnprocessableEntity).WantPage(t, "user-form").WantContains(t, "is the last enabled admin")
	a.do(t, http.MethodPut, own, testutil.Form("disabled", "true", "version", "1"), a.as(store.RoleAdmin, testutil.HXTo("main#main"))).
		WantStatus(t, http.StatusUnprocessableEntity).WantFragment(t, "user-form").WantContains(t, "is the last enabled admin")
	a.do(t, http.MethodDelete, own, testutil.NoBody, a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, reason)
	a.do(t, http.MethodPost, own, testutil.Form("_method", "DELETE"), a.as(store.RoleAdmin, testutil.HPage)).
		WantStatus(t, http.StatusUnprocessableEntity).WantPage(t, "error").WantContains(t, capitalized(reason))
	a.do(t, http.MethodDelete, own, testutil.NoBody, a.as(store.RoleAdmin, testutil.HXTo("main#main"))).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, `hx-target="#notice-alert"`, "The last enabled admin")
	if u, err := a.store.GetUser(context.Background(), admin.ID); err != nil || u.Role != store.RoleAdmin || u.Disabled || u.Version != 1 {
		t.Fatalf("after the refusals: %+v, %v; want the admin unchanged", u, err)
	}
	// With another admin, the first may step down.
	mgr := a.user[store.RoleManager]
	a.do(t, http.MethodPut, userResource.MemberPath(mgr.ID), testutil.JSON(map[string]any{"role": "admin"}), a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusOK)
	a.do(t, http.MethodPut, own, testutil.JSON(map[string]any{"role": "manager"}), a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusOK)
}

// TestTheFirstAccountFromTheUsersPage: in protected mode the New user form
// starts as an admin (the first account must be one) and says so; made
// there, it ends protected mode.
func TestTheFirstAccountFromTheUsersPage(t *testing.T) {
	tg := testutil.Miniredis(t)
	a := newTestApp(t, tg.Name, testutil.NewStore(t, tg))
	a.get(t, userResource.NewPath(), testutil.HPage).WantStatus(t, http.StatusOK).
		WantContains(t, `<option value="admin" selected>`, "The first account must be an admin")
	a.do(t, http.MethodPost, userResource.Path(), testutil.Form("name", "first", "role", "viewer", "password", "a long password"), testutil.HPage).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "must be admin")
	a.do(t, http.MethodPost, userResource.Path(), testutil.Form("name", "first", "role", "admin", "password", "a long password"), testutil.HPage).
		WantStatus(t, http.StatusSeeOther)
	a.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusUnauthorized)
}

// TestAWrongCurrentPasswordIsAFailedSignIn: a person with a session who
// guesses their current password (to change it) meets the sign-in limit
// as a sign-in would: past the failures an address may make, even the
// right password is refused with 429 and Retry-After, and nothing changed.
func TestAWrongCurrentPasswordIsAFailedSignIn(t *testing.T) {
	a := newRightsApp(t)
	me := a.user[store.RoleClerk]
	own := userResource.MemberPath(me.ID)
	guess := func(current string) *testutil.Resp {
		return a.do(t, http.MethodPut, own, testutil.JSON(map[string]any{"password": "the password I would like", "current_password": current}),
			a.as(store.RoleClerk, testutil.HJSON))
	}
	limit := store.DefaultLimitRules.SignInPerAddress
	for i := range limit {
		guess("guess number "+itoa(int64(i))).WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "is not your current password")
	}
	r := guess(passwordOf(string(store.RoleClerk))).WantStatus(t, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("a throttled password change has no Retry-After")
	}
	if u, err := a.store.GetUser(context.Background(), me.ID); err != nil || u.Version != me.Version {
		t.Fatalf("a throttled password change changed the account: %+v, %v", u, err)
	}
	if _, err := a.store.CheckPassword(context.Background(), string(store.RoleClerk), passwordOf(string(store.RoleClerk))); err != nil {
		t.Fatalf("the password changed although the change was refused: %v", err)
	}
}

// TestAPasswordOfOnlySpacesIsRefused: a new password of nothing but white
// space and invisible characters is no secret, however long: 422 with the
// message beside the password, whether an admin sets it on a new account
// or a person on their own, and nothing is made or changed.
func TestAPasswordOfOnlySpacesIsRefused(t *testing.T) {
	a := newRightsApp(t)
	blanks := []string{strings.Repeat(" ", 16), strings.Repeat("\u00a0", 12), strings.Repeat("\u200b", 12), " \u3000\u200b \u2060 \u2009\u00a0      "}
	for i, pw := range blanks {
		name := "blank" + itoa(int64(i))
		a.do(t, http.MethodPost, userResource.Path(), testutil.JSON(map[string]any{"name": name, "role": "viewer", "password": pw}),
			a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, `"password"`, "more than spaces")
		a.do(t, http.MethodPost, userResource.Path(), testutil.Form("name", name, "role", "viewer", "password", pw),
			a.as(store.RoleAdmin, testutil.HPage)).WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "more than spaces")
		if _, err := a.store.UserByName(context.Background(), name); store.ErrorCode(err) != store.ENOTFOUND {
			t.Fatalf("an account with a blank password was made (%q): %v", pw, err)
		}
	}
	me := a.user[store.RoleClerk]
	a.do(t, http.MethodPut, userResource.MemberPath(me.ID), testutil.JSON(map[string]any{"password": blanks[0], "current_password": passwordOf(string(store.RoleClerk))}),
		a.as(store.RoleClerk, testutil.HJSON)).WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "more than spaces")
	if u, err := a.store.GetUser(context.Background(), me.ID); err != nil || u.Version != me.Version {
		t.Fatalf("a refused blank password changed the account: %+v, %v", u, err)
	}
	// A password with spaces in it, and around it, is a password.
	a.do(t, http.MethodPost, userResource.Path(), testutil.JSON(map[string]any{"name": "spaced", "role": "viewer", "password": "  correct horse  "}),
		a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusCreated)
}

// TestATokenMakesNoTokens: a program with a token cannot make another
// (403, nothing made), so a token that leaked and is revoked leaves no
// successor behind; the person signed in makes them.
func TestATokenMakesNoTokens(t *testing.T) {
	a := newRightsApp(t)
	me := a.user[store.RoleManager]
	path := userResource.MemberPath(me.ID) + "/tokens"
	made := a.do(t, http.MethodPost, path, testutil.JSON(map[string]any{"name": "ci"}), a.as(store.RoleManager, testutil.HJSON)).
		WantStatus(t, http.StatusCreated).Object(t)
	secret, _ := made["token"].(string)
	if secret == "" {
		t.Fatalf("a signed-in person's token: %v", made)
	}
	for _, role := range []string{"viewer", "manager"} {
		a.do(t, http.MethodPost, path, testutil.JSON(map[string]any{"name": "successor-" + role, "role": role}), bearer(secret, testutil.HJSON)).
			WantStatus(t, http.StatusForbidden).WantContains(t, "tokens are made by a person signed in")
	}
	list, err := a.store.Tokens(context.Background(), me.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("after a token tried to make tokens: %+v, %v; want the one made signed in", list, err)
	}
	// The token still reads what its role allows.
	a.get(t, "/orders", bearer(secret, testutil.HJSON)).WantStatus(t, http.StatusOK)
}
