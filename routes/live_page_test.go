package routes

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// connectRE finds where a page's event stream connects.
var connectRE = regexp.MustCompile(`hx-sse:connect="([^"]+)"`)

// pageStream is the stream URI a page connects to.
func pageStream(t *testing.T, l *liveApp, path string) string {
	t.Helper()
	r, err := http.Get(l.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	m := connectRE.FindSubmatch(b)
	if r.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, no hx-sse:connect in:\n%s", path, r.StatusCode, testutil.Snippet(string(b)))
	}
	return strings.ReplaceAll(string(m[1]), "&amp;", "&")
}

// TestPageStreamStartsWhereThePageWasRendered: a page's stream starts at
// the newest event when the page was rendered, so a change made between
// the render and the connection (the ~100–300 ms a browser takes) is
// replayed, not missed; on a store with no events yet, the page that
// connects before the first one is up to date.
func TestPageStreamStartsWhereThePageWasRendered(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			st := secondStore(t, tg)
			l := serveLive(t, "A", st)
			ctx := context.Background()

			// An empty store: 0-0, and nothing to replay yet.
			empty := pageStream(t, l, "/orders")
			if !strings.HasSuffix(empty, "?after=0-0") {
				t.Errorf("the List of an empty store connects to %s, want ?after=0-0", empty)
			}
			s := testutil.OpenSSE(t, l.base, empty, nil)
			if s.Resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", empty, s.Resp.Status)
			}
			if m, ok := s.Next(300 * time.Millisecond); ok {
				t.Errorf("a stream from 0-0 of an empty store said %s", m)
			}

			o, err := st.CreateOrder(ctx, store.OrderInput{Customer: ptr("Ada")})
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/orders", "/orders/inquiry", "/orders/new", orderResource.MemberPath(o.ID), orderResource.EditPath(o.ID), "/products"} {
				target := pageStream(t, l, path)
				// The change between the render and the connection.
				if strings.HasPrefix(path, "/products") {
					if _, err := st.CreateProduct(ctx, store.ProductInput{SKU: ptr("SKU-" + path[1:4] + time.Now().Format("150405.000000")), Name: ptr("Mug"), UnitPrice: ptr("1.00"), Active: ptr(true)}); err != nil {
						t.Fatal(err)
					}
				} else if _, err := st.UpdateOrder(ctx, o.ID, store.OrderInput{Customer: ptr("Ada " + path)}, 0); err != nil {
					t.Fatal(err)
				}
				s := testutil.OpenSSE(t, l.base, target, nil)
				m, ok := s.Next(3 * time.Second)
				if !ok || (m.Event != "updated" && m.Event != "created") {
					t.Errorf("%s: its stream %s said %v (%v), want the change made after the render", path, target, m, ok)
				}
				if m2, ok := s.Next(200 * time.Millisecond); ok {
					t.Errorf("%s: one event more: %s", path, m2)
				}
				s.Close()
			}
		})
	}
}
