package routes

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// LogSummary is a slog.Handler that keeps an outage from flooding the log:
// a warning or an error of one kind (the same level and message) is
// written in full the first time, and its repeats within the interval that
// follows are only counted; at the end of the interval one line says how
// many there were, with the attributes of the last one under "last" and
// the client addresses the repeats named (a "client" attribute: a
// refused sign-in names its address even when summarised). While
// they go on, one such line per interval; an interval with none ends the
// summary, and the next one is written in full again. Lines below WARN,
// and the one line per request (the access log), pass through untouched.
type LogSummary struct {
	next slog.Handler
	s    *summaries
}

// summaries is the state every handler derived from one LogSummary
// (WithAttrs, WithGroup) shares.
type summaries struct {
	mu     sync.Mutex
	every  time.Duration
	kinds  map[summaryKey]*summary
	closed bool
}

type summaryKey struct {
	level slog.Level
	msg   string
}

// summary is one kind's interval under way: the repeats counted, and the
// last of them with the handler it came through.
type summary struct {
	n     int
	last  slog.Record
	h     slog.Handler
	timer *time.Timer
	// clients are the distinct client addresses the repeats named, the
	// first maxClients of them; unlisted counts the repeats of others.
	clients  []string
	unlisted int
}

// maxClients is how many client addresses a summary line lists.
const maxClients = 32

// maxSummaries bounds the kinds followed at once; past it a line is
// written as it is (messages are fixed strings in the code: a handful).
const maxSummaries = 256

// NewLogSummary wraps next so that repeated warnings and errors are
// summarised once per every (10 s when 0).
func NewLogSummary(next slog.Handler, every time.Duration) *LogSummary {
	if every <= 0 {
		every = 10 * time.Second
	}
	return &LogSummary{next: next, s: &summaries{every: every, kinds: map[summaryKey]*summary{}}}
}

// everyLineKey marks a context whose log line is always written (the
// access log: one line per request, by contract).
type everyLineKey struct{}

// everyLine returns ctx marked so that LogSummary writes its line whatever
// came before.
func everyLine(ctx context.Context) context.Context {
	return context.WithValue(ctx, everyLineKey{}, true)
}

// Enabled reports whether next writes records of level.
func (h *LogSummary) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle writes r, or counts it when one of its kind was written within
// the interval.
func (h *LogSummary) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || ctx.Value(everyLineKey{}) != nil {
		return h.next.Handle(ctx, r)
	}
	s, k := h.s, summaryKey{r.Level, r.Message}
	s.mu.Lock()
	if sm := s.kinds[k]; sm != nil {
		sm.n++
		sm.last, sm.h = r.Clone(), h.next
		sm.addClient(r)
		s.mu.Unlock()
		return nil
	}
	if !s.closed && len(s.kinds) < maxSummaries {
		sm := &summary{}
		sm.timer = time.AfterFunc(s.every, func() { s.flush(k, false) })
		s.kinds[k] = sm
	}
	s.mu.Unlock()
	return h.next.Handle(ctx, r)
}

// flush writes kind k's summary when it had repeats, and ends it (at
// once when final) or starts its next interval.
func (s *summaries) flush(k summaryKey, final bool) {
	s.mu.Lock()
	sm := s.kinds[k]
	if sm == nil {
		s.mu.Unlock()
		return
	}
	n, last, h, clients, unlisted := sm.n, sm.last, sm.h, sm.clients, sm.unlisted
	if n == 0 || final {
		sm.timer.Stop()
		delete(s.kinds, k)
	} else {
		sm.n, sm.clients, sm.unlisted = 0, nil, 0
		sm.timer.Reset(s.every)
	}
	s.mu.Unlock()
	if n == 0 {
		return
	}
	out := slog.NewRecord(time.Now(), last.Level, last.Message, 0)
	out.AddAttrs(slog.Int("repeated", n), slog.Duration("in_last", s.every))
	if len(clients) > 0 {
		out.AddAttrs(slog.String("clients", strings.Join(clients, " ")))
		if unlisted > 0 {
			out.AddAttrs(slog.Int("from_other_clients", unlisted))
		}
	}
	attrs := make([]any, 0, last.NumAttrs())
	last.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	out.AddAttrs(slog.Group("last", attrs...))
	_ = h.Handle(context.Background(), out)
}

// addClient notes the client address r names, if any.
func (sm *summary) addClient(r slog.Record) {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "client" {
			return true
		}
		c := a.Value.String()
		switch {
		case slices.Contains(sm.clients, c):
		case len(sm.clients) < maxClients:
			sm.clients = append(sm.clients, c)
		default:
			sm.unlisted++
		}
		return false
	})
}

// Flush writes every summary under way and stops summarising: what is
// logged after it is written as it is. For the end of the process, so
// that the repeats of its last seconds are not lost.
func (h *LogSummary) Flush() {
	s := h.s
	s.mu.Lock()
	s.closed = true
	keys := make([]summaryKey, 0, len(s.kinds))
	for k := range s.kinds {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.flush(k, true)
	}
}

// WithAttrs returns a handler with attrs that shares h's summaries.
func (h *LogSummary) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogSummary{next: h.next.WithAttrs(attrs), s: h.s}
}

// WithGroup returns a handler with a group that shares h's summaries.
func (h *LogSummary) WithGroup(name string) slog.Handler {
	return &LogSummary{next: h.next.WithGroup(name), s: h.s}
}
