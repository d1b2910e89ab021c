package routes

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// gone answers a request about order id when err says it is not stored:
// deleted (in another tab, by someone else) or never created. The store's
// terse "order 182 not found" becomes a sentence a person understands, in
// the representation asked for: an inline row (HX-Target order-row-<id>)
// is replaced by a row that says so, with a link to the current list; a
// page or an htmx swap into #main gets the error page (with the same link)
// from errorHandler; JSON keeps {"error": ...}. Any other error passes.
func (o *orderHandlers) gone(c *fiber.Ctx, r repr, id int64, err error) error {
	if store.ErrorCode(err) != store.ENOTFOUND {
		return err
	}
	msg := "Order " + strconv.FormatInt(id, 10) + " was not found: it has been deleted, or it never existed"
	if r == reprFragment && hxTarget(c) == rowTarget(id) {
		c.Set(fiber.HeaderCacheControl, "no-store")
		v := &view{Order: &store.Order{ID: id}, Notice: errorNotice(sentence(msg))}
		return renderAs(c, r, fiber.StatusNotFound, "partials/orders/row_gone", v, nil)
	}
	return store.Errorf(store.ENOTFOUND, "%s", msg)
}
