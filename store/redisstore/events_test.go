package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// eventData is what an event's data says.
type eventData struct {
	ID      int64  `json:"id"`
	Version int64  `json:"version"`
	Status  string `json:"status"`
	Active  *bool  `json:"active"`
}

func (d eventData) String() string {
	s := fmt.Sprintf("%d v%d", d.ID, d.Version)
	if d.Status != "" {
		s += " " + d.Status
	}
	if d.Active != nil {
		s += fmt.Sprintf(" active=%v", *d.Active)
	}
	return s
}

func describe(t *testing.T, e store.Event) string {
	t.Helper()
	var d eventData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("event %s %s: data %q is not JSON: %v", e.Cursor, e.Action, e.Data, err)
	}
	return e.Action + " " + d.String()
}

// next waits up to 3 s for a subscription's next event.
func next(t *testing.T, sub store.Subscription) store.Event {
	t.Helper()
	select {
	case e, ok := <-sub.Events():
		if !ok {
			t.Fatalf("the subscription ended (behind %v, reset %v)", sub.Behind(), sub.Reset())
		}
		return e
	case <-time.After(3 * time.Second):
		t.Fatal("no event within 3 s")
	}
	return store.Event{}
}

// TestEventsOfEveryWrite: every change of an order or a product is one
// event, in order, saying what happened and the version it made; a write
// that changes nothing, a refused one and a note are none; Replay gives
// the events after a cursor, and a cursor the stream never had is gone.
func TestEventsOfEveryWrite(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			feed := f.s.Feed(store.OrderEvents)
			sub, err := feed.Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			start := sub.Start()

			a := f.create(t, "Ada")
			b := f.create(t, "Bea")
			f.update(t, a.ID, store.OrderInput{Customer: ptr("Ada Lovelace")})
			f.update(t, a.ID, store.OrderInput{Customer: ptr("Ada Lovelace")}) // no change
			if _, err := f.s.UpdateOrder(ctx, a.ID, store.OrderInput{Customer: ptr("Stale")}, 1); err == nil {
				t.Fatal("a stale update was taken")
			}
			if _, err := f.s.UpdateOrder(ctx, a.ID, store.OrderInput{Status: ptr("nonsense")}, 0); err == nil {
				t.Fatal("a bad status was taken")
			}
			if _, err := f.s.AddOrderNote(ctx, a.ID, "a note"); err != nil {
				t.Fatal(err)
			}
			f.update(t, a.ID, store.OrderInput{Status: ptr("confirmed")})
			if err := f.s.DeleteOrder(ctx, b.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			want := []string{
				fmt.Sprintf("created %d v1 pending", a.ID),
				fmt.Sprintf("created %d v1 pending", b.ID),
				fmt.Sprintf("updated %d v2 pending", a.ID),
				fmt.Sprintf("updated %d v3 confirmed", a.ID),
				fmt.Sprintf("deleted %d v1 pending", b.ID),
			}
			var got []store.Event
			for range want {
				got = append(got, next(t, sub))
			}
			for i, e := range got {
				if d := describe(t, e); d != want[i] {
					t.Errorf("event %d: %s, want %s", i, d, want[i])
				}
				if i > 0 && !redisstore.After(e.Cursor, got[i-1].Cursor) {
					t.Errorf("event %d's cursor %s is not after %s", i, e.Cursor, got[i-1].Cursor)
				}
			}
			select {
			case e := <-sub.Events():
				t.Errorf("an event more: %s", describe(t, e))
			case <-time.After(300 * time.Millisecond):
			}

			// Replay: from the start, from the middle, from the end.
			for from, n := range map[string]int{start: 5, got[1].Cursor: 3, got[4].Cursor: 0} {
				evs, err := feed.Replay(ctx, from, from != start)
				if err != nil {
					t.Fatalf("Replay(%s): %v", from, err)
				}
				if len(evs) != n {
					t.Errorf("Replay(%s): %d events, want %d", from, len(evs), n)
				}
				for i, e := range evs {
					if w := got[len(got)-n+i]; e.Cursor != w.Cursor || e.Action != w.Action || string(e.Data) != string(w.Data) {
						t.Errorf("Replay(%s)[%d] = %+v, want %+v", from, i, e, w)
					}
				}
			}
			for _, bad := range []string{"garbage", "", "1-0", "99999999999999-0", "-1", "9" + got[4].Cursor} {
				if _, err := feed.Replay(ctx, bad, true); !errors.Is(err, store.ErrCursorGone) {
					t.Errorf("Replay(%q): %v, want ErrCursorGone", bad, err)
				}
			}

			// Products: the same, with active.
			pf, err := f.s.Feed(store.ProductEvents).Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			p, err := f.s.CreateProduct(ctx, store.ProductInput{SKU: ptr("MUG-1"), Name: ptr("Mug"), UnitPrice: ptr("3.50"), Currency: ptr("USD"), Active: ptr(true)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.UpdateProduct(ctx, p.ID, store.ProductInput{Active: ptr(false)}, 0); err != nil {
				t.Fatal(err)
			}
			if err := f.s.DeleteProduct(ctx, p.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{
				fmt.Sprintf("created %d v1 active=true", p.ID),
				fmt.Sprintf("updated %d v2 active=false", p.ID),
				fmt.Sprintf("deleted %d v2 active=false", p.ID),
			} {
				if d := describe(t, next(t, pf)); d != w {
					t.Errorf("product event %s, want %s", d, w)
				}
			}
		})
	}
}

// TestFeedDropsASubscriberThatFallsBehind: a subscriber that stops reading
// is cut off once its buffer is full (its client reconnects and replays),
// and the others get every event.
func TestFeedDropsASubscriberThatFallsBehind(t *testing.T) {
	f := fresh(t, testutil.Miniredis(t))
	ctx := context.Background()
	feed := f.s.Feed(store.OrderEvents)
	slow, err := feed.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := feed.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	n := store.SubscriptionBuffer + 50
	seen := make(chan int)
	go func() {
		c := 0
		for range fast.Events() {
			if c++; c == n {
				break
			}
		}
		seen <- c
	}()
	for i := range n {
		f.create(t, fmt.Sprint("C", i))
	}
	select {
	case c := <-seen:
		if c != n {
			t.Fatalf("the reading subscriber got %d events, want %d", c, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reading subscriber did not get every event")
	}
	got := 0
	for range slow.Events() {
		got++
	}
	if !slow.Behind() || got != store.SubscriptionBuffer {
		t.Errorf("the subscriber that did not read: behind %v after %d events, want dropped after %d", slow.Behind(), got, store.SubscriptionBuffer)
	}
	slow.Close() // closing again is harmless
	if s := feed.Subscribers(); s != 1 {
		t.Errorf("%d subscribers, want 1", s)
	}
}

// TestEventsAfterALostPublish: on a Cluster an order's event is added
// after its transaction; when that fails, the write still succeeds, its
// intent stays, and the reconciler adds the event of the order as it is.
func TestEventsAfterALostPublish(t *testing.T) {
	addrs := os.Getenv("ORDERS_TEST_CLUSTER")
	if addrs == "" {
		testutil.Skip(t, testutil.NoCluster)
	}
	var failXAdd atomic.Int64
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	cc.AddHook(xaddFailer{&failXAdd})
	t.Cleanup(func() { _ = cc.Close() })
	tg := testutil.Target{Name: "cluster", Client: cc, Prefix: fmt.Sprintf("test:lost%d:", time.Now().UnixNano()), Cluster: true}
	t.Cleanup(func() {
		_ = cc.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
			keys, _ := scanAll(ctx, n, tg.Prefix+"*")
			for _, k := range keys {
				n.Del(ctx, k)
			}
			return nil
		})
	})
	f := fresh(t, tg)
	ctx := context.Background()
	feed := f.s.Feed(store.OrderEvents)
	sub, err := feed.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	failXAdd.Store(1)
	o := f.create(t, "Lost Publish")
	select {
	case e := <-sub.Events():
		t.Fatalf("an event although its XADD failed: %s", describe(t, e))
	case <-time.After(300 * time.Millisecond):
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go f.s.Reconcile(rctx, 200*time.Millisecond)
	if d, w := describe(t, next(t, sub)), fmt.Sprintf("created %d v1 pending", o.ID); d != w {
		t.Errorf("the reconciler's event: %s, want %s", d, w)
	}
	// A delete whose event is lost: the reconciler tells it from the history.
	failXAdd.Store(1)
	if err := f.s.DeleteOrder(ctx, o.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	if d, w := describe(t, next(t, sub)), fmt.Sprintf("deleted %d v1", o.ID); d != w {
		t.Errorf("the reconciler's event: %s, want %s", d, w)
	}
}

// xaddFailer fails the next n XADDs with a timeout.
type xaddFailer struct{ n *atomic.Int64 }

func (xaddFailer) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h xaddFailer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "xadd" && h.n.Add(-1) >= 0 {
			cmd.SetErr(&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded})
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (xaddFailer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestReplayFromTheStart: 0-0, the cursor of a page rendered before a
// stream's first event, replays every event until the stream is first
// trimmed; then it is gone like any cursor older than the oldest kept.
func TestReplayFromTheStart(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			feed := f.s.Feed(store.OrderEvents)
			if c, err := feed.Newest(ctx); err != nil || c != "0-0" {
				t.Fatalf("Newest of an empty stream: %q, %v; want 0-0", c, err)
			}
			if evs, err := feed.Replay(ctx, "0-0", true); err != nil || len(evs) != 0 {
				t.Errorf("Replay(0-0) of an empty stream: %d events, %v; want none and no error", len(evs), err)
			}
			for i := range 3 {
				f.create(t, fmt.Sprint("Start ", i))
			}
			evs, err := feed.Replay(ctx, "0-0", true)
			if err != nil || len(evs) != 3 {
				t.Fatalf("Replay(0-0) of 3 events: %d, %v; want all 3", len(evs), err)
			}
			if c, _ := feed.Newest(ctx); c != evs[2].Cursor {
				t.Errorf("Newest: %s, want the third event's %s", c, evs[2].Cursor)
			}
			// Trimmed: as many more as the stream keeps, as the app adds them.
			key := f.prefix + "o:events"
			for n := 0; n < store.EventsKept+10; n += 1000 {
				_, err := tg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
					for range 1000 {
						p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: store.EventsKept, Approx: true, ID: "*", Values: []any{"a", "updated", "d", `{"id":1,"version":1,"status":"pending"}`}})
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := feed.Replay(ctx, "0-0", true); !errors.Is(err, store.ErrCursorGone) {
				t.Errorf("Replay(0-0) of a trimmed stream: %v, want ErrCursorGone", err)
			}
		})
	}
}

// snapshotStream copies a stream's entries (what a backup of it holds).
func snapshotStream(t *testing.T, c redis.Cmdable, key string) []redis.XMessage {
	t.Helper()
	ms, err := c.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// restoreStream puts a stream back as a snapshot had it, entries and ids:
// what a Redis restored from a backup, or a replica promoted before it
// got the newest events, holds.
func restoreStream(t *testing.T, c redis.Cmdable, key string, snap []redis.XMessage) {
	t.Helper()
	ctx := context.Background()
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range snap {
		var vals []any
		for k, v := range m.Values {
			vals = append(vals, k, v)
		}
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: m.ID, Values: vals}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplayResetsACursorRedisForgot: Redis goes back to an older copy of
// the stream (a restore from a backup, a failover to a replica that had
// not got the newest events). A cursor of an event it no longer has is
// gone, whether the stream has nothing newer yet or has new events past
// it; a cursor of an event it still has replays exactly what follows.
func TestReplayResetsACursorRedisForgot(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			feed := f.s.Feed(store.OrderEvents)
			key := f.prefix + "o:events"
			f.create(t, "Kept 1")
			f.create(t, "Kept 2")
			snap := snapshotStream(t, tg.Client, key)
			a := f.create(t, "Lost 1")
			f.update(t, a.ID, store.OrderInput{Customer: ptr("Lost 1, renamed")})
			f.create(t, "Lost 2")
			before := testutil.Events(t, feed, "0-0")
			if len(before) != 5 {
				t.Fatalf("%d events, want 5", len(before))
			}
			kept, lost, newest := before[0].Cursor, before[3].Cursor, before[4].Cursor

			restoreStream(t, tg.Client, key, snap)
			// Nothing newer yet: the lost cursors are past the stream's end.
			for _, c := range []string{lost, newest} {
				if evs, err := feed.Replay(ctx, c, true); !errors.Is(err, store.ErrCursorGone) {
					t.Errorf("Replay(%s) of an event past the restored stream's end: %d events, %v; want ErrCursorGone", c, len(evs), err)
				}
			}
			// New events, with ids past the lost ones.
			f.create(t, "After 1")
			f.create(t, "After 2")
			after := testutil.Events(t, feed, "0-0")
			for _, c := range []string{lost, newest} {
				if evs, err := feed.Replay(ctx, c, true); !errors.Is(err, store.ErrCursorGone) {
					t.Errorf("Replay(%s) of an event the restored stream lost: %d events (%v), %v; want ErrCursorGone", c, len(evs), testutil.SameCursors(evs, nil), err)
				}
			}
			evs, err := feed.Replay(ctx, kept, true)
			if err != nil {
				t.Fatalf("Replay(%s) of an event the restored stream has: %v", kept, err)
			}
			if d := testutil.SameCursors(evs, after[1:]); d != "" {
				t.Errorf("Replay(%s) of an event the restored stream has: %s", kept, d)
			}
		})
	}
}

// TestEventsResetWhenAnIDIsReused: a Redis that came back empty, or went
// back in time, may give a new event the id of one a client saw. Neither
// the feed nor a replay takes it for the event the client saw: the
// subscription is reset, and the old cursor is gone.
func TestEventsResetWhenAnIDIsReused(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.SetTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) // XADD * ids from a clock that stands still
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	f := fresh(t, testutil.Target{Name: "miniredis", Client: c})
	ctx := context.Background()
	feed := f.s.Feed(store.OrderEvents)
	sub, err := feed.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range 3 {
		f.create(t, fmt.Sprint("Before ", i))
	}
	var seen []store.Event
	for range 3 {
		seen = append(seen, next(t, sub))
	}

	mr.FlushAll()
	for i := range 4 {
		f.create(t, fmt.Sprint("After ", i))
	}
	now := testutil.Events(t, feed, "0-0")
	if len(now) != 4 {
		t.Fatalf("%d events after the wipe, want 4", len(now))
	}
	ids := func(c string) string { id, _, _ := strings.Cut(c, "."); return id }
	if ids(now[1].Cursor) != ids(seen[1].Cursor) {
		t.Fatalf("the test needs reused ids: %s before, %s after", seen[1].Cursor, now[1].Cursor)
	}

	select {
	case e, ok := <-sub.Events():
		if ok {
			t.Errorf("the subscription got %s %s after the stream's ids were reused, want a reset", e.Cursor, describe(t, e))
		} else if !sub.Reset() {
			t.Errorf("the subscription ended without a reset (behind %v)", sub.Behind())
		}
	case <-time.After(5 * time.Second):
		t.Error("the subscription neither ended nor got an event within 5 s")
	}
	for _, e := range seen[1:] {
		if evs, err := feed.Replay(ctx, e.Cursor, true); !errors.Is(err, store.ErrCursorGone) {
			t.Errorf("Replay(%s) whose id now names another event: %d events (%s), %v; want ErrCursorGone", e.Cursor, len(evs), testutil.SameCursors(evs, nil), err)
		}
	}
	evs, err := feed.Replay(ctx, now[1].Cursor, true)
	if err != nil {
		t.Fatalf("Replay(%s) of the new event: %v", now[1].Cursor, err)
	}
	if d := testutil.SameCursors(evs, now[2:]); d != "" {
		t.Errorf("Replay(%s) of the new event: %s", now[1].Cursor, d)
	}
}

// TestReplayOfACursorWithoutToken: an event written before cursors named
// their entry's token keeps its plain id as cursor, which replays while
// the stream holds it; a plain id given for an event that has a token is
// gone.
func TestReplayOfACursorWithoutToken(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			feed := f.s.Feed(store.OrderEvents)
			key := f.prefix + "o:events"
			old, err := tg.Client.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "*", Values: []any{"a", "created", "d", `{"id":1,"version":1,"status":"pending"}`}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			f.create(t, "With a token")
			f.create(t, "With a token too")
			all := testutil.Events(t, feed, "0-0")
			if len(all) != 3 || all[0].Cursor != old {
				t.Fatalf("events %v, want the old one's cursor %s first", testutil.SameCursors(all, nil), old)
			}
			evs, err := feed.Replay(ctx, old, true)
			if err != nil {
				t.Fatalf("Replay(%s) of an event without a token: %v", old, err)
			}
			if d := testutil.SameCursors(evs, all[1:]); d != "" {
				t.Errorf("Replay(%s): %s", old, d)
			}
			plain, _, _ := strings.Cut(all[1].Cursor, ".")
			if plain == all[1].Cursor {
				t.Fatalf("cursor %s has no token", all[1].Cursor)
			}
			for _, c := range []string{plain, plain + ".0", plain + ".zz", all[1].Cursor + "0"} {
				if evs, err := feed.Replay(ctx, c, true); !errors.Is(err, store.ErrCursorGone) {
					t.Errorf("Replay(%s) of an event whose token is %s: %d events, %v; want ErrCursorGone", c, all[1].Cursor, len(evs), err)
				}
			}
		})
	}
}
