package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"orders/routes"
	"orders/store"
	"orders/store/redisstore"
)

// registryPage is one page every registered resource has.
type registryPage struct{ name, path string }

// registryPages creates a record of every registered resource from its
// example (JSON over HTTP at base) and returns the pages every resource
// has: its List, its New form, the record's page, its Edit form, its
// history and its delete confirmation. The page tests walk them, so a
// registered resource's pages are checked without a list of its own.
//
// An account made from its example (an admin) ends protected mode:
// session is then the session of that admin, signed in over HTTP, which
// every later request needs ("" while the desk is open).
func registryPages(t *testing.T, base string) (pages []registryPage, session string) {
	t.Helper()
	for _, r := range routes.Resources() {
		ex := r.Example(900)
		body, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, base+r.Path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if session != "" {
			req.Header.Set("Cookie", sessionCookie+"="+session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", r.Path, err)
		}
		resp.Body.Close()
		id, ok := store.ParseID(strings.TrimPrefix(resp.Header.Get("Location"), r.Path+"/"))
		if resp.StatusCode != http.StatusCreated || !ok {
			t.Fatalf("POST %s with its example: %s, Location %q; want 201 and the member", r.Path, resp.Status, resp.Header.Get("Location"))
		}
		if pw, ok := ex["password"].(string); ok && session == "" {
			session = signInOver(t, base, ex["name"].(string), pw)
		}
		pages = append(pages,
			registryPage{r.Plural + "-list", r.Path},
			registryPage{r.Plural + "-new", r.NewPath},
			registryPage{r.Plural + "-show", r.MemberPath(id)},
			registryPage{r.Plural + "-edit", r.EditPath(id)},
			registryPage{r.Plural + "-history", r.HistoryPath(id)},
			registryPage{r.Plural + "-delete-confirm", r.MemberPath(id) + "?confirm=delete"})
	}
	return pages, session
}

// sessionCookie is the session cookie's name.
const sessionCookie = "orders_session"

// signInOver signs name in with password through POST /session at base
// and returns the session secret.
func signInOver(t *testing.T, base, name, password string) string {
	t.Helper()
	form := url.Values{"name": {name}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, base+"/session", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("signing in as %s: %v", name, err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("signing in as %s: %s, no session cookie", name, resp.Status)
	return ""
}

// rolePage is a page as a person of one role sees it.
type rolePage struct {
	name, path, session string
}

// rolePages makes a viewer and a clerk (st; protected mode must be over)
// and returns their List and the order page (order id) as each sees it,
// and the viewer's own account page, their tokens and the page that shows
// a token made once.
func rolePages(t *testing.T, base string, st *redisstore.Store, order int64) []rolePage {
	t.Helper()
	var out []rolePage
	for _, role := range []store.Role{store.RoleViewer, store.RoleClerk} {
		name, r, pw := "a-"+string(role), string(role), "the "+string(role)+"'s password"
		u, err := st.CreateUser(context.Background(), store.UserInput{Name: &name, Role: &r, Password: &pw})
		if err != nil {
			t.Fatal(err)
		}
		s := signInOver(t, base, name, pw)
		out = append(out,
			rolePage{string(role) + "-list", "/orders", s},
			rolePage{string(role) + "-order", "/orders/" + strconv.FormatInt(order, 10), s},
			rolePage{string(role) + "-products", "/products", s})
		if role == store.RoleViewer {
			own := fmt.Sprintf("/users/%d", u.ID)
			if _, _, err := st.CreateToken(context.Background(), u.ID, "reports", store.RoleViewer); err != nil {
				t.Fatal(err)
			}
			out = append(out, rolePage{"viewer-own-account", own, s}, rolePage{"viewer-own-edit", own + "/edit", s},
				rolePage{"viewer-tokens", own + "/tokens", s})
		}
	}
	return out
}

// setSession gives the browser the session cookie secret for base.
func setSession(t *testing.T, e *env, secret string) {
	t.Helper()
	yes := true
	if _, err := chromedp.Call(e.ctx, network.SetCookie, network.SetCookieParams{Name: sessionCookie, Value: secret,
		URL: e.base, Path: "/", HTTPOnly: &yes}); err != nil {
		t.Fatalf("setting the session cookie: %v", err)
	}
}
