package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/routes"
	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// Live updates from the outside: the binary's
// /orders/events and /products/events read by a small text/event-stream
// client (testutil.SSE), across app processes sharing one Redis or a
// Cluster; replay, reset, heartbeats, the bound on streams, shutdown; and
// the memory an open stream costs, in process.

// poll calls cond every few milliseconds until it holds (true) or d has
// passed (false).
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(3 * time.Millisecond)
	}
}

func lastOf(evs []testutil.SSEEvent, n int) string {
	var b strings.Builder
	for _, e := range evs[max(0, len(evs)-n):] {
		fmt.Fprintf(&b, "[%s %s %s] ", e.ID, e.Event, e.Data)
	}
	return b.String()
}

// wantEvent is the event one acknowledged write must make: its action,
// the record's id and the version the answer carried, and the order's
// status or the product's active flag; ack is when the answer was read.
type wantEvent struct {
	Action  string
	ID      int64
	Version int64
	Status  string
	Active  *bool
	Sent    time.Time // the request's start
	Ack     time.Time // its answer read
	What    string
}

func (w wantEvent) String() string {
	s := fmt.Sprintf("%s %d v%d", w.Action, w.ID, w.Version)
	if w.Status != "" {
		s += " " + w.Status
	}
	if w.Active != nil {
		s += fmt.Sprintf(" active=%v", *w.Active)
	}
	return s + " (" + w.What + ")"
}

// eventBody is what an event's data says.
type eventBody struct {
	ID      int64  `json:"id"`
	Version int64  `json:"version"`
	Status  string `json:"status"`
	Active  *bool  `json:"active"`
}

// matches reports how e differs from w ("" when it does not).
func (w wantEvent) differs(e testutil.SSEEvent) string {
	var d eventBody
	if err := json.Unmarshal([]byte(e.Data), &d); err != nil {
		return fmt.Sprintf("data %q is not JSON: %v", e.Data, err)
	}
	switch {
	case e.Event != w.Action || d.ID != w.ID || d.Version != w.Version || d.Status != w.Status:
	case (d.Active == nil) != (w.Active == nil) || d.Active != nil && *d.Active != *w.Active:
	case e.ID == "":
		return "it has no id"
	default:
		return ""
	}
	return fmt.Sprintf("got %s %s", e.Event, e.Data)
}

// expectSequence waits up to 5 s for as many events as want on s, then
// fails unless they are exactly want (checkSequence); it returns them.
func expectSequence(t testing.TB, s *testutil.SSE, name string, want []wantEvent) []testutil.SSEEvent {
	t.Helper()
	poll(5*time.Second, func() bool { return len(s.Events()) >= len(want) })
	got := s.Events()
	checkSequence(t, name, got, want)
	return got
}

// checkSequence fails unless got is exactly want: one event per
// acknowledged write, in order, each with an id after the one before.
func checkSequence(t testing.TB, name string, got []testutil.SSEEvent, want []wantEvent) {
	t.Helper()
	problems := 0
	seen := map[string]int{}
	for i, e := range got {
		if j, ok := seen[e.ID]; ok && problems < 5 {
			t.Errorf("%s: event %d (id %s %s %s) repeats event %d", name, i, e.ID, e.Event, e.Data, j)
			problems++
		}
		seen[e.ID] = i
	}
	for i := 0; i < max(len(got), len(want)) && problems < 5; i++ {
		switch {
		case i >= len(want):
			t.Errorf("%s: event %d is one too many: %s %s %s", name, i, got[i].ID, got[i].Event, got[i].Data)
			problems++
		case i >= len(got):
			t.Errorf("%s: event %d missing: want %v", name, i, want[i])
			problems++
		default:
			if d := want[i].differs(got[i]); d != "" {
				t.Errorf("%s: event %d (id %s): want %v, %s", name, i, got[i].ID, want[i], d)
				problems++
			} else if i > 0 && !redisstore.After(got[i].ID, got[i-1].ID) {
				t.Errorf("%s: event %d's id %s does not come after %s", name, i, got[i].ID, got[i-1].ID)
				problems++
			}
		}
	}
	if problems > 0 {
		t.Fatalf("%s: %d events, want %d", name, len(got), len(want))
	}
}

// liveOrder is an order the script has made, as it last saw it.
type liveOrder struct {
	id, version int64
	status      string
}

// script makes sequential writes through one app instance and records the
// event each acknowledged write must make.
type script struct {
	t        *testing.T
	base     string
	orders   []wantEvent
	products []wantEvent
	live     []*liveOrder
	step     int
	refused  map[int]int // refused writes by status
	noops    int
}

func newScript(t *testing.T, base string) *script {
	return &script{t: t, base: base, refused: map[int]int{}}
}

// send sends one JSON write and returns its answer and when it was sent
// and read.
func (s *script) send(method, path string, body any) (*testutil.Resp, span) {
	s.t.Helper()
	var data []byte
	if body != nil {
		data = jsonOf(body)
	}
	sent := time.Now()
	r := mustCall(s.t, s.base, method, path, "application/json", data, testutil.HJSON)
	return r, span{sent, time.Now()}
}

// span is when a request was sent and when its answer was read.
type span struct{ sent, ack time.Time }

// ack records the event of an order's acknowledged write (its answer o).
func (s *script) ack(action string, o orderJSON, at span, what string) {
	s.orders = append(s.orders, wantEvent{Action: action, ID: o.ID, Version: o.Version, Status: o.Status, Sent: at.sent, Ack: at.ack, What: what})
}

func (s *script) create() {
	s.t.Helper()
	s.step++
	// One item, so that the order may be confirmed and move on.
	r, at := s.send(http.MethodPost, "/orders", map[string]any{"customer": fmt.Sprintf("Live %d", s.step),
		"items": []any{map[string]any{"name": "Mug", "quantity": 1, "unit_price": "1.50"}}})
	r.WantStatus(s.t, http.StatusCreated)
	var o orderJSON
	r.JSON(s.t, &o)
	s.live = append(s.live, &liveOrder{o.ID, o.Version, o.Status})
	s.ack(store.ActionCreated, o, at, r.What)
}

// put sends a PUT of o carrying its version and checks the answer.
func (s *script) put(o *liveOrder, fields map[string]any) {
	s.t.Helper()
	fields["version"] = o.version
	r, at := s.send(http.MethodPut, "/orders/"+strconv.FormatInt(o.id, 10), fields)
	r.WantStatus(s.t, http.StatusOK)
	var got orderJSON
	r.JSON(s.t, &got)
	switch got.Version {
	case o.version:
		s.noops++ // nothing changed: no event
	case o.version + 1:
		s.ack(store.ActionUpdated, got, at, fmt.Sprintf("%s %v", r.What, fields))
	default:
		s.t.Fatalf("%s %v: version %d, want %d", r.What, fields, got.Version, o.version+1)
	}
	o.version, o.status = got.Version, got.Status
}

func (s *script) update(o *liveOrder) {
	s.step++
	s.put(o, map[string]any{"customer": fmt.Sprintf("Live %d renamed at %d", o.id, s.step)})
}

var liveNextStatus = map[string]string{"pending": "confirmed", "confirmed": "shipped", "shipped": "delivered"}

func (s *script) advance(o *liveOrder) {
	if next, ok := liveNextStatus[o.status]; ok {
		s.put(o, map[string]any{"status": next})
		return
	}
	s.update(o)
}

// refuse sends a write that must be refused with want.
func (s *script) refuse(want int, method, path string, body any) {
	s.t.Helper()
	r, _ := s.send(method, path, body)
	r.WantStatus(s.t, want)
	s.refused[want]++
}

func (s *script) del(o *liveOrder) {
	s.t.Helper()
	r, at := s.send(http.MethodDelete, "/orders/"+strconv.FormatInt(o.id, 10)+"?version="+strconv.FormatInt(o.version, 10), nil)
	r.WantStatus(s.t, http.StatusNoContent)
	s.ack(store.ActionDeleted, orderJSON{ID: o.id, Version: o.version, Status: o.status}, at, r.What)
	s.live = slices.DeleteFunc(s.live, func(l *liveOrder) bool { return l == o })
}

// run makes n acknowledged order writes (creates, updates, status changes,
// deletes), with refused ones (a stale version: 409; an empty customer, a
// status going back: 422) and no-ops between them.
func (s *script) run(n int) {
	s.t.Helper()
	for goal := len(s.orders) + n; len(s.orders) < goal; {
		i := s.step
		if len(s.live) < 4 || i%13 == 0 {
			s.create()
			continue
		}
		o := s.live[i%len(s.live)]
		path := "/orders/" + strconv.FormatInt(o.id, 10)
		switch i % 10 {
		case 3, 6:
			s.advance(o)
		case 4:
			if o.version > 1 {
				s.refuse(http.StatusConflict, http.MethodPut, path, map[string]any{"customer": "Stale", "version": o.version - 1})
			}
			s.update(o)
		case 7:
			s.refuse(http.StatusUnprocessableEntity, http.MethodPut, path, map[string]any{"customer": " ", "version": o.version})
			if o.status != "pending" {
				s.refuse(http.StatusUnprocessableEntity, http.MethodPut, path, map[string]any{"status": "pending", "version": o.version})
			}
			s.update(o)
		case 8:
			if o.version >= 3 && len(s.live) > 4 {
				s.del(o)
			} else {
				s.update(o)
			}
		case 9:
			s.step++
			s.put(o, map[string]any{"status": o.status}) // the same status again: a no-op
		default:
			s.update(o)
		}
	}
}

// productsRun makes a product's create, two updates (the second makes it
// inactive) and its delete, and refused writes between them.
func (s *script) productsRun() {
	s.t.Helper()
	ackP := func(action string, p productJSON, at span, what string) {
		active := p.Active
		s.products = append(s.products, wantEvent{Action: action, ID: p.ID, Version: p.Version, Active: &active, Sent: at.sent, Ack: at.ack, What: what})
	}
	sku := fmt.Sprintf("LIVE-%d", time.Now().UnixNano()%1e9)
	s.refuse(http.StatusUnprocessableEntity, http.MethodPost, "/products", map[string]any{"sku": sku, "name": "Live", "unit_price": "1.005"})
	r, at := s.send(http.MethodPost, "/products", map[string]any{"sku": sku, "name": "Live widget", "unit_price": "1.00"})
	r.WantStatus(s.t, http.StatusCreated)
	var p productJSON
	r.JSON(s.t, &p)
	ackP(store.ActionCreated, p, at, r.What)
	path := "/products/" + strconv.FormatInt(p.ID, 10)
	r, at = s.send(http.MethodPut, path, map[string]any{"name": "Live widget, renamed", "version": p.Version})
	r.WantStatus(s.t, http.StatusOK)
	r.JSON(s.t, &p)
	ackP(store.ActionUpdated, p, at, r.What)
	s.refuse(http.StatusConflict, http.MethodPut, path, map[string]any{"name": "Stale", "version": p.Version - 1})
	r, at = s.send(http.MethodPut, path, map[string]any{"active": false, "version": p.Version})
	r.WantStatus(s.t, http.StatusOK)
	r.JSON(s.t, &p)
	if p.Active {
		s.t.Fatalf("%s: the product is still active", r.What)
	}
	ackP(store.ActionUpdated, p, at, r.What)
	r, at = s.send(http.MethodDelete, path+"?version="+strconv.FormatInt(p.Version, 10), nil)
	r.WantStatus(s.t, http.StatusNoContent)
	ackP(store.ActionDeleted, p, at, r.What)
}

// latencies are the times from an acknowledgement to its event (0 for an
// event read before the answer: the XADD precedes the answer), and from
// the request's start to its event.
type latencies struct {
	d, fromSent []time.Duration
	early       int // events read before the write's answer was
}

// add checks that each event came within a second of its write's
// acknowledgement and keeps the time it took.
func (l *latencies) add(t testing.TB, name string, got []testutil.SSEEvent, want []wantEvent) {
	t.Helper()
	for i, e := range got {
		d := e.At.Sub(want[i].Ack)
		if d < 0 {
			l.early++
			d = 0
		}
		if d > time.Second {
			t.Errorf("%s: event %d (%v) came %v after the write's answer, want within 1 s", name, i, want[i], d)
		}
		l.d = append(l.d, d)
		l.fromSent = append(l.fromSent, e.At.Sub(want[i].Sent))
	}
}

func (l *latencies) String() string {
	if len(l.d) == 0 {
		return "no events"
	}
	qs := func(d []time.Duration) string {
		d = slices.Clone(d)
		slices.Sort(d)
		q := func(p float64) string {
			return d[min(len(d)-1, int(p*float64(len(d))))].Round(10 * time.Microsecond).String()
		}
		return fmt.Sprintf("p50 %s, p99 %s, max %s", q(0.50), q(0.99), q(1))
	}
	return fmt.Sprintf("%s over %d events (%d read before the answer: 0); from the request's start %s", qs(l.d), len(l.d), l.early, qs(l.fromSent))
}

// TestEventsAcrossInstances: two app processes A and B over one Redis, and
// over a Cluster. B's /orders/events and /products/events see every write
// acknowledged by A as one event, in order, with its action, id, version
// and status (active for products), within a second of A's answer, and
// nothing for a refused write or a no-op. Then B's stream is closed while
// more than ReplayBatch more writes are made; reconnecting with
// Last-Event-ID to B and to A, and with ?after= to B, gives exactly the
// missed events, then the live ones, no repeat, no gap. A cursor that is
// not one gets event: reset, then the live events; on the one Redis, so
// does a cursor older than the oldest event kept, once the app's own XADD
// has trimmed the stream to store.EventsKept.
func TestEventsAcrossInstances(t *testing.T) {
	testutil.Long(t)
	for _, target := range []string{"redis", "cluster"} {
		t.Run(target, func(t *testing.T) {
			var redisArg string
			var rdb redis.UniversalClient
			if target == "redis" {
				rs := startRedis(t, 0)
				redisArg, rdb = rs.url(), rs.client(t)
			} else {
				tc := startCluster(t, 3, 0)
				redisArg = tc.addrs()
			}
			a, b := startApp(t, redisArg), startApp(t, redisArg)
			ordersB := testutil.OpenSSE(t, b.base, "/orders/events", nil)
			productsB := testutil.OpenSSE(t, b.base, "/products/events", nil)
			ordersB.WaitOpen(t)
			productsB.WaitOpen(t)

			// Phase 1: B follows live.
			s := newScript(t, a.base)
			s.run(120)
			s.productsRun()
			s.run(120)
			got := expectSequence(t, ordersB, "B's /orders/events", s.orders)
			gotP := expectSequence(t, productsB, "B's /products/events", s.products)
			var lat latencies
			lat.add(t, "B's /orders/events", got, s.orders)
			lat.add(t, "B's /products/events", gotP, s.products)
			if s.refused[409] == 0 || s.refused[422] == 0 || s.noops == 0 {
				t.Fatalf("the script refused %v and made %d no-ops: want 409s, 422s and no-ops", s.refused, s.noops)
			}

			// Phase 2: B's stream closed, more writes than one replay
			// batch through A.
			ordersB.Close()
			cursor := ordersB.LastID()
			if cursor != got[len(got)-1].ID {
				t.Fatalf("the last id read %q is not the last event's %q", cursor, got[len(got)-1].ID)
			}
			from := len(s.orders)
			missed := store.ReplayBatch + 20
			s.run(missed)

			// Phase 3: back with the cursor, on B, on A, and as ?after=.
			again := []*testutil.SSE{
				testutil.OpenSSE(t, b.base, "/orders/events", map[string]string{"Last-Event-ID": cursor}),
				testutil.OpenSSE(t, a.base, "/orders/events", map[string]string{"Last-Event-ID": cursor}),
				testutil.OpenSSE(t, b.base, "/orders/events?after="+url.QueryEscape(cursor), nil),
			}
			names := []string{"B's /orders/events with Last-Event-ID", "A's /orders/events with Last-Event-ID", "B's /orders/events?after="}
			for _, st := range again {
				st.WaitOpen(t)
			}
			live := len(s.orders)
			s.run(60)
			for i, st := range again {
				expectSequence(t, st, names[i], s.orders[from:])
			}
			// The live events after the reconnection came within a second.
			lat.add(t, names[0]+" (live)", again[0].Events()[live-from:], s.orders[live:])
			line := fmt.Sprintf("events across instances (%s): %d order writes and %d product writes acknowledged by A, %d refused (%v), %d no-ops; "+
				"latency from A's answer to B's event %v; B's stream closed for %d writes: %d replayed with Last-Event-ID (on B and on A, and with ?after=), then live",
				target, len(s.orders), len(s.products), s.refused[409]+s.refused[422], s.refused, s.noops, &lat, missed, missed)
			figure(line)
			t.Log(line)
			for _, st := range again {
				st.Close()
			}

			// Phase 4: reconnections with the same cursor while A writes.
			// Each replays more than a batch, so A's writes land between a
			// stream's subscription and its replay's last read, and reach
			// it both ways: each must come once.
			type dialed struct {
				st  *testutil.SSE
				err error
			}
			dialing := make(chan dialed, 20)
			go func() {
				defer close(dialing)
				for range cap(dialing) {
					st, err := testutil.DialSSE(b.base, "/orders/events", map[string]string{"Last-Event-ID": cursor})
					dialing <- dialed{st, err}
				}
			}()
			s.run(100)
			var racing []*testutil.SSE
			for d := range dialing {
				if d.err != nil {
					t.Fatal(d.err)
				}
				t.Cleanup(d.st.Close)
				racing = append(racing, d.st)
			}
			for i, st := range racing {
				expectSequence(t, st, fmt.Sprintf("B's /orders/events, reconnection %d while A writes", i), s.orders[from:])
				st.Close()
			}

			// A cursor that is no cursor, or one newer than any event: reset,
			// then the live events.
			for _, bad := range []string{"garbage", "99999999999999-0", "1-2-3"} {
				checkReset(t, s, b.base, "/orders/events", map[string]string{"Last-Event-ID": bad}, "")
			}
			checkReset(t, s, b.base, "/orders/events?after=garbage", nil, "")

			if target != "redis" {
				return
			}
			// A cursor older than the oldest event kept. The stream is made
			// longer than EventsKept cheaply: 15,000 repeated events of an
			// order as it is, XADDed straight to its key (an event may come
			// twice, docs/api.md §9: these are what a
			// reconciler's repeat looks like), without MAXLEN; then one
			// write through A, whose own XADD MAXLEN ~ EventsKept trims it.
			ctx := context.Background()
			o := s.live[0]
			data := fmt.Sprintf(`{"id":%d,"version":%d,"status":%q}`, o.id, o.version, o.status)
			const flood = 15000
			for done := 0; done < flood; done += 1000 {
				_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for range 1000 {
						p.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", Values: []any{"a", store.ActionUpdated, "d", data}})
					}
					return nil
				})
				if err != nil {
					t.Fatalf("XADD: %v", err)
				}
			}
			before, _ := rdb.XLen(ctx, "o:events").Result()
			s.update(o)
			after, _ := rdb.XLen(ctx, "o:events").Result()
			oldest, err := rdb.XRangeN(ctx, "o:events", "-", "+", 1).Result()
			if err != nil || len(oldest) == 0 {
				t.Fatalf("XRANGE: %v %v", oldest, err)
			}
			if after < store.EventsKept || after > store.EventsKept+200 || !redisstore.After(oldest[0].ID, cursor) {
				t.Fatalf("after A's write the stream holds %d events (%d before it), the oldest %s: want it trimmed to about %d, past the cursor %s",
					after, before, oldest[0].ID, store.EventsKept, cursor)
			}
			newest, _ := rdb.XRevRangeN(ctx, "o:events", "+", "-", 1).Result()
			first := got[0].ID
			afterReset := len(s.orders)
			reset := checkReset(t, s, b.base, "/orders/events", map[string]string{"Last-Event-ID": first}, newest[0].ID)
			checkReset(t, s, a.base, "/orders/events?after="+url.QueryEscape(first), nil, newest[0].ID)
			// The reset's id is a cursor like any other.
			back := testutil.OpenSSE(t, b.base, "/orders/events", map[string]string{"Last-Event-ID": reset})
			back.WaitOpen(t)
			want := s.orders[afterReset:] // the writes of both checkResets
			expectSequence(t, back, "B's /orders/events from the reset's id", want)
			back.Close()
			t.Logf("the stream went from %d to %d events with A's write; the first event's cursor %s (oldest kept %s) got a reset", before, after, first, oldest[0].ID)
		})
	}
}

// checkReset opens a stream whose cursor the stream cannot serve: its first
// event must be reset (data {}, an id no older than newest when given),
// then the events of three writes made after it opened, and nothing else.
// It returns the reset's id.
func checkReset(t *testing.T, s *script, base, path string, h map[string]string, newest string) string {
	t.Helper()
	st := testutil.OpenSSE(t, base, path, h)
	defer st.Close()
	st.WaitOpen(t)
	from := len(s.orders)
	for range 3 {
		s.update(s.live[len(s.live)-1])
	}
	poll(5*time.Second, func() bool { return len(st.Events()) >= 4 })
	got := st.Events()
	name := fmt.Sprintf("%s %v", path, h)
	if len(got) == 0 {
		t.Fatalf("%s: no event, want reset", name)
	}
	if r := got[0]; r.Event != store.ActionReset || r.Data != "{}" || r.ID == "" || newest != "" && redisstore.After(newest, r.ID) {
		t.Fatalf("%s: first event %s %s %s, want reset {} with an id no older than %s", name, r.ID, r.Event, r.Data, newest)
	}
	checkSequence(t, name+" after its reset", got[1:], s.orders[from:])
	return got[0].ID
}

// TestEventsHeartbeat: an idle stream gets a heartbeat comment every
// ORDERS_EVENT_HEARTBEAT, and no event.
func TestEventsHeartbeat(t *testing.T) {
	testutil.Long(t)
	rs := startRedis(t, 0)
	const every = 200 * time.Millisecond
	app := startApp(t, rs.url(), "ORDERS_EVENT_HEARTBEAT="+every.String())
	for _, path := range []string{"/orders/events", "/products/events"} {
		st := testutil.OpenSSE(t, app.base, path, nil)
		opened := time.Now()
		st.WaitOpen(t)
		const n = 8
		if !poll(n*every+3*time.Second, func() bool { return len(st.Comments()) >= n+1 }) {
			t.Fatalf("%s: %d comments in %v, want the first and %d heartbeats every %v: %v", path, len(st.Comments()), time.Since(opened), n, every, st.Comments())
		}
		cs := st.Comments()[:n+1]
		if cs[0].Text != "live updates" {
			t.Errorf("%s: first comment %q, want \"live updates\"", path, cs[0].Text)
		}
		var gaps []string
		prev := cs[0].At
		for _, c := range cs[1:] {
			gap := c.At.Sub(prev)
			gaps = append(gaps, gap.Round(time.Millisecond).String())
			if c.Text != "heartbeat" {
				t.Errorf("%s: comment %q, want heartbeat", path, c.Text)
			}
			// The heartbeats come every interval (the first one interval
			// after the stream opened); the machine is shared: allow slack.
			if gap < every/2 || gap > 2*every {
				t.Errorf("%s: a heartbeat came %v after the comment before it, want about %v", path, gap, every)
			}
			prev = c.At
		}
		if evs := st.Events(); len(evs) != 0 {
			t.Errorf("%s: an idle stream got events: %s", path, lastOf(evs, 3))
		}
		if ended, err := st.Ended(); ended {
			t.Fatalf("%s: the stream ended: %v", path, err)
		}
		t.Logf("%s: heartbeats %s apart (ORDERS_EVENT_HEARTBEAT=%v)", path, strings.Join(gaps, ", "), every)
		st.Close()
	}
}

// redisRecvQueue is how many bytes wait unread in the receive queues of
// the established connections to a Redis on loopback port (from
// /proc/net/tcp): while that Redis is stopped, a command the app sends
// stays there.
func redisRecvQueue(t testing.TB, port int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatalf("reading /proc/net/tcp: %v", err)
	}
	var sum int64
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || f[3] != "01" { // established
			continue
		}
		_, p, _ := strings.Cut(f[1], ":")
		if lp, err := strconv.ParseInt(p, 16, 64); err != nil || lp != int64(port) {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		n, _ := strconv.ParseInt(rx, 16, 64)
		sum += n
	}
	return sum
}

// TestEventsShutdown: SIGTERM with two event streams open and a request
// in flight (held by a stopped Redis, as in TestShutdownDrainsInFlight):
// the streams end at once and cleanly (their bodies end with EOF, no
// error), the request gets its whole answer, and the process exits 0 well
// within its 10 s budget.
func TestEventsShutdown(t *testing.T) {
	rs := startRedis(t, 0)
	app := startApp(t, rs.url())
	mustCall(t, app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Shutdown"}), testutil.HJSON).
		WantStatus(t, http.StatusCreated)
	streams := []*testutil.SSE{testutil.OpenSSE(t, app.base, "/orders/events", nil), testutil.OpenSSE(t, app.base, "/products/events", nil)}
	for _, st := range streams {
		st.WaitOpen(t)
	}

	rs.signal(t, syscall.SIGSTOP)
	defer rs.cmd.Process.Signal(syscall.SIGCONT)
	queued := redisRecvQueue(t, rs.port)
	type answer struct {
		r   *testutil.Resp
		err error
	}
	inFlight := make(chan answer, 1)
	go func() {
		r, err := call(app.base, http.MethodGet, "/orders/1", "", nil, testutil.HJSON)
		inFlight <- answer{r, err}
	}()
	// In flight: its command to Redis waits in the stopped server's queue.
	if !poll(3*time.Second, func() bool { return redisRecvQueue(t, rs.port) > queued }) {
		t.Fatal("the request did not reach Redis within 3 s")
	}
	start := time.Now()
	app.signal(t, syscall.SIGTERM)
	for _, st := range streams {
		if ended, err := st.WaitEnd(3 * time.Second); !ended {
			t.Fatalf("GET %s: the stream did not end within 3 s of SIGTERM", st.Name)
		} else if err != nil {
			t.Errorf("%s ended with %v at SIGTERM, want a clean end (EOF)", st.Name, err)
		}
	}
	streamsEnded := time.Since(start)
	a := <-inFlight
	if a.err != nil {
		t.Errorf("the request in flight at SIGTERM failed: %v (want a whole answer)", a.err)
	} else if a.r.Status != http.StatusServiceUnavailable {
		t.Errorf("the request in flight at SIGTERM answered %d, want 503 (Redis is stopped)", a.r.Status)
	}
	select {
	case <-app.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the app did not exit within 10 s of SIGTERM; its output:\n%s", tail(app.out.String(), 20))
	}
	took := time.Since(start)
	if app.err != nil {
		t.Errorf("the app exited with %v after SIGTERM, want 0; its output:\n%s", app.err, tail(app.out.String(), 20))
	}
	if took > 5*time.Second {
		t.Errorf("the app took %v to exit after SIGTERM, want well within its 10 s budget", took)
	}
	status := 0
	if a.r != nil {
		status = a.r.Status
	}
	t.Logf("SIGTERM: both streams ended after %v, the request in flight answered %d, the app exited after %v",
		streamsEnded.Round(time.Millisecond), status, took.Round(time.Millisecond))
}

// TestEventsMaxStreams: past ORDERS_MAX_STREAMS open streams (of either
// resource) an instance answers 503 with Retry-After: 5, and keeps serving
// everything else; a stream the client closes frees its slot at once, not
// at a heartbeat (the default 20 s here): the server watches the
// connection.
func TestEventsMaxStreams(t *testing.T) {
	rs := startRedis(t, 0)
	app := startApp(t, rs.url(), "ORDERS_MAX_STREAMS=3")
	open := []*testutil.SSE{
		testutil.OpenSSE(t, app.base, "/orders/events", nil),
		testutil.OpenSSE(t, app.base, "/products/events", nil),
		testutil.OpenSSE(t, app.base, "/orders/events", nil),
	}
	for _, st := range open {
		st.WaitOpen(t)
	}
	for _, path := range []string{"/orders/events", "/products/events"} {
		st := testutil.OpenSSE(t, app.base, path, nil)
		if r := st.Resp; r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "5" {
			t.Fatalf("GET %s with 3 streams open of 3: %d, Retry-After %q, want 503 with Retry-After: 5 (docs/api.md §9)", path, r.StatusCode, r.Header.Get("Retry-After"))
		}
		t.Logf("GET %s past the bound: %d, Retry-After: %s, %s", path, st.Resp.StatusCode, st.Resp.Header.Get("Retry-After"), testutil.Snippet(st.Body()))
	}
	mustCall(t, app.base, http.MethodGet, "/orders", "", nil, testutil.HJSON).WantStatus(t, http.StatusOK)

	open[1].Close()
	closed := time.Now()
	var again *testutil.SSE
	if !poll(2*time.Second, func() bool {
		if again = testutil.OpenSSE(t, app.base, "/products/events", nil); again.Resp.StatusCode == http.StatusOK {
			return true
		}
		if again.Resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("GET /products/events: %d, want 200 or 503", again.Resp.StatusCode)
		}
		return false
	}) {
		t.Fatal("a stream closed by its client did not free its slot within 2 s")
	}
	again.WaitOpen(t)
	freed := time.Since(closed)
	if st := testutil.OpenSSE(t, app.base, "/orders/events", nil); st.Resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a fourth stream after the freed slot was taken again: %d, want 503", st.Resp.StatusCode)
	}
	t.Logf("a closed stream's slot was free again %v after its client closed it", freed.Round(time.Millisecond))
}

// inProcessStore is an in-process app over the real Redis at
// ORDERS_TEST_REDIS (its own key prefix), served on a loopback port of
// its own; skipped loudly without that Redis.
func inProcessStore(t *testing.T, cfg routes.Config, wrap func(net.Listener) net.Listener) (*redisstore.Store, testutil.Target, string) {
	t.Helper()
	var tg *testutil.Target
	for _, x := range testutil.Targets(t) {
		if x.Name == "redis" {
			tg = &x
		}
	}
	if tg == nil {
		testutil.Skip(t, testutil.NoRealRedis)
	}
	st := testutil.NewStore(t, *tg)
	cfg.Store, cfg.Files, cfg.Logger = st, testutil.Files(t), testutil.Logger(t)
	app, err := routes.New(cfg)
	if err != nil {
		t.Fatalf("routes.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = app.ShutdownWithContext(ctx)
	})
	return st, *tg, "http://" + ln.Addr().String()
}

// settle waits (up to 5 s) until the process's goroutines have stopped
// changing, so that what an earlier test left winding down is gone
// before a measurement.
func settle() {
	last, same := runtime.NumGoroutine(), 0
	poll(5*time.Second, func() bool {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		return same >= 5
	})
}

// heapNow is the live heap and the goroutines after a collection.
func heapNow() (heap, stack uint64, goroutines int) {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse, runtime.NumGoroutine()
}

// TestEventsStalledSubscriber: a client that stops reading holds at most
// store.SubscriptionBuffer events in the server (besides what the socket
// buffers hold, kept small by the app's own send buffer: the listener is
// the app's, not one with small buffers; measured: the heap it takes
// then), is cut off when they fill up (its subscription dropped while another goes on), and its
// stream ends once it reads again; reconnecting with the last id it got
// gives exactly the rest, as the Redis stream holds them.
func TestEventsStalledSubscriber(t *testing.T) {
	st, tg, base := inProcessStore(t, routes.Config{}, nil)
	feed := st.Feed(store.OrderEvents)
	ctx := context.Background()
	key := tg.Prefix + "o:events"
	var o orderJSON
	mustCall(t, base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Stalled"}), testutil.HJSON).
		WantStatus(t, http.StatusCreated).JSON(t, &o)
	// Another subscriber that reads every event and keeps none (so the
	// feed's reader runs throughout and nothing else grows the heap).
	other, err := feed.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var otherGot int
	otherDone := make(chan struct{})
	go func() {
		defer close(otherDone)
		for range other.Events() {
			otherGot++
		}
	}()
	newest, err := tg.Client.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil || len(newest) != 1 {
		t.Fatalf("XREVRANGE %s: %v %v", key, newest, err)
	}
	settle()
	heap0, _, g0 := heapNow()

	// The stalled client: a small receive buffer, and nothing read.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /orders/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if !poll(5*time.Second, func() bool { return feed.Subscribers() == 2 }) {
		t.Fatalf("%d subscribers, want 2", feed.Subscribers())
	}

	// Events, as many as it takes: the order's updates through the store
	// (the same write, and XADD, as the app's), until the stalled
	// subscription is dropped.
	version, writes := o.Version, 0
	for feed.Subscribers() == 2 {
		// Well within the events Redis keeps: a client back from a
		// stall must be able to go on where it was.
		if writes >= store.EventsKept/4 {
			t.Fatalf("the stalled subscriber was not cut off after %d events", writes)
		}
		name := fmt.Sprint("Stalled ", writes)
		got, err := st.UpdateOrder(ctx, o.ID, store.OrderInput{Customer: &name, Version: &version}, 0)
		if err != nil {
			t.Fatalf("update %d: %v", writes, err)
		}
		version = got.Version
		writes++
	}
	heap1, _, g1 := heapNow()
	if n := feed.Subscribers(); n != 1 {
		t.Fatalf("%d subscribers after the stalled one was cut off, want 1 (the other)", n)
	}
	// Every event since the stalled stream opened, as Redis keeps them.
	msgs := testutil.Events(t, feed, newest[0].ID)
	if len(msgs) != writes {
		t.Fatalf("the stream %s holds %d events since the stalled stream opened, want %d", key, len(msgs), writes)
	}
	same := func(e testutil.SSEEvent, m store.Event) bool {
		return e.ID == m.Cursor && e.Event == m.Action && e.Data == string(m.Data)
	}

	// The stalled client reads again: what was on its way, then the end.
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	stalled := testutil.ReadSSE("the stalled stream", res, func() { conn.Close() })
	if ended, err := stalled.WaitEnd(10 * time.Second); !ended || err != nil {
		t.Fatalf("the stalled stream, read again: ended %v with %v, want its end", ended, err)
	}
	got := stalled.Events()
	if len(got) == 0 || len(got) >= writes {
		t.Fatalf("the stalled stream had %d events before its end, want some but not all %d", len(got), writes)
	}
	for i, e := range got {
		if !same(e, msgs[i]) {
			t.Fatalf("the stalled stream's event %d is %s %s %s, the stream's %v", i, e.ID, e.Event, e.Data, msgs[i])
		}
	}
	// Back with the last id it got: exactly the rest.
	back := testutil.OpenSSE(t, base, "/orders/events", map[string]string{"Last-Event-ID": stalled.LastID()})
	back.WaitOpen(t)
	rest := back.WaitEvents(t, writes-len(got), 10*time.Second)
	if len(rest) != writes-len(got) {
		t.Fatalf("reconnected: %d events, want the %d it missed", len(rest), writes-len(got))
	}
	for i, e := range rest {
		if m := msgs[len(got)+i]; !same(e, m) {
			t.Fatalf("reconnected: event %d is %s %s %s, want %v", i, e.ID, e.Event, e.Data, m)
		}
	}
	other.Close()
	<-otherDone
	if otherGot != writes {
		t.Errorf("the other subscriber got %d events, want all %d", otherGot, writes)
	}
	line := fmt.Sprintf("events: a subscriber that stopped reading was cut off after %d events (%d reached it when it read again, the buffer being %d; %d replayed when it came back); "+
		"it held %.0f KiB of heap and %+d goroutines when cut off",
		writes, len(got), store.SubscriptionBuffer, len(rest), (float64(heap1)-float64(heap0))/1024, g1-g0)
	figure(line)
	t.Log(line)
}

// TestEventsMemoryPerStream measures, in one process serving the app over
// the real Redis, the heap, goroutine stacks and goroutines that 500 open
// event streams take once each has received events (the clients run in a
// process of their own, TestHelperEventClients, so that only the server
// is measured). A figure, not an assertion.
func TestEventsMemoryPerStream(t *testing.T) {
	testutil.Long(t)
	// Every stream comes from 127.0.0.1: lift the per-address limit.
	st, _, base := inProcessStore(t, routes.Config{Limits: store.LimitOptions{Rules: store.LimitRules{StreamsPerAddress: 1000}}}, nil)
	for range 3 { // warm the server: its workers, pools and templates
		mustCall(t, base, http.MethodGet, "/orders", "", nil, testutil.HJSON).WantStatus(t, http.StatusOK)
	}
	const streams, events = 500, 5
	settle()
	heap0, stack0, g0 := heapNow()

	helper := exec.Command(os.Args[0], "-test.run=^TestHelperEventClients$", "-test.count=1")
	helper.Env = append(os.Environ(), fmt.Sprintf("ORDERS_EVENTS_HELPER=%s %d %d", base, streams, events))
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	var said testutil.SyncBuffer // the rest of its output, for a failure
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "helper: "); ok {
				lines <- l
			} else {
				fmt.Fprintln(&said, sc.Text())
			}
		}
		close(lines)
	}()
	defer func() {
		stdin.Close()
		_ = helper.Wait()
	}()
	expect := func(what string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || l != what {
				t.Fatalf("the client process said %q (ok %v), want %q; its output:\n%s", l, ok, what, tail(said.String(), 20))
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("the client process did not say %q within 60 s", what)
		}
	}
	expect("open")
	if n := st.Feed(store.OrderEvents).Subscribers(); n != streams {
		t.Fatalf("%d subscribers, want %d", n, streams)
	}
	for i := range events {
		mustCall(t, base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": fmt.Sprint("Memory ", i)}), testutil.HJSON).
			WantStatus(t, http.StatusCreated)
	}
	expect("got")
	heap1, stack1, g1 := heapNow()
	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / streams }
	line := fmt.Sprintf("events memory: %d open streams that each received %d events: %.0f bytes of heap and %.0f of goroutine stacks per stream, %.2f goroutines per stream (heap %d → %d KiB, goroutines %d → %d)",
		streams, events, per(heap0, heap1), per(stack0, stack1), float64(g1-g0)/streams, heap0>>10, heap1>>10, g0, g1)
	figure(line)
	t.Log(line)
}

// TestHelperEventClients is the client process of TestEventsMemoryPerStream
// (it does nothing in a test run of its own): it opens n streams, says
// "open", waits until each has k events, says "got", and holds them until
// its stdin closes.
func TestHelperEventClients(t *testing.T) {
	spec := os.Getenv("ORDERS_EVENTS_HELPER")
	if spec == "" {
		return
	}
	var base string
	var n, k int
	if _, err := fmt.Sscan(spec, &base, &n, &k); err != nil {
		t.Fatalf("ORDERS_EVENTS_HELPER=%q: %v", spec, err)
	}
	streams := make([]*testutil.SSE, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range streams {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			streams[i] = testutil.OpenSSE(t, base, "/orders/events", nil)
		}()
	}
	wg.Wait()
	for _, st := range streams {
		st.WaitOpen(t)
	}
	fmt.Println("helper: open")
	for _, st := range streams {
		st.WaitEvents(t, k, 30*time.Second)
	}
	fmt.Println("helper: got")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// TestEventsResetAfterALossyClusterFailover: on a Cluster with replicas,
// the replica of the master holding the orders' stream falls behind (it
// stops, and its master drops it), events are added that only the master
// has, and the master dies: the replica takes over without them, and new
// events follow. A client back with the cursor of an event that was lost
// gets a reset, not the new events as if nothing were missing; one back
// with the cursor of an event the new master holds gets exactly what
// followed it.
func TestEventsResetAfterALossyClusterFailover(t *testing.T) {
	testutil.Long(t)
	tc := startCluster(t, 3, 1)
	app := startApp(t, tc.addrs())
	opt := &redis.ClusterOptions{Addrs: strings.Split(tc.addrs(), ",")}
	redisstore.ClusterDeadlines(opt)
	cc, closeCC := redisstore.NewClusterClient(opt)
	t.Cleanup(func() { _ = closeCC() })
	feed := redisstore.New(cc, redisstore.Options{Cluster: true}).Feed(store.OrderEvents)
	ctx := context.Background()
	mc, err := cc.MasterForKey(ctx, "o:events")
	if err != nil {
		t.Fatal(err)
	}
	master := tc.node(mc.Options().Addr)
	nodes, err := tc.view(t, master)
	if err != nil {
		t.Fatal(err)
	}
	var replica *redisServer
	for _, m := range nodes {
		if m.addr != master.addr() {
			continue
		}
		for _, r := range nodes {
			if r.master == m.id {
				replica = tc.node(r.addr)
			}
		}
	}
	if master == nil || replica == nil {
		t.Fatalf("no master with a replica for o:events in %v", nodes)
	}
	create := func(name string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			r, err := call(app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": name}), testutil.HJSON)
			if err == nil && r.Status == http.StatusCreated {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("creating %s: %v %v", name, r, err)
			}
		}
	}
	s := testutil.OpenSSE(t, app.base, "/orders/events", nil)
	s.WaitOpen(t)
	create("Kept 1")
	create("Kept 2")
	mcl := master.client(t)
	if n, err := mcl.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on the stream's master: %d, %v", n, err)
	}
	// The replica stops, and its master drops it after a second.
	if err := mcl.ConfigSet(ctx, "repl-timeout", "1").Err(); err != nil {
		t.Fatal(err)
	}
	replica.signal(t, syscall.SIGSTOP)
	if !poll(10*time.Second, func() bool {
		info, _ := mcl.Info(ctx, "replication").Result()
		return strings.Contains(info, "connected_slaves:0")
	}) {
		t.Fatal("the master did not drop its stopped replica within 10 s")
	}
	create("Lost 1")
	create("Lost 2")
	create("Lost 3")
	seen := s.WaitEvents(t, 5, 5*time.Second)
	s.Close()
	kept, lost := seen[1].ID, seen[4].ID

	killed := time.Now()
	tc.kill(t, master)
	replica.signal(t, syscall.SIGCONT)
	if !poll(30*time.Second, func() bool {
		ns, err := tc.view(t, replica)
		return err == nil && slices.ContainsFunc(ns, func(n clusterNode) bool { return n.addr == replica.addr() && n.isMaster })
	}) {
		t.Fatal("the replica did not take over within 30 s")
	}
	promoted := time.Since(killed)
	create("After 1")
	create("After 2")
	var all []store.Event
	var rerr error
	if !poll(10*time.Second, func() bool {
		all, rerr = feed.Replay(ctx, "0-0", false)
		return rerr == nil && len(all) >= 4
	}) {
		t.Fatalf("the new master's stream holds %d events (%v), want the 2 kept and 2 new", len(all), rerr)
	}
	if all[1].Cursor != kept {
		t.Fatalf("the new master's stream: %v, want the kept event %s second", all, kept)
	}

	back := testutil.OpenSSE(t, app.base, "/orders/events", map[string]string{"Last-Event-ID": lost})
	if m, ok := back.Next(5 * time.Second); !ok || m.Event != store.ActionReset || !m.HasID {
		t.Errorf("Last-Event-ID %s of an event the failover lost: %s (%v), want a reset", lost, m, ok)
	}
	back.Close()
	back = testutil.OpenSSE(t, app.base, "/orders/events", map[string]string{"Last-Event-ID": kept})
	got := back.WaitEvents(t, len(all)-2, 5*time.Second)
	for i, e := range all[2:] {
		if g := got[i]; g.ID != e.Cursor || g.Event != e.Action || g.Data != string(e.Data) {
			t.Errorf("Last-Event-ID %s of a kept event: event %d is %s, want %s %s %s", kept, i, g, e.Cursor, e.Action, e.Data)
		}
	}
	back.Close()
	t.Logf("the replica took over %v after the kill; the stream lost %v, kept %d events and has %d new", promoted.Round(100*time.Millisecond), []string{seen[2].ID, seen[3].ID, seen[4].ID}, 2, len(all)-2)
}
