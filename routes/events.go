package routes

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// Live updates: GET /<plural>/events is the collection's
// changes as a text/event-stream, across every app instance sharing the
// Redis (store/redisstore/events.go):
//
//	retry: 1000
//
//	id: 1732385000000-0.3qm364uttbv6k
//	event: updated
//	data: {"id":42,"version":3,"status":"confirmed"}
//
// Last-Event-ID (or ?after=, for a client that cannot set headers) replays
// what the client missed from Redis; a cursor whose event the stream no
// longer holds (trimmed, or forgotten by a Redis that went back in time)
// gets "event: reset" (read again what you show), then the live events. A
// comment every heartbeat keeps proxies and clients from thinking the
// connection dead. Each instance holds at most MaxStreams streams (503 and
// Retry-After beyond), and one client address at most its limit across
// every instance (store.Limiter: 429 and Retry-After beyond). Each stream
// is one goroutine and a buffer of at most store.SubscriptionBuffer
// events, and a client that falls further behind is cut off and
// reconnects where it was. Shutdown ends every stream at
// once, so in-flight requests drain as before.

// DefaultHeartbeat is the interval of the heartbeat comments.
const DefaultHeartbeat = 20 * time.Second

// DefaultMaxStreams is how many event streams one instance holds open.
const DefaultMaxStreams = 1000

// streamWriteTimeout is how long a write to a client may block before the
// stream is given up (a client that stopped reading).
const streamWriteTimeout = 30 * time.Second

// streamSendBuffer is the kernel send buffer of a stream's connection. A
// client that stops reading is cut off once store.SubscriptionBuffer
// events behind, but only after the socket buffers are full: the kernel's
// default lets the send buffer grow to megabytes (some 20,000 events held
// for a client that reads nothing, and far past the events Redis keeps, so
// it could not reconnect where it was). Linux doubles this figure; with a
// client's receive buffer, a few hundred events at most wait in the
// sockets. Events are small and come a few at a time, so a burst still
// leaves in one write.
const streamSendBuffer = 32 << 10

// shutdownGrace is how long a stream's last writes may take once the
// server shuts down: a client that does not read them is cut off then,
// instead of holding the shutdown up for streamWriteTimeout.
const shutdownGrace = time.Second

var errNoEventStream = fiber.NewError(fiber.StatusNotAcceptable, "this resource is available as text/event-stream")

// errTooManyStreams is a fiber.Error, not a store EUNAVAILABLE, whose
// answer would set Retry-After: 1 over the 5 set beside it.
var errTooManyStreams = fiber.NewError(fiber.StatusServiceUnavailable, "too many live update streams are open on this server; try again in a moment")

// acceptsEventStream reports whether an Accept header allows
// text/event-stream (no header does). The most specific range that names
// it decides (RFC 9110, section 12.5.1): "text/event-stream;q=0, */*" refuses it.
func acceptsEventStream(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	q := map[string]float64{} // by range: the first q given for it
	for _, part := range strings.Split(accept, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		switch name {
		case "text/event-stream", "text/*", "*/*":
		default:
			continue
		}
		if _, seen := q[name]; seen {
			continue
		}
		q[name] = 1
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q[name] = f
				} else {
					q[name] = 0
				}
			}
		}
	}
	for _, name := range []string{"text/event-stream", "text/*", "*/*"} {
		if v, ok := q[name]; ok {
			return v > 0
		}
	}
	return false
}

// streams counts the open event streams of one application, and of each
// client address across every instance (limits).
type streams struct {
	slots     chan struct{}
	heartbeat time.Duration
	limits    store.Limiter
	proxies   proxies
	log       *slog.Logger
}

func newStreams(max int, heartbeat time.Duration, limits store.Limiter, ps proxies, log *slog.Logger) *streams {
	if max <= 0 {
		max = DefaultMaxStreams
	}
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	return &streams{slots: make(chan struct{}, max), heartbeat: heartbeat, limits: limits, proxies: ps, log: log}
}

// slotTimeout bounds each Redis call that takes, renews or frees a
// client's stream slot.
const slotTimeout = time.Second

// openSlot takes one of the client address's stream slots: a 429 past
// the limit. When Redis does not answer, the stream goes on uncounted (the
// feed needs Redis too, and answers 503 itself) and slot is nil.
func (st *streams) openSlot(c *fiber.Ctx) (store.StreamSlot, error) {
	addr := st.proxies.clientAddr(c)
	ctx, cancel := context.WithTimeout(c.UserContext(), slotTimeout)
	defer cancel()
	slot, err := st.limits.OpenStream(ctx, addr)
	if th := asThrottled(err); th != nil {
		st.log.Warn("live update stream throttled", "client", addr, "limit", th.Limit, "request_id", requestIDOf(c))
		return nil, tooMany(c, th)
	}
	if err != nil {
		st.log.Warn("live update stream not counted: the limits cannot be read", "client", addr, "err", err, "request_id", requestIDOf(c))
		return nil, nil
	}
	return slot, nil
}

// closeSlot frees a stream's slot (nil: nothing to free).
func closeSlot(slot store.StreamSlot) {
	if slot == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), slotTimeout)
	defer cancel()
	_ = slot.Close(ctx) // not freed now: its lease ends within a minute
}

// feedsKey is the Locals key of the application's feeds by resource
// (store.Feed names), for liveAfter.
const feedsKey = "live-feeds"

// liveAfter is the cursor of the newest event of res's stream, for a page
// rendered now ("" when it cannot be read: the page connects without one).
func liveAfter(c *fiber.Ctx, res *resource) string {
	feeds, _ := c.Locals(feedsKey).(map[string]store.Feed)
	if res == nil || feeds[res.Feed] == nil {
		return ""
	}
	cur, err := feeds[res.Feed].Newest(c.UserContext())
	if err != nil {
		return ""
	}
	return cur
}

// events serves GET <path>/events from feed.
func (st *streams) events(feed store.Feed) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Vary(fiber.HeaderAccept)
		if !acceptsEventStream(c.Get(fiber.HeaderAccept)) {
			return errNoEventStream
		}
		after := c.Get("Last-Event-ID")
		if after == "" {
			after = c.Query("after")
		}
		slot, err := st.openSlot(c)
		if err != nil {
			return err
		}
		select {
		case st.slots <- struct{}{}:
		default:
			closeSlot(slot)
			c.Set(fiber.HeaderRetryAfter, "5")
			return errTooManyStreams
		}
		release := func() {
			<-st.slots
			// Not waited for: a hung Redis must not hold the stream's end
			// (nor a shutdown) up; a slot not freed ends with its lease.
			go closeSlot(slot)
		}
		sub, err := feed.Subscribe(c.UserContext())
		if err != nil {
			release()
			c.Set(fiber.HeaderRetryAfter, "1")
			return err
		}
		// A client back with a cursor gets its first events read before
		// the answer: while Redis does not answer, that is a 503 it
		// retries, not a 200 that ends with nothing.
		var first *replayBatch
		if after != "" && c.Method() != fiber.MethodHead {
			ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
			evs, err := feed.Replay(ctx, after, true)
			cancel()
			if err != nil && !errors.Is(err, store.ErrCursorGone) {
				sub.Close()
				release()
				c.Set(fiber.HeaderRetryAfter, "1")
				return err
			}
			first = &replayBatch{evs, err}
		}
		c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
		c.Set(fiber.HeaderCacheControl, "no-store")
		c.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
		if c.Method() == fiber.MethodHead {
			sub.Close()
			release()
			return nil
		}
		rc := c.Context()
		done, conn := rc.Done(), rc.Conn()
		if tc, ok := conn.(interface{ SetWriteBuffer(int) error }); ok {
			_ = tc.SetWriteBuffer(streamSendBuffer)
		}
		// The connection is read while the stream lasts, to see a client
		// leave (watchClient): it serves no request after it.
		rc.SetConnectionClose()
		rc.SetBodyStreamWriter(func(w *bufio.Writer) {
			defer release()
			defer sub.Close()
			out := &eventWriter{w: w, conn: conn, feed: feed}
			// A write blocked on a client that reads nothing would not see
			// the shutdown: its deadline is brought forward.
			finished := make(chan struct{})
			defer close(finished)
			go func() {
				select {
				case <-done:
					out.cut()
				case <-finished:
				}
			}()
			gone := make(chan struct{})
			go watchClient(conn, gone)
			out.comment("live updates")
			out.raw("retry: 1000\n\n")
			last := sub.Start()
			if after != "" {
				var ok bool
				if last, ok = replay(out, feed, after, sub.Start(), done, first); !ok {
					return
				}
			}
			if out.flush() != nil {
				return
			}
			beat := time.NewTicker(st.heartbeat)
			defer beat.Stop()
			var renew <-chan time.Time // the slot's lease, while it has one
			if slot != nil {
				t := time.NewTicker(st.limits.RenewEvery())
				defer t.Stop()
				renew = t.C
			}
			events := sub.Events()
			for {
				select {
				case <-renew:
					ctx, cancel := context.WithTimeout(context.Background(), slotTimeout)
					_ = slot.Renew(ctx) // a lost renewal: the next one may land
					cancel()
					continue
				case <-done:
					return // the server shuts down: the client reconnects elsewhere
				case <-gone:
					return // the client left: its slot is free at once
				case <-beat.C:
					out.comment("heartbeat")
				case e, ok := <-events:
					if !ok {
						if sub.Reset() {
							out.event(store.Event{Action: store.ActionReset, Data: []byte("{}")})
							_ = out.flush()
						}
						return // behind: the client reconnects where it was
					}
					last = out.after(e, last)
					// What else waits goes out in the same flush: a burst
					// is written as fast as the feed hands it on.
					for n := len(events); n > 0; n-- {
						e, ok := <-events
						if !ok {
							break // closed: the next turn says why
						}
						last = out.after(e, last)
					}
				}
				if out.flush() != nil {
					return // the client is gone
				}
			}
		})
		return nil
	}
}

// watchClient reads conn until the client closes it (or the server does,
// after the stream), then closes gone. An event stream's client sends
// nothing after its request, so the end of its side says at once that it
// left, where a write would fail only at the second heartbeat after (the
// first is taken by the socket). Go's net/http watches its connections so
// too. Whatever a client sends is dropped: the connection closes after
// the stream.
func watchClient(conn net.Conn, gone chan<- struct{}) {
	defer close(gone)
	var b [64]byte
	for {
		_, err := conn.Read(b[:])
		var ne net.Error
		switch {
		case err == nil:
		case errors.As(err, &ne) && ne.Timeout():
			// The deadline fasthttp set for reading the request.
			if conn.SetReadDeadline(time.Time{}) != nil {
				return
			}
		default:
			return
		}
	}
}

// replayBatch is a batch of replayed events read ahead, or why not.
type replayBatch struct {
	evs []store.Event
	err error
}

// replay writes the events after cursor after (the first batch read ahead
// when first is not nil), or a reset when the stream no longer holds them
// (then start, where the live events begin, is the reset's id), and
// returns the cursor of the last event written; ok is false when Redis
// could not be read or the server shuts down (done): the stream ends, the
// client tries again.
func replay(out *eventWriter, feed store.Feed, after, start string, done <-chan struct{}, first *replayBatch) (last string, ok bool) {
	for {
		select {
		case <-done:
			return after, false
		default:
		}
		var evs []store.Event
		var err error
		if first != nil {
			evs, err, first = first.evs, first.err, nil
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			// Every batch checked: between two, a client that reads slowly
			// may let the stream move on past the last event it was sent.
			evs, err = feed.Replay(ctx, after, true)
			cancel()
		}
		if errors.Is(err, store.ErrCursorGone) {
			out.event(store.Event{Cursor: start, Action: store.ActionReset, Data: []byte("{}")})
			return start, true
		}
		if err != nil {
			return after, false
		}
		for _, e := range evs {
			out.event(e)
			after = e.Cursor
		}
		if len(evs) < store.ReplayBatch {
			return after, true
		}
		if out.flush() != nil {
			return after, false
		}
	}
}

// eventWriter writes the text/event-stream format.
type eventWriter struct {
	// feed orders the cursors of the stream written.
	feed store.Feed
	w    *bufio.Writer
	conn interface{ SetWriteDeadline(time.Time) error }
	err  error
	// mu orders flush's deadlines and cut's: once cut, the deadline only
	// comes sooner.
	mu     sync.Mutex
	cutOff bool
}

func (o *eventWriter) raw(s string) {
	if o.err == nil {
		_, o.err = o.w.WriteString(s)
	}
}

func (o *eventWriter) comment(s string) { o.raw(": " + s + "\n\n") }

// after writes e unless it is not after last (replayed already), and
// returns the cursor of the last event written.
func (o *eventWriter) after(e store.Event, last string) string {
	if !o.feed.After(e.Cursor, last) {
		return last
	}
	o.event(e)
	return e.Cursor
}

// event writes one event; its data is JSON, one line.
func (o *eventWriter) event(e store.Event) {
	if e.Cursor != "" {
		o.raw("id: " + e.Cursor + "\n")
	}
	o.raw("event: " + e.Action + "\ndata: " + string(e.Data) + "\n\n")
}

// flush sends what was written; a client that does not take it within
// streamWriteTimeout is given up.
func (o *eventWriter) flush() error {
	if o.err != nil {
		return o.err
	}
	if o.conn != nil {
		o.mu.Lock()
		if !o.cutOff {
			_ = o.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		}
		o.mu.Unlock()
	}
	o.err = o.w.Flush()
	return o.err
}

// cut gives the writes still to come shutdownGrace at most, from any
// goroutine.
func (o *eventWriter) cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cutOff = true
	if o.conn != nil {
		_ = o.conn.SetWriteDeadline(time.Now().Add(shutdownGrace))
	}
}
