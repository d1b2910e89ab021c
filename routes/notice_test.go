package routes

// Notices: kinds that look different,
// a new notice replacing the old one in every htmx answer, the flash
// after a redirect shown once, with its kind.

import (
	"net/http"
	"net/url"
	"orders/testutil"
	"strings"
	"testing"
)

// regionPartial returns what an htmx answer sends to the live region id
// ("notice" or "notice-alert"), and whether it sends anything there.
func regionPartial(body, id string) (string, bool) {
	open := `<hx-partial hx-target="#` + id + `" hx-swap="innerHTML">`
	i := strings.Index(body, open)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(open):]
	j := strings.Index(rest, "</hx-partial>")
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// regionOnPage returns the content of the live region id on a full page.
func regionOnPage(body, id string) string {
	start := `id="` + id + `"`
	i := strings.Index(body, start)
	if i < 0 {
		return "(no #" + id + ")"
	}
	rest := body[i:]
	rest = rest[strings.IndexByte(rest, '>')+1:]
	// The region holds at most one notice: a <div> of its own.
	if strings.HasPrefix(rest, "</div>") {
		return ""
	}
	end := strings.Index(rest, "</div>\n</div>")
	if end < 0 {
		end = strings.Index(rest, "</div></div>")
	}
	if end < 0 {
		return rest
	}
	return rest[:end+len("</div>")]
}

// wantNotice checks that an htmx answer puts a notice of kind holding text
// in its region and empties the other one.
func wantNotice(t *testing.T, r *testutil.Resp, kind, text string) {
	t.Helper()
	region, other := "notice", "notice-alert"
	if kind != noticeSuccess {
		region, other = other, region
	}
	got, ok := regionPartial(r.Body, region)
	if !ok {
		t.Fatalf("%s: no <hx-partial> for #%s; body:\n%s", r.What, region, testutil.Snippet(r.Body))
	}
	label := map[string]string{noticeSuccess: "Success:", noticeWarning: "Warning:", noticeError: "Error:"}[kind]
	for _, want := range []string{`class="notice notice-` + kind + `"`, label, text, `class="notice-icon"`, `data-dismiss-notice`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s: #%s gets %q, want it to hold %q", r.What, region, got, want)
		}
	}
	if got, ok := regionPartial(r.Body, other); !ok || strings.TrimSpace(got) != "" {
		t.Errorf("%s: #%s gets %q (sent: %v), want it emptied: a new notice replaces every old one", r.What, other, got, ok)
	}
}

// wantNoNotice checks that an htmx answer empties both regions.
func wantNoNotice(t *testing.T, r *testutil.Resp) {
	t.Helper()
	for _, id := range []string{"notice", "notice-alert"} {
		if got, ok := regionPartial(r.Body, id); !ok || strings.TrimSpace(got) != "" {
			t.Errorf("%s: #%s gets %q (sent: %v), want it emptied: a notice does not carry into later screens", r.What, id, got, ok)
		}
	}
}

// TestNoticeKinds: every notice the routes produce has its kind, goes to
// its region, and replaces the one before: a stale "saved" never stays
// beside an error.
func TestNoticeKinds(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Notice Co", "items": []any{item("Tape", 1, "3.00")}})
		row := "tr#" + rowID(o.ID)

		r := a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Notice Co.", "version", "1"), testutil.HXTo(row)).WantStatus(t, http.StatusOK)
		wantNotice(t, r, noticeSuccess, "Order "+itoa(o.ID)+" saved.")

		// The next answer, an error, replaces the "saved" notice.
		r = a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "", "version", "2"), testutil.HXTo(row)).WantStatus(t, http.StatusUnprocessableEntity)
		wantNotice(t, r, noticeError, "Order "+itoa(o.ID)+" was not saved: please correct the marked fields.")

		// The full form's 422 has its own summary (role=alert): the regions empty.
		r = a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "", "version", "2"), testutil.HXTo("main#main")).WantStatus(t, http.StatusUnprocessableEntity)
		wantNoNotice(t, r)
		r.WantContains(t, "The changes were not saved")

		// A stale version: a warning.
		r = a.do(t, http.MethodPut, path(o.ID), testutil.Form("customer", "Late", "version", "1"), testutil.HXTo("main#main")).WantStatus(t, http.StatusConflict)
		wantNotice(t, r, noticeWarning, "was changed by someone else")

		// Moving on (opening an inline edit, a search) clears it.
		wantNoNotice(t, a.get(t, path(o.ID, "/edit"), testutil.HXTo(row)).WantStatus(t, http.StatusOK))
		wantNoNotice(t, a.get(t, "/orders?q=notice", testutil.HXTo("div#order-results")).WantStatus(t, http.StatusOK))

		// Create and delete succeed with their notices.
		r = a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Second"), testutil.HXTo("main#main")).WantStatus(t, http.StatusCreated)
		wantNotice(t, r, noticeSuccess, "created.")
		doomed := a.createNamed(t, "Doomed")
		r = a.do(t, http.MethodDelete, path(doomed.ID), testutil.NoBody, testutil.HXTo("tr#"+rowID(doomed.ID))).WantStatus(t, http.StatusOK)
		wantNotice(t, r, noticeSuccess, "Order "+itoa(doomed.ID)+" deleted.")

		// An error htmx swaps (deleting what is gone, a stale delete) is
		// said in the alert region; the row's delete swaps nothing else.
		r = a.do(t, http.MethodDelete, path(doomed.ID), testutil.NoBody, testutil.HXTo("tr#"+rowID(doomed.ID))).WantStatus(t, http.StatusNotFound)
		wantNotice(t, r, noticeError, "") // its wording is the error's
		r = a.do(t, http.MethodDelete, path(o.ID)+"?version=1", testutil.NoBody, testutil.HXTo(row)).WantStatus(t, http.StatusConflict)
		wantNotice(t, r, noticeError, "it was not deleted.")
		a.get(t, "/orders", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, `hx-status:4xx="swap:none"`)

		// A new order's form with a status message says it as an error.
		r = a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "X", "status", "shipped"), testutil.HXTo("main#main")).WantStatus(t, http.StatusUnprocessableEntity)
		wantNotice(t, r, noticeError, "Status: a new order starts as pending.")

		// JSON answers carry no notice at all.
		a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"notes": "n"}), testutil.HJSON).WantStatus(t, http.StatusOK).WantLacks(t, "notice")
	})
}

// TestFlashNoticeKinds: the notice after a redirect keeps its kind, shows
// on the next page only (in the region of its kind) and never again; a
// cookie from before kinds (plain text) is a success.
func TestFlashNoticeKinds(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		r := a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Flash Co"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: r.Header}).Cookies() {
			if c.Name == flashCookie {
				cookie = c
			}
		}
		if cookie == nil {
			t.Fatalf("%s: no flash cookie in %q", r.What, r.Header.Values("Set-Cookie"))
		}
		if v, _ := url.QueryUnescape(cookie.Value); !strings.HasPrefix(v, "success:Order ") {
			t.Errorf("%s: flash cookie %q, want success:Order N created.", r.What, v)
		}
		loc := r.Header.Get("Location")
		page := a.get(t, loc, testutil.HPage.With(testutil.H{"Cookie": flashCookie + "=" + cookie.Value})).WantStatus(t, http.StatusOK)
		if got := regionOnPage(page.Body, "notice"); !strings.Contains(got, "notice-success") || !strings.Contains(got, "Success:</strong> Order") {
			t.Errorf("%s: #notice holds %q, want the success notice", page.What, got)
		}
		if got := regionOnPage(page.Body, "notice-alert"); got != "" {
			t.Errorf("%s: #notice-alert holds %q, want nothing", page.What, got)
		}
		// The browser drops the cookie (cleared on the page): the next page has none.
		next := a.get(t, loc, testutil.HPage).WantStatus(t, http.StatusOK)
		if got := regionOnPage(next.Body, "notice") + regionOnPage(next.Body, "notice-alert"); got != "" {
			t.Errorf("%s: the regions hold %q after the notice was shown once, want nothing", next.What, got)
		}

		for _, c := range []struct{ value, region, class string }{
			{"error:Order 9 could not be saved.", "notice-alert", "notice-error"},
			{"warning:Check the order.", "notice-alert", "notice-warning"},
			{"Order 1 saved.", "notice", "notice-success"},
			{"bogus:kind", "notice", "notice-success"},
		} {
			page := a.get(t, "/orders", testutil.HPage.With(testutil.H{"Cookie": flashCookie + "=" + url.QueryEscape(c.value)})).WantStatus(t, http.StatusOK)
			if got := regionOnPage(page.Body, c.region); !strings.Contains(got, c.class) {
				t.Errorf("flash %q: #%s holds %q, want a %s", c.value, c.region, got, c.class)
			}
		}
	})
}
