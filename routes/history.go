package routes

// History and notes, the same for every resource:
// GET <member>/history (page, fragment, JSON), POST <member>/history (a
// note), and the timeline on a record's page.

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// timelineLength is how many entries a record's page shows.
const timelineLength = 5

// historyView is the data of partials/history (the history page) and
// partials/timeline (its latest entries on a record's page).
type historyView struct {
	R       *resource
	ID      int64
	Entries []entryView
	// Next is the URL of the older entries ("" when there are none).
	Next string
	// Note is what the note form shows again after a 422, and its message.
	Note, NoteErr string
	// Gone: the record is deleted; its history is still shown, and no note
	// can be added.
	Gone bool
	// Older: the entries are a page past the newest (before=), so an empty
	// one is the end of the history, not a record without any.
	Older bool
	// Focus puts the focus in the note's field: the answer to a note
	// (the field cleared after a note, or its message after a 422). htmx
	// focuses an autofocus field it swaps in; a page load does too.
	Focus bool
	// zoned writes the entries' times in the person's zone.
	zoned
}

// Head names the newest entry ("0": none): a page that shows the
// timeline changes with it.
func (h *historyView) Head() string {
	if len(h.Entries) == 0 {
		return "0"
	}
	return h.Entries[0].Cursor
}

// DrawnHistory is the view's history entries (partials/history_entries)
// drawn, or from the render cache: kept under every value they show.
func (v *view) DrawnHistory() (template.HTML, error) {
	h := v.History
	return v.views.draw("partials/history_entries", fmt.Appendf(nil, "%s\x00%s\x00%v\x00%v", h.ZoneName(), h.R.Name, h.Older, h.Entries), h)
}

// Path is the history's URL.
func (h *historyView) Path() string { return h.R.HistoryPath(h.ID) }

// NoteMax is the longest note: the textarea's maxlength.
func (h *historyView) NoteMax() int { return store.MaxNote }

// entryView is one history entry as the pages say it.
type entryView struct {
	store.HistoryEntry
	// Lines say what changed, one sentence each: "Customer: Ada → Ada
	// Lovelace", "Added 1 × Tee (TEE) at 19.99".
	Lines []string
}

// Summary says who did what: "Updated by alice (web), version 3".
func (e entryView) Summary() string {
	what := map[string]string{store.ActionCreated: "Created", store.ActionUpdated: "Changed",
		store.ActionDeleted: "Deleted", store.ActionRestored: "Restored", store.ActionNote: "Note"}[e.Action]
	if what == "" {
		what = e.Action
	}
	via := map[string]string{"web": "on the web", "api": "through the API"}[e.Via]
	if name, ok := strings.CutPrefix(e.Via, "token:"); ok {
		via = "with the token " + name
	}
	s := what + " by " + e.Actor
	if via != "" {
		s += " " + via
	}
	if e.Action != store.ActionNote {
		s += " · version " + strconv.FormatInt(e.Version, 10)
	}
	return s
}

// titled writes a status or role name as its badge does ("Pending"); any
// other value is left as it is.
func titled(x any) any {
	if s, ok := x.(string); ok && s != "" {
		return statusTitle(store.Status(s))
	}
	return x
}

// newEntryView says entry e in lines: the fields in labels, in order, then
// the item rows.
func newEntryView(e store.HistoryEntry, labels []historyLabel) entryView {
	v := entryView{HistoryEntry: e}
	show := func(x any) string {
		switch x := x.(type) {
		case nil:
			return "(none)"
		case string:
			if x == "" {
				return "(empty)"
			}
			return x
		case bool:
			if x {
				return "yes"
			}
			return "no"
		}
		return fmt.Sprint(x)
	}
	for _, l := range labels {
		c, ok := e.Changes[l.name]
		if !ok {
			continue
		}
		label := l.label
		if l.name == "status" || l.name == "role" {
			// A status or a role reads as its badge does: "Pending".
			c.From, c.To = titled(c.From), titled(c.To)
		}
		if e.Action == store.ActionCreated {
			// A create sets its values: there is nothing they changed from.
			v.Lines = append(v.Lines, label+": "+show(c.To))
			continue
		}
		v.Lines = append(v.Lines, label+": "+show(c.From)+" → "+show(c.To))
	}
	item := func(it store.Item) string {
		s := strconv.FormatInt(it.Quantity, 10) + " × " + it.Name
		if it.SKU != "" {
			s += " (" + it.SKU + ")"
		}
		return s + " at " + it.UnitPrice.String()
	}
	if it := e.Items; it != nil {
		for _, a := range it.Added {
			v.Lines = append(v.Lines, "Added "+item(a))
		}
		for _, r := range it.Removed {
			v.Lines = append(v.Lines, "Removed "+item(r))
		}
		for _, c := range it.Changed {
			v.Lines = append(v.Lines, "Changed "+item(c.From)+" to "+item(c.To))
		}
	}
	return v
}

func entryViews(es []store.HistoryEntry, labels []historyLabel) []entryView {
	out := make([]entryView, len(es))
	for i, e := range es {
		out[i] = newEntryView(e, labels)
	}
	return out
}

// historyJSON is GET <member>/history as JSON.
type historyJSON struct {
	Entries []store.HistoryEntry `json:"entries"`
	Next    any                  `json:"next"`
}

// historyPage is GET <member>/history: newest first, 25 a page, older ones
// by ?before=<cursor>; it answers for a deleted record while its history
// is kept (30 days).
func (m *members[T, In]) historyPage(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := m.R.parseID(c)
	if err != nil {
		return nil, err
	}
	before := strings.TrimSpace(c.Query("before"))
	page, err := m.store.history(c.UserContext(), id, before, store.HistoryPerPage)
	if err == nil && len(page.Entries) == 0 && before != "" {
		// Nothing older: the store answers an empty page before any
		// cursor, so whether the record ever was is asked without one.
		_, err = m.store.history(c.UserContext(), id, "", 1)
	}
	if err != nil {
		if store.ErrorCode(err) == store.EINVALID {
			return nil, badRequest("before must be the cursor of a history entry")
		}
		return gone(c, rp, m.R, id, err)
	}
	h := &historyView{R: m.R, ID: id, Entries: entryViews(page.Entries, m.fields.historyLabels()), Older: before != ""}
	if page.Next != "" {
		h.Next = m.R.HistoryPath(id) + "?before=" + page.Next
	}
	if _, err := m.store.get(c.UserContext(), id); store.ErrorCode(err) == store.ENOTFOUND {
		h.Gone = true
	}
	title := m.R.Named(id) + " · history"
	if before != "" {
		title += ", older entries"
	}
	entries := page.Entries
	if entries == nil {
		entries = []store.HistoryEntry{}
	}
	return &response{Partial: "partials/history", View: &view{Title: title, Nav: m.R.Plural, History: h},
		JSON: historyJSON{entries, nullable(h.Next)}}, nil
}

// noteFields is the note a POST <member>/history sends.
type noteIn struct{ Note *string }

var noteFields = fields[noteIn]{
	{Name: "note", Label: "Note", Max: store.MaxNote, UI: control{Tag: "textarea", Rows: 2},
		text: func(in *noteIn) **string { return &in.Note }},
}

// addNote is POST <member>/history: a note (1–2000 characters) that
// changes nothing but the history. 201 with the entry (JSON); the
// timeline again (htmx); back to the record's page (a plain form).
func (m *members[T, In]) addNote(c *fiber.Ctx, rp repr) (*response, error) {
	id, err := m.R.parseID(c)
	if err != nil {
		return nil, err
	}
	in, err := decodeBody(c, noteFields)
	if err != nil {
		return nil, err
	}
	text := ""
	if in.Note != nil {
		text = *in.Note
	}
	e, err := m.store.note(c.UserContext(), id, text)
	if err != nil {
		if fields := invalidFields(err); fields != nil {
			return m.invalidNote(c, rp, id, text, fields["note"], err)
		}
		return gone(c, rp, m.R, id, err)
	}
	h, err := m.timeline(c, id)
	if err != nil {
		return nil, err
	}
	h.Focus = true
	loc := m.R.HistoryPath(id)
	return &response{Status: fiber.StatusCreated, Partial: "partials/timeline",
		View: &view{Title: m.R.Named(id), Nav: m.R.Plural, History: h}, JSON: e,
		Notice:   successNotice("Note added to " + strings.ToLower(m.R.Named(id)[:1]) + m.R.Named(id)[1:] + "."),
		Location: loc, Redirect: m.R.MemberPath(id) + "#" + m.R.Name + "-history"}, nil
}

// invalidNote answers a note the store refused (msg says why; err is
// the store's error, which JSON answers): a note on a record that is gone
// is a 404 whatever it says; else a 422 with the form again, the text
// kept and the message beside it: the timeline for htmx, the record's
// page around it for a plain form.
func (m *members[T, In]) invalidNote(c *fiber.Ctx, rp repr, id int64, text, msg string, err error) (*response, error) {
	h, herr := m.timeline(c, id)
	if herr != nil {
		return nil, herr
	}
	if h.Gone {
		return gone(c, rp, m.R, id, store.Errorf(store.ENOTFOUND, "not found"))
	}
	h.Note, h.NoteErr, h.Focus = text, msg, true
	out := &response{Status: fiber.StatusUnprocessableEntity, Partial: "partials/timeline", Err: err, CacheControl: noStore,
		View:   &view{Title: m.R.Named(id), Nav: m.R.Plural, History: h},
		Notice: errorNotice("The note was not added: it " + msg + ".")}
	if rp == reprPage {
		// Without JavaScript the answer is a whole page: the record's,
		// with the form again in its timeline.
		rec, err := m.store.get(c.UserContext(), id)
		if err != nil {
			return gone(c, rp, m.R, id, err)
		}
		out.Partial, out.View = m.R.Partial("show"), m.showView(rec)
		out.View.History = h
	}
	return out, nil
}

// timeline is the latest entries of record id, for its page. A record
// that is gone (its newest entry says it was deleted, or it has no
// history and no record) gets no note form.
func (m *members[T, In]) timeline(c *fiber.Ctx, id int64) (*historyView, error) {
	page, err := m.store.history(c.UserContext(), id, "", timelineLength)
	if err != nil && store.ErrorCode(err) != store.ENOTFOUND {
		return nil, err
	}
	h := &historyView{R: m.R, ID: id, Entries: entryViews(page.Entries, m.fields.historyLabels()), Gone: err != nil ||
		(len(page.Entries) > 0 && page.Entries[0].Action == store.ActionDeleted)}
	if page.Next != "" {
		h.Next = m.R.HistoryPath(id) + "?before=" + page.Next
	}
	return h, nil
}
