package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/embedded"
	"orders/store/redisstore"
	"orders/testutil"
)

// The cost bound: no query the List, the Inquiry or the product list allow
// makes Redis run one command or script for 50 ms or more at a million
// orders, and a query that cannot be answered within its bound is refused
// (EBROAD, a 400 saying what to narrow), never answered 503 after the work.
// TestNoQueryHoldsRedisFor50ms checks that on a redis-server of its own at
// 100,000 orders (ORDERS_COST_ORDERS changes the size: docs/slowlog.sh runs
// it at a million), TestEveryQueryIsAnsweredOnTheEmbeddedStore on the
// embedded store at 20,000.

// costPage is a page of a query to try: a number, or one found from the
// query's total ("middle", "last").
type costPage struct {
	name string
	n    func(total int64, perPage int) int
}

var costPages = []costPage{
	{"1", func(int64, int) int { return 1 }},
	{"4000", func(int64, int) int { return 4000 }},
	{"middle", func(total int64, pp int) int { return int(total/2)/pp + 1 }},
	{"last", func(total int64, pp int) int { return int(max(total-1, 0))/pp + 1 }},
	{"far", func(int64, int) int { return 1_000_000_000 }},
}

// costQueries lists the query shapes whose pages are tried: every sort in
// every status filter (all and one) with each kind of date range (none,
// open at one end, a day, a week, a month, the oldest month, the last
// eight months), searches of
// each kind (a word, one letter, a SKU, a long email, an id, two and three
// terms, nothing) with and without a status and a date range, and the
// product list's sorts, filters and searches. Dates are relative to now,
// as the seed's orders are (created over the past year).
func costQueries(now time.Time) (orders []store.OrderQuery, products []store.ProductQuery) {
	day := now.UTC().Truncate(24 * time.Hour)
	dates := []struct{ from, to time.Time }{
		{},
		{from: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{to: day.AddDate(0, 0, -1)},
		{from: day.AddDate(0, -6, 0), to: day.AddDate(0, -6, 0)},
		{from: day.AddDate(0, -6, 0), to: day.AddDate(0, -6, 6)},
		{from: day.AddDate(0, -6, 0), to: day.AddDate(0, -5, 0)},
		{from: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), to: day.AddDate(0, -11, 0)},
		{from: day.AddDate(0, -8, 0)},
	}
	for _, sort := range store.Sorts {
		for _, st := range []store.Status{"", store.Shipped} {
			for _, d := range dates {
				orders = append(orders, store.OrderQuery{Sort: sort, Status: st, From: d.from, To: d.to})
			}
		}
	}
	for _, q := range []string{"ada", "a", "kbd", "grace.hopper@example.com", "12345", "ada lovelace", "ada tee kbd", "tee m", "zzz"} {
		for _, st := range []store.Status{"", store.Shipped} {
			for _, d := range dates[:2] {
				orders = append(orders, store.OrderQuery{Q: q, Status: st, From: d.from, To: d.to})
			}
			orders = append(orders, store.OrderQuery{Q: q, Status: st, From: dates[5].from, To: dates[5].to})
		}
	}
	for _, sort := range store.ProductSorts {
		for _, active := range []string{"", "true", "false"} {
			products = append(products, store.ProductQuery{Sort: sort, Active: active})
		}
	}
	for _, q := range []string{"mug", "m", "mug-00012", "enamel mug", "cotton t-shirt blue", "12"} {
		for _, active := range []string{"", "true", "false"} {
			products = append(products, store.ProductQuery{Q: q, Active: active})
		}
	}
	return orders, products
}

func orderShapeName(q store.OrderQuery) string {
	var parts []string
	if q.Q != "" {
		parts = append(parts, "q="+q.Q)
	} else {
		parts = append(parts, "sort="+string(q.Sort))
	}
	if q.Status != "" {
		parts = append(parts, "status="+string(q.Status))
	}
	if !q.From.IsZero() {
		parts = append(parts, "from="+q.From.Format(time.DateOnly))
	}
	if !q.To.IsZero() {
		parts = append(parts, "to="+q.To.Format(time.DateOnly))
	}
	return strings.Join(parts, " ")
}

func productShapeName(q store.ProductQuery) string {
	parts := []string{"products"}
	if q.Q != "" {
		parts = append(parts, "q="+q.Q)
	} else {
		parts = append(parts, "sort="+string(q.Sort))
	}
	if q.Active != "" {
		parts = append(parts, "active="+q.Active)
	}
	return strings.Join(parts, " ")
}

// costResult is what one page of one shape cost.
type costResult struct {
	shape   string
	page    string
	took    time.Duration
	slowest time.Duration // the slowest command Redis logged (0: none over the log's threshold)
	command string
	err     error
	tries   int
}

// runShapes runs every page of every shape through s, each with the
// request's deadline, calling before and after around each (after may read
// SLOWLOG). A page that again says is over its bound is run again, twice
// at most, and the better try kept: on a machine shared with other work a
// command can be held up by the scheduler now and then, while a query
// that costs too much does so every time.
func runShapes(t *testing.T, s *redisstore.Store, now time.Time, before func(), after func(r *costResult), again func(r costResult) bool) []costResult {
	t.Helper()
	orders, products := costQueries(now)
	var out []costResult
	run := func(shape string, call func(page int) (int64, error)) {
		total := int64(-1)
		for _, p := range costPages {
			if total < 0 && p.name != "1" && p.name != "4000" && p.name != "far" {
				continue
			}
			var r costResult
			var tot int64
			for try := 0; try < 3 && (try == 0 || again(r)); try++ {
				before()
				start := time.Now()
				n, err := call(p.n(max(total, 0), store.MaxPerPage))
				next := costResult{shape: shape, page: p.name, took: time.Since(start), err: err, tries: try + 1}
				after(&next)
				if try == 0 || !again(next) {
					r, tot = next, n
				}
			}
			out = append(out, r)
			if p.name == "1" && r.err == nil {
				total = tot
			}
		}
	}
	request := func() (context.Context, context.CancelFunc) {
		// As a request has (routes: 1.5 s).
		return context.WithTimeout(context.Background(), 1500*time.Millisecond)
	}
	for _, q := range orders {
		run(orderShapeName(q), func(page int) (int64, error) {
			ctx, cancel := request()
			defer cancel()
			q := q
			q.Page, q.PerPage = page, store.MaxPerPage
			p, err := s.ListOrders(ctx, q)
			return p.Total, err
		})
	}
	for _, q := range products {
		run(productShapeName(q), func(page int) (int64, error) {
			ctx, cancel := request()
			defer cancel()
			q := q
			q.Page, q.PerPage = page, store.MaxPerPage
			p, err := s.ListProducts(ctx, q)
			return p.Total, err
		})
	}
	return out
}

// costEnv is a size from the environment, or def.
func costEnv(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a whole number", name, v)
	}
	return n
}

// TestNoQueryHoldsRedisFor50ms seeds 100,000 orders and 20,000 products
// into a redis-server of its own and runs every page of every query shape
// (costQueries) against it: SLOWLOG, which logs every command or script
// that ran 1 ms or more, never holds one of 50 ms (what SLOWLOG with
// slowlog-log-slower-than 50000 would hold), and no query answers 503. The
// slowest commands are printed as figures.
func TestNoQueryHoldsRedisFor50ms(t *testing.T) {
	testutil.Long(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("ORDERS_REQUIRE_REDIS") == "1" {
			t.Fatal("*** no redis-server installed, and ORDERS_REQUIRE_REDIS=1 ***")
		}
		testutil.Skip(t, testutil.NoRedisServer)
	}
	n := costEnv(t, "ORDERS_COST_ORDERS", 100_000)
	np := costEnv(t, "ORDERS_COST_PRODUCTS", 20_000)
	logOver := time.Duration(costEnv(t, "ORDERS_COST_LOG_US", 1000)) * time.Microsecond
	bound := 50 * time.Millisecond

	port := testutil.ClusterPort(t, map[int]bool{})
	args := []string{"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--slowlog-log-slower-than", strconv.Itoa(int(logOver / time.Microsecond)), "--slowlog-max-len", "100000"}
	if _, err := exec.LookPath("nice"); err == nil {
		// SLOWLOG times a command by the wall clock: on a machine busy with
		// other work, a command whose process waits for a core looks slow.
		// Ahead of the other processes when allowed (root); nice runs it
		// at the usual priority otherwise.
		args = append([]string{"nice", "-n", "-10"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx := context.Background()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	admin := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute, ClientName: "cost-admin"})
	t.Cleanup(func() { _ = admin.Close() })
	for deadline := time.Now().Add(5 * time.Second); admin.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("redis-server does not answer")
		}
	}
	seedStart := time.Now()
	seeder := redisstore.New(admin, redisstore.Options{})
	if _, err := seeder.Seed(ctx, n, nil); err != nil {
		t.Fatal(err)
	}
	if err := seeder.SeedProducts(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d orders and %d products in %.1f s", n, np, time.Since(seedStart).Seconds())

	// The application's own deadlines: a command over 500 ms is a 503.
	o := &redis.Options{Addr: addr}
	redisstore.Deadlines(o)
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	s := redisstore.New(c, redisstore.Options{})
	runStart := time.Now()
	results := runShapes(t, s, time.Now(), func() {
		if err := admin.SlowLogReset(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}, func(r *costResult) {
		// A command cut short by the client's deadline is still running:
		// wait for Redis to finish it, so it is logged against this shape.
		if r.err != nil {
			for admin.Ping(ctx).Err() != nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
		logged, err := admin.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range logged {
			f, _ := e.([]any)
			if len(f) < 6 || f[5] == "cost-admin" {
				continue // this test's own SLOWLOG and SEED commands
			}
			us, _ := f[2].(int64)
			d := time.Duration(us) * time.Microsecond
			if d > r.slowest {
				r.slowest, r.command = d, slowCommand(f[3])
			}
		}
	}, func(r costResult) bool { return r.slowest >= bound })
	reportCosts(t, fmt.Sprintf("redis-server, %d orders, %d products", n, np), results, time.Since(runStart), logOver)
	for _, r := range results {
		if r.slowest >= bound {
			t.Errorf("%s page %s: Redis ran %s for %.1f ms at best of %d tries (the bound is 50 ms)", r.shape, r.page, r.command, ms(r.slowest), r.tries)
		}
		if r.err != nil && store.ErrorCode(r.err) != store.EBROAD {
			t.Errorf("%s page %s: %v (code %s), want an answer or EBROAD", r.shape, r.page, r.err, store.ErrorCode(r.err))
		}
	}
}

// TestEveryQueryIsAnsweredOnTheEmbeddedStore runs every page of every
// query shape against the embedded store (miniredis, whose sorted-set
// reads sort the whole set each time) at 20,000 orders with the
// application's deadlines:
// each is answered, or refused with EBROAD (a 400), never EUNAVAILABLE
// (a 503). The slowest are printed as figures.
func TestEveryQueryIsAnsweredOnTheEmbeddedStore(t *testing.T) {
	testutil.Long(t)
	n := costEnv(t, "ORDERS_COST_EMBEDDED_ORDERS", 20_000)
	np := costEnv(t, "ORDERS_COST_EMBEDDED_PRODUCTS", 5_000)
	o := &redis.Options{}
	redisstore.Deadlines(o)
	e, err := embedded.Open(embedded.Options{}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	seeder := redisstore.New(e.Client(), redisstore.Options{})
	if _, err := seeder.Seed(ctx, n, nil); err != nil {
		t.Fatal(err)
	}
	if err := seeder.SeedProducts(ctx, np); err != nil {
		t.Fatal(err)
	}
	runStart := time.Now()
	results := runShapes(t, seeder, time.Now(), func() {}, func(*costResult) {},
		func(r costResult) bool { return store.ErrorCode(r.err) == store.EUNAVAILABLE })
	reportCosts(t, fmt.Sprintf("embedded store, %d orders, %d products", n, np), results, time.Since(runStart), 0)
	for _, r := range results {
		if r.err != nil && store.ErrorCode(r.err) != store.EBROAD {
			t.Errorf("%s page %s: %v (code %s) after %.0f ms, want an answer or EBROAD", r.shape, r.page, r.err, store.ErrorCode(r.err), ms(r.took))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// slowCommand writes a logged command's arguments briefly, a script by
// its name.
func slowCommand(v any) string {
	args, _ := v.([]any)
	var parts []string
	for i, a := range args {
		s := fmt.Sprint(a)
		if i == 1 && len(parts) > 0 {
			switch strings.ToLower(parts[0]) {
			case "eval":
				// SLOWLOG keeps the first 128 bytes of a script: its hash
				// cannot be taken, its start is compared.
				for _, sc := range redisstore.ScriptNames() {
					if strings.HasPrefix(sc.Source, strings.TrimSuffix(s[:min(len(s), 100)], "...")) {
						s = sc.Name
					}
				}
			case "evalsha":
				for hash, sc := range redisstore.ScriptNames() {
					if hash == s {
						s = sc.Name
					}
				}
			}
		}
		if len(s) > 24 {
			s = s[:24] + "…"
		}
		parts = append(parts, s)
		if i == 4 {
			parts = append(parts, "…")
			break
		}
	}
	return strings.Join(parts, " ")
}

// reportCosts prints the slowest pages, by the slowest command they made
// Redis run and by their time, and every refusal.
func reportCosts(t *testing.T, what string, results []costResult, took time.Duration, logOver time.Duration) {
	t.Helper()
	var lines []string
	say := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	refused, shapes := 0, map[string]bool{}
	for _, r := range results {
		shapes[r.shape] = true
		if r.err != nil && store.ErrorCode(r.err) == store.EBROAD {
			refused++
		}
	}
	say("query cost (%s): %d pages of %d shapes in %.1f s, %d refused as too broad", what, len(results), len(shapes), took.Seconds(), refused)
	if logOver > 0 {
		byCmd := slices.Clone(results)
		slices.SortFunc(byCmd, func(a, b costResult) int { return int(b.slowest - a.slowest) })
		if len(byCmd) == 0 || byCmd[0].slowest == 0 {
			say("  no command took %.1f ms or more", ms(logOver))
		}
		for _, r := range byCmd[:min(12, len(byCmd))] {
			if r.slowest == 0 {
				break
			}
			tries := ""
			if r.tries > 1 {
				tries = fmt.Sprintf(" (the best of %d tries)", r.tries)
			}
			say("  slowest command %6.2f ms  %-60s page %-6s  %s%s", ms(r.slowest), r.shape, r.page, r.command, tries)
		}
	}
	byTime := slices.Clone(results)
	slices.SortFunc(byTime, func(a, b costResult) int { return int(b.took - a.took) })
	for _, r := range byTime[:min(12, len(byTime))] {
		note := ""
		if r.err != nil {
			note = " → " + store.ErrorCode(r.err)
		}
		say("  slowest answer  %6.1f ms  %-60s page %-6s%s", ms(r.took), r.shape, r.page, note)
	}
	for _, l := range lines {
		t.Log(l)
	}
	if path := os.Getenv("ORDERS_COST_TABLE"); path != "" {
		// Every page, tab-separated, for docs/slowlog.sh.
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\nshape\tpage\tanswer_ms\tslowest_ms\tcommand\tcode\n", what)
		for _, r := range results {
			code := ""
			if r.err != nil {
				code = store.ErrorCode(r.err)
			}
			fmt.Fprintf(&b, "%s\t%s\t%.2f\t%.2f\t%s\t%s\n", r.shape, r.page, ms(r.took), ms(r.slowest), r.command, code)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("writing %s: %v", path, err)
		}
	}
	if path := os.Getenv("ORDERS_FIGURES"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(lines, "\n"))
			f.Close()
		}
	}
}
