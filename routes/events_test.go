package routes

// Attacks on the live updates' server half (routes/events.go over
// store/redisstore/events.go), through real connections: app.Test does not stream.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// liveApp is an application served on a loopback listener.
type liveApp struct {
	*testApp
	base string
	addr string
}

// serveLive serves an application over st until the test ends (its
// shutdown bounded: a stream that kept it waiting fails the test).
func serveLive(t *testing.T, name string, st *redisstore.Store, more ...func(*Config)) *liveApp {
	t.Helper()
	a := newTestApp(t, name, st, more...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.app.Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.app.ShutdownWithContext(ctx); err != nil {
			t.Errorf("%s: shutdown: %v", name, err)
			buf := make([]byte, 1<<22)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
		}
	})
	l := &liveApp{testApp: a, base: "http://" + ln.Addr().String(), addr: ln.Addr().String()}
	l.waitServing(t)
	return l
}

// waitServing waits until the application answers.
func (l *liveApp) waitServing(t *testing.T) {
	t.Helper()
	for range 100 {
		if r, err := http.Get(l.base + "/healthz"); err == nil {
			r.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s does not answer", l.base)
}

// shortBeat and smallLimit configure an application's streams.
func shortBeat(d time.Duration) func(*Config) { return func(c *Config) { c.EventHeartbeat = d } }
func maxStreams(n int) func(*Config)          { return func(c *Config) { c.MaxStreams = n } }

// sseTransport opens a connection of its own per request, as a stream
// has one.
var sseTransport = &http.Transport{DisableCompression: true, DisableKeepAlives: true}

// evData is an event's data.
type evData struct {
	ID      int64  `json:"id"`
	Version int64  `json:"version"`
	Status  string `json:"status"`
}

func dataOf(t testing.TB, m testutil.SSEEvent) evData {
	t.Helper()
	var d evData
	if err := json.Unmarshal([]byte(m.Data), &d); err != nil {
		t.Fatalf("event %s: data is not JSON: %v", m, err)
	}
	return d
}

// follower is a client that follows a stream as a browser's EventSource
// does: when the stream ends it opens it again with the last id it got as
// Last-Event-ID. It records every event, the resets among them.
type follower struct {
	t       testing.TB
	bases   []string // the instances it reconnects to, in turn
	path    string
	mu      sync.Mutex
	evs     []testutil.SSEEvent
	resets  int
	opens   int
	last    string
	stop    chan struct{}
	stopped chan struct{}
	refused []string // answers other than 200 when it opened
}

func follow(t testing.TB, path, after string, bases ...string) *follower {
	f := &follower{t: t, bases: bases, path: path, last: after, stop: make(chan struct{}), stopped: make(chan struct{})}
	go f.run()
	t.Cleanup(f.end)
	return f
}

func (f *follower) run() {
	defer close(f.stopped)
	for i := 0; ; i++ {
		h := map[string]string{}
		if f.last != "" {
			h["Last-Event-ID"] = f.last
		}
		s, err := testutil.DialSSE(f.bases[i%len(f.bases)], f.path, h)
		if err == nil && s.Resp.StatusCode != http.StatusOK {
			f.mu.Lock()
			f.refused = append(f.refused, s.Resp.Status)
			f.mu.Unlock()
			s.Close()
			err = errors.New(s.Resp.Status)
		}
		if err != nil {
			select {
			case <-f.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		f.mu.Lock()
		f.opens++
		f.mu.Unlock()
		for {
			select {
			case <-f.stop:
				s.Close()
				return
			default:
			}
			ended, _ := s.Ended() // then Next has every event, once
			m, ok := s.Next(10 * time.Millisecond)
			if ok {
				f.record(m)
			} else if ended {
				break
			}
		}
		s.Close()
		select {
		case <-f.stop:
			return
		case <-time.After(50 * time.Millisecond): // retry: 1000, shortened
		}
	}
}

// record keeps one event the stream dispatched.
func (f *follower) record(m testutil.SSEEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evs = append(f.evs, m)
	if m.Event == store.ActionReset {
		f.resets++
	}
	if m.HasID {
		f.last = m.ID
	}
}

func (f *follower) end() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.stopped
}

func (f *follower) events() []testutil.SSEEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.evs)
}

// until waits up to d for cond over the follower's events.
func (f *follower) until(d time.Duration, cond func([]testutil.SSEEvent) bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond(f.events()) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hasCursor reports whether evs holds the event of cursor c.
func hasCursor(c string) func([]testutil.SSEEvent) bool {
	return func(evs []testutil.SSEEvent) bool {
		return slices.ContainsFunc(evs, func(m testutil.SSEEvent) bool { return m.ID == c })
	}
}

// sameEvents compares what a client got with the stream's events: the
// same cursors, actions and data, in the same order.
func sameEvents(got []testutil.SSEEvent, want []store.Event) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("%d events, want %d: the first missing is %s %s %s", len(got), len(want), want[i].Cursor, want[i].Action, want[i].Data)
		case i >= len(want):
			return fmt.Sprintf("%d events, want %d: the first extra is %s", len(got), len(want), got[i])
		case got[i].ID != want[i].Cursor || got[i].Event != want[i].Action || got[i].Data != string(want[i].Data):
			return fmt.Sprintf("event %d is %s, want [%s %s %s]", i, got[i], want[i].Cursor, want[i].Action, want[i].Data)
		}
	}
	return ""
}

// secondStore is a store of its own over tg's Redis: another instance.
func secondStore(t *testing.T, tg testutil.Target) *redisstore.Store {
	return redisstore.New(testutil.SecondClient(t, tg), redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster})
}

// streamGoroutines lists the goroutines serving event streams or reading
// a feed.
func streamGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "orders/routes.(*streams).events") || strings.Contains(g, "orders/store.(*Feed).read") ||
			strings.Contains(g, "orders/routes.replay") {
			out = append(out, g)
		}
	}
	return out
}

// noStreamGoroutines waits up to d for every stream's and feed's
// goroutine to end.
func noStreamGoroutines(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		g := streamGoroutines()
		if len(g) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d stream goroutines left, the first:\n%s", len(g), g[0])
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slotFree reports whether the application would take one more stream
// (HEAD takes a slot and gives it back at once).
func (l *liveApp) slotFree(t *testing.T) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodHead, l.base+"/orders/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	c := &http.Client{Transport: sseTransport, Timeout: 5 * time.Second}
	r, err := c.Do(req)
	if err != nil {
		t.Fatalf("HEAD /orders/events: %v", err)
	}
	r.Body.Close()
	switch r.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusServiceUnavailable:
		return false
	}
	t.Fatalf("HEAD /orders/events: %s", r.Status)
	return false
}

// waitSlotFree waits up to d for a free slot and says how long it took.
func (l *liveApp) waitSlotFree(t *testing.T, d time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	for {
		if l.slotFree(t) {
			return time.Since(start), true
		}
		if time.Since(start) > d {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rawStream opens GET /orders/events on a plain connection whose receive
// buffer is small, and reads the answer's head only.
func rawStream(t *testing.T, addr string, rcvbuf int, header ...string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if rcvbuf > 0 {
		_ = c.(*net.TCPConn).SetReadBuffer(rcvbuf)
	}
	t.Cleanup(func() { c.Close() })
	more := ""
	for _, h := range header {
		more += h + "\r\n"
	}
	if _, err := io.WriteString(c, "GET /orders/events HTTP/1.1\r\nHost: "+addr+"\r\nAccept: text/event-stream\r\n"+more+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// sendJSON sends one JSON request on a connection of its own (a
// connection a client keeps open holds a shutdown up: fasthttp counts a
// new connection active before any request came on it).
func sendOver(base, method, target string, body any) (int, orderJSON, error) {
	var o orderJSON
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, base+target, rd)
	if err != nil {
		return 0, o, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	c := &http.Client{Transport: sseTransport, Timeout: 10 * time.Second}
	r, err := c.Do(req)
	if err != nil {
		return 0, o, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err == nil && r.StatusCode < 300 && len(b) > 0 {
		err = json.Unmarshal(b, &o)
	}
	return r.StatusCode, o, err
}

// followOver serves an application over the Redis at addr (its client
// with the deadlines main.go gives it) and a follower of its orders'
// stream, subscribed.
func followOver(t *testing.T, addr string) (*redisstore.Store, store.Feed, *follower) {
	t.Helper()
	o := &redis.Options{Addr: addr}
	redisstore.Deadlines(o)
	rc := redis.NewClient(o)
	t.Cleanup(func() { rc.Close() })
	st := redisstore.New(rc, redisstore.Options{})
	l := serveLive(t, "outage", st, shortBeat(200*time.Millisecond))
	feed := st.Feed(store.OrderEvents)
	f := follow(t, "/orders/events", "", l.base)
	waitSubscribed(t, feed, 1)
	return st, feed, f
}

// waitSubscribed waits until feed has n subscriptions.
func waitSubscribed(t testing.TB, feed store.Feed, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); feed.Subscribers() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions, want %d", feed.Subscribers(), n)
		}
	}
}

// --- the attacks ---

// TestEventsOfTwoInstancesUnderLoad: writers through the HTTP API of two
// instances on shared orders and their own, while streams on both are
// open throughout and others open and close: every stream open throughout
// gets every acknowledged version and delete; on a single Redis exactly
// the stream's events, each change once, an order's versions never going
// back; on a Cluster at least once.
func TestEventsOfTwoInstancesUnderLoad(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			a := serveLive(t, tg.Name+"-a", testutil.NewStore(t, tg))
			b := serveLive(t, tg.Name+"-b", secondStore(t, tg))
			if tg.Cluster {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go a.store.Reconcile(ctx, 200*time.Millisecond)
			}
			apps := []*liveApp{a, b}
			var long []*testutil.SSE
			for _, l := range apps {
				for range 2 {
					s := testutil.OpenSSE(t, l.base, "/orders/events", nil)
					if s.Resp.StatusCode != http.StatusOK {
						t.Fatalf("GET /orders/events: %s", s.Resp.Status)
					}
					long = append(long, s)
				}
			}
			// The streams are subscribed once their preamble came.
			for _, s := range long {
				s.WaitOpen(t)
			}

			var stop atomic.Bool
			var churn sync.WaitGroup
			var churns atomic.Int64
			for i, l := range apps {
				churn.Add(1)
				go func() {
					defer churn.Done()
					rnd := rand.New(rand.NewPCG(uint64(i), 1))
					for !stop.Load() {
						s, err := testutil.DialSSE(l.base, "/orders/events", nil)
						if err != nil {
							t.Errorf("a stream that comes and goes: %v", err)
							return
						}
						time.Sleep(time.Duration(rnd.IntN(40)) * time.Millisecond)
						s.Close()
						churns.Add(1)
					}
				}()
			}

			var mu sync.Mutex
			acked := map[string]bool{}
			ack := func(id, version int64, deleted bool) {
				mu.Lock()
				defer mu.Unlock()
				if deleted {
					acked[fmt.Sprintf("%d deleted", id)] = true
				} else {
					acked[fmt.Sprintf("%d v%d", id, version)] = true
				}
			}
			var shared []int64
			for i := range 2 {
				o := apps[i].testApp.create(t, map[string]any{"customer": fmt.Sprint("Shared ", i)})
				ack(o.ID, o.Version, false)
				shared = append(shared, o.ID)
			}
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(w), 2))
					cl := func() string { return apps[rnd.IntN(2)].base }
					status, own, err := sendOver(cl(), http.MethodPost, "/orders", map[string]any{"customer": fmt.Sprint("Writer ", w)})
					if err != nil || status != http.StatusCreated {
						t.Errorf("writer %d: create: %v %v", w, err, status)
						return
					}
					ack(own.ID, own.Version, false)
					for i := range 12 {
						id := own.ID
						if i%2 == 1 {
							id = shared[rnd.IntN(len(shared))]
						}
						status, o, err := sendOver(cl(), http.MethodPut, path(id), map[string]any{"notes": fmt.Sprintf("w%d i%d", w, i)})
						if err != nil || status == http.StatusServiceUnavailable {
							continue // not acknowledged
						}
						if status != http.StatusOK {
							t.Errorf("writer %d: PUT %d: %d", w, id, status)
							return
						}
						ack(o.ID, o.Version, false)
					}
					if status, _, err := sendOver(cl(), http.MethodDelete, path(own.ID), nil); err != nil || status >= 300 {
						t.Errorf("writer %d: delete: %v %v", w, err, status)
						return
					}
					ack(own.ID, 0, true)
				}()
			}
			wg.Wait()
			stop.Store(true)
			churn.Wait()
			if t.Failed() {
				return
			}

			got := func(s *testutil.SSE, seen *[]testutil.SSEEvent) map[string]bool {
				for m, ok := s.Next(0); ok; m, ok = s.Next(0) {
					*seen = append(*seen, m)
				}
				have := map[string]bool{}
				for _, m := range *seen {
					d := dataOf(t, m)
					if m.Event == store.ActionDeleted {
						have[fmt.Sprintf("%d deleted", d.ID)] = true
					} else {
						have[fmt.Sprintf("%d v%d", d.ID, d.Version)] = true
					}
				}
				return have
			}
			stream := testutil.Events(t, a.store.Feed(store.OrderEvents), "0-0")
			for i, s := range long {
				var seen []testutil.SSEEvent
				var lacks []string
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					have := got(s, &seen)
					lacks = lacks[:0]
					for k := range acked {
						if !have[k] {
							lacks = append(lacks, k)
						}
					}
					if len(lacks) == 0 || time.Now().After(deadline) {
						break
					}
				}
				if len(lacks) > 0 {
					slices.Sort(lacks)
					t.Errorf("stream %d (instance %d) lacks %d acknowledged changes: %v", i, i/2+1, len(lacks), lacks)
				}
				if tg.Cluster {
					continue
				}
				if d := sameEvents(seen, stream); d != "" {
					t.Errorf("stream %d (instance %d): %s", i, i/2+1, d)
				}
				if len(stream) != len(acked) {
					t.Errorf("the stream holds %d events for %d acknowledged changes", len(stream), len(acked))
				}
				last := map[int64]int64{}
				for _, m := range seen {
					d := dataOf(t, m)
					if v, ok := last[d.ID]; ok && (d.Version < v || d.Version == v && m.Event != store.ActionDeleted) {
						t.Errorf("stream %d: %s after version %d", i, m, v)
					}
					last[d.ID] = d.Version
				}
			}
			t.Logf("%d events, %d acknowledged changes, %d streams came and went", len(stream), len(acked), churns.Load())
		})
	}
}

// TestEventsReplaySeam: clients that connect with a Last-Event-ID (or
// ?after=) while events flow, to either instance, get exactly the events
// after it: the replay from Redis and the live ones meet with no gap and
// no repeat.
func TestEventsReplaySeam(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			st := testutil.NewStore(t, tg)
			a := serveLive(t, tg.Name+"-a", st)
			b := serveLive(t, tg.Name+"-b", secondStore(t, tg))
			feed := st.Feed(store.OrderEvents)
			ref := follow(t, "/orders/events", "", a.base)
			for deadline := time.Now().Add(5 * time.Second); feed.Subscribers() == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			ctx := context.Background()
			o, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr("Seam")})
			if err != nil {
				t.Fatal(err)
			}
			first := testutil.Events(t, feed, "0-0")[0].Cursor
			if !ref.until(5*time.Second, hasCursor(first)) {
				t.Fatal("the first event did not come")
			}

			var stop atomic.Bool
			var writes atomic.Int64
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				for i := 0; !stop.Load(); i++ {
					if _, err := st.UpdateOrder(ctx, o.ID, store.OrderInput{Notes: ptr(fmt.Sprint("note ", i))}, 0); err != nil {
						t.Errorf("Update: %v", err)
						return
					}
					writes.Add(1)
					if i%3 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			type reconnect struct {
				after string
				f     *follower
			}
			var rs []reconnect
			rnd := rand.New(rand.NewPCG(9, 9))
			for i := range 16 {
				time.Sleep(time.Duration(20+rnd.IntN(60)) * time.Millisecond)
				evs := ref.events()
				after := evs[len(evs)-1].ID // the newest this client knows
				if i%2 == 0 {
					after = evs[rnd.IntN(len(evs))].ID
				}
				base := []string{a.base, b.base}[i%2]
				var f *follower
				if i%4 < 2 {
					f = follow(t, "/orders/events", after, base)
				} else {
					f = follow(t, "/orders/events?after="+url.QueryEscape(after), "", base)
				}
				rs = append(rs, reconnect{after, f})
			}
			time.Sleep(200 * time.Millisecond)
			stop.Store(true)
			<-writerDone
			all := testutil.Events(t, feed, "0-0")
			if int64(len(all)) < writes.Load()+1 {
				t.Fatalf("the stream holds %d events for %d writes", len(all), writes.Load()+1)
			}
			newest := all[len(all)-1].Cursor
			if !ref.until(10*time.Second, hasCursor(newest)) {
				t.Fatal("the reference stream did not get the newest event")
			}
			if d := sameEvents(ref.events(), all); d != "" {
				t.Errorf("the stream open throughout: %s", d)
			}
			for i, r := range rs {
				if !r.f.until(10*time.Second, hasCursor(newest)) {
					t.Errorf("reconnect %d (after %s) did not get the newest event", i, r.after)
				}
				r.f.end()
				want := testutil.Events(t, feed, r.after)
				if d := sameEvents(r.f.events(), want); d != "" {
					t.Errorf("reconnect %d (after %s, %d opens): %s", i, r.after, r.f.opens, d)
				}
			}
			t.Logf("%d events, %d reconnects", len(all), len(rs))
		})
	}
}

// TestEventsCursors: whatever Last-Event-ID or ?after= a client sends,
// the answer is a stream (never a 500): the events after a cursor of an
// event the stream holds, else event: reset (data {}, the id to go on
// from) and the live events.
func TestEventsCursors(t *testing.T) {
	testutil.Long(t)
	st := testutil.NewStore(t, testutil.Miniredis(t))
	l := serveLive(t, "cursors", st)
	feed := st.Feed(store.OrderEvents)

	// An empty stream: any cursor is a reset.
	s := testutil.OpenSSE(t, l.base, "/orders/events", map[string]string{"Last-Event-ID": "1-0"})
	if m, ok := s.Next(3 * time.Second); !ok || m.Event != store.ActionReset || m.Data != "{}" || !m.HasID {
		t.Errorf("a cursor over an empty stream: %s (%v), want a reset with an id", m, ok)
	}
	s.Close()

	ctx := context.Background()
	for i := range 5 {
		if _, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprint("Cursor ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	all := testutil.Events(t, feed, "0-0")
	oldest, middle, newest := all[0].Cursor, all[2].Cursor, all[4].Cursor
	// The feed (still running a second after the first stream closed) has
	// handed on every event: a stream opened from now on starts after the
	// newest, which is then a reset's id. (Before that, a reset's id is the
	// last event the feed handed on, and the rest follow it: no gap either,
	// but not what the checks below expect. A loaded CI machine once got
	// there first.)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sub, err := feed.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := sub.Start()
		sub.Close()
		if start == newest {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed starts new subscriptions at %s, not the newest event %s", start, newest)
		}
	}
	ms := func(c string) int64 { n, _ := strconv.ParseInt(strings.Split(c, "-")[0], 10, 64); return n }
	after := func(c string) []store.Event {
		var out []store.Event
		for _, e := range all {
			if redisstore.After(e.Cursor, c) {
				out = append(out, e)
			}
		}
		return out
	}
	replays := map[string][]store.Event{}
	for _, c := range []string{newest, middle, oldest} {
		replays[c] = after(c)
	}
	// 0-0 is the stream's start (a page rendered before its first event):
	// every event, the stream being short of EventsKept, so never trimmed.
	replays["0-0"] = all
	resets := []string{
		"garbage", "-1", "-1-0", "1-", "-", "+", "$", ">", "0", "1", "1-0", "1-1",
		"１２３-0", "٣-0", "é", "\u202e1-0", "1-0-0", "+1-0", "0x10-0",
		"99999999999999999999-0", "18446744073709551615-18446744073709551615", "18446744073709551616-0",
		strings.Repeat("9", 5000), strings.Repeat("1-", 3000),
		fmt.Sprintf("%d-0", ms(newest)+60000), // in the future
		newest + "1",
		// A cursor names one event the stream holds: not a place between
		// two, nor an event's id with another token, or without its own.
		fmt.Sprintf("%d-99999", ms(all[1].Cursor)), all[1].Cursor + "0",
		strings.Split(middle, ".")[0], strings.Split(middle, ".")[0] + ".0", middle + ".1", middle + ".",
		strings.Split(middle, ".")[0] + ".ZZ", strings.Split(middle, ".")[0] + "." + strings.Repeat("a", 17),
	}
	check := func(how, cursor string, h map[string]string, target string) {
		t.Helper()
		s := testutil.OpenSSE(t, l.base, target, h)
		defer s.Close()
		if s.Resp.StatusCode != http.StatusOK {
			if s.Resp.StatusCode >= 500 || len(cursor) < 4000 {
				t.Errorf("%s %.40q: %s", how, cursor, s.Resp.Status)
			}
			return // a header too large for the server: refused before the handler
		}
		want, replay := replays[cursor]
		if replay {
			var got []testutil.SSEEvent
			for range want {
				m, ok := s.Next(3 * time.Second)
				if !ok {
					break
				}
				got = append(got, m)
			}
			if d := sameEvents(got, want); d != "" {
				t.Errorf("%s %q: %s", how, cursor, d)
			}
			if m, ok := s.Next(200 * time.Millisecond); ok {
				t.Errorf("%s %q: an event more: %s", how, cursor, m)
			}
			return
		}
		m, ok := s.Next(3 * time.Second)
		if !ok || m.Event != store.ActionReset || m.Data != "{}" || m.ID != newest {
			t.Errorf("%s %.40q: %s (%v), want a reset whose id is the newest event %s", how, cursor, m, ok, newest)
		}
		if m, ok := s.Next(200 * time.Millisecond); ok {
			t.Errorf("%s %.40q: after the reset: %s", how, cursor, m)
		}
	}
	for _, c := range resets {
		if !strings.ContainsAny(c, "\u202e") {
			check("Last-Event-ID", c, map[string]string{"Last-Event-ID": c}, "/orders/events")
		}
		if len(c) < 4000 {
			check("?after=", c, nil, "/orders/events?after="+url.QueryEscape(c))
		}
	}
	for c := range replays {
		check("Last-Event-ID", c, map[string]string{"Last-Event-ID": c}, "/orders/events")
		check("?after=", c, nil, "/orders/events?after="+url.QueryEscape(c))
	}
	// The header wins over the query; an empty header is none.
	check("Last-Event-ID over ?after=", middle, map[string]string{"Last-Event-ID": middle}, "/orders/events?after=garbage")
	check("?after= with an empty Last-Event-ID", middle, map[string]string{"Last-Event-ID": ""}, "/orders/events?after="+middle)
	// Nothing a client sends gets into the stream.
	s = testutil.OpenSSE(t, l.base, "/orders/events?after="+url.QueryEscape(newest+"\nevent: deleted\ndata: {}\n\n"), nil)
	if m, ok := s.Next(2 * time.Second); !ok || m.Event != store.ActionReset || m.ID != newest {
		t.Errorf("a cursor with lines in it: %s (%v), want the reset", m, ok)
	}
	s.Close()
}

// TestEventsMethodsAndAccept: HEAD answers the stream's head and holds no
// slot; POST, PUT, DELETE are 405 with Allow; an Accept without
// text/event-stream is 406 (never a hang, never a 500); the stream is
// never compressed, whatever Accept-Encoding says.
func TestEventsMethodsAndAccept(t *testing.T) {
	l := serveLive(t, "methods", testutil.NewStore(t, testutil.Miniredis(t)), maxStreams(1))
	c := &http.Client{Transport: sseTransport, Timeout: 5 * time.Second}
	for range 3 {
		req, _ := http.NewRequest(http.MethodHead, l.base+"/orders/events", nil)
		r, err := c.Do(req)
		if err != nil {
			t.Fatalf("HEAD: %v", err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("HEAD /orders/events: %s %q", r.Status, r.Header.Get("Content-Type"))
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, p := range []string{"/orders/events", "/products/events"} {
			req, _ := http.NewRequest(m, l.base+p, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			r, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", m, p, err)
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if allow := r.Header.Get("Allow"); r.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(allow, "GET") {
				t.Errorf("%s %s: %s, Allow %q; want 405 allowing GET", m, p, r.Status, allow)
			}
		}
	}
	// The most specific range decides: text/event-stream;q=0 beside */*
	// refuses it, text/*;q=0 beside text/event-stream allows it.
	for _, accept := range []string{"application/json", "text/html", "text/event-stream;q=0", "image/*", "text/event-stream;q=abc",
		"text/event-stream;q=0, */*", "*/*, text/event-stream;q=0", "text/*;q=0, */*"} {
		s := testutil.OpenSSE(t, l.base, "/orders/events", map[string]string{"Accept": accept})
		if s.Resp.StatusCode != http.StatusNotAcceptable {
			t.Errorf("Accept %q: %s, want 406", accept, s.Resp.Status)
		}
		if !strings.Contains(s.Resp.Header.Get("Vary"), "Accept") {
			t.Errorf("Accept %q: Vary %q, want Accept named", accept, s.Resp.Header.Get("Vary"))
		}
		s.Close()
	}
	for _, accept := range []string{"", "*/*", "text/*", "text/html, text/event-stream;q=0.1", "text/*;q=0, text/event-stream", "*/*;q=0, text/*"} {
		s := testutil.OpenSSE(t, l.base, "/orders/events", map[string]string{"Accept": accept, "Accept-Encoding": "gzip, br, deflate"})
		if s.Resp.StatusCode != http.StatusOK {
			t.Errorf("Accept %q: %s, want 200", accept, s.Resp.Status)
		}
		if !strings.Contains(s.Resp.Header.Get("Vary"), "Accept") {
			t.Errorf("Accept %q: Vary %q, want Accept named", accept, s.Resp.Header.Get("Vary"))
		}
		if enc := s.Resp.Header.Get("Content-Encoding"); enc != "" {
			t.Errorf("Accept %q: Content-Encoding %q: a compressed stream holds its events back", accept, enc)
		}
		if s.Resp.StatusCode == http.StatusOK {
			s.WaitOpen(t)
			if c := s.Comments()[0]; c.Text != "live updates" {
				t.Errorf("Accept %q: the stream starts with the comment %q", accept, c.Text)
			}
		}
		s.Close()
		if _, ok := l.waitSlotFree(t, 3*time.Second); !ok {
			t.Fatal("a closed stream's slot is not free again")
		}
	}
}

// TestEventsTooManyStreams: past MaxStreams a stream is 503 with
// Retry-After: 5 (docs/api.md §9) in the representation asked for, at
// once; a slot is free again once a stream ends.
func TestEventsTooManyStreams(t *testing.T) {
	l := serveLive(t, "limit", testutil.NewStore(t, testutil.Miniredis(t)), maxStreams(2), shortBeat(100*time.Millisecond))
	var open []*testutil.SSE
	for range 2 {
		s := testutil.OpenSSE(t, l.base, "/orders/events", nil)
		if s.Resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %s", s.Resp.Status)
		}
		open = append(open, s)
	}
	for accept, ctype := range map[string]string{
		"text/event-stream":                         "text/plain",
		"text/event-stream, application/json":       "application/json",
		"text/event-stream, text/html;q=0.9":        "text/html",
		"application/json;q=0.5, text/event-stream": "application/json",
		"*/*": "text/html",
	} {
		start := time.Now()
		s := testutil.OpenSSE(t, l.base, "/orders/events", map[string]string{"Accept": accept})
		took := time.Since(start)
		r := s.Resp
		if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "5" || !strings.HasPrefix(r.Header.Get("Content-Type"), ctype) || took > 2*time.Second {
			t.Errorf("Accept %q, streams full: %s, Retry-After %q, %q in %v; want 503, Retry-After 5, %s at once",
				accept, r.Status, r.Header.Get("Retry-After"), r.Header.Get("Content-Type"), took.Round(time.Millisecond), ctype)
		}
		if ended, _ := s.WaitEnd(2 * time.Second); !ended {
			t.Errorf("Accept %q: the 503's body does not end", accept)
		}
		s.Close()
	}
	open[0].Close()
	if took, ok := l.waitSlotFree(t, 2*time.Second); !ok {
		t.Errorf("a slot was not free again within %v of a client leaving", took)
	}
}

// TestEventsClientGone: a client that disconnects frees its slot and its
// goroutines at once, well within a heartbeat (the default, 20 s), not
// at the first write that fails.
func TestEventsClientGone(t *testing.T) {
	st := testutil.NewStore(t, testutil.Miniredis(t))
	l := serveLive(t, "gone", st, maxStreams(1))
	for i := range 3 {
		c := rawStream(t, l.addr, 0)
		buf := make([]byte, 512)
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if n, err := c.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "200 OK") {
			t.Fatalf("the stream's head: %q %v", buf[:n], err)
		}
		if l.slotFree(t) {
			t.Fatal("MaxStreams 1 and a stream open, yet a slot is free")
		}
		c.Close()
		took, ok := l.waitSlotFree(t, 2*time.Second)
		if !ok {
			t.Fatalf("round %d: the slot of a client that left is still taken after %v (heartbeat %v)", i, took, DefaultHeartbeat)
		}
		t.Logf("round %d: slot free %v after the client left", i, took.Round(time.Millisecond))
	}
	noStreamGoroutines(t, 3*time.Second)
}

// TestEventsSlowClient: a client that reads nothing while events flow is
// cut off (its buffer fills, then the write deadline), and its slot and
// goroutines are freed; a client reading beside it gets every event.
func TestEventsSlowClient(t *testing.T) {
	testutil.Long(t)
	mr := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rc.Close() })
	st := redisstore.New(rc, redisstore.Options{})
	l := serveLive(t, "slow", st, maxStreams(2))
	feed := st.Feed(store.OrderEvents)

	slow := rawStream(t, l.addr, 4096)
	reader := follow(t, "/orders/events", "", l.base)
	opened := time.Now()
	deadline := time.Now().Add(5 * time.Second)
	for feed.Subscribers() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if l.slotFree(t) {
		t.Fatal("MaxStreams 2 and two streams open, yet a slot is free")
	}
	// Big events fill the socket buffers sooner (what is in them is not
	// the point).
	ctx := context.Background()
	pad := strings.Repeat("x", 8000)
	n := 0
	for feed.Subscribers() > 1 && n < 20000 {
		for range 50 {
			rc.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", Values: []any{"a", "updated", "d", `{"id":1,"version":` + strconv.Itoa(n) + `,"pad":"` + pad + `"}`}})
			n++
		}
		time.Sleep(5 * time.Millisecond)
	}
	if feed.Subscribers() > 1 {
		t.Fatalf("after %d events the client that reads nothing is still subscribed", n)
	}
	t.Logf("the slow client's subscription was dropped after %d events", n)
	start := time.Now()
	took, ok := l.waitSlotFree(t, 45*time.Second)
	if !ok {
		t.Fatalf("the slow client's slot is still taken %v after it was dropped", took)
	}
	t.Logf("its slot was free %v after it was dropped", time.Since(start).Round(time.Millisecond))
	if !reader.until(5*time.Second, func(evs []testutil.SSEEvent) bool { return len(evs) >= n }) {
		t.Errorf("the client reading beside it got %d of %d events", len(reader.events()), n)
	}
	if reader.opens != 1 {
		t.Errorf("the reading client opened its stream %d times", reader.opens)
	}
	// Past the server's ReadTimeout (30 s), which a stream's connection
	// must outlive.
	if open := time.Since(opened); open < 31*time.Second {
		time.Sleep(31*time.Second - open)
	}
	if !reader.until(time.Second, func([]testutil.SSEEvent) bool { return reader.opens == 1 }) {
		t.Errorf("the reading client's stream ended after %v", time.Since(opened))
	}
	m := rawStream(t, l.addr, 0) // the slow client's slot is free
	_ = m.SetReadDeadline(time.Now().Add(3 * time.Second))
	if head := make([]byte, 512); !func() bool { n, _ := m.Read(head); return strings.Contains(string(head[:n]), "200 OK") }() {
		t.Error("a new stream is refused")
	}
	m.Close()
	reader.end()
	slow.Close()
	noStreamGoroutines(t, 5*time.Second)
}

// TestEventsShutdown: shutting down with streams open, one of them in the
// middle of a long replay and one whose client reads nothing, returns at
// once; the streams of clients that read end cleanly.
func TestEventsShutdown(t *testing.T) {
	testutil.Long(t)
	mr := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rc.Close() })
	st := redisstore.New(rc, redisstore.Options{})
	a := newTestApp(t, "shutdown", st)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.app.Listener(ln) }()
	l := &liveApp{testApp: a, base: "http://" + ln.Addr().String(), addr: ln.Addr().String()}
	l.waitServing(t)

	ctx := context.Background()
	// 20,000 events to replay.
	pad := strings.Repeat("x", 200)
	for i := 0; i < 20000; i += 500 {
		p := rc.Pipeline()
		for j := range 500 {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "o:events", Values: []any{"a", "updated", "d", fmt.Sprintf(`{"id":1,"version":%d,"pad":"%s"}`, i+j, pad)}})
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first := testutil.Events(t, st.Feed(store.OrderEvents), "0-0")[0].Cursor

	var live []*testutil.SSE
	for range 3 {
		s := testutil.OpenSSE(t, l.base, "/orders/events", nil)
		if s.Resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /orders/events: %s", s.Resp.Status)
		}
		if _, ok := s.Next(200 * time.Millisecond); ok {
			t.Fatal("an event on a quiet stream")
		}
		live = append(live, s)
	}
	// A client that reads nothing.
	stuck := rawStream(t, l.addr, 4096)
	// A client reading a long replay, and one that reads none of it.
	replaying := testutil.OpenSSE(t, l.base, "/orders/events", map[string]string{"Last-Event-ID": first})
	stuckInReplay := rawStream(t, l.addr, 4096, "Last-Event-ID: "+first)
	time.Sleep(500 * time.Millisecond)

	inReplay := 0
	for _, g := range streamGoroutines() {
		if strings.Contains(g, "orders/routes.replay") {
			inReplay++
		}
	}
	if inReplay == 0 {
		t.Error("no stream is in the middle of a replay when the server shuts down")
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = a.app.ShutdownWithContext(sctx)
	took := time.Since(start)
	t.Logf("shutdown took %v (%v)", took.Round(time.Millisecond), err)
	if err != nil || took > 2*time.Second {
		t.Errorf("shutdown with streams open: %v after %v; want done within 2 s", err, took.Round(time.Millisecond))
	}
	for i, s := range live {
		if ended, err := s.WaitEnd(3 * time.Second); !ended || err != nil {
			t.Errorf("stream %d at shutdown: ended %v, %v; want a clean end", i, ended, err)
		}
	}
	if ended, _ := replaying.WaitEnd(3 * time.Second); !ended {
		t.Error("the replaying stream did not end at shutdown")
	}
	stuck.Close()
	stuckInReplay.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Listener: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the server did not stop serving")
	}
	noStreamGoroutines(t, 35*time.Second)
}

// --- Redis going away ---

// ownRedis is a redis-server of the test's own, on a free port, that the
// test may stop and start again.
type ownRedis struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
}

func startOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testutil.Skip(t, testutil.NoRedisServer)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &ownRedis{t: t, dir: t.TempDir(), port: port}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *ownRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *ownRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--dbfilename", "dump.rdb",
		// DEBUG SLEEP makes it hang (Redis 7 refuses DEBUG without this).
		"--enable-debug-command", "local")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	for range 200 {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Fatal("redis-server did not start")
}

// stop kills the server (what it held is kept only if it was saved).
func (r *ownRedis) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// save writes what the server holds to its dump (kept over a stop).
func (r *ownRedis) save() {
	r.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	if err := c.Save(context.Background()).Err(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *ownRedis) forget() { _ = os.Remove(filepath.Join(r.dir, "dump.rdb")) }

// TestEventsWhileRedisGoesAway: Redis stops answering under open streams,
// and comes back (with what it held, or empty). A client following the
// stream as EventSource does gets every event with no gap, or a reset
// when the events it missed are gone.
func TestEventsWhileRedisGoesAway(t *testing.T) {
	testutil.Long(t)
	r := startOwnRedis(t)
	st, feed, f := followOver(t, r.addr())
	ctx := context.Background()
	create := func(name string) {
		t.Helper()
		for range 100 {
			if _, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr(name)}); err == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("Create(%s) keeps failing", name)
	}
	// waitAll waits for the follower to have every event the stream holds,
	// and checks it has them once each, in order, after its last reset.
	waitAll := func(what string) {
		t.Helper()
		all := testutil.Events(t, feed, "0-0")
		if !f.until(10*time.Second, hasCursor(all[len(all)-1].Cursor)) {
			t.Fatalf("%s: the client did not get the newest event (%d events, %d resets, %d opens)", what, len(f.events()), f.resets, f.opens)
		}
	}
	for i := range 3 {
		create(fmt.Sprint("Before ", i))
	}
	waitAll("before")

	// 1. Redis does not answer for 4 s (DEBUG SLEEP), then does again.
	sleeper := redis.NewClient(&redis.Options{Addr: r.addr(), ReadTimeout: 10 * time.Second})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(ctx, "DEBUG", "SLEEP", "4").Err() }()
	time.Sleep(4500 * time.Millisecond)
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	create("After a pause")
	waitAll("after a pause")
	if f.resets > 0 {
		t.Errorf("after a pause: %d resets, want none (nothing was lost)", f.resets)
	}

	// 2. Redis stops and starts again with what it held.
	r.save()
	r.stop()
	time.Sleep(1500 * time.Millisecond)
	r.start()
	create("After a restart")
	waitAll("after a restart with the data")
	if f.resets > 0 {
		t.Errorf("after a restart with the data: %d resets, want none", f.resets)
	}
	evs := f.events()
	want := testutil.Events(t, feed, "0-0")
	if d := sameEvents(evs, want); d != "" {
		t.Errorf("after a pause and a restart: %s", d)
	}
	opens := f.opens

	// 3. Redis stops and starts again empty: the client is told to
	// read again (reset) and gets the new events.
	r.stop()
	r.forget()
	time.Sleep(1500 * time.Millisecond)
	r.start()
	create("After a loss")
	waitAll("after a restart empty")
	if f.resets == 0 {
		t.Errorf("after Redis restarted empty: no reset (events %v)", f.events()[len(evs):])
	}
	t.Logf("opens: %d before the loss, %d after; resets %d; events after the loss: %v", opens, f.opens, f.resets, f.events()[len(evs):])

	// 4. Quickly: stopped and started empty at once.
	before := f.resets
	nEvs := len(f.events())
	r.stop()
	r.forget()
	r.start()
	create("After a quick loss")
	waitAll("after a quick restart empty")
	if f.resets == before {
		t.Errorf("after Redis restarted empty at once: no reset (events %v)", f.events()[nEvs:])
	}

	// 5. Emptied with no error seen at all (FLUSHALL: what a restart looks
	// like to a client that reconnected by itself).
	before = f.resets
	nEvs = len(f.events())
	flusher := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer flusher.Close()
	if err := flusher.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	create("After a flush")
	waitAll("after FLUSHALL")
	if f.resets == before {
		t.Errorf("after FLUSHALL: no reset (events %v)", f.events()[nEvs:])
	}
}

// TestEventsReplayWhileRedisHangs: a client back with a cursor while
// Redis does not answer (another stream keeps the feed running, so
// subscribing needs no Redis) gets 503 with Retry-After: 1, which it
// retries, not a 200 that ends with nothing; once Redis answers, the same
// request replays what it missed.
func TestEventsReplayWhileRedisHangs(t *testing.T) {
	testutil.Long(t)
	r := startOwnRedis(t)
	st, feed, f := followOver(t, r.addr())
	ctx := context.Background()
	if _, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr("Before the hang")}); err != nil {
		t.Fatal(err)
	}
	all := testutil.Events(t, feed, "0-0")
	base := f.bases[0]
	get := func() (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/orders/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", "0-0")
		cl := &http.Client{Transport: sseTransport, Timeout: 10 * time.Second}
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b := make([]byte, 4096)
		n, _ := io.ReadAtLeast(res.Body, b, 1)
		return res, string(b[:n])
	}
	sleeper := redis.NewClient(&redis.Options{Addr: r.addr(), ReadTimeout: 10 * time.Second})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(ctx, "DEBUG", "SLEEP", "3").Err() }()
	time.Sleep(300 * time.Millisecond)
	res, body := get()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" {
		t.Errorf("a replay while Redis hangs: %s, Retry-After %q, %q; want 503 with Retry-After: 1", res.Status, res.Header.Get("Retry-After"), body)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	res, body = get()
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "id: "+all[0].Cursor) {
		t.Errorf("the replay once Redis answers: %s, %q; want 200 with event %s", res.Status, body, all[0].Cursor)
	}
}

// TestEventsWhileMiniredisGoesAway: the embedded Redis closed under an
// open stream and started again with its data: the stream goes on, or
// ends and the client gets the rest on reconnecting, with no gap.
func TestEventsWhileMiniredisGoesAway(t *testing.T) {
	testutil.Long(t)
	mr := miniredis.RunT(t)
	st, feed, f := followOver(t, mr.Addr())
	ctx := context.Background()
	for i := range 3 {
		if _, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprint("Before ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	all := testutil.Events(t, feed, "0-0")
	if !f.until(5*time.Second, hasCursor(all[2].Cursor)) {
		t.Fatal("no events before the outage")
	}
	mr.Close()
	time.Sleep(2 * time.Second)
	// miniredis v2.40.0 cancels its context on Close and Restart does not
	// renew it: a blocking XREAD would never answer again. The embedded
	// store never restarts its miniredis; this test is about the feed.
	mr.Ctx, mr.CtxCancel = context.WithCancel(context.Background())
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr(fmt.Sprint("After ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	all = testutil.Events(t, feed, "0-0")
	if !f.until(10*time.Second, hasCursor(all[len(all)-1].Cursor)) {
		t.Fatalf("after the outage the client got %v (opens %d, refused %v, subscribers %d, stream %d)", f.events(), f.opens, f.refused, feed.Subscribers(), len(all))
	}
	if d := sameEvents(f.events(), all); d != "" {
		t.Errorf("across the outage: %s", d)
	}
	t.Logf("%d opens", f.opens)
}

// replicate makes replica a copy of master, waits until it holds every
// write master acknowledged, and detaches it again: a replica that a
// failover would promote, with what it had then.
func replicate(t *testing.T, replica, master *ownRedis) {
	t.Helper()
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: replica.addr(), MaxRetries: -1})
	defer rc.Close()
	mc := redis.NewClient(&redis.Options{Addr: master.addr(), MaxRetries: -1})
	defer mc.Close()
	// A full sync waits 5 s by default for more replicas to share it.
	if err := mc.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(master.port)).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, _ := rc.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become a replica of %s: %s", replica.addr(), master.addr(), info)
		}
	}
	if n, err := mc.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	if err := rc.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestEventsResetWhenRedisForgot: Redis goes back to an older state while
// clients follow the stream through two instances: restored from an
// older backup, or replaced by a replica that had not got the newest
// events (what a failover that loses writes leaves). A client that comes
// back, to either instance, with the cursor of an event Redis no longer
// has gets a reset, not the newer events as if nothing were missing; one
// with the cursor of an event Redis still has gets exactly what followed;
// a client that was following all along is reset and goes on.
func TestEventsResetWhenRedisForgot(t *testing.T) {
	for _, how := range []string{"a restore from an older backup", "a failover to a replica that lagged"} {
		t.Run(how, func(t *testing.T) {
			r := startOwnRedis(t)
			var mark, forget func()
			if strings.HasPrefix(how, "a restore") {
				mark = r.save
				forget = func() { r.stop(); r.start() }
			} else {
				replica := startOwnRedis(t)
				mark = func() { replicate(t, replica, r) }
				// The old master takes the replica's data, and stands in for
				// it at the address the instances know.
				forget = func() { replicate(t, r, replica) }
			}
			st, feed, f := followOver(t, r.addr())
			o := &redis.Options{Addr: r.addr()}
			redisstore.Deadlines(o)
			rc := redis.NewClient(o)
			t.Cleanup(func() { rc.Close() })
			other := serveLive(t, "other", redisstore.New(rc, redisstore.Options{}))
			ctx := context.Background()
			create := func(name string) {
				t.Helper()
				for range 100 {
					if _, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr(name)}); err == nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				t.Fatalf("Create(%s) keeps failing", name)
			}
			create("Kept 1")
			create("Kept 2")
			mark()
			create("Lost 1")
			create("Lost 2")
			create("Lost 3")
			before := testutil.Events(t, feed, "0-0")
			if !f.until(10*time.Second, hasCursor(before[len(before)-1].Cursor)) {
				t.Fatalf("the follower did not get the events before (%d)", len(f.events()))
			}
			resets := f.resets

			forget()
			create("After 1")
			create("After 2")
			after := testutil.Events(t, feed, "0-0")
			if len(after) != 4 || after[1].Cursor != before[1].Cursor {
				t.Fatalf("Redis holds %d events after forgetting, want the 2 kept and 2 new", len(after))
			}
			for _, base := range []string{f.bases[0], other.base} {
				for _, lost := range []string{before[3].Cursor, before[4].Cursor} {
					s := testutil.OpenSSE(t, base, "/orders/events", map[string]string{"Last-Event-ID": lost})
					if m, ok := s.Next(3 * time.Second); !ok || m.Event != store.ActionReset || !m.HasID {
						t.Errorf("%s, Last-Event-ID %s of an event Redis lost: %s (%v), want a reset", base, lost, m, ok)
					}
					s.Close()
				}
				kept := before[1].Cursor
				s := testutil.OpenSSE(t, base, "/orders/events", map[string]string{"Last-Event-ID": kept})
				got := s.WaitEvents(t, 2, 3*time.Second)
				if d := sameEvents(got, after[2:]); d != "" {
					t.Errorf("%s, Last-Event-ID %s of an event Redis kept: %s", base, kept, d)
				}
				s.Close()
			}
			if !f.until(10*time.Second, hasCursor(after[3].Cursor)) {
				t.Errorf("the follower did not get the newest event (%d events, %d resets, %d opens)", len(f.events()), f.resets, f.opens)
			}
			if f.resets == resets {
				t.Errorf("the follower was not reset: events %v", f.events()[len(before):])
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestEventsReplayOutrun: a client that takes its replay slowly while the
// stream moves on by more than it keeps (MAXLEN ~ 10,000) between two of
// the replay's batches gets a reset, never a silent gap.
func TestEventsReplayOutrun(t *testing.T) {
	var tg testutil.Target
	for _, tg = range testutil.Targets(t) {
		if tg.Name == "redis" {
			break // miniredis takes minutes over 12,000 events of which 600 are big
		}
	}
	if tg.Name != "redis" {
		testutil.Skip(t, testutil.NoRealRedis)
	}
	rc := tg.Client
	st := testutil.NewStore(t, tg)
	l := serveLive(t, "outrun", st)
	ctx := context.Background()
	var ids []string // every event added, in order
	add := func(n int, pad string) {
		t.Helper()
		for i := 0; i < n; i += 500 {
			p := rc.Pipeline()
			var cmds []*redis.StringCmd
			for j := i; j < min(n, i+500); j++ {
				cmds = append(cmds, p.XAdd(ctx, &redis.XAddArgs{Stream: tg.Prefix + "o:events", MaxLen: store.EventsKept, Approx: true,
					Values: []any{"a", "updated", "d", fmt.Sprintf(`{"id":1,"version":%d,"pad":"%s"}`, len(ids)+j-i, pad)}}))
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for _, c := range cmds {
				ids = append(ids, c.Val())
			}
		}
	}
	// Big events, so that the first batch of the replay blocks on a
	// client that does not read.
	add(600, strings.Repeat("x", 12000))
	conn := rawStream(t, l.addr, 4096, "Last-Event-ID: "+ids[0])
	time.Sleep(500 * time.Millisecond)
	add(store.EventsKept+1500, "")
	if oldest := testutil.Events(t, st.Feed(store.OrderEvents), "0-0")[0].Cursor; !redisstore.After(oldest, ids[600]) {
		t.Fatalf("the stream still holds event 600 (its oldest is %s)", oldest)
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 20) // now it reads, and fast
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := testutil.ReadSSE("the outrun stream", resp, func() { conn.Close() })
	at := map[string]int{}
	for i, id := range ids {
		at[id] = i
	}
	prev := 0 // ids[0] is the cursor it sent
	n := 0
	for {
		m, ok := s.Next(3 * time.Second)
		if !ok {
			break
		}
		n++
		if m.Event == store.ActionReset {
			t.Logf("a reset after %d events (at %d of %d)", n-1, prev, len(ids))
			return
		}
		i, known := at[m.ID]
		if !known || i != prev+1 {
			t.Fatalf("after event %d (%s) came %s, event %d: a gap of %d events with no reset", prev, ids[prev], m.ID, i, i-prev-1)
		}
		prev = i
	}
	t.Logf("the stream ended after %d events, at %d of %d, with no gap", n, prev, len(ids))
}
