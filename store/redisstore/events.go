package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Live updates: every change of a record is also an event in
// its resource's event stream, a Redis stream (o:events, p:{p}:events), so
// that every app instance sharing the Redis sees every change, and a
// client that reconnects gets what it missed from Redis itself.
//
// Where the record's transaction can hold the stream (a single Redis, the
// embedded one, and a kind kept in one Cluster slot: products), the XADD is
// part of the record's MULTI: an event for exactly every change. Orders on
// a Cluster spread over every slot and the stream lives in one: there the
// writer adds the event after its transaction and its settle, before it
// deletes its intent; a writer that could not (a crash, a timeout) leaves
// its intent, and the reconciler that settles it adds the event of the
// record as it then is. So every change is an event at least once; a
// repeated event names a version the reader has already seen.
//
// Each instance follows a stream with one reader (a Feed), whatever the
// number of clients: one blocking XREAD at a time, its events handed to
// every Subscription, each with a bounded buffer. A subscriber that falls
// behind is dropped, and its client reconnects with the last event it got
// (Last-Event-ID), which Replay serves from Redis.
//
// Redis can forget: a restore from an older backup, a failover to a
// replica that had not received the newest writes, a wipe. The stream then
// goes back to an older state and the ids it hands out next may be ones
// it handed out before, for other events. So a cursor names one exact
// entry: its id and a random token written in the entry (field t). A
// cursor is served only while the stream holds that very entry; any other
// answer (gone, or the id now holds an entry with another token) is a
// reset. Every instance reads the same entry, so every instance decides
// the same way, with nothing kept in memory.

// publishAfter adds the event of a change whose transaction could not hold
// it (a sharded kind), even past ctx's end: the write happened. Added
// after the transaction, it may land after the event of a later change (a
// delete by another instance between the two): the record is read again
// after it, and when it has moved on, its current state is added too, so
// the stream's last word on a record is always right.
func publishAfter[T any](ctx context.Context, s *Store, k *kind[T], id int64, cur, next *T, restored bool) error {
	action, data := changeEvent(k, cur, next, restored)
	if action == "" {
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := queueEvent(pctx, s.rdb, k.eventsKey(s), action, data).Err(); err != nil {
		return err
	}
	want := ""
	if next != nil {
		want = strconv.FormatInt(k.version(next), 10)
	}
	now, err := s.rdb.HGet(pctx, k.key(s, id), k.versionField).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if now == want {
		return nil
	}
	return k.publishCurrent(pctx, s, id)
}

// publishCurrent adds the event of record id as it is now, for the
// reconciler, which settles a write whose writer may not have added its
// event: created or updated from the record, deleted (with the version
// the history's newest entry names) when it is gone. It reads the version
// again after adding it and goes round while the record moves on: a
// change that lands between the read and the XADD must not leave the
// stream's last word on the record stale (its own event may come first).
func (k *kind[T]) publishCurrent(ctx context.Context, s *Store, id int64) error {
	if k.event == nil || !k.sharded(s) {
		return nil
	}
	key := k.key(s, id)
	for range 5 {
		h, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if err := k.publishState(ctx, s, id, h); err != nil {
			return err
		}
		now, err := s.rdb.HGet(ctx, key, k.versionField).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if now == h[k.versionField] {
			return nil
		}
	}
	return errors.New("the record kept changing while its event was added")
}

// publishState adds the event of record id as h holds it.
func (k *kind[T]) publishState(ctx context.Context, s *Store, id int64, h map[string]string) error {
	if cur, ok := k.decode(id, h); ok {
		action := store.ActionUpdated
		if k.version(cur) == 1 {
			action = store.ActionCreated
		} else if restoredAt(ctx, s, k.key(s, id), k.version(cur)) {
			action = store.ActionRestored
		}
		return queueEvent(ctx, s.rdb, k.eventsKey(s), action, k.event(cur)).Err()
	}
	if len(h) > 0 {
		return nil // damaged: nothing to tell
	}
	last, err := s.rdb.ZRevRange(ctx, historyKey(k.key(s, id)), 0, 0).Result()
	if err != nil || len(last) == 0 {
		return err
	}
	e, ok := decodeEntry(last[0])
	if !ok || e.Action != store.ActionDeleted {
		return nil
	}
	data, _ := json.Marshal(struct {
		ID      int64 `json:"id"`
		Version int64 `json:"version"`
	}{id, e.Version})
	return queueEvent(ctx, s.rdb, k.eventsKey(s), store.ActionDeleted, data).Err()
}

// eventsKey is the stream of a Feed name: the name of a registered kind.
func (s *Store) eventsKey(name string) (string, bool) {
	k, ok := kinds[name]
	if !ok {
		return "", false
	}
	return k.eventsKey(s), true
}

// cursor is a place in a stream: an entry's id, "<ms>-<seq>", as numbers
// to compare, and the entry's token. The zero cursor, 0-0, is the
// stream's start. The token is empty for an entry written before entries
// had tokens: such a cursor matches only such an entry.
type cursor struct {
	ms, seq uint64
	token   string
}

// maxToken is the longest token a cursor may carry (eventToken's are 13
// characters at most).
const maxToken = 16

// parseCursor reads a cursor as String writes it: "<ms>-<seq>" or
// "<ms>-<seq>.<token>", the token lower-case letters and digits.
func parseCursor(s string) (cursor, bool) {
	id, token, dotted := strings.Cut(s, ".")
	a, b, ok := strings.Cut(id, "-")
	if !ok || len(id) > 41 || dotted && !validToken(token) {
		return cursor{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return cursor{ms, seq, token}, err1 == nil && err2 == nil
}

// validToken reports whether t may be a token: what eventToken makes, or
// a little longer.
func validToken(t string) bool {
	if t == "" || len(t) > maxToken {
		return false
	}
	for _, r := range t {
		if (r < '0' || r > '9') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}

// entryCursor is the cursor of stream entry m.
func entryCursor(m redis.XMessage) (cursor, bool) {
	c, ok := parseCursor(m.ID)
	if !ok || c.token != "" {
		return cursor{}, false
	}
	c.token, _ = m.Values["t"].(string)
	return c, true
}

// less orders cursors by their place in the stream (tokens aside).
func (c cursor) less(d cursor) bool { return c.ms < d.ms || c.ms == d.ms && c.seq < d.seq }

// id is the stream entry id, for XREAD and XRANGE.
func (c cursor) id() string {
	return strconv.FormatUint(c.ms, 10) + "-" + strconv.FormatUint(c.seq, 10)
}

// String is the cursor as clients get it.
func (c cursor) String() string {
	if c.token == "" {
		return c.id()
	}
	return c.id() + "." + c.token
}

// holds reports whether entries, the answer to an XRANGE of c's id, are
// the very entry c names.
func (c cursor) holds(entries []redis.XMessage) bool {
	if len(entries) == 0 {
		return false
	}
	e, ok := entryCursor(entries[0])
	return ok && e == c
}

func toEvent(m redis.XMessage) store.Event {
	c, _ := entryCursor(m)
	e := store.Event{Cursor: c.String()}
	e.Action, _ = m.Values["a"].(string)
	d, _ := m.Values["d"].(string)
	e.Data = json.RawMessage(d)
	return e
}

// Feed follows one event stream for this instance and hands its events
// to its subscriptions.
type Feed struct {
	s    *Store
	name string
	key  string
	// Buffer is each subscription's buffer: a subscriber further behind is
	// dropped (its channel closed with Behind set).
	buffer int

	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	running bool
	last    cursor // the newest event handed out (or the stream's newest when the reader started)
}

// Subscription receives a feed's events from its start on, in stream
// order, until Close; C is closed when the subscriber fell behind (Behind)
// or the feed lost its place in the stream (Reset: events may be missing).
type Subscription struct {
	C     <-chan store.Event
	c     chan store.Event
	f     *Feed
	start cursor
	// Behind: the buffer filled up; Reset: the reader missed events.
	behind, reset bool
}

// Events are the subscription's events (C).
func (sub *Subscription) Events() <-chan store.Event { return sub.C }

// Start is the cursor after which the subscription's events come.
func (sub *Subscription) Start() string { return sub.start.String() }

// Behind reports whether the subscription was dropped for falling behind.
func (sub *Subscription) Behind() bool {
	sub.f.mu.Lock()
	defer sub.f.mu.Unlock()
	return sub.behind
}

// Reset reports whether the subscription was dropped because the feed
// may have missed events (the stream was trimmed past it during an
// outage, or Redis forgot the events it had handed on).
func (sub *Subscription) Reset() bool {
	sub.f.mu.Lock()
	defer sub.f.mu.Unlock()
	return sub.reset
}

// Close ends the subscription.
func (sub *Subscription) Close() {
	f := sub.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[sub]; ok {
		delete(f.subs, sub)
		close(sub.c)
	}
}

// Feed returns this store's feed of a stream (OrderEvents, ProductEvents);
// nil for an unknown name.
func (s *Store) Feed(name string) store.Feed {
	key, ok := s.eventsKey(name)
	if !ok {
		return nil
	}
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	if s.feeds == nil {
		s.feeds = map[string]*Feed{}
	}
	f := s.feeds[name]
	if f == nil {
		f = &Feed{s: s, name: name, key: key, buffer: store.SubscriptionBuffer, subs: map[*Subscription]struct{}{}}
		s.feeds[name] = f
	}
	return f
}

// Name is the feed's name (OrderEvents, ProductEvents).
func (f *Feed) Name() string { return f.name }

// Subscribers is the number of open subscriptions.
func (f *Feed) Subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// Subscribe opens a subscription: the events after Start. The feed's
// reader starts with the first subscription (reading the stream's newest
// event, which may fail: EUNAVAILABLE) and stops a little after the last
// one closes.
func (f *Feed) Subscribe(ctx context.Context) (store.Subscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		newest, err := f.newest(ctx)
		if err != nil {
			return nil, wrap(err)
		}
		f.last, f.running = newest, true
		go f.read()
	}
	c := make(chan store.Event, f.buffer)
	sub := &Subscription{C: c, c: c, f: f, start: f.last}
	f.subs[sub] = struct{}{}
	return sub, nil
}

// Newest is the stream's newest cursor ("0-0" when it is empty): a page
// rendered now connects with it (?after=), so a change made between the
// render and the connection is replayed, not missed.
func (f *Feed) Newest(ctx context.Context) (string, error) {
	c, err := f.newest(ctx)
	if err != nil {
		return "", wrap(err)
	}
	return c.String(), nil
}

// newest is the stream's newest cursor (0-0 when it is empty).
func (f *Feed) newest(ctx context.Context) (cursor, error) {
	ms, err := f.s.rdb.XRevRangeN(ctx, f.key, "+", "-", 1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return cursor{}, err
	}
	if len(ms) == 0 {
		return cursor{}, nil
	}
	c, _ := entryCursor(ms[0])
	return c, nil
}

// readBatch is the most events one XREAD of the feed's reader takes: well
// under SubscriptionBuffer, so one read of a burst never fills the buffer
// of a subscriber that was keeping up.
const readBatch = store.SubscriptionBuffer / 2

// readBlock is how long one XREAD of the feed's reader waits for events.
const readBlock = time.Second

// read is the feed's reader: XREAD from its last cursor, blocking up to
// readBlock, handing every event to every subscription, until no one is
// subscribed. After a failed read, and before handing on what a read
// brought, it checks that the stream still holds its place: when it does
// not (trimmed past a reader that fell behind, a Redis that came back
// empty, perhaps through a connection its client opened again without an
// error, a FLUSHALL, a restore from an older backup, a failover that lost
// the newest events, and then maybe its id reused for another event),
// events may be missing, and every subscription is dropped with Reset.
func (f *Feed) read() {
	ctx := context.Background()
	failed := false
	pause := 50 * time.Millisecond
	for {
		f.mu.Lock()
		if len(f.subs) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		from := f.last
		f.mu.Unlock()
		if failed {
			if lost, err := f.gone(ctx, from); err == nil {
				failed = false
				pause = 50 * time.Millisecond
				if lost {
					f.resetAll()
					continue
				}
			} else {
				time.Sleep(pause)
				pause = min(2*pause, 2*time.Second)
				continue
			}
		}
		rctx, cancel := context.WithTimeout(ctx, readBlock+2*time.Second)
		res, err := f.s.rdb.XRead(rctx, &redis.XReadArgs{Streams: []string{f.key, from.id()}, Count: readBatch, Block: readBlock}).Result()
		cancel()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			failed = true
			time.Sleep(pause)
			pause = min(2*pause, 2*time.Second)
			continue
		}
		if lost, err := f.gone(ctx, from); err != nil || lost {
			failed = err != nil // the events are read again
			if lost {
				f.resetAll()
			}
			continue
		}
		for _, st := range res {
			for _, m := range st.Messages {
				f.hand(m)
			}
		}
	}
}

// hand gives one event to every subscription, dropping those whose
// buffer is full.
func (f *Feed) hand(m redis.XMessage) {
	c, ok := entryCursor(m)
	if !ok {
		return
	}
	e := toEvent(m)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.last.less(c) {
		return
	}
	f.last = c
	for sub := range f.subs {
		select {
		case sub.c <- e:
		default:
			sub.behind = true
			delete(f.subs, sub)
			close(sub.c)
		}
	}
}

// resetAll drops every subscription with Reset and starts the feed again
// from the stream's newest event.
func (f *Feed) resetAll() {
	newest, err := f.newest(context.Background())
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		f.last = newest
	}
	for sub := range f.subs {
		sub.reset = true
		delete(f.subs, sub)
		close(sub.c)
	}
}

// gone reports whether the stream no longer holds event c, the feed's
// place: no entry with its id, or one with another token (a cursor before
// any event has nothing to lose).
func (f *Feed) gone(ctx context.Context, c cursor) (bool, error) {
	if c == (cursor{}) {
		return false, nil
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	ms, err := f.s.rdb.XRangeN(rctx, f.key, c.id(), c.id(), 1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	return !c.holds(ms), nil
}

// Replay returns the events after cursor after, at most ReplayBatch of
// them, oldest first (none: the client is up to date). check asks that
// the cursor be verified too: ErrCursorGone unless the stream still holds
// the very event the cursor names (its id and its token); 0-0, the
// stream's start, is served until the stream may have been trimmed. The
// events are read first and the cursor checked after, in one round trip:
// an entry leaves a stream only with those before it (trimmed) or with
// those after it (a Redis that forgot), so an event still held after the
// read was held during it, and the events read follow it with no gap.
func (f *Feed) Replay(ctx context.Context, after string, check bool) ([]store.Event, error) {
	c, ok := parseCursor(after)
	if !ok {
		return nil, store.ErrCursorGone
	}
	start := c == (cursor{})
	var rc *redis.XStreamSliceCmd
	var ec *redis.XMessageSliceCmd
	var lc *redis.IntCmd
	_, err := f.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rc = p.XRead(ctx, &redis.XReadArgs{Streams: []string{f.key, c.id()}, Count: store.ReplayBatch, Block: -1})
		switch {
		case check && start:
			lc = p.XLen(ctx, f.key)
		case check:
			ec = p.XRangeN(ctx, f.key, c.id(), c.id(), 1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	switch {
	case check && start:
		// 0-0 is the start of a stream (Newest of an empty one: a page
		// rendered before the first event): every event after it is kept
		// until the stream is first trimmed, which MAXLEN does only once it
		// holds EventsKept.
		if lc.Val() >= store.EventsKept {
			return nil, store.ErrCursorGone
		}
	case check:
		if !c.holds(ec.Val()) {
			return nil, store.ErrCursorGone
		}
	}
	var out []store.Event
	for _, st := range rc.Val() {
		for _, m := range st.Messages {
			out = append(out, toEvent(m))
		}
	}
	return out, nil
}

// After reports whether cursor a comes after cursor b in f's stream
// (After).
func (f *Feed) After(a, b string) bool { return After(a, b) }

// After reports whether cursor a comes after cursor b in a stream, by
// their places (tokens aside; a malformed one comes before everything).
func After(a, b string) bool {
	ca, oka := parseCursor(a)
	cb, okb := parseCursor(b)
	return oka && (!okb || cb.less(ca))
}

// restoredAt reports whether the newest history entry of the record at key
// is its restore at version: then its event says so (a page showing it as
// deleted shows it again).
func restoredAt(ctx context.Context, s *Store, key string, version int64) bool {
	last, err := s.rdb.ZRevRange(ctx, historyKey(key), 0, 0).Result()
	if err != nil || len(last) == 0 {
		return false
	}
	e, ok := decodeEntry(last[0])
	return ok && e.Action == store.ActionRestored && e.Version == version
}
