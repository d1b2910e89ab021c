package routes

import (
	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// gone answers a request about member id of res when err says it is not
// stored: deleted (in another tab, by someone else) or never created. The
// store's terse "order 182 not found" becomes a sentence a person
// understands, in the representation asked for: an inline row (HX-Target
// RowID) is replaced by a row that says so (partials/<plural>/row_gone),
// with a link to the current list; a page or an htmx swap into #main gets
// the error page (with the same link) from errorHandler; JSON keeps
// {"error": ...}. Any other error passes.
func gone(c *fiber.Ctx, rp repr, res *resource, id int64, err error) (*response, error) {
	if store.ErrorCode(err) != store.ENOTFOUND {
		return nil, err
	}
	msg := res.Named(id) + " was not found: it has been deleted, or it never existed"
	if res.isRow(c, rp, id) {
		return &response{Status: fiber.StatusNotFound, CacheControl: noStore, Partial: res.Partial("row_gone"),
			View: &view{ID: id}, Notice: errorNotice(sentence(msg))}, nil
	}
	return nil, store.Errorf(store.ENOTFOUND, "%s", msg)
}
