package routes

// History and notes, over every resource of
// resourceSuites: one entry per successful write, newest first, saying
// who, how and what changed; pages of 25 by cursor; the history of a
// deleted record; notes in every representation; the record's page,
// whose ETag follows its history.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// historyPageJSON is GET <member>/history as JSON.
type historyPageJSON struct {
	Entries []entryJSON `json:"entries"`
	Next    *string     `json:"next"`
}

// entryJSON is one history entry as JSON says it.
type entryJSON struct {
	Cursor  string `json:"cursor"`
	Version int64  `json:"version"`
	At      string `json:"at"`
	Actor   string `json:"actor"`
	Via     string `json:"via"`
	Action  string `json:"action"`
	Changes map[string]struct {
		From any `json:"from"`
		To   any `json:"to"`
	} `json:"changes"`
	Items *struct {
		Added   []itemJSON `json:"added"`
		Removed []itemJSON `json:"removed"`
		Changed []struct {
			From itemJSON `json:"from"`
			To   itemJSON `json:"to"`
		} `json:"changed"`
	} `json:"items"`
	Note string `json:"note"`
}

// wantEntry is what one entry must say: changes as name → [from, to]
// (from nil: none), items as "Name qty×price" strings.
type wantEntry struct {
	action  string
	version int64
	changes map[string][2]any
	added   []string
	removed []string
	changed []string // "Widget 2×1.50 → Widget 3×1.50"
	note    string
}

func (e entryJSON) String() string {
	added, removed, changed := e.items()
	return fmt.Sprintf("%s v%d by %s via %s at %s, changes %v, items added %v removed %v changed %v, note %q",
		e.Action, e.Version, e.Actor, e.Via, e.At, e.changes(), added, removed, changed, e.Note)
}

func (e entryJSON) changes() map[string][2]any {
	out := map[string][2]any{}
	for k, c := range e.Changes {
		out[k] = [2]any{c.From, c.To}
	}
	return out
}

func itemWords(it itemJSON) string {
	return fmt.Sprintf("%s %d×%s", it.Name, it.Quantity, it.UnitPrice)
}

func (e entryJSON) items() (added, removed, changed []string) {
	if e.Items == nil {
		return nil, nil, nil
	}
	for _, it := range e.Items.Added {
		added = append(added, itemWords(it))
	}
	for _, it := range e.Items.Removed {
		removed = append(removed, itemWords(it))
	}
	for _, c := range e.Items.Changed {
		changed = append(changed, itemWords(c.From)+" → "+itemWords(c.To))
	}
	return added, removed, changed
}

// check fails unless e says what w says, by actor via via.
func (w wantEntry) check(t testing.TB, what string, e entryJSON, actor, via string) {
	t.Helper()
	added, removed, changed := e.items()
	changes := e.changes()
	if len(changes) == 0 {
		changes = nil
	}
	var want map[string][2]any
	if len(w.changes) > 0 {
		want = w.changes
	}
	if e.Action != w.action || e.Version != w.version || e.Actor != actor || e.Via != via || e.Note != w.note ||
		!reflect.DeepEqual(changes, want) || !reflect.DeepEqual(added, w.added) ||
		!reflect.DeepEqual(removed, w.removed) || !reflect.DeepEqual(changed, w.changed) {
		t.Errorf("%s: got entry %v;\nwant %s v%d by %s via %s, changes %v, items added %v removed %v changed %v, note %q",
			what, e, w.action, w.version, actor, via, want, w.added, w.removed, w.changed, w.note)
	}
	if !strings.HasSuffix(e.At, "Z") || e.Cursor == "" {
		t.Errorf("%s: entry %v has at %q and cursor %q, want an RFC 3339 UTC time and a cursor", what, e, e.At, e.Cursor)
	}
}

// history reads a page of a history (target) as JSON (the whole
// object too: "next" must be there, null or a URL).
func (s *suiteResource) history(t testing.TB, a *testApp, target string, h testutil.H) historyPageJSON {
	t.Helper()
	r := a.get(t, target, testutil.HJSON.With(h)).WantStatus(t, http.StatusOK).WantNegotiated(t)
	obj := r.Object(t)
	if _, ok := obj["next"]; !ok {
		t.Errorf("%s: JSON keys %v, want next (null or a URL) among them", r.What, keys(obj))
	}
	if entries, ok := obj["entries"].([]any); !ok || entries == nil {
		t.Errorf("%s: entries is %v, want a list", r.What, obj["entries"])
	}
	var p historyPageJSON
	r.JSON(t, &p)
	return p
}

// sessionStep is one write of a scripted session and the entry it must
// add (nil: none).
type sessionStep struct {
	name   string
	method string
	body   map[string]any // JSON; for a note, {"note": ...}
	// entry: a create's without changes lists the created record's
	// fields that hold a value (each from none).
	entry *wantEntry
}

// session is the resource's scripted session, or for a resource without
// one the session its Example makes: create, its field changed, a PUT
// that changes nothing, a note, a delete.
func (s *suiteResource) session() []sessionStep {
	if steps, ok := sessions[s.R.Plural]; ok {
		return steps
	}
	old := s.body(1)[s.field]
	return []sessionStep{
		{"create", http.MethodPost, s.body(1), &wantEntry{action: "created", version: 1}},
		{"a field", http.MethodPut, map[string]any{s.field: "Changed in a session", "version": 1},
			&wantEntry{action: "updated", version: 2, changes: map[string][2]any{s.field: {old, "Changed in a session"}}}},
		{"nothing", http.MethodPut, map[string]any{s.field: "Changed in a session", "version": 2}, nil},
		{"note", http.MethodPost, map[string]any{"note": "A note in a session."}, &wantEntry{action: "note", version: 2, note: "A note in a session."}},
		{"delete", http.MethodDelete, nil, &wantEntry{action: "deleted", version: 2}},
	}
}

// sessionLines are what the history page of the session says, newest first.
func (s *suiteResource) sessionLines(actor string) []string {
	if _, scripted := sessions[s.R.Plural]; !scripted {
		return []string{"Deleted by " + actor + " through the API · version 2", "A note in a session.",
			fmt.Sprintf("%s: %v → Changed in a session", s.label, s.body(1)[s.field]), "Created by " + actor + " through the API · version 1"}
	}
	switch s.R.Plural {
	case "orders":
		return []string{"Deleted by anonymous through the API · version 4", "Called Ada: she wants it by Friday.",
			"Status: Pending → Confirmed", "Added 1 × Gear at 9.99", "Removed 1 × Tape (TP-1) at 3.00",
			"Changed 2 × Widget at 1.50 to 3 × Widget at 1.50", "Customer: Ada → Ada Lovelace",
			"Created by anonymous through the API · version 1", "Status: Pending Customer: Ada Email: ada@example.com Currency: USD",
			"Added 2 × Widget at 1.50 Added 1 × Tape (TP-1) at 3.00"}
	case "products":
		return []string{"Deleted by anonymous through the API · version 3", "Supplier raised the price.",
			"Unit price: 19.99 → 21.00 Active: yes → no", "Name: Tee → Tee shirt",
			"Created by anonymous through the API · version 1", "SKU: TEE-1 Name: Tee Unit price: 19.99 Currency: USD Active: yes"}
	}
	return nil
}

// created is the entry a create without scripted changes adds: every
// field of the record that holds a value, each from none, and its rows
// added.
func (s *suiteResource) created(t testing.TB, e wantEntry, r *testutil.Resp) wantEntry {
	t.Helper()
	var rec map[string]json.RawMessage
	r.JSON(t, &rec)
	e.changes = map[string][2]any{}
	for _, f := range s.api.Fields {
		var v any
		if raw, ok := rec[f.Name]; !ok || f.Kind == kindVersion {
			if s.people() && f.Name == "password" && !ok {
				// A password is never shown, but its history says it
				// was set.
				e.changes[f.Name] = [2]any{nil, "set"}
			}
			continue
		} else if f.Kind == kindRows {
			var rows []itemJSON
			_ = json.Unmarshal(raw, &rows)
			for _, it := range rows {
				e.added = append(e.added, itemWords(it))
			}
		} else if _ = json.Unmarshal(raw, &v); v != nil && v != "" {
			e.changes[f.Name] = [2]any{nil, v}
		}
	}
	return e
}

// sessions are the scripted sessions of each resource: create, a field
// changed, what else the resource changes (items and status; price and
// active), a PUT that changes nothing, a note, a delete.
var sessions = map[string][]sessionStep{
	"orders": {
		{"create", http.MethodPost, map[string]any{"customer": "Ada", "email": "ada@example.com",
			"items": []any{item("Widget", 2, "1.50"), map[string]any{"sku": "TP-1", "name": "Tape", "quantity": 1, "unit_price": "3.00"}}},
			&wantEntry{action: "created", version: 1,
				changes: map[string][2]any{"customer": {nil, "Ada"}, "email": {nil, "ada@example.com"}, "status": {nil, "pending"}, "currency": {nil, "USD"}},
				added:   []string{"Widget 2×1.50", "Tape 1×3.00"}}},
		{"a field", http.MethodPut, map[string]any{"customer": "Ada Lovelace", "version": 1},
			&wantEntry{action: "updated", version: 2, changes: map[string][2]any{"customer": {"Ada", "Ada Lovelace"}}}},
		{"items", http.MethodPut, map[string]any{"items": []any{item("Widget", 3, "1.50"), item("Gear", 1, "9.99")}, "version": 2},
			&wantEntry{action: "updated", version: 3, added: []string{"Gear 1×9.99"}, removed: []string{"Tape 1×3.00"},
				changed: []string{"Widget 2×1.50 → Widget 3×1.50"}}},
		{"status", http.MethodPut, map[string]any{"status": "confirmed", "version": 3},
			&wantEntry{action: "updated", version: 4, changes: map[string][2]any{"status": {"pending", "confirmed"}}}},
		{"nothing", http.MethodPut, map[string]any{"customer": "Ada Lovelace", "status": "confirmed", "version": 4}, nil},
		{"note", http.MethodPost, map[string]any{"note": "Called Ada:\nshe wants it by Friday."},
			&wantEntry{action: "note", version: 4, note: "Called Ada:\nshe wants it by Friday."}},
		{"delete", http.MethodDelete, nil, &wantEntry{action: "deleted", version: 4}},
	},
	"products": {
		{"create", http.MethodPost, map[string]any{"sku": "TEE-1", "name": "Tee", "unit_price": "19.99"},
			&wantEntry{action: "created", version: 1,
				changes: map[string][2]any{"sku": {nil, "TEE-1"}, "name": {nil, "Tee"}, "unit_price": {nil, "19.99"}, "currency": {nil, "USD"}, "active": {nil, true}}}},
		{"a field", http.MethodPut, map[string]any{"name": "Tee shirt", "version": 1},
			&wantEntry{action: "updated", version: 2, changes: map[string][2]any{"name": {"Tee", "Tee shirt"}}}},
		{"price and active", http.MethodPut, map[string]any{"unit_price": "21.00", "active": false, "version": 2},
			&wantEntry{action: "updated", version: 3, changes: map[string][2]any{"unit_price": {"19.99", "21.00"}, "active": {true, false}}}},
		{"nothing", http.MethodPut, map[string]any{"name": "Tee shirt", "unit_price": "21", "active": false, "version": 3}, nil},
		{"note", http.MethodPost, map[string]any{"note": "Supplier raised the price."},
			&wantEntry{action: "note", version: 3, note: "Supplier raised the price."}},
		{"delete", http.MethodDelete, nil, &wantEntry{action: "deleted", version: 3}},
	},
}

// noteAdders add a note to a record through the store (a test fills a
// history with notes faster than HTTP could); a resource's own test file
// adds its entry.
var noteAdders = map[string]func(*redisstore.Store, context.Context, int64, string) (*store.HistoryEntry, error){
	"orders":   (*redisstore.Store).AddOrderNote,
	"products": (*redisstore.Store).AddProductNote,
}

// sessionPages are what each resource's history page says after its
// session, newest first.
var sessionPages = map[string][]string{
	"orders": {"Deleted by anonymous through the API · version 4", "Called Ada: she wants it by Friday.",
		"Status: Pending → Confirmed", "Added 1 × Gear at 9.99", "Removed 1 × Tape (TP-1) at 3.00",
		"Changed 2 × Widget at 1.50 to 3 × Widget at 1.50", "Customer: Ada → Ada Lovelace",
		"Created by anonymous through the API · version 1", "Status: Pending Customer: Ada Email: ada@example.com Currency: USD",
		"Added 2 × Widget at 1.50 Added 1 × Tape (TP-1) at 3.00"},
	"products": {"Deleted by anonymous through the API · version 3", "Supplier raised the price.",
		"Unit price: 19.99 → 21.00 Active: yes → no", "Name: Tee → Tee shirt",
		"Created by anonymous through the API · version 1", "SKU: TEE-1 Name: Tee Unit price: 19.99 Currency: USD Active: yes"},
}

// runSession runs the resource's scripted session in JSON and returns the
// member's id and the entries it must have added, newest first.
func (s *suiteResource) runSession(t *testing.T, a *testApp, h testutil.H) (int64, []wantEntry) {
	t.Helper()
	var id int64
	var want []wantEntry
	for _, step := range s.session() {
		target := s.R.Path()
		switch {
		case step.body["note"] != nil:
			target = s.R.HistoryPath(id)
		case step.method != http.MethodPost:
			target = s.R.MemberPath(id)
		}
		body := testutil.NoBody
		if step.body != nil {
			body = testutil.JSON(step.body)
		}
		r := a.do(t, step.method, target, body, testutil.HJSON.With(h))
		if r.Status >= 300 {
			t.Fatalf("step %q: %s answered %d: %s", step.name, r.What, r.Status, testutil.Snippet(r.Body))
		}
		if id == 0 {
			var m memberJSON
			r.JSON(t, &m)
			id = m.ID
		}
		if step.entry != nil {
			e := *step.entry
			if e.action == "created" && e.changes == nil {
				e = s.created(t, e, r)
			}
			want = append([]wantEntry{e}, want...)
		}
		// After every step the history holds exactly the entries so far.
		got := s.history(t, a, s.R.HistoryPath(id), h).Entries
		if len(got) != len(want) {
			t.Fatalf("after step %q: %d entries, want %d:\n%v", step.name, len(got), len(want), got)
		}
	}
	return id, want
}

// TestHistoryOfASession: a scripted session in JSON (create, a field,
// the items and the status of an order or the price and active of a
// product, a PUT that changes nothing, a note, a delete) leaves exactly
// one entry per step that did something, newest first, each with its
// action, version, actor and via and what changed; the history page says
// the same in words, and still answers after the delete.
func TestHistoryOfASession(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		id, want := s.runSession(t, a, nil)
		got := s.history(t, a, s.R.HistoryPath(id), nil)
		if len(got.Entries) != len(want) {
			t.Fatalf("%d entries, want %d:\n%v", len(got.Entries), len(want), got.Entries)
		}
		for i, w := range want {
			w.check(t, fmt.Sprintf("entry %d", i), got.Entries[i], a.actor(), "api")
		}
		if got.Next != nil {
			t.Errorf("next is %q, want null: every entry is on the first page", *got.Next)
		}
		// The page says it in words, newest first.
		r := a.get(t, s.R.HistoryPath(id), testutil.HPage).WantStatus(t, http.StatusOK).WantNegotiated(t).WantPage(t, s.R.Name+"-history-page")
		text := plainText(r.Body)
		lines := s.sessionLines(a.actor())
		last := -1
		for _, l := range lines {
			i := strings.Index(text, l)
			if i < 0 {
				t.Errorf("%s: the page does not say %q; it says:\n%s", r.What, l, text)
				continue
			}
			if i < last {
				t.Errorf("%s: %q comes before what the newer entries say, want newest first:\n%s", r.What, l, text)
			}
			last = i
		}
		r.WantContains(t, s.R.Title+" "+itoa(id)+" has been deleted").WantLacks(t, `name="note"`)
		// The fragment is the same history.
		a.get(t, s.R.HistoryPath(id), testutil.HHX).WantStatus(t, http.StatusOK).WantFragment(t, s.R.Name+"-history-page").
			WantContains(t, "Created by "+a.actor())
	})
}

// TestHistoryActor: the actor is the person (anonymous in protected
// mode); via is "api" for a JSON request and "web" for a page's request (a
// plain form or htmx), whatever the body's media type, and token:<name>
// for any request with a token.
func TestHistoryActor(t *testing.T) {
	for _, c := range []struct {
		name, actor string
		// auth makes the person (none in protected mode) and gives the
		// header their requests carry; token is the token's name ("" : none).
		auth  func(t *testing.T, a *testApp) testutil.H
		token string
	}{
		{"anonymous", "anonymous", func(*testing.T, *testApp) testutil.H { return testutil.H{} }, ""},
		// Admins: they write every resource, accounts too.
		{"signed in", "ada", func(t *testing.T, a *testApp) testutil.H {
			addAccount(t, a.store, "admin", store.RoleAdmin)
			addAccount(t, a.store, "ada", store.RoleAdmin)
			return as(a.signIn(t, "ada"), testutil.H{})
		}, ""},
		{"a token", "ada", func(t *testing.T, a *testApp) testutil.H {
			addAccount(t, a.store, "admin", store.RoleAdmin)
			u := addAccount(t, a.store, "ada", store.RoleAdmin)
			_, secret, err := a.store.CreateToken(context.Background(), u.ID, "till", store.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			return bearer(secret, testutil.H{})
		}, "till"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range resourceSuites() {
				t.Run(s.R.Plural, func(t *testing.T) {
					if c.actor == "anonymous" && s.people() {
						// The first account ends protected mode: past it no
						// write is anonymous.
						t.Skip("accounts end protected mode")
					}
					tg := testutil.Miniredis(t)
					a := newTestApp(t, tg.Name, testutil.NewStore(t, tg))
					auth := c.auth(t, a)
					api, web := "api", "web"
					if c.token != "" {
						api, web = "token:"+c.token, "token:"+c.token
					}
					// The whole session in JSON: every entry by the actor through the API.
					id, want := s.runSession(t, a, auth)
					got := s.history(t, a, s.R.HistoryPath(id), auth)
					for i, w := range want {
						w.check(t, fmt.Sprintf("entry %d", i), got.Entries[i], c.actor, api)
					}
					// From the pages: a plain form (urlencoded and multipart) and htmx.
					m := a.do(t, http.MethodPost, s.R.Path(), testutil.Form(s.formBody(2)...), testutil.HPage.With(auth)).WantStatus(t, http.StatusSeeOther)
					loc := m.Header.Get("Location")
					id2, _ := store.ParseID(strings.TrimPrefix(loc, s.R.Path()+"/"))
					a.do(t, http.MethodPost, s.R.MemberPath(id2), testutil.Multipart("_method", "PUT", s.field, "By a plain form", "version", "1"), testutil.HPage.With(auth)).
						WantStatus(t, http.StatusSeeOther)
					a.do(t, http.MethodPut, s.R.MemberPath(id2), testutil.Form(s.field, "By htmx", "version", "2"), testutil.HXTo("main#main").With(auth)).
						WantStatus(t, http.StatusOK)
					a.do(t, http.MethodPost, s.R.HistoryPath(id2), testutil.Form("note", "A note from htmx"), testutil.HXTo("section#"+s.R.HistoryID()).With(auth)).
						WantStatus(t, http.StatusCreated)
					a.do(t, http.MethodPost, s.R.HistoryPath(id2), testutil.Form("note", "A note from a plain form"), testutil.HPage.With(auth)).
						WantStatus(t, http.StatusSeeOther)
					// A JSON answer to a form body is the API's.
					a.do(t, http.MethodPost, s.R.HistoryPath(id2), testutil.Form("note", "A form body, a JSON answer"), testutil.HJSON.With(auth)).
						WantStatus(t, http.StatusCreated)
					got = s.history(t, a, s.R.HistoryPath(id2), auth)
					wantVia := []string{api, web, web, web, web, web}
					wantAction := []string{"note", "note", "note", "updated", "updated", "created"}
					if len(got.Entries) != len(wantVia) {
						t.Fatalf("%d entries, want %d: %v", len(got.Entries), len(wantVia), got.Entries)
					}
					for i, e := range got.Entries {
						if e.Actor != c.actor || e.Via != wantVia[i] || e.Action != wantAction[i] {
							t.Errorf("entry %d: %v, want %s by %s via %s", i, e, wantAction[i], c.actor, wantVia[i])
						}
					}
					onWeb, throughAPI := " on the web", " through the API"
					if c.token != "" {
						onWeb, throughAPI = " with the token "+c.token, " with the token "+c.token
					}
					a.get(t, s.R.HistoryPath(id2), testutil.HPage.With(auth)).
						WantContains(t, "Note by "+c.actor+onWeb, "Changed by "+c.actor+onWeb+" · version 3", "Note by "+c.actor+throughAPI)
				})
			}
		})
	}
}

// TestHistoryPages: 25 entries a page, newest first; next is the URL of
// the older ones (before=<cursor>), and the last page has none; the page
// and the fragment link to the same URL; a malformed before is a 400 in
// every representation, a well-formed one past the oldest entry an empty
// page.
func TestHistoryPages(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		for i := range 29 {
			a.do(t, http.MethodPost, s.R.HistoryPath(m.ID), testutil.JSON(map[string]any{"note": fmt.Sprintf("Note %02d", i+1)}), testutil.HJSON).
				WantStatus(t, http.StatusCreated)
		}
		// 30 entries: the create and 29 notes.
		first := s.history(t, a, s.R.HistoryPath(m.ID), nil)
		if len(first.Entries) != store.HistoryPerPage || first.Next == nil {
			t.Fatalf("first page: %d entries and next %v, want %d and a URL", len(first.Entries), first.Next, store.HistoryPerPage)
		}
		if first.Entries[0].Note != "Note 29" || first.Entries[24].Note != "Note 05" {
			t.Errorf("first page runs from %q to %q, want Note 29 to Note 05 (newest first)", first.Entries[0].Note, first.Entries[24].Note)
		}
		next, err := url.Parse(*first.Next)
		if err != nil || next.Path != s.R.HistoryPath(m.ID) || next.Query().Get("before") != first.Entries[24].Cursor {
			t.Fatalf("next is %q, want %s?before=<the last entry's cursor %s>", *first.Next, s.R.HistoryPath(m.ID), first.Entries[24].Cursor)
		}
		second := s.history(t, a, *first.Next, nil)
		if len(second.Entries) != 5 || second.Next != nil {
			t.Fatalf("second page: %d entries, next %v; want the 5 older ones and no next", len(second.Entries), second.Next)
		}
		if second.Entries[0].Note != "Note 04" || second.Entries[4].Action != "created" {
			t.Errorf("second page: %v, want Note 04 to the create", second.Entries)
		}
		seen := map[string]bool{}
		for _, e := range append(first.Entries, second.Entries...) {
			if seen[e.Cursor] {
				t.Errorf("cursor %s on both pages", e.Cursor)
			}
			seen[e.Cursor] = true
		}
		// The page and the fragment link to the same older entries.
		href := `href="` + strings.ReplaceAll(*first.Next, "&", "&amp;") + `"`
		a.get(t, s.R.HistoryPath(m.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, s.R.Name+"-history-page").
			WantContains(t, href, "Note 05").WantLacks(t, "Note 04")
		a.get(t, s.R.HistoryPath(m.ID), testutil.HHX).WantStatus(t, http.StatusOK).WantFragment(t, s.R.Name+"-history-page").WantContains(t, href)
		older := a.get(t, *first.Next, testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "Note 04", "older entries").WantLacks(t, "Note 05", `rel="next"`)
		if strings.Count(older.Body, `class="entry entry-`) != 5 {
			t.Errorf("%s: %d entries, want 5", older.What, strings.Count(older.Body, `class="entry entry-`))
		}
		// Before the oldest entry: an empty page, not an error.
		if p := s.history(t, a, s.R.HistoryPath(m.ID)+"?before=1", nil); len(p.Entries) != 0 || p.Next != nil {
			t.Errorf("before=1: %v, next %v; want no entries and no next", p.Entries, p.Next)
		}
		for _, bad := range []string{"abc", "0", "-1", "1.5", "1e3", "99999999999999999999", "%20x"} {
			target := s.R.HistoryPath(m.ID) + "?before=" + bad
			r := a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t)
			var e errorJSON
			r.JSON(t, &e)
			if !strings.Contains(e.Error, "before") || e.RequestID == "" {
				t.Errorf("%s: got %+v, want an error that names before, with a request id", r.What, e)
			}
			a.get(t, target, testutil.HPage).WantStatus(t, http.StatusBadRequest).WantNegotiated(t).WantPage(t, "error").WantContains(t, "before")
			a.get(t, target, testutil.HHX).WantStatus(t, http.StatusBadRequest).WantNegotiated(t).WantLacks(t, "<html")
		}
	})
}

// TestHistoryOfADeletedRecord: the history of a deleted record still
// answers, in every representation, and the page says it is deleted and
// offers no note form; a note on it is a 404 and adds nothing; an id
// never used is a 404, with or without a cursor.
func TestHistoryOfADeletedRecord(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		a.do(t, http.MethodDelete, s.R.MemberPath(m.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		p := s.history(t, a, s.R.HistoryPath(m.ID), nil)
		if len(p.Entries) != 2 || p.Entries[0].Action != "deleted" || p.Entries[1].Action != "created" {
			t.Fatalf("history of a deleted %s: %v, want deleted and created", s.R.Name, p.Entries)
		}
		for _, h := range []testutil.H{testutil.HPage, testutil.HHX} {
			r := a.get(t, s.R.HistoryPath(m.ID), h).WantStatus(t, http.StatusOK).WantNegotiated(t)
			r.WantContains(t, s.R.Title+" "+itoa(m.ID)+" has been deleted", "Deleted by "+a.actor()).WantLacks(t, `class="note-form"`, `name="note"`, `href="`+s.R.MemberPath(m.ID)+`"`)
		}
		for _, c := range []struct {
			h testutil.H
			b testutil.Body
		}{
			{testutil.HJSON, testutil.JSON(map[string]any{"note": "Too late"})},
			{testutil.HXTo("section#" + s.R.HistoryID()), testutil.Form("note", "Too late")},
			{testutil.HPage, testutil.Form("note", "Too late")},
			// An empty note on a deleted record: gone first.
			{testutil.HJSON, testutil.JSON(map[string]any{"note": ""})},
			{testutil.HXTo("section#" + s.R.HistoryID()), testutil.Form("note", "")},
		} {
			r := a.do(t, http.MethodPost, s.R.HistoryPath(m.ID), c.b, c.h).WantStatus(t, http.StatusNotFound).WantNegotiated(t)
			r.WantContains(t, s.R.Named(m.ID)+" was not found")
		}
		if p := s.history(t, a, s.R.HistoryPath(m.ID), nil); len(p.Entries) != 2 {
			t.Errorf("after notes on a deleted %s: %d entries, want 2", s.R.Name, len(p.Entries))
		}
		for _, target := range []string{s.R.HistoryPath(999), s.R.HistoryPath(999) + "?before=5", s.R.Path() + "/0/history", s.R.Path() + "/x/history"} {
			a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusNotFound).WantNegotiated(t)
			a.get(t, target, testutil.HPage).WantStatus(t, http.StatusNotFound).WantPage(t, "error")
			a.get(t, target, testutil.HHX).WantStatus(t, http.StatusNotFound).WantNegotiated(t)
		}
		a.do(t, http.MethodPost, s.R.HistoryPath(999), testutil.JSON(map[string]any{"note": "Nobody"}), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		s.wantCount(t, a, 0, "notes on missing ones")
	})
}

// TestNotes: a note is 1–2000 characters (after trimming; invisible
// characters alone are empty); JSON gets 201 with the entry and Location,
// htmx the timeline again (with the note, the textarea empty, a success
// notice), a plain form 303 back to the record's page and a flash; an
// invalid note is 422: errors.note in JSON, the form with the message and
// the typed text for htmx and a plain form. A note never changes the
// record or its version; from another origin it is refused.
func TestNotes(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		_, before := s.fetch(t, a, m.ID)
		hist := s.R.HistoryPath(m.ID)
		hx := testutil.HXTo("section#" + s.R.HistoryID())
		noteID := s.R.HistoryID() + "-note"

		t.Run("json", func(t *testing.T) {
			r := a.do(t, http.MethodPost, hist, testutil.JSON(map[string]any{"note": "  First note  "}), testutil.HJSON).WantStatus(t, http.StatusCreated).WantNegotiated(t)
			r.WantHeader(t, "Location", hist)
			var e entryJSON
			r.JSON(t, &e)
			wantEntry{action: "note", version: 1, note: "First note"}.check(t, r.What, e, a.actor(), "api")
			long := strings.Repeat("é", store.MaxNote)
			r = a.do(t, http.MethodPost, hist, testutil.JSON(map[string]any{"note": long}), testutil.HJSON).WantStatus(t, http.StatusCreated)
			r.JSON(t, &e)
			if e.Note != long {
				t.Errorf("%s: a note of %d characters came back as %d", r.What, store.MaxNote, len([]rune(e.Note)))
			}
			a.do(t, http.MethodPost, hist, testutil.JSON(map[string]any{"note": "x"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
		})
		t.Run("htmx", func(t *testing.T) {
			r := a.do(t, http.MethodPost, hist, testutil.Form("note", "Second <note> & more"), hx).WantStatus(t, http.StatusCreated).WantNegotiated(t)
			r.WantFragment(t, s.R.HistoryID()).WantLacks(t, `id="`+s.show+`"`)
			sec := elementByID(r.Body, s.R.HistoryID())
			if !strings.Contains(sec, "Second &lt;note&gt; &amp; more") {
				t.Errorf("%s: the timeline does not show the new note (escaped):\n%s", r.What, testutil.Snippet(sec))
			}
			if ta := textareaOf(r.Body, noteID); ta.content != "" || ta.invalid {
				t.Errorf("%s: the note's textarea is %+v, want it empty and valid after a note is added", r.What, ta)
			}
			wantNotice(t, r, noticeSuccess, "Note added to "+s.R.Name+" "+itoa(m.ID)+".")
		})
		t.Run("plain form", func(t *testing.T) {
			for _, b := range []testutil.Body{testutil.Form("note", "Third note"), testutil.Multipart("note", "Fourth note")} {
				r := a.do(t, http.MethodPost, hist, b, testutil.HPage).WantStatus(t, http.StatusSeeOther)
				r.WantHeader(t, "Location", s.R.MemberPath(m.ID)+"#"+s.R.HistoryID())
				if c := r.Header.Get("Set-Cookie"); !strings.Contains(c, flashCookie+"=") || !strings.Contains(c, "Note+added+to+"+s.R.Name+"+"+itoa(m.ID)) {
					t.Errorf("%s: Set-Cookie %q, want the flash notice", r.What, c)
				}
			}
			page := a.get(t, s.R.MemberPath(m.ID), testutil.HPage).WantStatus(t, http.StatusOK)
			sec := elementByID(page.Body, s.R.HistoryID())
			for _, want := range []string{"Fourth note", "Third note", "Second &lt;note&gt;", "x"} {
				if !strings.Contains(sec, want) {
					t.Errorf("%s: the timeline lacks %q:\n%s", page.What, want, testutil.Snippet(sec))
				}
			}
			// The latest five: the create is on the history page only.
			if n := strings.Count(sec, `class="entry entry-`); n != timelineLength {
				t.Errorf("%s: the timeline shows %d entries, want the latest %d", page.What, n, timelineLength)
			}
			if !strings.Contains(sec, `href="`+hist+`"`) || strings.Contains(sec, "Created by") {
				t.Errorf("%s: the timeline of 7 entries should show 5 and link to the whole history:\n%s", page.What, testutil.Snippet(sec))
			}
		})
		t.Run("invalid", func(t *testing.T) {
			before := s.history(t, a, hist, nil).Entries
			for _, c := range []struct {
				name, note, msg string
			}{
				{"empty", "", "is required"},
				{"blank", " \n\t ", "is required"},
				{"invisible", "\u200b\ufeff", "is required"},
				{"too long", strings.Repeat("n", store.MaxNote+1), "must be at most 2000 characters"},
				{"bidi override", "abc\u202edef", "must not contain bidirectional override"},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := a.do(t, http.MethodPost, hist, testutil.JSON(map[string]any{"note": c.note}), testutil.HJSON).
						WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
					var e errorJSON
					r.JSON(t, &e)
					if !strings.Contains(e.Errors["note"], c.msg) || e.RequestID == "" {
						t.Errorf("%s: got %+v, want errors.note saying %q", r.What, e, c.msg)
					}
					for _, mode := range []struct {
						name string
						h    testutil.H
						root string
					}{{"htmx", hx, s.R.HistoryID()}, {"plain form", testutil.HPage, s.show}} {
						r := a.do(t, http.MethodPost, hist, testutil.Form("note", c.note), mode.h).WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
						if mode.name == "htmx" {
							r.WantFragment(t, mode.root)
							if alert, _ := regionPartial(r.Body, "notice-alert"); !strings.Contains(alert, "The note was not added: it "+c.msg) {
								t.Errorf("%s: the alert region holds %q, want it to say the note was not added and why (%q)", r.What, alert, c.msg)
							}
						} else {
							// The record's page, with the form again.
							r.WantPage(t, mode.root).WantContains(t, "<h1")
						}
						ta := textareaOf(r.Body, noteID)
						if !ta.invalid || !strings.Contains(ta.msg, c.msg) || ta.content != templateEscape(c.note) {
							t.Errorf("%s (%s): the textarea is %+v, want it invalid, described by a message saying %q, holding the text sent %q",
								r.What, mode.name, ta, c.msg, c.note)
						}
					}
				})
			}
			if after := s.history(t, a, hist, nil).Entries; len(after) != len(before) {
				t.Errorf("invalid notes added %d entries, want none", len(after)-len(before))
			}
			a.do(t, http.MethodPost, hist, testutil.JSON(map[string]any{"note": 5}), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			a.do(t, http.MethodPost, hist, testutil.JSON(`{"note": "x"`), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			a.do(t, http.MethodPost, hist, testutil.Raw("text/plain", "note=x"), testutil.HJSON).WantStatus(t, http.StatusUnsupportedMediaType)
		})
		t.Run("past the limit", func(t *testing.T) {
			m := s.create(t, a, 2)
			hist := s.R.HistoryPath(m.ID)
			for i := range store.MaxHistoryNotes {
				if _, err := noteAdders[s.R.Plural](a.store, context.Background(), m.ID, "note "+itoa(int64(i))); err != nil {
					t.Fatal(err)
				}
			}
			msg := "is one more than the " + itoa(store.MaxHistoryNotes) + " notes a record keeps"
			r := a.do(t, http.MethodPost, hist, testutil.JSON(map[string]any{"note": "one more"}), testutil.HJSON).
				WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
			var e errorJSON
			r.JSON(t, &e)
			if e.Errors["note"] != msg {
				t.Errorf("%s: errors.note is %q, want %q", r.What, e.Errors["note"], msg)
			}
			r = a.do(t, http.MethodPost, hist, testutil.Form("note", "one more"), hx).WantStatus(t, http.StatusUnprocessableEntity)
			if alert, _ := regionPartial(r.Body, "notice-alert"); !strings.Contains(alert, "The note was not added: it "+msg+".") {
				t.Errorf("%s: the alert region holds %q, want it to name the limit", r.What, alert)
			}
			// A change is still recorded, and is the newest entry.
			a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.JSON(s.body(3)), testutil.HJSON).WantStatus(t, http.StatusOK)
			if es := s.history(t, a, hist, nil).Entries; len(es) == 0 || es[0].Action != "updated" {
				t.Errorf("after %d notes, a change's entry is not the newest: %+v", store.MaxHistoryNotes, es[:min(len(es), 1)])
			}
		})
		t.Run("cross-origin", func(t *testing.T) {
			n := len(s.history(t, a, hist, nil).Entries)
			for _, h := range []testutil.H{{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}} {
				for _, rep := range []testutil.H{testutil.HJSON, testutil.HPage, hx} {
					a.do(t, http.MethodPost, hist, testutil.Form("note", "Evil"), rep.With(h)).WantStatus(t, http.StatusForbidden).WantNegotiated(t)
				}
			}
			if got := s.history(t, a, hist, nil).Entries; len(got) != n || got[0].Note == "Evil" {
				t.Errorf("after 403s: %d entries (newest %v), want %d, unchanged", len(got), got[0], n)
			}
			a.do(t, http.MethodPost, hist, testutil.Form("note", "Same origin"), testutil.HJSON.With(testutil.H{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"})).
				WantStatus(t, http.StatusCreated)
		})
		// Notes change nothing of the record, its version least of all.
		if _, after := s.fetch(t, a, m.ID); !reflect.DeepEqual(after, before) {
			t.Errorf("after notes the %s is %v, want it unchanged: %v", s.R.Name, after, before)
		}
	})
}

// textarea is what a page says of the textarea with an id: its text,
// whether it is marked invalid, and the message it points at.
type textarea struct {
	content string
	invalid bool
	msg     string
}

func textareaOf(html, id string) textarea {
	tag := testutil.Tag(html, id)
	i := strings.Index(html, `id="`+id+`"`)
	if tag == "" || !strings.HasPrefix(tag, "<textarea") {
		return textarea{content: "(no textarea #" + id + ")"}
	}
	rest := html[i:]
	rest = rest[strings.IndexByte(rest, '>')+1:]
	end := strings.Index(rest, "</textarea>")
	ta := textarea{content: rest[:end], invalid: strings.Contains(tag, `aria-invalid="true"`)}
	if strings.Contains(tag, `aria-describedby="`+id+`-err"`) {
		if j := strings.Index(html, `id="`+id+`-err"`); j >= 0 {
			m := html[j:]
			m = m[strings.IndexByte(m, '>')+1:]
			ta.msg = m[:strings.Index(m, "<")]
		}
	}
	return ta
}

// templateEscape is text as html/template writes it in an element.
func templateEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "\u0000", "\uFFFD").Replace(s)
}

// TestHistoryETag: the record's page names its history's head in its
// ETag ("o1v1-page-h1"): after a note (same version) the page's tag
// changes, If-None-Match with the old tag gets 200 and the note, with the
// new one 304; the JSON of the record keeps its version-only tag and its
// 304.
func TestHistoryETag(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		p := s.R.MemberPath(m.ID)
		prefix := s.R.ETagPrefix + itoa(m.ID) + "v1-"
		tags := func() map[string]string {
			out := map[string]string{}
			for name, h := range map[string]testutil.H{"page": testutil.HPage, "fragment": testutil.HHX, "json": testutil.HJSON} {
				out[name] = a.get(t, p, h).WantStatus(t, http.StatusOK).Header.Get("ETag")
			}
			return out
		}
		old := tags()
		for name, want := range map[string]string{"page": `"` + prefix + `page-h1"`, "fragment": `"` + prefix + `fragment-h1"`, "json": `"` + prefix + `json"`} {
			if plainTag(old[name]) != want {
				t.Errorf("the %s's ETag is %s, want %s", name, old[name], want)
			}
		}
		a.do(t, http.MethodPost, s.R.HistoryPath(m.ID), testutil.JSON(map[string]any{"note": "Behind a 304?"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
		now := tags()
		if now["page"] == old["page"] || now["fragment"] == old["fragment"] || plainTag(now["page"]) != `"`+prefix+`page-h2"` {
			t.Errorf("after a note the page's ETag is %s (was %s), the fragment's %s (was %s); want both to name the new head (h2)",
				now["page"], old["page"], now["fragment"], old["fragment"])
		}
		if now["json"] != old["json"] {
			t.Errorf("after a note the JSON's ETag is %s, want it unchanged (%s): the record did not change", now["json"], old["json"])
		}
		for _, c := range []struct {
			name string
			h    testutil.H
		}{{"page", testutil.HPage}, {"fragment", testutil.HHX}} {
			for _, inm := range []string{old[c.name], "W/" + old[c.name], old["json"], `"` + prefix + c.name + `"`} {
				r := a.get(t, p, c.h.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusOK)
				r.WantContains(t, "Behind a 304?").WantHeader(t, "ETag", now[c.name])
			}
			for _, inm := range []string{now[c.name], "W/" + now[c.name], `"x", ` + now[c.name], "*"} {
				r := a.get(t, p, c.h.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusNotModified)
				if r.Body != "" {
					t.Errorf("%s: 304 with a body", r.What)
				}
			}
		}
		for _, inm := range []string{old["json"], old["page"], now["page"]} {
			a.get(t, p, testutil.HJSON.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusNotModified)
		}
		// A change moves the version and the head: the old tags match nothing.
		a.do(t, http.MethodPut, p, testutil.JSON(map[string]any{s.field: "Changed", "version": 1}), testutil.HJSON).WantStatus(t, http.StatusOK)
		for name, h := range map[string]testutil.H{"page": testutil.HPage, "json": testutil.HJSON} {
			a.get(t, p, h.With(testutil.H{"If-None-Match": now[name]})).WantStatus(t, http.StatusOK)
		}
		if tg := plainTag(a.get(t, p, testutil.HPage).Header.Get("ETag")); tg != `"`+s.R.ETagPrefix+itoa(m.ID)+`v2-page-h3"` {
			t.Errorf("after a change the page's ETag is %s, want v2 and h3", tg)
		}
	})
}

// TestTimelineAfterWrites: the record's page shows its latest history
// however it is reached: a full page, and the fragment htmx swaps in
// after a create, a change or a status change from the page itself (the
// new entry at the top).
func TestTimelineAfterWrites(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		main := testutil.HXTo("main#main")
		r := a.do(t, http.MethodPost, s.R.Path(), testutil.Form(s.formBody(1)...), main).WantStatus(t, http.StatusCreated)
		wantTimeline(t, r, s, "Created by "+a.actor()+" on the web · version 1")
		id, _ := store.ParseID(strings.TrimPrefix(r.Header.Get("HX-Push-Url"), s.R.Path()+"/"))
		r = a.do(t, http.MethodPut, s.R.MemberPath(id), testutil.Form(s.field, "Changed from its page", "version", "1"), main).WantStatus(t, http.StatusOK)
		wantTimeline(t, r, s, "Changed by "+a.actor()+" on the web · version 2")
		if s.R == orderResource {
			r = a.do(t, http.MethodPost, s.R.MemberPath(id), testutil.Form("_method", "PUT", "status", "confirmed", "version", "2"), main).WantStatus(t, http.StatusOK)
			wantTimeline(t, r, s, "Changed by "+a.actor()+" on the web · version 3")
			r.WantContains(t, "Status: Pending → Confirmed")
		}
		wantTimeline(t, a.get(t, s.R.MemberPath(id), testutil.HPage).WantStatus(t, http.StatusOK), s, "Changed by "+a.actor()+" on the web")
		wantTimeline(t, a.get(t, s.R.MemberPath(id), main).WantStatus(t, http.StatusOK), s, "Changed by "+a.actor()+" on the web")
	})
}

// wantTimeline fails unless r holds the record's timeline whose newest
// entry says newest, and its note form.
func wantTimeline(t *testing.T, r *testutil.Resp, s *suiteResource, newest string) {
	t.Helper()
	sec := elementByID(r.Body, s.R.HistoryID())
	if sec == "" {
		t.Errorf("%s: no timeline (#%s) on the %s's page:\n%s", r.What, s.R.HistoryID(), s.R.Name, testutil.Snippet(r.Body))
		return
	}
	i := strings.Index(sec, `<li class="entry `)
	if i < 0 {
		t.Errorf("%s: the timeline has no entries:\n%s", r.What, testutil.Snippet(sec))
		return
	}
	first := plainText(sec[i:])
	if !strings.HasPrefix(first, newest) {
		t.Errorf("%s: the timeline starts %q, want its newest entry to say %q", r.What, first[:min(len(first), 120)], newest)
	}
	if !strings.Contains(sec, `name="note"`) {
		t.Errorf("%s: the timeline has no note form", r.What)
	}
}

// TestTimelineOfAnOrderWithoutHistory: an order made before its history
// was kept (the demo data: Seed writes no entries) says so, instead of
// "no history" under a page that shows it changed; a page of entries past
// the oldest says it is the end.
func TestTimelineOfAnOrderWithoutHistory(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		if _, err := a.store.Seed(context.Background(), 1, nil); err != nil {
			t.Fatal(err)
		}
		sec := elementByID(a.get(t, "/orders/1", testutil.HPage).WantStatus(t, http.StatusOK).Body, orderResource.HistoryID())
		if !strings.Contains(sec, "Nothing recorded: this order was made before its history was kept.") {
			t.Errorf("the timeline of a seeded order:\n%s\nwant it to say it was made before its history was kept", testutil.Snippet(sec))
		}
		a.get(t, "/orders/1/history?before=1", testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, "No older entries.").WantLacks(t, "Nothing recorded")
	})
}
