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
// connection. A body takes its share before a byte of it is read — its
// Content-Length, or MaxBody+1 when the length is unknown (chunked), which
// is all readUpTo ever keeps of it — and gives it back once the handler
// is done with it. Each connection is bounded by MaxBody already; the
// budget bounds them all together, which the connection caps alone only
// do at MaxBody times the number of connections.
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

// readUpTo reads r to its end, or to limit bytes, into memory that grows
// with what arrives: it starts at 4 KiB and doubles, never past limit. A
// body announced and not sent takes next to nothing, and the buffer kept
// is never larger than limit.
func readUpTo(r io.Reader, limit int) ([]byte, error) {
	b := make([]byte, 0, min(limit, 4<<10))
	for len(b) < limit {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), min(limit, 2*cap(b)))
			copy(grown, b)
			b = grown
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}
