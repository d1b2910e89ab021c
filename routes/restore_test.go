package routes

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// flashOf is the notice cookie a response sets, as a Cookie header value.
func flashOf(t testing.TB, r *testutil.Resp) string {
	t.Helper()
	for _, c := range r.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, flashCookie+"=") && !strings.HasPrefix(c, flashCookie+"=;") {
			return strings.SplitN(c, ";", 2)[0]
		}
	}
	t.Fatalf("%s: no notice cookie in %v", r.What, r.Header.Values("Set-Cookie"))
	return ""
}

// TestEveryResourceUndoesADeleteThroughItsOwnURI: for every resource whose
// deletes can be undone, on every target, a delete in each representation
// offers Undo (the htmx row's notice and the page after a plain form's
// 303 carry a plain form that PUTs restore=1 to the member; JSON is told
// by the API), and a PUT of the member with restore brings it back as
// JSON (its next version, an ETag, a "restored" history entry), as htmx
// (its page, pushed as the address) and as a plain form (303 to it). A
// second restore is 409; an id with nothing deleted is 404; a restore
// with other fields, or another value, is 400 and restores nothing.
func TestEveryResourceUndoesADeleteThroughItsOwnURI(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for _, s := range resourceSuites() {
			if !s.R.Restores {
				continue
			}
			t.Run(s.R.Plural, func(t *testing.T) {
				m := s.create(t, a, 7)
				_, before := s.fetch(t, a, m.ID)
				member := s.R.MemberPath(m.ID)

				// JSON.
				a.do(t, http.MethodDelete, member, testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
				a.get(t, member, testutil.HJSON).WantStatus(t, http.StatusNotFound)
				a.do(t, http.MethodPut, member, testutil.JSON(map[string]any{"restore": true, s.field: "sneaked in"}), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
				a.do(t, http.MethodPut, member, testutil.JSON(map[string]any{"restore": false}), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
				a.get(t, member, testutil.HJSON).WantStatus(t, http.StatusNotFound)
				r := a.do(t, http.MethodPut, member, testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).WantStatus(t, http.StatusOK)
				if r.Header.Get("ETag") == "" {
					t.Errorf("%s: no ETag", r.What)
				}
				got, after := s.fetch(t, a, m.ID)
				if got.Version != 2 || after[s.field] != before[s.field] || after["created_at"] != before["created_at"] {
					t.Errorf("restored %v, want %v at version 2", after, before)
				}
				h := s.history(t, a, s.R.HistoryPath(m.ID), testutil.HJSON)
				if len(h.Entries) != 3 || h.Entries[0].Action != store.ActionRestored || h.Entries[0].Version != 2 || h.Entries[1].Action != store.ActionDeleted {
					t.Errorf("history after the restore: %+v, want restored (v2), deleted, created", h.Entries)
				}
				a.do(t, http.MethodPut, member, testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).
					WantStatus(t, http.StatusConflict).WantContains(t, "not deleted")
				a.do(t, http.MethodPut, s.R.MemberPath(987654), testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).
					WantStatus(t, http.StatusNotFound).WantContains(t, "no deleted "+s.R.Name)

				// htmx, from the List's row: the notice offers Undo.
				r = a.do(t, http.MethodDelete, member+"?version=2", testutil.NoBody, s.row(m.ID)).WantStatus(t, http.StatusOK)
				r.WantContains(t, `hx-put="`+member+`"`, `name="restore" value="1"`, `name="_method" value="PUT"`, ">Undo<")
				a.do(t, http.MethodPut, member, testutil.Form("restore", "yes"), testutil.HXTo("main#main")).WantStatus(t, http.StatusBadRequest)
				r = a.do(t, http.MethodPut, member, testutil.Form("_method", "PUT", "restore", "1"), testutil.HXTo("main#main")).
					WantStatus(t, http.StatusOK).WantHeader(t, "HX-Push-Url", member).WantContains(t, s.R.Named(m.ID)+" restored.")
				r.WantFragment(t, s.show)

				// A plain form: the 303's flash carries the Undo to the List.
				r = a.do(t, http.MethodPost, member, testutil.Form("_method", "DELETE", "version", "3"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
				a.get(t, s.R.Path(), testutil.HPage.With(testutil.H{"Cookie": flashOf(t, r)})).WantStatus(t, http.StatusOK).
					WantContains(t, s.R.Named(m.ID)+" deleted.", `action="`+member+`"`, `name="restore" value="1"`)
				a.do(t, http.MethodPost, member, testutil.Form("_method", "PUT", "restore", "1"), testutil.HPage).
					WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", member)
				if got, _ := s.fetch(t, a, m.ID); got.Version != 4 {
					t.Errorf("after the plain form's restore: version %d, want 4", got.Version)
				}

				// htmx from the record's own page: HX-Location to the List,
				// whose page shows the flash with its Undo.
				r = a.do(t, http.MethodDelete, member+"?version=4", testutil.NoBody, testutil.HXTo("main#main")).
					WantStatus(t, http.StatusOK).WantHeader(t, "HX-Location", s.R.Path())
				a.get(t, s.R.Path(), testutil.HPage.With(testutil.H{"Cookie": flashOf(t, r)})).WantStatus(t, http.StatusOK).
					WantContains(t, `hx-put="`+member+`"`, ">Undo<")
				a.do(t, http.MethodPut, member, testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).WantStatus(t, http.StatusOK)
			})
		}
	})
}

// TestAFlashCookieOffersUndoOnlyForAMemberOfAResourceThatRestores: the
// notice cookie comes from the browser, so its Undo path is checked: a
// path of no such member, or of people (whose deletes are final), shows
// no Undo control.
func TestAFlashCookieOffersUndoOnlyForAMemberOfAResourceThatRestores(t *testing.T) {
	for raw, want := range map[string]string{
		"success|/orders/7:Order 7 deleted.":            "/orders/7",
		"success|/products/12:Product 12 deleted.":      "/products/12",
		"success|/users/2:User 2 deleted.":              "",
		"success|/orders/07:x":                          "",
		"success|/orders/7/edit:x":                      "",
		"success|//evil.example/orders/7:x":             "",
		"success|javascript:alert(1)/orders/7:x":        "",
		"success|/orders/99999999999999999999:x":        "",
		"success:Order 7 deleted.":                      "",
		"warning|/customers/3:Customer 3 deleted.":      "/customers/3",
		"bogus|/orders/7:Order 7 deleted.":              "",
		"success|/orders/7|/orders/8:Order 7 deleted.":  "",
		"success|/orders/7\" onmouseover=\"x:Order 7 x": "",
	} {
		n := decodeFlash(raw)
		if n.Undo != want {
			t.Errorf("decodeFlash(%q).Undo = %q, want %q", raw, n.Undo, want)
		}
		if want != "" && decodeFlash(encodeFlash(n)).Undo != want {
			t.Errorf("encodeFlash then decodeFlash loses the Undo of %q", raw)
		}
	}
}

// TestRestoreTakesTheRightToDelete: a clerk, who may change orders but not
// delete them, cannot restore one (403, still deleted); a viewer neither;
// a manager can, and the clerk still changes orders. People's deletes are final: an admin's restore of a
// deleted account is refused (422) and makes nothing.
func TestRestoreTakesTheRightToDelete(t *testing.T) {
	a := newRightsApp(t)
	o := a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada", "items": []any{item("Mug", 1, "1.00")}}),
		a.as(store.RoleClerk, testutil.HJSON)).WantStatus(t, http.StatusCreated)
	var m memberJSON
	o.JSON(t, &m)
	a.do(t, http.MethodDelete, path(m.ID), testutil.NoBody, a.as(store.RoleManager, testutil.HJSON)).WantStatus(t, http.StatusNoContent)
	for _, role := range []store.Role{store.RoleViewer, store.RoleClerk} {
		for _, rp := range rightsReprs {
			b := testutil.Form("restore", "1")
			method := http.MethodPut
			if rp.name == "json" {
				b = testutil.JSON(map[string]any{"restore": true})
			} else if rp.name == "page" {
				method, b = http.MethodPost, testutil.Form("_method", "PUT", "restore", "1")
			}
			r := a.do(t, method, path(m.ID), b, a.as(role, rp.h))
			wantForbidden(t, r, rp.name, store.RoleManager)
			a.get(t, path(m.ID), a.as(store.RoleManager, testutil.HJSON)).WantStatus(t, http.StatusNotFound)
		}
	}
	a.do(t, http.MethodPut, path(m.ID), testutil.JSON(map[string]any{"restore": true}), a.as(store.RoleManager, testutil.HJSON)).WantStatus(t, http.StatusOK)
	// A clerk still changes orders: a restore's right is its own request's.
	a.do(t, http.MethodPut, path(m.ID), testutil.JSON(map[string]any{"notes": "after the undo"}), a.as(store.RoleClerk, testutil.HJSON)).WantStatus(t, http.StatusOK)

	u := addAccount(t, a.store, "leaving", store.RoleViewer)
	a.do(t, http.MethodDelete, "/users/"+itoa(u.ID), testutil.NoBody, a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusNoContent)
	a.do(t, http.MethodPut, "/users/"+itoa(u.ID), testutil.JSON(map[string]any{"restore": true}), a.as(store.RoleAdmin, testutil.HJSON)).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "cannot be restored")
	a.get(t, "/users/"+itoa(u.ID), a.as(store.RoleAdmin, testutil.HJSON)).WantStatus(t, http.StatusNotFound)
	if r := a.do(t, http.MethodDelete, "/users/"+itoa(a.user[store.RoleViewer].ID)+"?version=1", testutil.NoBody, a.as(store.RoleAdmin, testutil.HXTo("tr#user-row-"+itoa(a.user[store.RoleViewer].ID)))); strings.Contains(r.Body, "restore") {
		t.Errorf("a person's delete offers Undo: %s", testutil.Snippet(r.Body))
	}
}

// TestRestoreAfterTheUndoWindowIsGone: ten minutes after the delete a
// restore is 410 with a message saying so, in JSON and as a page, and
// nothing comes back; a product whose SKU was taken meanwhile is 422
// naming the holder.
func TestRestoreAfterTheUndoWindowIsGone(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	a := newTestApp(t, "miniredis", redisstore.New(c, redisstore.Options{}))
	o := a.create(t, map[string]any{"customer": "Late", "items": []any{item("Mug", 1, "1.00")}})
	a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
	mr.FastForward(store.UndoWindow + time.Second)
	a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).
		WantStatus(t, http.StatusGone).WantContains(t, "more than 10 minutes ago", "can no longer be restored")
	a.do(t, http.MethodPost, path(o.ID), testutil.Form("_method", "PUT", "restore", "1"), testutil.HPage).
		WantStatus(t, http.StatusGone).WantContains(t, "can no longer be restored")
	a.wantGone(t, o.ID)

	p := a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": "LAMP-1", "name": "Lamp", "unit_price": "45.00"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
	var pm memberJSON
	p.JSON(t, &pm)
	a.do(t, http.MethodDelete, "/products/"+itoa(pm.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
	q := a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": "lamp-1", "name": "Other lamp", "unit_price": "9.00"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
	var qm memberJSON
	q.JSON(t, &qm)
	a.do(t, http.MethodPut, "/products/"+itoa(pm.ID), testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "cannot be restored", "product "+itoa(qm.ID))
	a.get(t, "/products/"+itoa(pm.ID), testutil.HJSON).WantStatus(t, http.StatusNotFound)
}

// TestAnUndoOnOneInstanceOfADeleteOnAnother: two instances sharing only
// Redis: a delete through one is undone through the other, and the first
// reads the order back whole.
func TestAnUndoOnOneInstanceOfADeleteOnAnother(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			second := testutil.SecondClient(t, tg)
			prefix := tg.Prefix + "undo" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
			a := newTestApp(t, tg.Name+"-a", redisstore.New(tg.Client, redisstore.Options{Prefix: prefix, Cluster: tg.Cluster}))
			b := newTestApp(t, tg.Name+"-b", redisstore.New(second, redisstore.Options{Prefix: prefix, Cluster: tg.Cluster}))
			o := a.create(t, map[string]any{"customer": "Shared Customer", "status": "pending", "items": []any{item("Mug", 2, "1.50"), item("Tee", 1, "19.99")}})
			o = a.update(t, o.ID, map[string]any{"status": "confirmed", "version": 1})
			a.do(t, http.MethodDelete, path(o.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
			b.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"restore": true}), testutil.HJSON).WantStatus(t, http.StatusOK)
			got := a.fetch(t, o.ID)
			if got.Status != "confirmed" || got.Total != o.Total || len(got.Items) != 2 || got.Version != o.Version+1 {
				t.Errorf("instance a reads %+v after b restored %+v", got, o)
			}
		})
	}
}
