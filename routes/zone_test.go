package routes

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"orders/store/redisstore"
	"orders/testutil"
)

// zoneApp is an app over every target whose order 1 ("Late Evening") was
// created at 23:30 UTC on 2026-03-23 and updated at 09:15 UTC on the 27th,
// and order 2 ("Early Morning") created at 00:30 UTC on the 24th.
func zoneApp(t *testing.T, fn func(t *testing.T, a *testApp)) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			clk := &listClock{}
			a := newTestApp(t, tg.Name, redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster, Now: clk.now}))
			clk.set(time.Date(2026, 3, 23, 23, 30, 0, 0, time.UTC))
			late := a.createNamed(t, "Late Evening")
			clk.set(time.Date(2026, 3, 24, 0, 30, 0, 0, time.UTC))
			a.createNamed(t, "Early Morning")
			clk.set(time.Date(2026, 3, 27, 9, 15, 0, 0, time.UTC))
			a.update(t, late.ID, map[string]any{"customer": "Late Evening", "version": late.Version,
				"items": []any{item("Widget", 3, "1.50")}})
			fn(t, a)
		})
	}
}

func tzCookie(zone string) testutil.H { return testutil.H{"Cookie": "tz=" + zone} }

// TestPagesWriteTimesInTheBrowsersZone: with the tz cookie a page writes its
// times in that zone, labelled with the zone's abbreviation; without it,
// or with a value that names no zone, in UTC, labelled "UTC". JSON keeps
// RFC 3339 UTC times whatever the cookie says.
func TestPagesWriteTimesInTheBrowsersZone(t *testing.T) {
	zoneApp(t, func(t *testing.T, a *testApp) {
		utc := []string{"2026-03-23 23:30 UTC", "2026-03-27 09:15 UTC"}
		berlin := []string{"2026-03-24 00:30 CET", "2026-03-27 10:15 CET"}
		for _, c := range []struct {
			what   string
			h      testutil.H
			want   []string
			unwant []string
		}{
			{"no cookie", testutil.HPage, utc, berlin},
			{"Berlin", testutil.HPage.With(tzCookie("Europe/Berlin")), berlin, utc},
			{"Berlin, fragment", testutil.HXTo("div#order-results").With(tzCookie("Europe/Berlin")), berlin, utc},
			{"unknown zone", testutil.HPage.With(tzCookie("Mars/Olympus_Mons")), utc, berlin},
			{"a path", testutil.HPage.With(tzCookie("../../../etc/localtime")), utc, berlin},
			{"the server's own zone", testutil.HPage.With(tzCookie("Local")), utc, berlin},
			{"too long", testutil.HPage.With(tzCookie("Europe/" + strings.Repeat("Berlin", 20))), utc, berlin},
			{"no such city", testutil.HPage.With(tzCookie("Europe/Atlantis")), utc, berlin},
			{"a file path", testutil.HPage.With(tzCookie("/etc/localtime")), utc, berlin},
		} {
			r := a.get(t, "/orders?sort=created", c.h).WantStatus(t, http.StatusOK)
			r.WantContains(t, c.want...)
			r.WantLacks(t, c.unwant...)
			// The order's page and its history too.
			a.get(t, "/orders/1", c.h).WantStatus(t, http.StatusOK).WantContains(t, c.want...).WantLacks(t, c.unwant...)
		}
		// New York's abbreviation follows its clock change (EDT from 8 March).
		a.get(t, "/orders/1", testutil.HPage.With(tzCookie("America/New_York"))).WantContains(t, "2026-03-23 19:30 EDT")
		var o map[string]any
		a.get(t, "/orders/1", testutil.HJSON.With(tzCookie("Europe/Berlin"))).WantStatus(t, http.StatusOK).JSON(t, &o)
		if o["created_at"] != "2026-03-23T23:30:00Z" || o["updated_at"] != "2026-03-27T09:15:00Z" {
			t.Errorf("JSON with a zone: got created_at %v updated_at %v, want RFC 3339 UTC times", o["created_at"], o["updated_at"])
		}
	})
}

// TestListShowsCreatedBesideUpdated: each List row shows the date its order
// was created (what from and to filter on) and its last update, under a
// Created header that sorts by it; the Inquiry shows both too.
func TestListShowsCreatedBesideUpdated(t *testing.T) {
	zoneApp(t, func(t *testing.T, a *testApp) {
		r := a.get(t, "/orders?q=late", testutil.HPage).WantStatus(t, http.StatusOK)
		r.WantContains(t, `data-label="Created"><time datetime="2026-03-23T23:30:00Z">2026-03-23 23:30 UTC</time>`,
			`data-label="Updated"><time datetime="2026-03-27T09:15:00Z">2026-03-27 09:15 UTC</time>`)
		head := a.get(t, "/orders", testutil.HPage).Body
		if i, j := strings.Index(head, ">Created<"), strings.Index(head, ">Updated<"); i < 0 || j < 0 || i > j {
			t.Errorf("List: want a Created header before the Updated one, got Created at %d, Updated at %d", i, j)
		}
		if !strings.Contains(head, `href="/orders?sort=created"`) {
			t.Errorf("List: want the Created header to sort by creation (a link to ?sort=created)")
		}
		a.get(t, "/orders/inquiry?q=late", testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, "Created <time datetime=\"2026-03-23T23:30:00Z\">2026-03-23 23:30 UTC</time> · Updated")
	})
}

// TestDateFilterDaysAreInTheBrowsersZone: from and to are days in the
// person's zone. The order created at 23:30 UTC on the 23rd is on the
// 23rd in UTC and on the 24th in Berlin; the date fields say which zone.
func TestDateFilterDaysAreInTheBrowsersZone(t *testing.T) {
	zoneApp(t, func(t *testing.T, a *testApp) {
		for _, c := range []struct {
			zone, day string
			want      []string
		}{
			{"", "2026-03-23", []string{"Late Evening"}},
			{"", "2026-03-24", []string{"Early Morning"}},
			{"Europe/Berlin", "2026-03-23", nil},
			{"Europe/Berlin", "2026-03-24", []string{"Early Morning", "Late Evening"}},
			{"America/Los_Angeles", "2026-03-23", []string{"Early Morning", "Late Evening"}},
			{"Bogus/Zone", "2026-03-23", []string{"Late Evening"}},
		} {
			h := testutil.HJSON
			if c.zone != "" {
				h = h.With(tzCookie(c.zone))
			}
			target := "/orders?from=" + c.day + "&to=" + c.day
			var l listPage
			a.get(t, target, h).WantStatus(t, http.StatusOK).JSON(t, &l)
			var got []string
			for _, o := range l.Orders {
				got = append(got, o.Customer)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") || l.Total != int64(len(c.want)) {
				t.Errorf("GET %s in zone %q: got %v (total %d), want %v", target, c.zone, got, l.Total, c.want)
			}
		}
		// The page keeps the dates as typed and says which zone's days they are.
		a.get(t, "/orders?from=2026-03-24", testutil.HPage.With(tzCookie("Europe/Berlin"))).
			WantContains(t, `value="2026-03-24"`, "days in Europe/Berlin", `placeholder="YYYY-MM-DD"`)
		a.get(t, "/orders", testutil.HPage).WantContains(t, "days in UTC").WantLacks(t, `type="date"`)
		// Other shapes of a date are refused, saying the one accepted.
		for _, d := range []string{"03/24/2026", "24.03.2026", "2026/03/24", "2026-3-24", "2026-03-24T00:00"} {
			target := "/orders?from=" + url.QueryEscape(d)
			var e errorJSON
			a.get(t, target, testutil.HJSON.With(tzCookie("Europe/Berlin"))).WantStatus(t, http.StatusBadRequest).JSON(t, &e)
			if !strings.Contains(e.Error, "YYYY-MM-DD") {
				t.Errorf("GET %s: got error %q, want it to name YYYY-MM-DD", target, e.Error)
			}
		}
	})
}

// TestPageTagsNameTheZone: a page drawn in one zone is not a 304 for a
// browser in another (its ETag names the zone; Vary names Cookie); the same
// zone again is.
func TestPageTagsNameTheZone(t *testing.T) {
	zoneApp(t, func(t *testing.T, a *testApp) {
		for _, path := range []string{"/orders/1", "/orders/1/edit"} {
			plain := a.get(t, path, testutil.HPage).WantStatus(t, http.StatusOK)
			tag := plain.Header.Get("ETag")
			if tag == "" {
				continue // a page that is never revalidated has nothing to mix up
			}
			if !strings.Contains(plain.Header.Get("Vary"), "Cookie") {
				t.Errorf("GET %s: Vary %q, want Cookie among it", path, plain.Header.Get("Vary"))
			}
			ber := testutil.HPage.With(tzCookie("Europe/Berlin"))
			r := a.get(t, path, ber.With(testutil.H{"If-None-Match": tag}))
			if r.Status != http.StatusOK || !strings.Contains(r.Body, "CET") {
				t.Errorf("GET %s in Berlin with the UTC page's tag %s: got %d, want 200 with Berlin's times", path, tag, r.Status)
			}
			btag := r.Header.Get("ETag")
			if btag == tag || btag == "" {
				t.Errorf("GET %s: Berlin's tag %q, want one unlike UTC's %q", path, btag, tag)
			}
			a.get(t, path, ber.With(testutil.H{"If-None-Match": btag})).WantStatus(t, http.StatusNotModified)
			a.get(t, path, testutil.HPage.With(testutil.H{"If-None-Match": btag})).WantStatus(t, http.StatusOK)
			a.get(t, path, testutil.HPage.With(testutil.H{"If-None-Match": tag})).WantStatus(t, http.StatusNotModified)
		}
	})
}
