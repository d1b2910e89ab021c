package routes

import (
	"io"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// DefaultBodyBudget is the most memory, in bytes, that request bodies take
// at once across every connection while they are read and handled, unless
// Config.BodyBudget says otherwise.
const DefaultBodyBudget = 64 << 20

// errBodyBudget answers a request whose body would take the bodies being
// read past the budget: the server is busy, not the request wrong, and the
// same request a moment later is read.
var errBodyBudget = fiber.NewError(fiber.StatusServiceUnavailable, "the server is reading too many request bodies at once; try again in a moment")

// bodyBudget bounds the memory request bodies hold across every
// connection. A body takes its share as it arrives, before each time its
// buffer grows (read), and gives it back once the handler is done with it
// (returnBodies). Each connection is bounded by MaxBody already; the
// budget bounds them all together, which the connection caps alone only
// do at MaxBody times the number of connections. Charged as they arrive,
// bodies announced and not sent take next to nothing of it: a client
// must send a body to hold its share.
type bodyBudget struct {
	limit int64
	held  atomic.Int64
}

// take reserves n bytes, unless that would take the total past the limit.
func (b *bodyBudget) take(n int64) bool {
	for {
		cur := b.held.Load()
		if cur+n > b.limit {
			return false
		}
		if b.held.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *bodyBudget) give(n int64) { b.held.Add(-n) }

// bodyHeldLocal is the local under which readBody leaves the bytes it took
// of the budget for the request's body.
const bodyHeldLocal = "body_held"

// returnBodies wraps the server's handler: when it has finished with a
// request, the request's body is dropped and its share of the budget given
// back. That is before the answer is written, which does not need the body
// and may wait long on a client that reads slowly.
func (b *bodyBudget) returnBodies(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		defer func() {
			if n, ok := ctx.UserValue(bodyHeldLocal).(int64); ok {
				ctx.RemoveUserValue(bodyHeldLocal)
				ctx.Request.ResetBody()
				b.give(n)
			}
		}()
		next(ctx)
	}
}

// read reads r to its end, or to limit bytes, into memory that grows with
// what arrives: it starts at 4 KiB and doubles, never past limit, and
// takes each growth from the budget first. A body announced and not sent
// takes next to nothing, and the buffer kept is never larger than limit.
// taken is what read took of the budget (the buffer's size), to be given
// back whatever err is; err is errBodyBudget when the budget ran out.
func (b *bodyBudget) read(r io.Reader, limit int) (body []byte, taken int64, err error) {
	size := min(limit, 4<<10)
	if !b.take(int64(size)) {
		return nil, 0, errBodyBudget
	}
	taken = int64(size)
	body = make([]byte, 0, size)
	for len(body) < limit {
		if len(body) == cap(body) {
			next := min(limit, 2*cap(body))
			if !b.take(int64(next - cap(body))) {
				return body, taken, errBodyBudget
			}
			taken += int64(next - cap(body))
			grown := make([]byte, len(body), next)
			copy(grown, body)
			body = grown
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, taken, nil
		}
		if err != nil {
			return body, taken, err
		}
	}
	return body, taken, nil
}
