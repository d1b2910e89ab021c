package store

import (
	"context"
	"encoding/json"
	"errors"
)

// EventsKept is how many events a stream keeps at least (XADD MAXLEN ~):
// what a client that reconnects can be given again.
const EventsKept = 10000

// Event is one event of a stream: Action is created, updated or deleted
// (reset: the reader missed events and must read again what it shows),
// Cursor its place in the stream (opaque to clients, Last-Event-ID: the
// entry's id and token, "<ms>-<seq>.<token>"), Data its JSON ({"id": 42,
// "version": 3, "status": "confirmed"}).
type Event struct {
	Cursor string
	Action string
	Data   json.RawMessage
}

// ActionReset is the event that tells a reader it missed events.
const ActionReset = "reset"

// SubscriptionBuffer is how many events a subscriber may be behind before
// it is dropped (its client reconnects and is given them from Redis).
const SubscriptionBuffer = 256

// ErrCursorGone is Replay's error for a cursor it cannot serve: one that
// names no event the stream holds (trimmed, forgotten by Redis, its id
// reused for another event, never there), or not a cursor.
var ErrCursorGone = errors.New("the events after this cursor are no longer kept")

// ReplayBatch is the most events one Replay call returns.
const ReplayBatch = 500

// OrderEvents names the orders' event feed (Service.Feed).
const OrderEvents = "o"

// ProductEvents names the products' event feed (Service.Feed).
const ProductEvents = "p"

// CustomerEvents names the customers' event feed (Service.Feed).
const CustomerEvents = "c"

// Feed follows one resource's event stream for this instance and hands
// its events to its subscriptions.
type Feed interface {
	// Name is the feed's name (OrderEvents, ProductEvents, CustomerEvents).
	Name() string
	// Subscribers is the number of open subscriptions.
	Subscribers() int
	// Subscribe opens a subscription: the events after its Start.
	Subscribe(ctx context.Context) (Subscription, error)
	// Newest is the stream's newest cursor: a page rendered now starts
	// its stream there, so a change made between the render and the
	// connection is replayed, not missed.
	Newest(ctx context.Context) (string, error)
	// Replay returns the events after cursor after, at most ReplayBatch
	// of them, oldest first; check asks that the cursor be verified
	// (ErrCursorGone unless the stream still holds the event it names).
	Replay(ctx context.Context, after string, check bool) ([]Event, error)
	// After reports whether cursor a comes after cursor b in the stream.
	After(a, b string) bool
}

// Subscription receives a feed's events from its start on, in stream
// order, until Close; Events is closed when the subscriber fell behind
// (Behind) or the feed lost its place in the stream (Reset: events may
// be missing).
type Subscription interface {
	Events() <-chan Event
	// Start is the cursor after which the subscription's events come.
	Start() string
	Behind() bool
	Reset() bool
	Close()
}
