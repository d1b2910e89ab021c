package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orders/routes"
	"orders/testutil"
)

const writers = 20

// race sends n requests at once (all goroutines released together) and
// returns the responses in the order of their index.
func race(t *testing.T, n int, send func(i int) (*testutil.Resp, error)) []*testutil.Resp {
	t.Helper()
	out := make([]*testutil.Resp, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			out[i], errs[i] = send(i)
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	return out
}

// watchCalls returns how many WATCH commands the Redis has run: one per
// attempt of an optimistic update, so more than one per writer means the
// writers really raced.
func watchCalls(t *testing.T, rs *redisServer) int64 {
	t.Helper()
	info, err := rs.client(t).Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_watch:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

func tally(rs []*testutil.Resp) map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// TestConcurrentWriters: twenty writers carrying the same version, then
// twenty without one, then twenty with the same If-Match, all at once over
// HTTP against the built binary on a real redis-server.
func TestConcurrentWriters(t *testing.T) {
	testutil.Long(t)
	rs := startRedis(t, 0)
	app := startApp(t, rs.url())
	base := app.base

	var o orderJSON
	mustCall(t, base, http.MethodPost, "/orders", "application/json",
		jsonOf(map[string]any{"customer": "Race", "items": []any{map[string]any{"name": "Cup", "quantity": 1, "unit_price": "2.50"}}}), testutil.HJSON).
		WantStatus(t, http.StatusCreated).JSON(t, &o)
	path := "/orders/" + strconv.FormatInt(o.ID, 10)

	t.Run("same version", func(t *testing.T) {
		start := time.Now()
		got := race(t, writers, func(i int) (*testutil.Resp, error) {
			return call(base, http.MethodPut, path, "application/json",
				jsonOf(map[string]any{"version": 1, "customer": fmt.Sprintf("Writer %02d", i),
					"items": []any{map[string]any{"name": "Cup", "quantity": i + 1, "unit_price": "2.50"}}}), testutil.HJSON)
		})
		took := time.Since(start)
		c := tally(got)
		t.Logf("%d writers with version 1: %d × 200, %d × 409, others %v, in %v", writers, c[200], c[409], c, took.Round(time.Millisecond))
		if c[200] != 1 || c[409] != writers-1 {
			t.Fatalf("%d writers with the same version: got statuses %v, want exactly 1 × 200 and %d × 409", writers, c, writers-1)
		}
		var winner string
		for i, r := range got {
			switch r.Status {
			case 200:
				var w orderJSON
				r.JSON(t, &w)
				if w.Version != 2 {
					t.Errorf("the winner got version %d, want 2", w.Version)
				}
				winner = fmt.Sprintf("Writer %02d", i)
			case 409:
				var e struct {
					Error   string    `json:"error"`
					Current orderJSON `json:"current"`
				}
				r.JSON(t, &e)
				if e.Error == "" || e.Current.Version != 2 {
					t.Errorf("writer %d's 409: got error %q and current version %d, want a message and version 2", i, e.Error, e.Current.Version)
				}
			}
		}
		var now orderJSON
		mustCall(t, base, http.MethodGet, path, "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &now)
		if now.Version != 2 || now.Customer != winner {
			t.Fatalf("after the race: got version %d customer %q, want version 2 and the winner's %q", now.Version, now.Customer, winner)
		}
		if now.ItemCount != len(now.Items) || len(now.Items) != 1 {
			t.Fatalf("after the race: item_count %d with %d items, want 1 and 1", now.ItemCount, len(now.Items))
		}
	})

	t.Run("no version", func(t *testing.T) {
		watches := watchCalls(t, rs)
		start := time.Now()
		got := race(t, writers, func(i int) (*testutil.Resp, error) {
			return call(base, http.MethodPut, path, "application/json",
				jsonOf(map[string]any{"notes": fmt.Sprintf("note %d", i)}), testutil.HJSON)
		})
		took := time.Since(start)
		c := tally(got)
		versions := map[int64]bool{}
		for i, r := range got {
			if r.Status != 200 {
				continue
			}
			var w orderJSON
			r.JSON(t, &w)
			if versions[w.Version] {
				t.Errorf("writer %d got version %d, which another writer got too", i, w.Version)
			}
			versions[w.Version] = true
		}
		var now orderJSON
		mustCall(t, base, http.MethodGet, path, "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &now)
		t.Logf("%d writers without a version: %d × 200 (statuses %v) in %v; final version %d; %d WATCH attempts (%d retries after a lost race)",
			writers, c[200], c, took.Round(time.Millisecond), now.Version, watchCalls(t, rs)-watches, watchCalls(t, rs)-watches-writers)
		if c[200] != writers {
			t.Fatalf("%d writers without a version: got statuses %v, want %d × 200", writers, c, writers)
		}
		if want := int64(2 + writers); now.Version != want {
			t.Fatalf("after %d more updates: got version %d, want %d (an update was lost or counted twice)", writers, now.Version, want)
		}
	})

	t.Run("same If-Match", func(t *testing.T) {
		g := mustCall(t, base, http.MethodGet, path, "", nil, testutil.HJSON).WantStatus(t, 200)
		tag := g.Header.Get("ETag")
		if tag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		var before orderJSON
		g.JSON(t, &before)
		start := time.Now()
		got := race(t, writers, func(i int) (*testutil.Resp, error) {
			return call(base, http.MethodPut, path, "application/json",
				jsonOf(map[string]any{"customer": fmt.Sprintf("Matcher %02d", i)}), testutil.HJSON.With(testutil.H{"If-Match": tag}))
		})
		took := time.Since(start)
		c := tally(got)
		t.Logf("%d writers with If-Match %s: %d × 200, %d × 412 (statuses %v) in %v", writers, tag, c[200], c[412], c, took.Round(time.Millisecond))
		if c[200] != 1 || c[412] != writers-1 {
			t.Fatalf("%d writers with the same If-Match: got statuses %v, want exactly 1 × 200 and %d × 412", writers, c, writers-1)
		}
		var now orderJSON
		mustCall(t, base, http.MethodGet, path, "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &now)
		if now.Version != before.Version+1 {
			t.Fatalf("after the If-Match race: got version %d, want %d", now.Version, before.Version+1)
		}
	})

	// More rounds on a second order, alternating the two guards: every
	// round has exactly one winner.
	t.Run("repeated rounds", func(t *testing.T) {
		var b orderJSON
		mustCall(t, base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Rounds"}), testutil.HJSON).
			WantStatus(t, http.StatusCreated).JSON(t, &b)
		bpath := "/orders/" + strconv.FormatInt(b.ID, 10)
		const rounds = 10
		watches := watchCalls(t, rs)
		for round := 0; round < rounds; round++ {
			version := b.Version + int64(round)
			loser := 409
			got := race(t, writers, func(i int) (*testutil.Resp, error) {
				body := map[string]any{"customer": fmt.Sprintf("Round %d writer %d", round, i)}
				h := testutil.HJSON
				if round%2 == 0 {
					body["version"] = version
				} else {
					h = testutil.HJSON.With(testutil.H{"If-Match": fmt.Sprintf(`"o%dv%d-json"`, b.ID, version)})
				}
				return call(base, http.MethodPut, bpath, "application/json", jsonOf(body), h)
			})
			if round%2 == 1 {
				loser = 412
			}
			if c := tally(got); c[200] != 1 || c[loser] != writers-1 {
				t.Fatalf("round %d: got statuses %v, want 1 × 200 and %d × %d", round, c, writers-1, loser)
			}
		}
		var now orderJSON
		mustCall(t, base, http.MethodGet, bpath, "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &now)
		if now.Version != b.Version+rounds {
			t.Fatalf("after %d rounds: got version %d, want %d", rounds, now.Version, b.Version+rounds)
		}
		t.Logf("%d rounds × %d writers: %d winners, %d losers; Redis saw %d WATCHes (%d beyond one per writer: optimistic retries)",
			rounds, writers, rounds, rounds*(writers-1), watchCalls(t, rs)-watches, watchCalls(t, rs)-watches-rounds*writers)
	})

	if !app.running() {
		t.Fatalf("the app exited: %v\n%s", app.err, tail(app.out.String(), 20))
	}
}

// TestConcurrentProductSKUs: a SKU is one product's, case aside, however
// many clients race for it over HTTP: creates of
// one SKU leave exactly one product and every loser is told which one
// holds it; changes of twenty products to one SKU leave one holder; a
// delete racing creates and changes of its SKU leaves at most one. Then
// the catalogue's lists, SKU claims and indexes agree (checkCatalogue).
// On miniredis, and on a real Redis and a Cluster when they answer
// (testutil.Targets: ORDERS_TEST_REDIS, ORDERS_TEST_CLUSTER).
func TestConcurrentProductSKUs(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			st := testutil.NewStore(t, tg)
			app, err := routes.New(routes.Config{Store: st, Files: testutil.Files(t), Logger: testutil.Logger(t)})
			if err != nil {
				t.Fatalf("routes.New: %v", err)
			}
			base := "http://" + testutil.Serve(t, app)
			cases := func(sku string, i int) string { // KBD-7, kbd-7, Kbd-7, …
				switch i % 3 {
				case 1:
					return strings.ToLower(sku)
				case 2:
					return sku[:1] + strings.ToLower(sku[1:])
				}
				return sku
			}
			winner := func(what string, got []*testutil.Resp, won int) int64 {
				t.Helper()
				c := tally(got)
				if c[won] != 1 || c[422] != len(got)-1 {
					t.Fatalf("%s: statuses %v, want exactly 1 × %d and %d × 422", what, c, won, len(got)-1)
				}
				var id int64
				for _, r := range got {
					if r.Status == won {
						var p productJSON
						r.JSON(t, &p)
						id = p.ID
					}
				}
				want := "is already the SKU of product " + strconv.FormatInt(id, 10)
				for i, r := range got {
					if r.Status != 422 {
						continue
					}
					var e struct {
						Errors map[string]string `json:"errors"`
					}
					if r.JSON(t, &e); e.Errors["sku"] != want {
						t.Errorf("%s: loser %d was told %v, want sku %q", what, i, e.Errors, want)
					}
				}
				return id
			}

			// Creates of one SKU, five rounds.
			for round := range 5 {
				sku := fmt.Sprintf("RACE-%d", round)
				got := race(t, writers, func(i int) (*testutil.Resp, error) {
					return call(base, http.MethodPost, "/products", "application/json",
						jsonOf(map[string]any{"sku": cases(sku, i), "name": fmt.Sprintf("Racer %d", i), "unit_price": "1.00"}), testutil.HJSON)
				})
				winner(fmt.Sprintf("round %d: %d creates of %s", round, writers, sku), got, http.StatusCreated)
			}

			// Twenty products changed at once to one SKU.
			ids := make([]int64, writers)
			for i := range ids {
				var p productJSON
				mustCall(t, base, http.MethodPost, "/products", "application/json",
					jsonOf(map[string]any{"sku": fmt.Sprintf("OWN-%d", i), "name": "Own", "unit_price": "2.00"}), testutil.HJSON).
					WantStatus(t, http.StatusCreated).JSON(t, &p)
				ids[i] = p.ID
			}
			got := race(t, writers, func(i int) (*testutil.Resp, error) {
				return call(base, http.MethodPut, "/products/"+strconv.FormatInt(ids[i], 10), "application/json",
					jsonOf(map[string]any{"sku": cases("TAKEN", i), "version": 1}), testutil.HJSON)
			})
			holder := winner(fmt.Sprintf("%d changes to one SKU", writers), got, http.StatusOK)

			// The holder deleted while others create and take its SKU: at
			// most one of them holds it after.
			got = race(t, writers, func(i int) (*testutil.Resp, error) {
				switch {
				case i == 0:
					return call(base, http.MethodDelete, "/products/"+strconv.FormatInt(holder, 10)+"?version=2", "", nil, testutil.HJSON)
				case i%2 == 1:
					return call(base, http.MethodPost, "/products", "application/json",
						jsonOf(map[string]any{"sku": cases("TAKEN", i), "name": "Late", "unit_price": "3.00"}), testutil.HJSON)
				}
				id := ids[i]
				if id == holder {
					id = ids[1]
				}
				return call(base, http.MethodPut, "/products/"+strconv.FormatInt(id, 10), "application/json",
					jsonOf(map[string]any{"sku": cases("TAKEN", i)}), testutil.HJSON)
			})
			if got[0].Status != http.StatusNoContent {
				t.Fatalf("the holder's delete: %d %s, want 204", got[0].Status, testutil.Snippet(got[0].Body))
			}
			c := tally(got[1:])
			if c[200]+c[201] > 1 || c[200]+c[201]+c[422] != writers-1 {
				t.Errorf("creates and changes of a SKU racing its holder's delete: statuses %v, want at most one 2xx, the rest 422", c)
			}
			rows, _, err := walkProducts(base, "q=taken")
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != c[200]+c[201] {
				t.Errorf("after the race %d products have the SKU TAKEN (%+v), want %d", len(rows), rows, c[200]+c[201])
			}
			cat := checkCatalogue(t, base, st, tg.Client, tg.Prefix, nil)
			wantCatalogue(t, cat)
			if want := 5 + writers - 1 + c[201]; cat.Exist != want {
				t.Errorf("%d products exist, want %d (5 races won, %d made, one deleted, %d created in the last race)", cat.Exist, want, writers, c[201])
			}
			t.Logf("%s: 5 rounds of %d creates of one SKU and %d changes to one SKU each left one holder; a delete racing %d takers: %v; %v",
				tg.Name, writers, writers, writers-1, c, cat)
		})
	}
}
