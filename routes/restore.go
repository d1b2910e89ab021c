package routes

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// Undo of a delete, through the member's own URI and method: a PUT of the
// member with restore=1 (a form) or {"restore": true} (JSON) brings back a
// record deleted within the undo window. It takes the right to delete, not
// only to change. The notice after a delete offers it as a plain form
// (_method=PUT), which htmx sends as a PUT.

// restore brings back member id (restoreAsked). Its answers are an
// update's: the record (JSON, with its ETag), its page (htmx, pushed as
// the address) or a 303 to it (a plain form), with a notice. A refusal
// is the error in the representation asked for: 404 for no deleted
// record of that id, 410 past the undo window, 409 for a record that is
// not deleted, 422 for a unique value (a SKU, an email) taken meanwhile
// or a customer deleted since, 403 without the right to delete.
func (m *members[T, In]) restore(c *fiber.Ctx, rp repr, id int64) (*response, error) {
	if err := m.R.allow(c, actDelete); err != nil {
		return nil, err
	}
	named := m.R.Named(id)
	rs, ok := m.store.(restorer[T])
	if !ok {
		return nil, &store.Error{Code: store.EINVALID, Message: named + " cannot be restored: a deleted " + m.R.Name + " is gone for good",
			Fields: map[string]string{"restore": "a deleted " + m.R.Name + " cannot be restored"}}
	}
	rec, err := rs.restore(c.UserContext(), id)
	if err != nil {
		se, ok := err.(*store.Error)
		if !ok {
			return nil, err
		}
		out := *se
		switch se.Code {
		case store.ENOTFOUND:
			out.Message = "there is no deleted " + m.R.Name + " " + strconv.FormatInt(id, 10) + " to restore"
		case store.EINVALID:
			if len(se.Fields) > 0 && !strings.Contains(se.Message, "cannot be restored") {
				var why []string
				for _, k := range slices.Sorted(maps.Keys(se.Fields)) {
					why = append(why, k+" "+se.Fields[k])
				}
				out.Message = named + " cannot be restored: its " + strings.Join(why, "; its ")
			}
		}
		out.Current = nil // nothing to compare: the record is not stored
		return nil, &out
	}
	loc := m.R.MemberPath(id)
	out := &response{Partial: m.R.Partial("show"), View: m.showView(rec), JSON: rec,
		Notice: successNotice(named + " restored."), Redirect: loc, PushURL: loc}
	switch rp {
	case reprJSON:
		_, version := m.pages.ident(rec)
		out.ETag = m.R.etag(id, version, rp, "")
	case reprFragment:
		if out.View.History, err = m.timeline(c, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}
