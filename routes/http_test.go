package routes

// Helpers of the HTTP test suite: one application per Redis target and
// the order resource's requests. Requests and their assertions are
// testutil's (http.go), shared with the e2e and main tests.

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// testApp is the application over one Redis target.
type testApp struct {
	target string
	app    *fiber.App
	store  *redisstore.Store
	// session, when set, is the session every request without
	// credentials of its own carries (signedIn).
	session string
	// preMade counts the accounts a suite made for itself (signedIn):
	// the users' counts add them.
	preMade int64
}

// testConfig is the configuration of every test application: main.go's
// but for the files (the repository's copy of the embedded ones), the
// log (the test's) and the host (app.Test's).
func testConfig(t testing.TB, st *redisstore.Store) Config {
	return Config{Store: st, Files: testutil.Files(t), Logger: testutil.Logger(t), AllowedHosts: []string{testutil.Host}}
}

// newTestApp builds the application over st with testConfig, changed by
// each of more.
func newTestApp(t testing.TB, name string, st *redisstore.Store, more ...func(*Config)) *testApp {
	t.Helper()
	cfg := testConfig(t, st)
	for _, f := range more {
		f(&cfg)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatalf("routes.New: %v", err)
	}
	return &testApp{target: name, app: app, store: st}
}

// eachTarget runs fn as a subtest against a fresh application on every
// Redis target testutil offers (miniredis always, a real Redis when one
// answers). Every target starts empty, so order ids start at 1.
func eachTarget(t *testing.T, fn func(t *testing.T, a *testApp)) {
	t.Helper()
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			fn(t, newTestApp(t, tg.Name, testutil.NewStore(t, tg)))
		})
	}
}

// do sends one request through the application (testutil.Client.Do),
// with a's session when it has one and h carries no credentials.
func (a *testApp) do(t testing.TB, method, target string, b testutil.Body, h testutil.H) *testutil.Resp {
	t.Helper()
	if a.session != "" {
		cookie, auth := "", false
		for k, v := range h {
			switch {
			case strings.EqualFold(k, "Authorization"):
				auth = true
			case strings.EqualFold(k, "Cookie"):
				cookie = v
			}
		}
		if !auth && !strings.Contains(cookie, sessionCookie+"=") {
			if cookie != "" {
				cookie += "; "
			}
			h = h.With(testutil.H{"Cookie": cookie + sessionCookie + "=" + a.session})
		}
	}
	return testutil.InProcess(a.app).Do(t, method, target, b, h)
}

// actor is who history names for a's requests without credentials.
func (a *testApp) actor() string {
	if a.session != "" {
		return "root"
	}
	return "anonymous"
}

// signedIn ends a's protected mode with the admin account "root", whose
// session every request without credentials then carries: for suites
// whose writes make accounts (the first account ends protected mode).
func (a *testApp) signedIn(t testing.TB) *testApp {
	t.Helper()
	addAccount(t, a.store, "root", store.RoleAdmin)
	a.session, a.preMade = a.signIn(t, "root"), 1
	return a
}

func (a *testApp) get(t testing.TB, target string, h testutil.H) *testutil.Resp {
	t.Helper()
	return a.do(t, http.MethodGet, target, testutil.NoBody, h)
}

// orderJSON is the JSON of one order, with money kept as the strings sent.
type orderJSON struct {
	ID        int64      `json:"id"`
	Customer  string     `json:"customer"`
	Email     string     `json:"email"`
	Status    string     `json:"status"`
	Currency  string     `json:"currency"`
	Notes     string     `json:"notes"`
	Items     []itemJSON `json:"items"`
	ItemCount int        `json:"item_count"`
	Total     string     `json:"total"`
	Version   int64      `json:"version"`
	CreatedAt string     `json:"created_at"`
	UpdatedAt string     `json:"updated_at"`
}

type itemJSON struct {
	SKU       string `json:"sku"`
	Name      string `json:"name"`
	Quantity  int64  `json:"quantity"`
	UnitPrice string `json:"unit_price"`
	LineTotal string `json:"line_total"`
}

// errorJSON is the JSON of an error.
type errorJSON struct {
	Error     string            `json:"error"`
	Errors    map[string]string `json:"errors"`
	RequestID string            `json:"request_id"`
	Current   *orderJSON        `json:"current"`
}

// item is a JSON item for requests.
func item(name string, qty any, price any) map[string]any {
	return map[string]any{"name": name, "quantity": qty, "unit_price": price}
}

// create makes an order through POST /orders (JSON) and returns it.
func (a *testApp) create(t testing.TB, v map[string]any) orderJSON {
	t.Helper()
	r := a.do(t, http.MethodPost, "/orders", testutil.JSON(v), testutil.HJSON).WantStatus(t, http.StatusCreated)
	var o orderJSON
	r.JSON(t, &o)
	return o
}

// createNamed makes an order for customer with one item.
func (a *testApp) createNamed(t testing.TB, customer string) orderJSON {
	t.Helper()
	return a.create(t, map[string]any{"customer": customer, "items": []any{item("Widget", 2, "1.50")}})
}

// update changes an order through PUT /orders/<id> (JSON) and returns it.
func (a *testApp) update(t testing.TB, id int64, v map[string]any) orderJSON {
	t.Helper()
	r := a.do(t, http.MethodPut, path(id), testutil.JSON(v), testutil.HJSON).WantStatus(t, http.StatusOK)
	var o orderJSON
	r.JSON(t, &o)
	return o
}

// fetch reads an order through GET /orders/<id> (JSON).
func (a *testApp) fetch(t testing.TB, id int64) orderJSON {
	t.Helper()
	var o orderJSON
	a.get(t, path(id), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &o)
	return o
}

// count is the number of orders in the store.
func (a *testApp) count(t testing.TB) int64 {
	t.Helper()
	n, err := a.store.CountOrders(t.Context())
	if err != nil {
		t.Fatalf("counting orders: %v", err)
	}
	return n
}

// wantGone fails unless order id no longer exists.
func (a *testApp) wantGone(t testing.TB, id int64) {
	t.Helper()
	a.get(t, path(id), testutil.HJSON).WantStatus(t, http.StatusNotFound)
}

func path(id int64, rest ...string) string {
	return "/orders/" + strconv.FormatInt(id, 10) + strings.Join(rest, "")
}

func rowID(id int64) string { return "order-row-" + strconv.FormatInt(id, 10) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
