package routes

import (
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"orders/store"
	"orders/testutil"
)

// TestATooBroadQueryIsA400: a query the store refuses as too costly
// (EBROAD) answers 400 with the store's words on what to narrow, as JSON
// and as a page, never a 503 or a 500.
func TestATooBroadQueryIsA400(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Miniredis(t)))
	msg := "page 9 of the orders created in these dates, sorted by total, is too far into that sort to find: narrow the dates"
	for _, accept := range []string{"application/json", "text/html"} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.Set("Accept", accept)
		rc.Request.SetRequestURI("/orders?sort=-total&from=2000-01-01&page=9")
		c := a.app.AcquireCtx(&rc)
		if err := a.app.Config().ErrorHandler(c, store.Errorf(store.EBROAD, "%s", msg)); err != nil {
			t.Fatal(err)
		}
		got, body := rc.Response.StatusCode(), string(rc.Response.Body())
		a.app.ReleaseCtx(c)
		if got != http.StatusBadRequest || !strings.Contains(body, "narrow the dates") {
			t.Errorf("Accept %s: %d %s, want 400 saying what to narrow", accept, got, testutil.Snippet(body))
		}
	}
}
