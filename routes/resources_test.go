package routes

// The suites every resource passes. They walk the registration list
// (resources): each test here runs the same cases over every registered
// resource, from what its registration supplies (its names, its field
// table and its Example), so a new resource is tested by registering it.
// What only one resource promises is in its own file (orders_test.go,
// products_test.go).

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"orders/store"
	"orders/testutil"
)

// suiteResource is one registered resource as the shared suites see it:
// its description and field table, the root ids of its partials, and the
// text field its Example changes with that field's limit and label.
type suiteResource struct {
	R   *resource
	api apiResource
	// Roots of the partials: the List, a member's page, the New and Edit
	// form, the delete confirmation.
	list, show, form, del string
	// field is the text field a change sets (Example.Change), and whose
	// limit is max characters: longer is a 422 with limitMsg. label is
	// how the forms, the comparison and the history name it.
	field, label, limitMsg string
	max                    int
}

// resourceSuites are the resources every shared suite runs over: every
// registered resource (read once the registrations have their handlers).
var resourceSuites = sync.OnceValue(func() []*suiteResource { return suitesOf(resources) })

// suitesOf reads what the suites need from each registration; a
// registration without an Example, or whose Example.Change is not a text
// field with a limit, panics: the suites cannot test it.
func suitesOf(rs []*resource) []*suiteResource {
	out := make([]*suiteResource, 0, len(rs))
	for _, r := range rs {
		if r.Example.Create == nil {
			panic("resource " + r.Plural + " has no Example: the shared test suites cannot write to it")
		}
		s := &suiteResource{R: r, api: r.serve(&handlers{}).API, list: r.Plural, show: r.Name,
			form: r.Name + "-form", del: r.Name + "-delete", field: r.Example.Change}
		i := slices.IndexFunc(s.api.Fields, func(f apiField) bool { return f.Name == s.field })
		if i < 0 || s.api.Fields[i].Kind != kindText || s.api.Fields[i].Max == 0 {
			panic("resource " + r.Plural + ": Example.Change " + strconv.Quote(s.field) + " is no text field with a limit")
		}
		f := s.api.Fields[i]
		s.label, s.max = f.Label, f.Max
		s.limitMsg = "must be at most " + strconv.Itoa(f.Max) + " characters"
		out = append(out, s)
	}
	return out
}

// body is a valid create as JSON, another record for every n.
func (s *suiteResource) body(n int) map[string]any { return s.R.Example.Create(n) }

// formBody is body(n) as a plain form sends it: form pairs, a row's
// fields as items[0][name].
func (s *suiteResource) formBody(n int) []string { return formPairs("", s.body(n)) }

// formPairs flattens a JSON object into form pairs, each key under prefix.
func formPairs(prefix string, obj map[string]any) []string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		name := k
		if prefix != "" {
			name = prefix + "[" + k + "]"
		}
		switch v := obj[k].(type) {
		case []any:
			for i, row := range v {
				kv = append(kv, formPairs(name+"["+strconv.Itoa(i)+"]", row.(map[string]any))...)
			}
		case map[string]any:
			kv = append(kv, formPairs(name, v)...)
		default:
			kv = append(kv, name, fmt.Sprint(v))
		}
	}
	return kv
}

// count is how many members are stored, as the List's JSON says it, but
// for the accounts the suite made for itself (signedIn).
func (s *suiteResource) count(t testing.TB, a *testApp) int64 {
	t.Helper()
	obj := a.get(t, s.R.Path()+"?per_page=1", testutil.HJSON).WantStatus(t, http.StatusOK).Object(t)
	n, ok := obj["total"].(float64)
	if !ok || obj["total_is_lower_bound"] != false {
		t.Fatalf("GET %s: total %v (lower bound %v), want a count", s.R.Path(), obj["total"], obj["total_is_lower_bound"])
	}
	if s.people() {
		n -= float64(a.preMade)
	}
	return int64(n)
}

// eachResource runs fn as a subtest for every resource on every Redis
// target: a fresh application per resource and target.
func eachResource(t *testing.T, fn func(t *testing.T, s *suiteResource, a *testApp)) {
	t.Helper()
	for _, s := range resourceSuites() {
		t.Run(s.R.Plural, func(t *testing.T) {
			eachTarget(t, func(t *testing.T, a *testApp) { fn(t, s.prepare(t, a), a) })
		})
	}
}

// prepare readies a for the suites of s: the accounts' suites run signed
// in as an admin, since the first account they make ends protected mode.
func (s *suiteResource) prepare(t testing.TB, a *testApp) *suiteResource {
	t.Helper()
	if s.people() {
		a.signedIn(t)
	}
	return s
}

// people reports whether s's creates make accounts.
func (s *suiteResource) people() bool { return s.R == userResource }

// memberJSON is what every member's JSON has.
type memberJSON struct {
	ID        int64  `json:"id"`
	Version   int64  `json:"version"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// create makes member n through POST (JSON) and returns its id.
func (s *suiteResource) create(t testing.TB, a *testApp, n int) memberJSON {
	t.Helper()
	r := a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(s.body(n)), testutil.HJSON).WantStatus(t, http.StatusCreated)
	var m memberJSON
	r.JSON(t, &m)
	if m.ID < 1 || m.Version != 1 {
		t.Fatalf("%s: got %s, want a member with an id at version 1", r.What, testutil.Snippet(r.Body))
	}
	return m
}

// fetch reads member id as JSON, the whole object too.
func (s *suiteResource) fetch(t testing.TB, a *testApp, id int64) (memberJSON, map[string]any) {
	t.Helper()
	r := a.get(t, s.R.MemberPath(id), testutil.HJSON).WantStatus(t, http.StatusOK)
	var m memberJSON
	r.JSON(t, &m)
	return m, r.Object(t)
}

// wantUnchanged fails unless member id is still at version and its field
// still holds value.
func (s *suiteResource) wantUnchanged(t testing.TB, a *testApp, id, version int64, value string) {
	t.Helper()
	m, obj := s.fetch(t, a, id)
	if m.Version != version || obj[s.field] != value {
		t.Errorf("%s %d: got version %d %s %v, want it unchanged at version %d %s %q", s.R.Name, id, m.Version, s.field, obj[s.field], version, s.field, value)
	}
}

// wantCount fails unless n members are stored.
func (s *suiteResource) wantCount(t testing.TB, a *testApp, n int64, after string) {
	t.Helper()
	if got := s.count(t, a); got != n {
		t.Errorf("%d %s stored after %s, want %d", got, s.R.Plural, after, n)
	}
}

func (s *suiteResource) row(id int64) testutil.H { return testutil.HXTo("tr#" + s.R.RowID(id)) }

// TestResourceRepresentations: every GET URI of every resource as a page,
// a fragment and JSON, with the headers every answer carries,
// and HEAD without a body.
func TestResourceRepresentations(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		for _, u := range []struct {
			name, path, root string
			wantJSON         func(t *testing.T, r *testutil.Resp)
		}{
			{"list", s.R.Path(), s.list, func(t *testing.T, r *testutil.Resp) {
				obj := r.Object(t)
				for _, k := range []string{s.R.Plural, "page", "per_page", "total", "total_is_lower_bound", "prev", "next"} {
					if _, ok := obj[k]; !ok {
						t.Errorf("%s: JSON keys %v, want %q among them", r.What, keys(obj), k)
					}
				}
				// One, and the account the suite signed in as.
				if entries, _ := obj[s.R.Plural].([]any); len(entries) != 1+int(a.preMade) || obj["total"] != float64(1+a.preMade) {
					t.Errorf("%s: got %v, want one entry (and %d of the suite's own) and total to match", r.What, obj, a.preMade)
				}
			}},
			{"new", s.R.NewPath(), s.form, func(t *testing.T, r *testutil.Resp) {
				obj := r.Object(t)
				for _, f := range s.api.Fields {
					if _, ok := obj[strings.SplitN(f.Name, ".", 2)[0]]; !ok && f.Kind != kindVersion {
						t.Errorf("%s: got %v, want every field (%s among them)", r.What, obj, f.Name)
					}
				}
			}},
			{"show", s.R.MemberPath(m.ID), s.show, func(t *testing.T, r *testutil.Resp) {
				var got memberJSON
				r.JSON(t, &got)
				if got != m {
					t.Errorf("%s: got %+v, want %+v", r.What, got, m)
				}
			}},
			{"edit", s.R.EditPath(m.ID), s.form, func(t *testing.T, r *testutil.Resp) {
				rec, _ := r.Object(t)[s.R.Name].(map[string]any)
				if rec["id"] != float64(m.ID) || rec["version"] != float64(1) {
					t.Errorf("%s: got %s, want {%q: the %s at version 1}", r.What, testutil.Snippet(r.Body), s.R.Name, s.R.Name)
				}
			}},
			{"confirm delete", s.R.MemberPath(m.ID) + "?confirm=delete", s.del, func(t *testing.T, r *testutil.Resp) {
				var got memberJSON
				r.JSON(t, &got) // JSON has no confirmation: the member
				if got.ID != m.ID {
					t.Errorf("%s: got %+v, want %s %d", r.What, got, s.R.Name, m.ID)
				}
			}},
		} {
			t.Run(u.name, func(t *testing.T) {
				for _, mode := range []struct {
					name  string
					h     testutil.H
					check func(t *testing.T, r *testutil.Resp)
				}{
					{"page", testutil.HPage, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
					{"no headers", testutil.H{}, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
					{"fragment", testutil.HHX, func(t *testing.T, r *testutil.Resp) { r.WantFragment(t, u.root) }},
					{"json", testutil.HJSON, u.wantJSON},
					{"json over html", testutil.H{"Accept": "text/html;q=0.5, application/json"}, u.wantJSON},
					{"json with htmx headers", testutil.HHX.With(testutil.HJSON), u.wantJSON},
					{"history restore", testutil.HRestore, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
					{"htmx full", testutil.HHXFull, func(t *testing.T, r *testutil.Resp) { r.WantPage(t, u.root) }},
				} {
					t.Run(mode.name, func(t *testing.T) {
						mode.check(t, a.get(t, u.path, mode.h).WantStatus(t, http.StatusOK).WantNegotiated(t))
					})
				}
				for _, h := range []testutil.H{testutil.HPage, testutil.HJSON} {
					r := a.do(t, http.MethodHead, u.path, testutil.NoBody, h).WantStatus(t, http.StatusOK).WantNegotiated(t)
					if r.Body != "" {
						t.Errorf("%s: a body of %d bytes, want none", r.What, len(r.Body))
					}
				}
			})
		}
		// The page is the resource's: its navigation entry is current.
		a.get(t, s.R.Path(), testutil.HPage).WantContains(t, `href="`+s.R.Path()+`" aria-current="page"`)
	})
}

// TestResourceWrites: create, update and delete in every representation:
// JSON's 201 with Location, 200 and 204; htmx's fragment
// with HX-Push-Url, HX-Replace-Url or HX-Location; a plain form's 303
// with the notice as a flash cookie.
func TestResourceWrites(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		flash := func(r *testutil.Resp, want string) {
			t.Helper()
			if c := r.Header.Get("Set-Cookie"); !strings.Contains(c, flashCookie+"=") || !strings.Contains(c, strings.ReplaceAll(want, " ", "+")) {
				t.Errorf("%s: Set-Cookie %q, want the flash notice %q", r.What, c, want)
			}
		}
		t.Run("create json", func(t *testing.T) {
			r := a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(s.body(10)), testutil.HJSON).WantStatus(t, http.StatusCreated).WantNegotiated(t)
			var m memberJSON
			r.JSON(t, &m)
			r.WantHeader(t, "Location", s.R.MemberPath(m.ID))
			if m.Version != 1 || !strings.HasSuffix(m.CreatedAt, "Z") || m.CreatedAt != m.UpdatedAt {
				t.Errorf("%s: got %+v, want version 1 and equal RFC 3339 UTC times", r.What, m)
			}
			if got, _ := s.fetch(t, a, m.ID); got != m {
				t.Errorf("GET after create: got %+v, want %+v", got, m)
			}
		})
		t.Run("create htmx", func(t *testing.T) {
			r := a.do(t, http.MethodPost, s.R.Path(), testutil.Form(s.formBody(11)...), testutil.HXTo("main#main"))
			r.WantStatus(t, http.StatusCreated).WantNegotiated(t).WantFragment(t, s.show).WantContains(t, s.R.Title+" ", " created.")
			loc := r.Header.Get("HX-Push-Url")
			if !strings.HasPrefix(loc, s.R.Path()+"/") {
				t.Fatalf("%s: HX-Push-Url %q, want %s/<id>", r.What, loc, s.R.Path())
			}
			a.get(t, loc, testutil.HJSON).WantStatus(t, http.StatusOK)
		})
		for _, enc := range []struct {
			name string
			body func(kv ...string) testutil.Body
		}{{"urlencoded", testutil.Form}, {"multipart", testutil.Multipart}} {
			t.Run("create plain "+enc.name, func(t *testing.T) {
				before := s.count(t, a)
				r := a.do(t, http.MethodPost, s.R.Path(), enc.body(s.formBody(12+len(enc.name))...), testutil.HPage).WantStatus(t, http.StatusSeeOther)
				loc := r.Header.Get("Location")
				id, ok := store.ParseID(strings.TrimPrefix(loc, s.R.Path()+"/"))
				if !ok {
					t.Fatalf("%s: Location %q, want %s/<id>", r.What, loc, s.R.Path())
				}
				flash(r, s.R.Named(id)+" created.")
				s.wantCount(t, a, before+1, r.What)
			})
		}

		m := s.create(t, a, 20)
		t.Run("update json", func(t *testing.T) {
			r := a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.JSON(map[string]any{s.field: "Changed by JSON", "version": 1}), testutil.HJSON)
			r.WantStatus(t, http.StatusOK).WantNegotiated(t)
			if obj := r.Object(t); obj[s.field] != "Changed by JSON" || obj["version"] != float64(2) {
				t.Errorf("%s: got %v, want %s changed at version 2", r.What, obj, s.field)
			}
			r.WantHeader(t, "ETag", s.R.etag(m.ID, 2, reprJSON, ""))
		})
		t.Run("update htmx", func(t *testing.T) {
			r := a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Changed by htmx", "version", "2"), testutil.HXTo("main#main"))
			r.WantStatus(t, http.StatusOK).WantNegotiated(t).WantFragment(t, s.show).WantContains(t, "Changed by htmx", s.R.Named(m.ID)+" saved.")
			r.WantHeader(t, "HX-Replace-Url", s.R.MemberPath(m.ID)).WantHeader(t, "HX-Push-Url", "")
		})
		t.Run("update plain", func(t *testing.T) {
			r := a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Changed by a form", "version", "3"), testutil.HPage)
			r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", s.R.MemberPath(m.ID))
			flash(r, s.R.Named(m.ID)+" saved.")
			s.wantUnchanged(t, a, m.ID, 4, "Changed by a form")
		})
		t.Run("a change of nothing keeps the version", func(t *testing.T) {
			a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.JSON(map[string]any{s.field: "Changed by a form", "version": 4}), testutil.HJSON).
				WantStatus(t, http.StatusOK)
			s.wantUnchanged(t, a, m.ID, 4, "Changed by a form")
		})

		t.Run("delete json", func(t *testing.T) {
			d := s.create(t, a, 30)
			r := a.do(t, http.MethodDelete, s.R.MemberPath(d.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
			if r.Body != "" {
				t.Errorf("%s: body %q, want none", r.What, r.Body)
			}
			a.get(t, s.R.MemberPath(d.ID), testutil.HJSON).WantStatus(t, http.StatusNotFound)
			a.do(t, http.MethodDelete, s.R.MemberPath(d.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNotFound)
		})
		t.Run("delete htmx from its page", func(t *testing.T) {
			d := s.create(t, a, 31)
			r := a.do(t, http.MethodDelete, s.R.MemberPath(d.ID), testutil.NoBody, testutil.HXTo("main#main")).WantStatus(t, http.StatusOK)
			r.WantHeader(t, "HX-Location", s.R.Path())
			flash(r, s.R.Named(d.ID)+" deleted.")
			if r.Body != "" {
				t.Errorf("%s: body %q, want none", r.What, testutil.Snippet(r.Body))
			}
			a.get(t, s.R.MemberPath(d.ID), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		})
		t.Run("delete plain with its version", func(t *testing.T) {
			d := s.create(t, a, 32)
			r := a.do(t, http.MethodDelete, s.R.MemberPath(d.ID), testutil.Form("version", "1"), testutil.HPage)
			r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", s.R.Path())
			flash(r, s.R.Named(d.ID)+" deleted.")
			a.get(t, s.R.MemberPath(d.ID), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		})
		t.Run("delete with a stale version", func(t *testing.T) {
			d := s.create(t, a, 33)
			a.do(t, http.MethodPut, s.R.MemberPath(d.ID), testutil.JSON(map[string]any{s.field: "Moved on"}), testutil.HJSON).WantStatus(t, http.StatusOK)
			r := a.do(t, http.MethodDelete, s.R.MemberPath(d.ID), testutil.JSON(map[string]any{"version": 1}), testutil.HJSON).WantStatus(t, http.StatusConflict)
			if cur, _ := r.Object(t)["current"].(map[string]any); cur["version"] != float64(2) || cur[s.field] != "Moved on" {
				t.Errorf("%s: got %s, want current at version 2", r.What, testutil.Snippet(r.Body))
			}
			a.do(t, http.MethodPost, s.R.MemberPath(d.ID), testutil.Form("_method", "DELETE", "version", "1"), testutil.HPage).WantStatus(t, http.StatusConflict)
			a.do(t, http.MethodDelete, s.R.MemberPath(d.ID)+"?version=1", testutil.NoBody, s.row(d.ID)).WantStatus(t, http.StatusConflict)
			a.do(t, http.MethodDelete, s.R.MemberPath(d.ID)+"?version=x", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			a.do(t, http.MethodDelete, s.R.MemberPath(d.ID)+"?version=", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			a.do(t, http.MethodDelete, s.R.MemberPath(d.ID), testutil.NoBody, testutil.HJSON.With(testutil.H{"If-Match": `"` + s.R.ETagPrefix + itoa(d.ID) + `v1-json"`})).
				WantStatus(t, http.StatusPreconditionFailed)
			s.wantUnchanged(t, a, d.ID, 2, "Moved on")
			a.do(t, http.MethodDelete, s.R.MemberPath(d.ID)+"?version=2", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		})
	})
}

// TestResourceInlineRow: the List row edits in place (HX-Target
// tr#<name>-row-<id>): GET is the row, GET edit its form, PUT the row
// again (its form with the messages on a 422, the comparison on a 409),
// DELETE the notice alone and the event that makes the results fetch
// their page again.
func TestResourceInlineRow(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		id, row := itoa(m.ID), s.row(m.ID)
		rowStart := `<tr id="` + s.R.RowID(m.ID) + `"`
		starts := func(r *testutil.Resp, prefix string) {
			t.Helper()
			if !strings.HasPrefix(strings.TrimSpace(r.Body), prefix) {
				t.Errorf("%s: want the body to start with %s; got:\n%s", r.What, prefix, testutil.Snippet(r.Body))
			}
		}
		r := a.get(t, s.R.MemberPath(m.ID), row).WantStatus(t, http.StatusOK).WantNegotiated(t)
		starts(r, rowStart+` data-live="row"`)
		r.WantLacks(t, `id="`+s.show+`"`, "<title>")
		if et := plainTag(r.Header.Get("ETag")); !strings.HasSuffix(et, `-fragment-row"`) {
			t.Errorf("%s: ETag %q, want the row's own", r.What, et)
		}
		// Another member's row target is not this member's row.
		a.get(t, s.R.MemberPath(m.ID), testutil.HXTo("tr#"+s.R.RowID(999))).WantStatus(t, http.StatusOK).WantFragment(t, s.show)

		r = a.get(t, s.R.EditPath(m.ID), row).WantStatus(t, http.StatusOK).WantNegotiated(t)
		starts(r, rowStart+` class="editing" data-live="form"`)
		r.WantContains(t, `class="row-form"`, `name="version" value="1"`, `hx-put="`+s.R.MemberPath(m.ID)+`"`, `id="row-`+id+`-`+s.field+`"`)
		r.WantLacks(t, `id="`+s.form+`"`, "<title>")

		r = a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Renamed in the row", "version", "1"), row)
		r.WantStatus(t, http.StatusOK).WantNegotiated(t)
		starts(r, rowStart+` data-live="row"`)
		r.WantContains(t, "Renamed in the row", s.R.Named(m.ID)+" saved.").WantLacks(t, "row-form")
		r.WantHeader(t, "HX-Replace-Url", "")

		long := strings.Repeat("x", s.max+1)
		r = a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, long, "version", "2"), row)
		r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
		starts(r, rowStart+` class="editing" data-live="form"`)
		r.WantFieldError(t, "row-"+id+"-"+s.field, s.limitMsg, long)
		r.WantContains(t, `name="version" value="2"`, s.R.Named(m.ID)+" was not saved")

		r = a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Stale row edit", "version", "1"), row)
		r.WantStatus(t, http.StatusConflict).WantNegotiated(t)
		starts(r, rowStart+` class="editing" data-live="form"`)
		panel := plainText(elementByID(r.Body, "conflict-"+id))
		for _, want := range []string{"Someone else changed " + s.R.Name + " " + id, "now version 2", "Stale row edit", "Renamed in the row", "Save mine over theirs", "Keep theirs"} {
			if !strings.Contains(panel, want) {
				t.Errorf("%s: the row's conflict does not say %q; it says:\n%s", r.What, want, panel)
			}
		}
		r.WantContains(t, `name="version" value="2"`, `value="Stale row edit"`, `hx-get="`+s.R.EditPath(m.ID)+`" hx-target="closest tr"`)
		s.wantUnchanged(t, a, m.ID, 2, "Renamed in the row")

		r = a.do(t, http.MethodDelete, s.R.MemberPath(m.ID)+"?version=2", testutil.NoBody, row).WantStatus(t, http.StatusOK).WantNegotiated(t)
		r.WantLacks(t, "<tr", "<html").WantContains(t, s.R.Named(m.ID)+" deleted.")
		r.WantHeader(t, "HX-Trigger", `{"`+s.R.Plural+`-changed": {"target": "#`+s.R.ResultsID()+`"}}`)
		a.get(t, s.R.Path(), testutil.HPage).WantContains(t, `id="`+s.R.ResultsID()+`"`, `hx-trigger="`+s.R.Plural+`-changed"`)

		// The row of a member that is gone says so, whatever the row asked.
		for _, c := range []struct {
			name, method, path string
			b                  testutil.Body
		}{
			{"edit", http.MethodGet, s.R.EditPath(m.ID), testutil.NoBody},
			{"cancel", http.MethodGet, s.R.MemberPath(m.ID), testutil.NoBody},
			{"save", http.MethodPut, s.R.MemberPath(m.ID), testutil.Form(s.field, "Too late", "version", "2")},
			{"delete", http.MethodDelete, s.R.MemberPath(m.ID) + "?version=2", testutil.NoBody},
		} {
			r := a.do(t, c.method, c.path, c.b, row).WantStatus(t, http.StatusNotFound).WantNegotiated(t)
			starts(r, rowStart+` class="gone">`)
			r.WantContains(t, s.R.Named(m.ID)+" has been deleted, or it never existed.", `href="`+s.R.Path()+`"`)
			if alert, _ := regionPartial(r.Body, "notice-alert"); !strings.Contains(alert, s.R.Named(m.ID)+" was not found: it has been deleted, or it never existed.") {
				t.Errorf("%s (row %s): the alert region holds %q, want it to say %s was not found", r.What, c.name, alert, s.R.Named(m.ID))
			}
			if cc := r.Header.Get("Cache-Control"); cc != noStore {
				t.Errorf("%s: Cache-Control %q, want no-store", r.What, cc)
			}
		}
		// Elsewhere it is the error page, naming the resource.
		a.get(t, s.R.MemberPath(m.ID), testutil.HPage).WantStatus(t, http.StatusNotFound).WantPage(t, "error").
			WantContains(t, s.R.Named(m.ID)+" was not found")
	})
}

// TestResourceETag: an ETag per representation, named by the resource
// ("o7v3-json", "p7v3-json"); If-None-Match with any ETag of the current
// version is 304; If-Match with another version is 412, on PUT and DELETE.
func TestResourceETag(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		path := s.R.MemberPath(m.ID)
		tags := map[string]string{}
		for _, mode := range []struct {
			name string
			h    testutil.H
		}{{"page", testutil.HPage}, {"fragment", testutil.HHX}, {"json", testutil.HJSON}, {"row", s.row(m.ID)}} {
			r := a.get(t, path, mode.h).WantStatus(t, http.StatusOK)
			tg := r.Header.Get("ETag")
			if want := `"` + s.R.ETagPrefix + itoa(m.ID) + "v1-"; !strings.HasPrefix(tg, want) {
				t.Fatalf("%s: ETag %q, want it to start %s", r.What, tg, want)
			}
			for other, o := range tags {
				if o == tg {
					t.Errorf("%s and %s share ETag %s; want one per representation", other, mode.name, tg)
				}
			}
			tags[mode.name] = tg
			for _, inm := range []string{tg, tags["page"], "W/" + tg, `"x", ` + tg, "*"} {
				r := a.get(t, path, mode.h.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusNotModified)
				if r.Body != "" {
					t.Errorf("%s: 304 with a body %q", r.What, r.Body)
				}
				r.WantHeader(t, "ETag", tg)
			}
		}
		// Another version, another member, another resource: the representation.
		other := resourceSuites()[0].R
		if other == s.R {
			other = resourceSuites()[1].R
		}
		for _, inm := range []string{`"` + s.R.ETagPrefix + itoa(m.ID) + `v2-json"`, `"` + s.R.ETagPrefix + itoa(m.ID+1) + `v1-json"`,
			other.etag(m.ID, 1, reprJSON, ""), `"nonsense"`} {
			a.get(t, path, testutil.HJSON.With(testutil.H{"If-None-Match": inm})).WantStatus(t, http.StatusOK)
		}

		// If-Match: the current version in any representation passes.
		a.do(t, http.MethodPut, path, testutil.JSON(map[string]any{s.field: "By JSON tag"}), testutil.HJSON.With(testutil.H{"If-Match": tags["json"]})).WantStatus(t, http.StatusOK)
		for _, im := range []string{tags["json"], tags["page"], `"` + s.R.ETagPrefix + itoa(m.ID) + `v9-json"`,
			`"` + s.R.ETagPrefix + itoa(m.ID+1) + `v2-json"`, other.etag(m.ID, 2, reprJSON, ""), `"garbage"`} {
			r := a.do(t, http.MethodPut, path, testutil.JSON(map[string]any{s.field: "Stale tag"}), testutil.HJSON.With(testutil.H{"If-Match": im}))
			r.WantStatus(t, http.StatusPreconditionFailed).WantNegotiated(t)
			if cur, _ := r.Object(t)["current"].(map[string]any); cur["version"] != float64(2) {
				t.Errorf("%s: got %s, want current at version 2", r.What, testutil.Snippet(r.Body))
			}
			a.do(t, http.MethodPut, path, testutil.Form(s.field, "Stale tag"), testutil.HPage.With(testutil.H{"If-Match": im})).
				WantStatus(t, http.StatusPreconditionFailed).WantPage(t, "error")
			a.do(t, http.MethodDelete, path, testutil.NoBody, testutil.HJSON.With(testutil.H{"If-Match": im})).WantStatus(t, http.StatusPreconditionFailed)
		}
		s.wantUnchanged(t, a, m.ID, 2, "By JSON tag")
		page2 := a.get(t, path, testutil.HPage).Header.Get("ETag")
		a.do(t, http.MethodPut, path, testutil.Form(s.field, "By page tag"), testutil.HHX.With(testutil.H{"If-Match": page2})).WantStatus(t, http.StatusOK)
		a.do(t, http.MethodPut, path, testutil.JSON(map[string]any{s.field: "By star"}), testutil.HJSON.With(testutil.H{"If-Match": "*"})).WantStatus(t, http.StatusOK)
		// The old ETag no longer matches.
		r := a.get(t, path, testutil.HJSON.With(testutil.H{"If-None-Match": tags["json"]})).WantStatus(t, http.StatusOK)
		if got, want := plainTag(r.Header.Get("ETag")), s.R.etag(m.ID, 4, reprJSON, ""); got != want {
			t.Errorf("%s: ETag %s, want %s", r.What, got, want)
		}
	})
}

// plainTag is an ETag without the part that names the role it was drawn
// for ("-ra") and the part that names figures derived from other records
// ("-d…", a customer's orders: TestCustomerETagsFollowItsOrders).
func plainTag(tag string) string {
	if i := strings.LastIndex(tag, "-"); i > 0 && strings.HasSuffix(tag, `"`) && isWhoMark(tag[i+1:len(tag)-1]) {
		tag = tag[:i] + `"`
	}
	if i := strings.LastIndex(tag, "-d"); i > 0 && strings.HasSuffix(tag, `"`) &&
		strings.Trim(tag[i+2:len(tag)-1], "0123456789abcdefghijklmnopqrstuvwxyz") == "" {
		return tag[:i] + `"`
	}
	return tag
}

// TestResourceConflict: a stale version in the body is 409: JSON with the
// stored member as "current"; a form shown again with the comparison
// (yours and theirs), the stored version and what the person typed; its
// "Save mine" then saves.
func TestResourceConflict(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		id, path := itoa(m.ID), s.R.MemberPath(m.ID)
		a.do(t, http.MethodPut, path, testutil.JSON(map[string]any{s.field: "Theirs"}), testutil.HJSON).WantStatus(t, http.StatusOK)

		r := a.do(t, http.MethodPut, path, testutil.JSON(map[string]any{s.field: "Mine", "version": 1}), testutil.HJSON)
		r.WantStatus(t, http.StatusConflict).WantNegotiated(t)
		var e struct {
			Error     string         `json:"error"`
			RequestID string         `json:"request_id"`
			Current   map[string]any `json:"current"`
		}
		r.JSON(t, &e)
		if e.Error == "" || e.RequestID == "" || e.Current["version"] != float64(2) || e.Current[s.field] != "Theirs" {
			t.Errorf("%s: got %+v, want an error, a request id and current at version 2", r.What, e)
		}

		for _, mode := range []struct {
			name string
			h    testutil.H
			page bool
		}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
			r := a.do(t, http.MethodPost, path, testutil.Form("_method", "PUT", "version", "1", s.field, "Mine"), mode.h)
			r.WantStatus(t, http.StatusConflict).WantNegotiated(t)
			if mode.page {
				r.WantPage(t, s.form)
			} else {
				r.WantFragment(t, s.form)
				wantNotice(t, r, noticeWarning, s.R.Named(m.ID)+" was changed by someone else")
			}
			panel := plainText(elementByID(r.Body, "conflict-"+id))
			for _, want := range []string{"Someone else changed " + s.R.Name + " " + id, "now version 2",
				"Fields that differ Field Yours Theirs", s.label + " Mine Theirs", "Save mine over theirs", "Keep theirs"} {
				if !strings.Contains(panel, want) {
					t.Errorf("%s: the conflict panel does not say %q; it says:\n%s", r.What, want, panel)
				}
			}
			r.WantContains(t, `<button type="submit" form="`+s.R.FormID()+`">Save mine over theirs</button>`,
				`<a class="button secondary" href="`+s.R.EditPath(m.ID)+`">Keep theirs</a>`,
				`id="`+s.R.FormID()+`"`, `action="`+path+`"`, `name="version" value="2"`, `value="Mine"`)
		}
		s.wantUnchanged(t, a, m.ID, 2, "Theirs")
		// Save mine: the form as the 409 left it.
		a.do(t, http.MethodPost, path, testutil.Form("_method", "PUT", "version", "2", s.field, "Mine"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		s.wantUnchanged(t, a, m.ID, 3, "Mine")
	})
}

// TestResourceStatuses: the error statuses that every
// resource shares, each in the representation asked for, each changing
// nothing: 404, 405 with Allow, 406, 415, 413, 400 (a body that cannot
// be read), 403 from another origin.
func TestResourceStatuses(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		path := s.R.MemberPath(m.ID)
		value := s.body(1)[s.field].(string)
		unchanged := func(t *testing.T, after string) {
			t.Helper()
			s.wantCount(t, a, 1, after)
			s.wantUnchanged(t, a, m.ID, 1, value)
		}

		t.Run("404", func(t *testing.T) {
			p := s.R.Path()
			for _, target := range []string{p + "/999", p + "/999/edit", p + "/abc", p + "/0", p + "/01", p + "/-1", p + "/1.0",
				p + "/1234567890123456789", p + "/abc/edit", p + "/1/nope", p + "/999999999999999999"} {
				var e errorJSON
				a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusNotFound).WantNegotiated(t).JSON(t, &e)
				if e.Error == "" || e.RequestID == "" {
					t.Errorf("GET %s: got %+v, want an error and a request id", target, e)
				}
				a.get(t, target, testutil.HPage).WantStatus(t, http.StatusNotFound).WantPage(t, "error")
				a.get(t, target, testutil.HHX).WantStatus(t, http.StatusNotFound).WantFragment(t, "error")
			}
			a.get(t, p+"/999", testutil.HPage).WantContains(t, s.R.Title+" 999 was not found")
			for _, method := range []string{http.MethodPut, http.MethodDelete} {
				for _, target := range []string{p + "/999", p + "/0", p + "/01"} {
					a.do(t, method, target, testutil.JSON(map[string]any{s.field: "x"}), testutil.HJSON).WantStatus(t, http.StatusNotFound)
				}
			}
			a.do(t, http.MethodPost, p+"/999", testutil.Form("_method", "PUT", s.field, "x"), testutil.HPage).WantStatus(t, http.StatusNotFound)
			unchanged(t, "404s")
		})

		t.Run("405", func(t *testing.T) {
			for _, c := range []struct {
				method, path string
				b            testutil.Body
				allow        []string
			}{
				{http.MethodPut, s.R.NewPath(), testutil.JSON(`{}`), []string{"GET"}},
				{http.MethodDelete, s.R.NewPath(), testutil.NoBody, []string{"GET"}},
				{http.MethodDelete, s.R.Path(), testutil.NoBody, []string{"GET", "POST"}},
				{http.MethodPut, s.R.Path(), testutil.JSON(`{}`), []string{"GET", "POST"}},
				{http.MethodPatch, path, testutil.JSON(`{}`), []string{"GET", "PUT", "DELETE"}},
				{http.MethodPost, path, testutil.JSON(s.body(2)), []string{"GET", "PUT", "DELETE"}},
				{http.MethodPost, path, testutil.Form(s.formBody(2)...), []string{"GET", "PUT", "DELETE"}},
				{http.MethodPost, s.R.EditPath(m.ID), testutil.Form(s.formBody(2)...), []string{"GET"}},
				{http.MethodPut, s.R.EditPath(m.ID), testutil.JSON(s.body(2)), []string{"GET"}},
			} {
				for _, h := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX} {
					r := a.do(t, c.method, c.path, c.b, h).WantStatus(t, http.StatusMethodNotAllowed)
					allow := r.Header.Get("Allow")
					for _, want := range c.allow {
						if !strings.Contains(allow, want) {
							t.Errorf("%s: Allow %q, want it to hold %s", r.What, allow, want)
						}
					}
					if c.method != http.MethodDelete && strings.Contains(allow, c.method) {
						t.Errorf("%s: Allow %q holds the refused %s", r.What, allow, c.method)
					}
				}
			}
			unchanged(t, "405s")
		})

		t.Run("406", func(t *testing.T) {
			for _, p := range []string{s.R.Path(), s.R.NewPath(), path, s.R.EditPath(m.ID), s.R.Path() + "/999"} {
				for _, acc := range []string{"image/png", "text/plain", "application/xml", "text/html;q=0, application/json;q=0"} {
					a.get(t, p, testutil.H{"Accept": acc}).WantStatus(t, http.StatusNotAcceptable).WantNegotiated(t).WantLacks(t, "<html")
				}
			}
			png := testutil.H{"Accept": "image/png"}
			a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(s.body(2)), png).WantStatus(t, http.StatusNotAcceptable)
			a.do(t, http.MethodPut, path, testutil.JSON(map[string]any{s.field: "x"}), png).WantStatus(t, http.StatusNotAcceptable)
			a.do(t, http.MethodDelete, path, testutil.NoBody, png).WantStatus(t, http.StatusNotAcceptable)
			unchanged(t, "406s")
		})

		t.Run("415", func(t *testing.T) {
			raw := string(testutil.JSON(s.body(2)).Data)
			for _, b := range []testutil.Body{testutil.Raw("text/plain", raw), testutil.Raw("application/xml", "<x/>"), {Data: []byte(raw)}, testutil.Raw("application/jso n", raw)} {
				for _, h := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX} {
					r := a.do(t, http.MethodPost, s.R.Path(), b, h).WantStatus(t, http.StatusUnsupportedMediaType).WantNegotiated(t)
					if h["Accept"] == "application/json" {
						var e errorJSON
						if r.JSON(t, &e); !strings.Contains(e.Error, "application/json") {
							t.Errorf("%s: error %q, want it to name the types accepted", r.What, e.Error)
						}
					}
					a.do(t, http.MethodPut, path, b, h).WantStatus(t, http.StatusUnsupportedMediaType)
				}
			}
			a.do(t, http.MethodDelete, path, testutil.Raw("text/plain", "version=1"), testutil.HJSON).WantStatus(t, http.StatusUnsupportedMediaType)
			unchanged(t, "415s")
			// Parameters and case of a media type do not matter.
			b := testutil.JSON(s.body(3))
			c := a.do(t, http.MethodPost, s.R.Path(), testutil.Raw("Application/JSON; charset=utf-8", string(b.Data)), testutil.HJSON).WantStatus(t, http.StatusCreated)
			a.do(t, http.MethodDelete, c.Header.Get("Location"), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		})

		t.Run("413", func(t *testing.T) {
			mib := strings.Repeat("x", MaxBody)
			big := s.body(4)
			big[s.field] = mib
			for _, c := range []struct {
				method, path string
				b            testutil.Body
			}{
				{http.MethodPost, s.R.Path(), testutil.JSON(big)},
				{http.MethodPost, s.R.Path(), testutil.Form(append(s.formBody(4), s.field, mib)...)},
				{http.MethodPost, s.R.Path(), testutil.Multipart(append(s.formBody(4), s.field, mib)...)},
				{http.MethodPut, path, testutil.JSON(map[string]any{s.field: mib})},
				{http.MethodPost, path, testutil.Form("_method", "PUT", s.field, mib)},
				{http.MethodDelete, path, testutil.Form("version", "1", "pad", mib)},
			} {
				for _, h := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX} {
					r := a.do(t, c.method, c.path, c.b, h).WantStatus(t, http.StatusRequestEntityTooLarge).WantNegotiated(t)
					if h["Accept"] == "application/json" {
						var e errorJSON
						if r.JSON(t, &e); !strings.Contains(e.Error, "1 MiB") {
							t.Errorf("%s: error %q, want it to say 1 MiB", r.What, e.Error)
						}
					}
				}
			}
			unchanged(t, "413s")
			// Just under the limit is read, and judged on its values.
			under := s.body(4)
			under[s.field] = mib[:MaxBody-200]
			var e errorJSON
			a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(under), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
			if e.Errors[s.field] != s.limitMsg {
				t.Errorf("a body just under 1 MiB: errors %v, want %s: %s", e.Errors, s.field, s.limitMsg)
			}
			unchanged(t, "a body just under 1 MiB")
		})

		t.Run("400", func(t *testing.T) {
			cases := []struct{ name, body, want string }{
				{"truncated", `{"` + s.field + `":`, "not valid JSON"},
				{"not an object", `["` + s.field + `"]`, "JSON object"},
				{"empty", ``, "JSON object"},
				{"null", `null`, "JSON object"},
				{"two objects", `{"` + s.field + `":"a"} {"` + s.field + `":"b"}`, "one JSON object"},
				{"trailing garbage", `{"` + s.field + `":"a"}}`, ""},
				{"field a number", `{"` + s.field + `": 5}`, s.field},
				{"field an array", `{"` + s.field + `": ["a"]}`, s.field},
				{"field an object", `{"` + s.field + `": {"a": 1}}`, s.field},
				{"version a string", `{"` + s.field + `":"x","version":"1"}`, "version"},
				{"version zero", `{"` + s.field + `":"x","version":0}`, "version"},
				{"version a fraction", `{"` + s.field + `":"x","version":1.5}`, "version"},
				{"not UTF-8", "{\"" + s.field + "\":\"\xff\"}", "UTF-8"},
				{"single quotes", `{'` + s.field + `':'x'}`, ""},
			}
			// Every text field sent as a number, every text or money field
			// as an object (an amount may be a JSON number).
			for _, f := range s.api.Fields {
				if f.Kind == kindText {
					cases = append(cases, struct{ name, body, want string }{f.Name + " a number", `{"` + f.Name + `": 840}`, f.Name})
				}
				if f.Kind == kindText || f.Kind == kindMoney {
					cases = append(cases, struct{ name, body, want string }{f.Name + " an object", `{"` + f.Name + `": {}}`, ""})
				}
			}
			for _, c := range cases {
				for _, mth := range []struct{ method, path string }{{http.MethodPost, s.R.Path()}, {http.MethodPut, path}} {
					r := a.do(t, mth.method, mth.path, testutil.JSON(c.body), testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t)
					var e errorJSON
					r.JSON(t, &e)
					if e.Error == "" || !strings.Contains(e.Error, c.want) || e.RequestID == "" {
						t.Errorf("%s %s: got %+v, want an error naming %q and a request id", r.What, c.name, e, c.want)
					}
					a.do(t, mth.method, mth.path, testutil.JSON(c.body), testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error")
					a.do(t, mth.method, mth.path, testutil.JSON(c.body), testutil.HXTo("main#main")).WantStatus(t, http.StatusBadRequest).WantFragment(t, "error")
				}
			}
			for _, v := range []string{"abc", "0", "-1", "1.0", " ", "99999999999999999999"} {
				a.do(t, http.MethodPut, path, testutil.Form(s.field, "x", "version", v), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			}
			a.do(t, http.MethodPost, s.R.Path(), testutil.Raw("multipart/form-data; boundary=xyz", "not multipart"), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			unchanged(t, "400s")
		})

		t.Run("_method", func(t *testing.T) {
			for _, meth := range []string{"PATCH", "GET", "POST", "nonsense"} {
				for _, b := range []testutil.Body{testutil.Form("_method", meth, s.field, "x"), testutil.Multipart("_method", meth, s.field, "x")} {
					var e errorJSON
					a.do(t, http.MethodPost, path, b, testutil.HJSON).WantStatus(t, http.StatusBadRequest).JSON(t, &e)
					if !strings.Contains(e.Error, "_method") {
						t.Errorf("POST %s _method=%s: error %q, want it to name _method", path, meth, e.Error)
					}
				}
			}
			// Only a form's POST is overridden: not JSON, not the query, not a GET.
			a.do(t, http.MethodPost, path, testutil.JSON(`{"_method":"DELETE"}`), testutil.HJSON).WantStatus(t, http.StatusMethodNotAllowed)
			a.do(t, http.MethodPost, path+"?_method=DELETE", testutil.JSON(s.body(2)), testutil.HJSON).WantStatus(t, http.StatusMethodNotAllowed)
			a.get(t, path+"?_method=DELETE", testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, s.show)
			unchanged(t, "refused _method overrides")
		})

		t.Run("403", func(t *testing.T) {
			for _, h := range []testutil.H{
				{"Origin": "http://evil.example"},
				{"Origin": "null"},
				{"Origin": "https://example.com"},
				{"Origin": "http://example.com:8080"},
				{"Sec-Fetch-Site": "cross-site"},
				{"Sec-Fetch-Site": "same-site"},
				{"Sec-Fetch-Site": "cross-site", "Origin": "http://example.com"},
			} {
				for _, c := range []struct {
					method, path string
					b            testutil.Body
				}{
					{http.MethodPost, s.R.Path(), testutil.Form(s.formBody(5)...)},
					{http.MethodPost, s.R.Path(), testutil.JSON(s.body(5))},
					{http.MethodPost, s.R.Path(), testutil.Raw("text/plain", string(testutil.JSON(s.body(5)).Data))},
					{http.MethodPut, path, testutil.Form(s.field, "Evil")},
					{http.MethodPost, path, testutil.Form("_method", "PUT", s.field, "Evil")},
					{http.MethodPost, path, testutil.Form("_method", "DELETE")},
					{http.MethodDelete, path, testutil.NoBody},
					{http.MethodDelete, path + "?version=1", testutil.NoBody},
				} {
					for _, rep := range []testutil.H{testutil.HJSON, testutil.HPage, testutil.HHX} {
						r := a.do(t, c.method, c.path, c.b, rep.With(h)).WantStatus(t, http.StatusForbidden).WantNegotiated(t)
						if !strings.Contains(strings.ToLower(r.Body), "cross-origin writes are refused") {
							t.Errorf("%s: want it to say cross-origin writes are refused; got %.300s", r.What, r.Body)
						}
					}
				}
			}
			unchanged(t, "403s")
			// Reads from anywhere; writes from the same origin or from programs.
			a.get(t, path, testutil.HJSON.With(testutil.H{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})).WantStatus(t, http.StatusOK)
			same := testutil.H{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"}
			c := a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(s.body(6)), testutil.HJSON.With(same)).WantStatus(t, http.StatusCreated)
			a.do(t, http.MethodDelete, c.Header.Get("Location"), testutil.NoBody, testutil.HJSON.With(testutil.H{"Sec-Fetch-Site": "none"})).WantStatus(t, http.StatusNoContent)
		})
	})
}

// TestResourceMethodOverride: a plain form sends PUT and DELETE as a POST
// with _method, urlencoded or multipart, in any case; the
// answer is the 303 and the notice a plain form gets.
func TestResourceMethodOverride(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		for i, enc := range []struct {
			name string
			body func(kv ...string) testutil.Body
		}{{"urlencoded", testutil.Form}, {"multipart", testutil.Multipart}} {
			t.Run(enc.name, func(t *testing.T) {
				m := s.create(t, a, 40+i)
				path := s.R.MemberPath(m.ID)
				r := a.do(t, http.MethodPost, path, enc.body("_method", "PUT", s.field, "Overridden", "version", "1"), testutil.HPage)
				r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", path)
				if !strings.Contains(r.Header.Get("Set-Cookie"), "saved") {
					t.Errorf("%s: Set-Cookie %q, want the saved notice", r.What, r.Header.Get("Set-Cookie"))
				}
				s.wantUnchanged(t, a, m.ID, 2, "Overridden")
				a.do(t, http.MethodPost, path, enc.body("_method", "put", s.field, "Lower case"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
				s.wantUnchanged(t, a, m.ID, 3, "Lower case")
				// The confirmation page's form: _method=DELETE with the version.
				page := a.get(t, path+"?confirm=delete", testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, s.del)
				page.WantContains(t, `action="`+path+`"`, `name="_method" value="DELETE"`, `name="version" value="3"`)
				a.do(t, http.MethodPost, path, enc.body("_method", "DELETE", "version", "2"), testutil.HPage).WantStatus(t, http.StatusConflict)
				r = a.do(t, http.MethodPost, path, enc.body("_method", "DELETE", "version", "3"), testutil.HPage)
				r.WantStatus(t, http.StatusSeeOther).WantHeader(t, "Location", s.R.Path())
				if !strings.Contains(r.Header.Get("Set-Cookie"), "deleted") {
					t.Errorf("%s: Set-Cookie %q, want the deleted notice", r.What, r.Header.Get("Set-Cookie"))
				}
				a.get(t, path, testutil.HJSON).WantStatus(t, http.StatusNotFound)
				// The page after the redirect shows the notice once.
				cookie := strings.SplitN(r.Header.Get("Set-Cookie"), ";", 2)[0]
				list := a.get(t, s.R.Path(), testutil.HPage.With(testutil.H{"Cookie": cookie})).WantStatus(t, http.StatusOK)
				if got := regionOnPage(list.Body, "notice"); !strings.Contains(got, s.R.Named(m.ID)+" deleted.") {
					t.Errorf("%s: #notice holds %q, want the deleted notice", list.What, got)
				}
				if list.Header.Get("ETag") != "" || list.Header.Get("Cache-Control") != noStore {
					t.Errorf("%s: ETag %q Cache-Control %q, want a page with a one-time notice kept out of caches", list.What,
						list.Header.Get("ETag"), list.Header.Get("Cache-Control"))
				}
			})
		}
		t.Run("htmx row delete from a form post", func(t *testing.T) {
			m := s.create(t, a, 50)
			a.do(t, http.MethodPost, s.R.MemberPath(m.ID), testutil.Form("_method", "DELETE"), s.row(m.ID)).WantStatus(t, http.StatusOK).WantLacks(t, "<tr")
			a.get(t, s.R.MemberPath(m.ID), testutil.HJSON).WantStatus(t, http.StatusNotFound)
		})
	})
}

// TestResourceLimits: a text field one character over its limit is a 422
// that names the limit, in JSON (errors.<field>) and in the form shown
// again with the typed value kept (a page or htmx's fragment), on create
// and on update; at the limit it is stored.
func TestResourceLimits(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		long := strings.Repeat("é", s.max+1) // characters, not bytes
		at := strings.Repeat("é", s.max)
		body := s.body(1)
		body[s.field] = long
		var e errorJSON
		a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(body), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t).JSON(t, &e)
		if e.Errors[s.field] != s.limitMsg || e.RequestID == "" {
			t.Errorf("POST %s with a %d-character %s: got %+v, want errors.%s %q", s.R.Path(), s.max+1, s.field, e, s.field, s.limitMsg)
		}
		for _, mode := range []struct {
			name string
			h    testutil.H
			page bool
		}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
			kv := s.formBody(2)
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == s.field {
					kv[i+1] = long
				}
			}
			r := a.do(t, http.MethodPost, s.R.Path(), testutil.Form(kv...), mode.h).WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t)
			if mode.page {
				r.WantPage(t, s.form)
			} else {
				r.WantFragment(t, s.form)
			}
			r.WantFieldError(t, s.field, s.limitMsg, long)
			r.WantContains(t, `action="`+s.R.Path()+`"`, "please correct the marked fields")
		}
		s.wantCount(t, a, 0, "422s")
		body[s.field] = at
		m := a.do(t, http.MethodPost, s.R.Path(), testutil.JSON(body), testutil.HJSON).WantStatus(t, http.StatusCreated)
		var got map[string]any
		m.JSON(t, &got)
		if got[s.field] != at {
			t.Errorf("%s of %d characters: stored %v", s.field, s.max, got[s.field])
		}
		id := int64(got["id"].(float64))
		// An update over the limit: the Edit form of that member, its
		// version, the typed value.
		r := a.do(t, http.MethodPost, s.R.MemberPath(id), testutil.Form("_method", "PUT", "version", "1", s.field, long), testutil.HPage)
		r.WantStatus(t, http.StatusUnprocessableEntity).WantPage(t, s.form)
		r.WantFieldError(t, s.field, s.limitMsg, long)
		r.WantContains(t, `action="`+s.R.MemberPath(id)+`"`, `name="_method" value="PUT"`, `name="version" value="1"`, "The changes were not saved")
		e = errorJSON{}
		a.do(t, http.MethodPut, s.R.MemberPath(id), testutil.JSON(map[string]any{s.field: long, "version": 1}), testutil.HJSON).
			WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t).JSON(t, &e)
		if e.Errors[s.field] != s.limitMsg {
			t.Errorf("PUT %s with a %d-character %s: got %+v, want errors.%s %q", s.R.MemberPath(id), s.max+1, s.field, e, s.field, s.limitMsg)
		}
		r = a.do(t, http.MethodPut, s.R.MemberPath(id), testutil.Form("version", "1", s.field, long), testutil.HXTo("main#main"))
		r.WantStatus(t, http.StatusUnprocessableEntity).WantNegotiated(t).WantFragment(t, s.form).WantFieldError(t, s.field, s.limitMsg, long)
		s.wantUnchanged(t, a, id, 1, at)
	})
}

// TestResourceQueryErrors: a List query the resource does not know is a
// 400 in the representation asked for; page and per_page are clamped.
func TestResourceQueryErrors(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		// Three members, the suite's own account among them.
		for i := range 3 - int(a.preMade) {
			s.create(t, a, i)
		}
		for _, q := range []string{"sort=bogus", "sort=-", "sort=%2Bcreated", "page=x", "per_page=1.5", "page=1e3"} {
			target := s.R.Path() + "?" + q
			var e errorJSON
			a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusBadRequest).WantNegotiated(t).JSON(t, &e)
			if e.Error == "" {
				t.Errorf("GET %s: got %+v, want an error", target, e)
			}
			a.get(t, target, testutil.HPage).WantStatus(t, http.StatusBadRequest).WantPage(t, "error")
			a.get(t, target, testutil.HXTo("div#"+s.R.ResultsID())).WantStatus(t, http.StatusBadRequest).WantFragment(t, "error")
		}
		for _, c := range []struct {
			query       string
			page, per   int
			n           int
			prev, next  bool
			resultsOnly bool
		}{
			{"", 1, 25, 3, false, false, false},
			{"per_page=2", 1, 2, 2, false, true, false},
			{"per_page=2&page=2", 2, 2, 1, true, false, false},
			{"per_page=0", 1, 1, 1, false, true, false},
			{"per_page=1000", 1, 100, 3, false, false, false},
			{"page=-5", 1, 25, 3, false, false, false},
			{"page=99", 99, 25, 0, true, false, false},
			{"page=99999999999999999999", 1 << 30, 25, 0, true, false, false},
		} {
			target := s.R.Path() + "?" + c.query
			obj := a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusOK).Object(t)
			entries, _ := obj[s.R.Plural].([]any)
			if obj["page"] != float64(c.page) || obj["per_page"] != float64(c.per) || len(entries) != c.n || obj["total"] != float64(3) ||
				(obj["prev"] != nil) != c.prev || (obj["next"] != nil) != c.next || obj["total_is_lower_bound"] != false {
				t.Errorf("GET %s: got page %v per_page %v, %d entries, total %v, prev %v, next %v, lower bound %v; want page %d per_page %d, %d entries, total 3, prev %v, next %v",
					target, obj["page"], obj["per_page"], len(entries), obj["total"], obj["prev"], obj["next"], obj["total_is_lower_bound"], c.page, c.per, c.n, c.prev, c.next)
			}
		}
		r := a.get(t, s.R.Path()+"?per_page=2", testutil.HXTo("div#"+s.R.ResultsID())).WantStatus(t, http.StatusOK).WantFragment(t, s.R.ResultsID())
		r.WantLacks(t, `id="search"`, "<h1>").WantContains(t, `href="`+s.R.Path()+`?page=2&amp;per_page=2"`)
		a.get(t, s.R.Path()+"?page=2&per_page=2", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "Showing 3–3 of 3")
		a.get(t, s.R.Path()+"?page=99", testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, "No "+s.R.Plural+" on page 99 — 3 "+s.R.Plural+" on 1 page", `href="`+s.R.Path()+`"`)
	})
}
