package routes

// Notices (CONTRACT §7, issue 9 defect 2): kinds that look different,
// a new notice replacing the old one in every htmx answer, the flash
// after a redirect shown once, with its kind.

import (
	"net/http"
	"net/url"
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
func wantNotice(t *testing.T, r *resp, kind, text string) {
	t.Helper()
	region, other := "notice", "notice-alert"
	if kind != noticeSuccess {
		region, other = other, region
	}
	got, ok := regionPartial(r.body, region)
	if !ok {
		t.Fatalf("%s: no <hx-partial> for #%s; body:\n%s", r.what, region, snippet(r.body))
	}
	label := map[string]string{noticeSuccess: "Success:", noticeWarning: "Warning:", noticeError: "Error:"}[kind]
	for _, want := range []string{`class="notice notice-` + kind + `"`, label, text, `class="notice-icon"`, `data-dismiss-notice`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s: #%s gets %q, want it to hold %q", r.what, region, got, want)
		}
	}
	if got, ok := regionPartial(r.body, other); !ok || strings.TrimSpace(got) != "" {
		t.Errorf("%s: #%s gets %q (sent: %v), want it emptied: a new notice replaces every old one", r.what, other, got, ok)
	}
}

// wantNoNotice checks that an htmx answer empties both regions.
func wantNoNotice(t *testing.T, r *resp) {
	t.Helper()
	for _, id := range []string{"notice", "notice-alert"} {
		if got, ok := regionPartial(r.body, id); !ok || strings.TrimSpace(got) != "" {
			t.Errorf("%s: #%s gets %q (sent: %v), want it emptied: a notice does not carry into later screens", r.what, id, got, ok)
		}
	}
}

// TestNoticeKinds: every notice the routes produce has its kind, goes to
// its region, and replaces the one before: the stale "saved" of issue 9
// never stays beside an error.
func TestNoticeKinds(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Notice Co", "items": []any{item("Tape", 1, "3.00")}})
		row := "tr#" + rowID(o.ID)

		r := a.do(t, http.MethodPut, path(o.ID), form("customer", "Notice Co.", "version", "1"), hxTo(row)).wantStatus(t, http.StatusOK)
		wantNotice(t, r, noticeSuccess, "Order "+itoa(o.ID)+" saved.")

		// The next answer, an error, replaces the "saved" notice.
		r = a.do(t, http.MethodPut, path(o.ID), form("customer", "", "version", "2"), hxTo(row)).wantStatus(t, http.StatusUnprocessableEntity)
		wantNotice(t, r, noticeError, "Order "+itoa(o.ID)+" was not saved: please correct the marked fields.")

		// The full form's 422 has its own summary (role=alert): the regions empty.
		r = a.do(t, http.MethodPut, path(o.ID), form("customer", "", "version", "2"), hxTo("main#main")).wantStatus(t, http.StatusUnprocessableEntity)
		wantNoNotice(t, r)
		r.wantContains(t, "The changes were not saved")

		// A stale version: a warning.
		r = a.do(t, http.MethodPut, path(o.ID), form("customer", "Late", "version", "1"), hxTo("main#main")).wantStatus(t, http.StatusConflict)
		wantNotice(t, r, noticeWarning, "was changed by someone else")

		// Moving on (opening an inline edit, a search) clears it.
		wantNoNotice(t, a.get(t, path(o.ID, "/edit"), hxTo(row)).wantStatus(t, http.StatusOK))
		wantNoNotice(t, a.get(t, "/orders?q=notice", hxTo("div#order-results")).wantStatus(t, http.StatusOK))

		// Create and delete succeed with their notices.
		r = a.do(t, http.MethodPost, "/orders", form("customer", "Second"), hxTo("main#main")).wantStatus(t, http.StatusCreated)
		wantNotice(t, r, noticeSuccess, "created.")
		doomed := a.createNamed(t, "Doomed")
		r = a.do(t, http.MethodDelete, path(doomed.ID), noBody, hxTo("tr#"+rowID(doomed.ID))).wantStatus(t, http.StatusOK)
		wantNotice(t, r, noticeSuccess, "Order "+itoa(doomed.ID)+" deleted.")

		// An error htmx swaps (deleting what is gone, a stale delete) is
		// said in the alert region; the row's delete swaps nothing else.
		r = a.do(t, http.MethodDelete, path(doomed.ID), noBody, hxTo("tr#"+rowID(doomed.ID))).wantStatus(t, http.StatusNotFound)
		wantNotice(t, r, noticeError, "") // its wording is the error's
		r = a.do(t, http.MethodDelete, path(o.ID)+"?version=1", noBody, hxTo(row)).wantStatus(t, http.StatusConflict)
		wantNotice(t, r, noticeError, "it was not deleted.")
		a.get(t, "/orders", hPage).wantStatus(t, http.StatusOK).wantContains(t, `hx-status:4xx="swap:none"`)

		// A new order's form with a status message says it as an error.
		r = a.do(t, http.MethodPost, "/orders", form("customer", "X", "status", "shipped"), hxTo("main#main")).wantStatus(t, http.StatusUnprocessableEntity)
		wantNotice(t, r, noticeError, "Status: a new order starts as pending.")

		// JSON answers carry no notice at all.
		a.do(t, http.MethodPut, path(o.ID), jsonBody(map[string]any{"notes": "n"}), hJSON).wantStatus(t, http.StatusOK).wantLacks(t, "notice")
	})
}

// TestFlashNoticeKinds: the notice after a redirect keeps its kind, shows
// on the next page only (in the region of its kind) and never again; a
// cookie from before kinds (plain text) is a success.
func TestFlashNoticeKinds(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		r := a.do(t, http.MethodPost, "/orders", form("customer", "Flash Co"), hPage).wantStatus(t, http.StatusSeeOther)
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == flashCookie {
				cookie = c
			}
		}
		if cookie == nil {
			t.Fatalf("%s: no flash cookie in %q", r.what, r.header.Values("Set-Cookie"))
		}
		if v, _ := url.QueryUnescape(cookie.Value); !strings.HasPrefix(v, "success:Order ") {
			t.Errorf("%s: flash cookie %q, want success:Order N created.", r.what, v)
		}
		loc := r.header.Get("Location")
		page := a.get(t, loc, hPage.with(H{"Cookie": flashCookie + "=" + cookie.Value})).wantStatus(t, http.StatusOK)
		if got := regionOnPage(page.body, "notice"); !strings.Contains(got, "notice-success") || !strings.Contains(got, "Success:</strong> Order") {
			t.Errorf("%s: #notice holds %q, want the success notice", page.what, got)
		}
		if got := regionOnPage(page.body, "notice-alert"); got != "" {
			t.Errorf("%s: #notice-alert holds %q, want nothing", page.what, got)
		}
		// The browser drops the cookie (cleared on the page): the next page has none.
		next := a.get(t, loc, hPage).wantStatus(t, http.StatusOK)
		if got := regionOnPage(next.body, "notice") + regionOnPage(next.body, "notice-alert"); got != "" {
			t.Errorf("%s: the regions hold %q after the notice was shown once, want nothing", next.what, got)
		}

		for _, c := range []struct{ value, region, class string }{
			{"error:Order 9 could not be saved.", "notice-alert", "notice-error"},
			{"warning:Check the order.", "notice-alert", "notice-warning"},
			{"Order 1 saved.", "notice", "notice-success"},
			{"bogus:kind", "notice", "notice-success"},
		} {
			page := a.get(t, "/orders", hPage.with(H{"Cookie": flashCookie + "=" + url.QueryEscape(c.value)})).wantStatus(t, http.StatusOK)
			if got := regionOnPage(page.body, c.region); !strings.Contains(got, c.class) {
				t.Errorf("flash %q: #%s holds %q, want a %s", c.value, c.region, got, c.class)
			}
		}
	})
}
