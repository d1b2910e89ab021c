package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the summary timer's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) lines(t *testing.T) []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(w.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRepeatedWarningsAreSummarised: of 1,000 warnings of one kind, the
// first is written in full and the rest become one line with their count
// and the last one's attributes; information lines and access lines are
// all written; once an interval passes with none, the next is in full again.
func TestRepeatedWarningsAreSummarised(t *testing.T) {
	var out lockedBuffer
	h := NewLogSummary(slog.NewJSONHandler(&out, nil), 300*time.Millisecond)
	log := slog.New(h).With("component", "test")
	for i := range 1000 {
		log.Warn("redis unavailable", "request_id", i, "client", "10.0.0."+strconv.Itoa(i%3))
		log.Info("request", "n", i)
		log.LogAttrs(everyLine(context.Background()), slog.LevelError, "request", slog.Int("status", 503))
	}
	log.Error("something else", "request_id", 7)

	// full counts the lines written in full, repeated the repeats the
	// summaries counted (one summary, unless the machine stalled for an
	// interval), last is the last summary.
	count := func(msg, level string) (full, repeated int, last map[string]any) {
		for _, l := range out.lines(t) {
			if l["msg"] != msg || l["level"] != level {
				continue
			}
			if n, ok := l["repeated"].(float64); ok {
				repeated += int(n)
				last = l
			} else {
				full++
			}
		}
		return
	}
	if full, _, _ := count("request", "INFO"); full != 1000 {
		t.Errorf("%d information lines written, want all 1000", full)
	}
	if full, _, _ := count("request", "ERROR"); full != 1000 {
		t.Errorf("%d access lines at ERROR written, want all 1000", full)
	}
	if full, _, _ := count("something else", "ERROR"); full != 1 {
		t.Errorf("another kind: %d lines, want its own first line", full)
	}
	full, _, _ := count("redis unavailable", "WARN")
	if full != 1 {
		t.Fatalf("%d warnings written in full, want the first only", full)
	}
	// The summary comes at the end of the interval.
	deadline := time.Now().Add(5 * time.Second)
	var repeated int
	var last map[string]any
	for time.Now().Before(deadline) && repeated < 999 {
		time.Sleep(50 * time.Millisecond)
		_, repeated, last = count("redis unavailable", "WARN")
	}
	if repeated != 999 {
		t.Fatalf("the summaries after the interval count %d repeats, want 999:\n%s", repeated, out.b.String())
	}
	if last["component"] != "test" {
		t.Errorf("summary line %v: want the logger's attributes", last)
	}
	if last["clients"] != "10.0.0.1 10.0.0.2 10.0.0.0" {
		t.Errorf("summary line %v: want the client addresses the repeats named", last)
	}
	if g, _ := last["last"].(map[string]any); g == nil || g["request_id"] != 999.0 {
		t.Errorf("summary line %v: want the last one's attributes under last", last)
	}

	// An interval with no repeat ends the summary: the next is in full.
	time.Sleep(1500 * time.Millisecond)
	log.Warn("redis unavailable", "request_id", 1000)
	log.Warn("redis unavailable", "request_id", 1001)
	h.Flush()
	full, repeated, last = count("redis unavailable", "WARN")
	if full != 2 || repeated != 1000 || last["repeated"] != 1.0 {
		t.Errorf("after a quiet interval: %d in full, %d repeats (last summary %v); want 2 in full, and Flush's summary of 1", full, repeated, last)
	}
	// After Flush (the process ending), every line is written.
	log.Warn("redis unavailable", "request_id", 1002)
	if full, _, _ = count("redis unavailable", "WARN"); full != 3 {
		t.Errorf("after Flush: %d in full, want 3", full)
	}
}
