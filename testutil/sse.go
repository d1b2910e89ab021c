package testutil

// The routes and e2e tests' client of the live updates' event streams
// (text/event-stream): it reads a stream's body as it comes, as the format
// says, and keeps what it read.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// SSEEvent is one event a stream dispatched: its id: line (HasID; ID is
// empty when it had none), event: (message when it had none) and data:
// (the lines joined by \n), and when the reader dispatched it.
type SSEEvent struct {
	ID, Event, Data string
	HasID           bool
	At              time.Time
}

// String is the event as [id event data].
func (e SSEEvent) String() string { return fmt.Sprintf("[%s %s %s]", e.ID, e.Event, e.Data) }

// SSEComment is one comment line (": heartbeat") and when it was read.
type SSEComment struct {
	Text string
	At   time.Time
}

// SSE is one GET of an event stream, read by its own goroutine: field
// lines up to a blank line make an event, lines starting with a colon are
// comments, an event with no data line is not dispatched, an id with a NUL
// in it is ignored. A refused stream (any status but 200) keeps its body.
type SSE struct {
	Name string         // base+target, for messages
	Resp *http.Response // the answer; its body is the reader's

	close func()
	done  chan struct{} // closed once the reader has returned

	mu       sync.Mutex
	changed  chan struct{} // closed (and replaced) at each line and at the end
	events   []SSEEvent
	taken    int // the events Next returned
	comments []SSEComment
	retry    string
	lastID   string
	body     string
	ended    bool
	err      error // why it ended: nil for a clean end (EOF)
}

// sseTransport opens a connection of its own per stream, never compressed,
// and waits at most 10 s for an answer's head.
var sseTransport = &http.Transport{DisableCompression: true, DisableKeepAlives: true, ResponseHeaderTimeout: 10 * time.Second}

// OpenSSE GETs base+target as an event stream with the headers h (Accept:
// text/event-stream unless h says otherwise), closed when the test ends.
func OpenSSE(t testing.TB, base, target string, h map[string]string) *SSE {
	t.Helper()
	s, err := DialSSE(base, target, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// DialSSE is OpenSSE for any goroutine: the caller closes the stream. A
// 200 that is not text/event-stream is an error.
func DialSSE(base, target string, h map[string]string) (*SSE, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+target, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := sseTransport.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("GET %s: %w", base+target, err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode == http.StatusOK && !strings.HasPrefix(ct, "text/event-stream") {
		cancel()
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: Content-Type %q, want text/event-stream", base+target, ct)
	}
	return ReadSSE(base+target, resp, func() { cancel(); resp.Body.Close() }), nil
}

// ReadSSE reads resp, whose head was read by other means, as the stream
// name; Close calls end, which must end resp's body.
func ReadSSE(name string, resp *http.Response, end func()) *SSE {
	s := &SSE{Name: name, Resp: resp, close: end, done: make(chan struct{}), changed: make(chan struct{})}
	go s.read()
	return s
}

func (s *SSE) read() {
	defer close(s.done)
	var err error
	if s.Resp.StatusCode == http.StatusOK {
		err = s.parse()
	} else {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(s.Resp.Body, 64<<10))
		if err == nil {
			_, err = io.Copy(io.Discard, s.Resp.Body)
		}
		s.mu.Lock()
		s.body = string(b)
		s.mu.Unlock()
	}
	s.Resp.Body.Close()
	s.mu.Lock()
	s.ended, s.err = true, err
	s.changedNow()
	s.mu.Unlock()
}

// parse reads the body's lines until it ends; nil is a clean end.
func (s *SSE) parse() error {
	br := bufio.NewReader(s.Resp.Body)
	var id, event string
	var data []string
	hasID, hasData := false, false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			if line != "" {
				return fmt.Errorf("the stream ended inside a line: %q: %w", line, io.ErrUnexpectedEOF)
			}
			return nil
		}
		now := time.Now()
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		s.mu.Lock()
		switch {
		case line == "":
			if hasData {
				e := SSEEvent{Event: event, Data: strings.Join(data, "\n"), HasID: hasID, At: now}
				if hasID {
					e.ID = id
				}
				if e.Event == "" {
					e.Event = "message"
				}
				s.events = append(s.events, e)
			}
			event, data, hasID, hasData = "", nil, false, false
		case line[0] == ':':
			s.comments = append(s.comments, SSEComment{Text: strings.TrimPrefix(line[1:], " "), At: now})
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				if !strings.ContainsRune(value, 0) {
					id, hasID, s.lastID = value, true, value
				}
			case "event":
				event = value
			case "data":
				data, hasData = append(data, value), true
			case "retry":
				s.retry = value
			}
		}
		s.changedNow()
		s.mu.Unlock()
	}
}

// changedNow wakes the waiters; the caller holds s.mu.
func (s *SSE) changedNow() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait waits up to d until cond, called with s.mu held, holds (true), or
// the stream has ended without it (false).
func (s *SSE) wait(d time.Duration, cond func() bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ok, ended, changed := cond(), s.ended, s.changed
		s.mu.Unlock()
		if ok || ended {
			return ok
		}
		select {
		case <-changed:
		case <-timer.C:
			s.mu.Lock()
			defer s.mu.Unlock()
			return cond()
		}
	}
}

// Close ends the stream from the client's side and waits for its reader.
func (s *SSE) Close() {
	s.close()
	<-s.done
}

// Next returns the first event that Next has not returned yet; ok is
// false when the stream ended first, or none came within d.
func (s *SSE) Next(d time.Duration) (e SSEEvent, ok bool) {
	ok = s.wait(d, func() bool {
		if s.taken == len(s.events) {
			return false
		}
		e = s.events[s.taken]
		s.taken++
		return true
	})
	return e, ok
}

// Events is what the stream dispatched so far.
func (s *SSE) Events() []SSEEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Comments is the comment lines read so far.
func (s *SSE) Comments() []SSEComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.comments)
}

// Retry is the last retry: line read.
func (s *SSE) Retry() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retry
}

// LastID is the last id: line read (what a client sends as Last-Event-ID).
func (s *SSE) LastID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastID
}

// Body is a refused stream's body (its first 64 KiB), waiting up to 5 s
// for its end.
func (s *SSE) Body() string {
	s.WaitEnd(5 * time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body
}

// Ended reports whether the stream has ended, and why (nil: a clean end).
func (s *SSE) Ended() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended, s.err
}

// WaitEnd waits up to d for the stream to end, and says whether it did
// and why (nil: a clean end).
func (s *SSE) WaitEnd(d time.Duration) (bool, error) {
	s.wait(d, func() bool { return s.ended })
	return s.Ended()
}

// WaitOpen fails the test unless the stream is 200 and sends its first
// comment within 5 s (the server writes it once subscribed, with any
// replay in the same write), and checks that it said retry: 1000.
func (s *SSE) WaitOpen(t testing.TB) {
	t.Helper()
	if s.Resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s answered %d, want 200: %s", s.Name, s.Resp.StatusCode, Snippet(s.Body()))
	}
	if !s.wait(5*time.Second, func() bool { return len(s.comments) > 0 }) {
		t.Fatalf("GET %s: no first comment within 5 s", s.Name)
	}
	if s.wait(time.Second, func() bool { return s.retry != "" }); s.Retry() != "1000" {
		t.Errorf("GET %s: retry: %q, want 1000", s.Name, s.Retry())
	}
}

// WaitEvents waits up to d until the stream has dispatched n events, and
// returns its events.
func (s *SSE) WaitEvents(t testing.TB, n int, d time.Duration) []SSEEvent {
	t.Helper()
	if !s.wait(d, func() bool { return len(s.events) >= n }) {
		evs := s.Events()
		ended, err := s.Ended()
		t.Fatalf("GET %s: %d events within %v, want %d (ended %v, %v); the last: %v", s.Name, len(evs), d, n, ended, err, evs[max(0, len(evs)-3):])
	}
	return s.Events()
}
