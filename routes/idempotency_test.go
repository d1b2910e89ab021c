package routes

import (
	"net/http"
	"orders/testutil"
	"strings"
	"sync"
	"testing"
)

// TestIdempotencyKey: a client that retries POST /orders with the same
// Idempotency-Key and body (after a 503, a timeout, a lost connection) gets
// the first request's order and status and never a second order; the same
// key with another body is 422; a malformed key is 400.
func TestIdempotencyKey(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		order := map[string]any{"customer": "Ada Lovelace", "items": []any{item("Mug", 2, "3.25")}}
		key := testutil.H{"Idempotency-Key": "create-ada-7f3c"}
		first := a.do(t, http.MethodPost, "/orders", testutil.JSON(order), testutil.HJSON.With(key)).WantStatus(t, http.StatusCreated)
		var o1, o2 orderJSON
		first.JSON(t, &o1)
		again := a.do(t, http.MethodPost, "/orders", testutil.JSON(order), testutil.HJSON.With(key)).WantStatus(t, http.StatusCreated)
		again.JSON(t, &o2)
		if o2.ID != o1.ID || again.Header.Get("Location") != first.Header.Get("Location") {
			t.Errorf("retry: got order %d at %q, want order %d at %q", o2.ID, again.Header.Get("Location"), o1.ID, first.Header.Get("Location"))
		}
		if n := a.count(t); n != 1 {
			t.Errorf("after a retry with the same key: %d orders, want 1", n)
		}

		// The same key with another body is refused and creates nothing.
		other := map[string]any{"customer": "Alan Turing"}
		r := a.do(t, http.MethodPost, "/orders", testutil.JSON(other), testutil.HJSON.With(key)).WantStatus(t, http.StatusUnprocessableEntity)
		if !strings.Contains(r.Body, "idempotency_key") {
			t.Errorf("reused key with another body: body %s, want an error naming idempotency_key", testutil.Snippet(r.Body))
		}
		// A malformed key is a 400, and creates nothing.
		for _, bad := range []string{"has space", strings.Repeat("k", 256), "tab\there"} {
			a.do(t, http.MethodPost, "/orders", testutil.JSON(other), testutil.HJSON.With(testutil.H{"Idempotency-Key": bad})).WantStatus(t, http.StatusBadRequest)
		}
		if n := a.count(t); n != 1 {
			t.Errorf("after refused requests: %d orders, want 1", n)
		}

		// Ten clients racing with one key make one order, and all get it.
		race := map[string]any{"customer": "Grace Hopper"}
		ids := make([]int64, 10)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var o orderJSON
				a.do(t, http.MethodPost, "/orders", testutil.JSON(race), testutil.HJSON.With(testutil.H{"Idempotency-Key": "race-1"})).WantStatus(t, http.StatusCreated).JSON(t, &o)
				ids[i] = o.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] || id == 0 {
				t.Errorf("racing creates with one key answered ids %v, want one id", ids)
				break
			}
		}
		if n := a.count(t); n != 2 {
			t.Errorf("after the race: %d orders, want 2", n)
		}
		// A deleted order is not brought back by a late retry.
		a.do(t, http.MethodDelete, path(o1.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusNoContent)
		a.do(t, http.MethodPost, "/orders", testutil.JSON(order), testutil.HJSON.With(key)).WantStatus(t, http.StatusNotFound)
		if n := a.count(t); n != 1 {
			t.Errorf("after a retry of a deleted order's create: %d orders, want 1", n)
		}
	})
}
