package testutil

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Events returns every event of feed's stream after cursor from, oldest
// first, read with the store's Replay in its batches (unchecked: "0-0" is
// the whole stream): what a subscriber open since from should have got.
func Events(t testing.TB, feed store.Feed, from string) []store.Event {
	t.Helper()
	var out []store.Event
	for {
		evs, err := feed.Replay(context.Background(), from, false)
		if err != nil {
			t.Fatalf("Replay(%s): %v", from, err)
		}
		out = append(out, evs...)
		if len(evs) < store.ReplayBatch {
			return out
		}
		from = evs[len(evs)-1].Cursor
	}
}

// SecondClient returns a client of its own to tg's Redis (a connection
// pool another application instance would have), closed when the test
// ends.
func SecondClient(t testing.TB, tg Target) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch b := tg.Client.(type) {
	case *redis.Client:
		c = redis.NewClient(&redis.Options{Addr: b.Options().Addr})
	case *redis.ClusterClient:
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.Options().Addrs})
	default:
		t.Fatalf("unknown client %T", b)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// SameCursors reports how got differs from want, by cursor ("" when not).
func SameCursors(got, want []store.Event) string {
	var g, w []string
	for _, e := range got {
		g = append(g, e.Cursor)
	}
	for _, e := range want {
		w = append(w, e.Cursor)
	}
	if strings.Join(g, " ") == strings.Join(w, " ") {
		return ""
	}
	return fmt.Sprintf("events %v, want %v", g, w)
}
