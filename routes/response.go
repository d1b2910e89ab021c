package routes

import "github.com/gofiber/fiber/v2"

// response is what a handler decides (golang/pkgsite's shape): the outcome
// of a request in every representation at once. respond decides how it is
// written for the representation asked for; no handler writes a status,
// a body, a cookie or the headers of an outcome (Location, HX-*, ETag,
// Cache-Control) itself.
type response struct {
	// Status is the status of the answer; 200 when 0. A plain form's write
	// that succeeded answers 303 to Redirect instead; a 204 is a 200 in
	// HTML.
	Status int
	// Partial and View are the HTML answer: the partial alone (htmx) or
	// inside the layout. respond gives View the resource (R) and Notice.
	Partial string
	View    *view
	// JSON is the JSON body; nil answers Status with no body (204).
	JSON any
	// Err, when set, is what JSON answers (through errorHandler) instead of
	// JSON: a form shown again with its messages is the HTML answer to the
	// same error (a 422 or a 409).
	Err error
	// Notice is the notice of the outcome: in the live regions of the page
	// or fragment, or in the flash cookie across a redirect.
	Notice *notice

	// Location is where the created member lives: JSON's Location header.
	Location string
	// Redirect is where a plain form's write leads (303, the notice as a
	// flash): a full page is never the answer to a successful write.
	Redirect string
	// PushURL and ReplaceURL are the URL htmx shows after the swap: pushed
	// (a new page: Back returns to the form) or replacing the form's entry
	// (Back leads to the page before the form).
	PushURL, ReplaceURL string
	// HXLocation sends htmx to another page (nothing is left to show where
	// the request came from): no body, the notice as a flash.
	HXLocation string
	// Trigger is an HX-Trigger header: events for elements of the page.
	Trigger string

	// ETag is the representation's ETag; NotModified answers 304 with it.
	ETag        string
	NotModified bool
	// CacheControl is "no-cache" unless set ("no-store": a form, an error,
	// a row that is gone).
	CacheControl string
}

// Partials of no resource.
const (
	partialError = "partials/error"
	// partialNotice is no content of its own: only the notice travels.
	partialNotice = "partials/notice"
)

// respond writes out in representation rp for resource res (nil for an
// error of no resource): the one place that turns an outcome into headers,
// cookies, a status and a body.
func respond(c *fiber.Ctx, rp repr, res *resource, out *response) error {
	status := out.Status
	if status == 0 {
		status = fiber.StatusOK
	}
	if status == fiber.StatusNoContent && rp != reprJSON {
		// htmx swaps nothing on a 204: an HTML answer is a 200, whose
		// (empty) swap removes the target and whose notice travels.
		status = fiber.StatusOK
	}
	// A representation says how it may be cached; a redirect or an empty
	// answer has nothing to keep.
	cache := func() {
		switch {
		case out.CacheControl != "":
			c.Set(fiber.HeaderCacheControl, out.CacheControl)
		case len(c.Response().Header.Peek(fiber.HeaderCacheControl)) == 0:
			c.Set(fiber.HeaderCacheControl, "no-cache")
		}
		if out.ETag != "" {
			c.Set(fiber.HeaderETag, out.ETag)
		}
	}
	if rp == reprPage && c.Cookies(flashCookie) != "" {
		// This page carries a one-time notice: neither a 304 nor an ETag,
		// so the notice is neither lost nor replayed from a cache.
		out.ETag, out.NotModified = "", false
	}
	if out.NotModified {
		cache()
		return c.SendStatus(fiber.StatusNotModified)
	}
	switch rp {
	case reprJSON:
		if out.Err != nil {
			return out.Err
		}
		if out.Location != "" {
			c.Location(out.Location)
		}
		if out.JSON == nil {
			return c.SendStatus(status)
		}
		cache()
		return sendJSON(c, status, out.JSON)
	case reprFragment:
		if out.HXLocation != "" {
			setFlash(c, out.Notice)
			c.Set("HX-Location", out.HXLocation)
			return c.Status(status).Send(nil)
		}
		for _, h := range [...][2]string{{"HX-Push-Url", out.PushURL}, {"HX-Replace-Url", out.ReplaceURL}, {"HX-Trigger", out.Trigger}} {
			if h[1] != "" {
				c.Set(h[0], h[1])
			}
		}
		cache()
		v := out.view(res)
		v.TitleSwap = titleSwap(c, res)
		c.Status(status)
		return c.Render(out.Partial, v, layoutBare)
	}
	if out.Redirect != "" {
		setFlash(c, out.Notice)
		return c.Redirect(out.Redirect, fiber.StatusSeeOther)
	}
	cache()
	v := out.view(res)
	if v.Notice == nil {
		v.Notice = takeFlash(c) // after cache(): a one-time notice is no-store
	}
	if status < 400 {
		v.LiveAfter = liveAfter(c, v.R)
	}
	c.Status(status)
	return c.Render(out.Partial, v, layoutPage)
}

// view is out's View (an empty one when it has none) with the resource and
// the notice.
func (out *response) view(res *resource) *view {
	v := out.View
	if v == nil {
		v = &view{}
	}
	if v.R == nil {
		v.R = res
	}
	if v.Notice == nil {
		v.Notice = out.Notice
	}
	return v
}

// noStore keeps an answer out of every cache, the back/forward cache
// included (CacheControl): an error, a row that is gone, and every form:
// Back after a save (a plain form's 303) fetches the form again with the
// stored values and version, instead of showing the old ones, which a
// second save would send as a stale edit.
const noStore = "no-store"
