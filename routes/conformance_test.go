package routes

// More of what every registered resource promises (resources_test.go
// holds the rest of the shared suites): its List finds a record by its
// number, a deleted record is a 404 that names the resource, and its live
// stream tells of every write.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// TestResourceListFindsARecordByItsNumber: the List's search finds a
// record by its id, in JSON, in the page and in the results fragment.
func TestResourceListFindsARecordByItsNumber(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		var ids []int64
		for n := range 3 {
			ids = append(ids, s.create(t, a, 60+n).ID)
		}
		for _, id := range ids {
			target := s.R.Path() + "?q=" + itoa(id)
			obj := a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusOK).WantNegotiated(t).Object(t)
			entries, _ := obj[s.R.Plural].([]any)
			found := false
			for _, e := range entries {
				if m, _ := e.(map[string]any); m["id"] == float64(id) {
					found = true
				}
			}
			if !found {
				t.Errorf("GET %s: %d entries %v, want %s among them", target, len(entries), entries, s.R.Named(id))
			}
			a.get(t, target, testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, s.list).
				WantContains(t, `id="`+s.R.RowID(id)+`"`)
			a.get(t, target, testutil.HXTo("div#"+s.R.ResultsID())).WantStatus(t, http.StatusOK).WantFragment(t, s.R.ResultsID()).
				WantContains(t, `id="`+s.R.RowID(id)+`"`)
		}
	})
}

// TestResourceDeletedIsNotFound: after a delete the member, its edit form
// and a change of it are 404s that name the resource and the id, in
// every representation.
func TestResourceDeletedIsNotFound(t *testing.T) {
	eachResource(t, func(t *testing.T, s *suiteResource, a *testApp) {
		m := s.create(t, a, 1)
		a.do(t, http.MethodDelete, s.R.MemberPath(m.ID)+"?version=1", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		named := s.R.Named(m.ID) + " was not found"
		for _, target := range []string{s.R.MemberPath(m.ID), s.R.EditPath(m.ID)} {
			var e errorJSON
			r := a.get(t, target, testutil.HJSON).WantStatus(t, http.StatusNotFound).WantNegotiated(t)
			if r.JSON(t, &e); !strings.Contains(strings.ToLower(e.Error), strings.ToLower(s.R.Named(m.ID))) {
				t.Errorf("%s: error %q, want it to name %s", r.What, e.Error, s.R.Named(m.ID))
			}
			a.get(t, target, testutil.HPage).WantStatus(t, http.StatusNotFound).WantNegotiated(t).WantPage(t, "error").WantContains(t, named)
			a.get(t, target, testutil.HHX).WantStatus(t, http.StatusNotFound).WantNegotiated(t).WantFragment(t, "error").WantContains(t, named)
		}
		a.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.JSON(map[string]any{s.field: "Too late"}), testutil.HJSON).
			WantStatus(t, http.StatusNotFound)
		a.do(t, http.MethodDelete, s.R.MemberPath(m.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNotFound)
	})
}

// TestResourceLiveEvents: the resource's stream (<path>/events) tells of
// a create, a change and a delete, each with the record's id and version,
// and of nothing another resource writes.
func TestResourceLiveEvents(t *testing.T) {
	for _, s := range resourceSuites() {
		t.Run(s.R.Plural, func(t *testing.T) {
			l := serveLive(t, s.R.Plural, testutil.NewStore(t, testutil.Miniredis(t)))
			// Signed in: the accounts' create would end protected mode.
			l.testApp.signedIn(t)
			stream := testutil.OpenSSE(t, l.base, s.R.EventsPath(), testutil.H{"Cookie": sessionCookie + "=" + l.testApp.session})
			defer stream.Close()
			stream.WaitOpen(t)
			for _, o := range resourceSuites() {
				if o != s {
					o.create(t, l.testApp, 1) // another resource's write: not on this stream
				}
			}
			m := s.create(t, l.testApp, 1)
			l.do(t, http.MethodPut, s.R.MemberPath(m.ID), testutil.JSON(map[string]any{s.field: "Changed live", "version": 1}), testutil.HJSON).
				WantStatus(t, http.StatusOK)
			l.do(t, http.MethodDelete, s.R.MemberPath(m.ID)+"?version=2", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
			evs := stream.WaitEvents(t, 3, 5*time.Second)
			want := []struct {
				action  string
				version int64
			}{{store.ActionCreated, 1}, {store.ActionUpdated, 2}, {store.ActionDeleted, 2}}
			if len(evs) != len(want) {
				t.Fatalf("%s: events %v, want %d: this resource's create, change and delete", s.R.EventsPath(), evs, len(want))
			}
			for i, w := range want {
				if d := dataOf(t, evs[i]); evs[i].Event != w.action || d.ID != m.ID || d.Version != w.version {
					t.Errorf("%s: event %d is %s, want %s of %s at version %d", s.R.EventsPath(), i, evs[i], w.action, s.R.Named(m.ID), w.version)
				}
			}
		})
	}
}
