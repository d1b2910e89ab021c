package e2e

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store/redisstore"
	"orders/testutil"
)

// chaosDuration is how long the chaos load runs: ORDERS_CHAOS_SECONDS
// (.ci/run sets 60), 15 s by default so `go test ./...` stays short.
func chaosDuration() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("ORDERS_CHAOS_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 15 * time.Second
}

// acked is what the chaos workers were told: of the orders, what
// ackedRecords holds (deleted holds the name a deleted order had) and
// every name acknowledged for each; and what the product and customer
// writers running beside the order writers were told.
type acked struct {
	*ackedRecords[orderJSON]
	names map[int64]map[string]bool
	// products is what the product writers were told (productStep).
	products *ackedProducts
	// customers is what the customer writers were told (customerStep);
	// the order writers link orders to those customers.
	customers *ackedCustomers
}

func newAcked() *acked {
	return &acked{ackedRecords: newAckedRecords[orderJSON](), names: map[int64]map[string]bool{},
		products: newAckedProducts(), customers: newAckedRecords[customerJSON]()}
}

// ack records an acknowledged state of o and its name (answers can arrive
// out of order: the highest version wins).
func (a *acked) ack(o orderJSON) {
	a.mu.Lock()
	if a.names[o.ID] == nil {
		a.names[o.ID] = map[string]bool{}
	}
	a.names[o.ID][o.Customer] = true
	a.mu.Unlock()
	a.ackedRecords.ack(o)
}

// productWorkers is how many product writers run beside a chaos run's
// order writers (products pass the same suites).
const productWorkers = 4

// chaos runs workers against the app instances at bases for d: creates,
// renames, item changes and status changes with a fresh version, PUTs with
// a stale one, and DELETEs racing PUTs of the same order, all on a small
// set of hot orders so that writers collide; and beside them
// productWorkers product writers doing the same to products whose SKUs
// come from a small pool, so that writers collide on SKUs too; and
// customerWorkers customer writers (customerStep), whose customers the
// order writers link orders to and unlink them from while they are
// changed and deleted.
func chaos(t *testing.T, bases func() []string, workers int, d time.Duration) *acked {
	a := newAcked()
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers + productWorkers + customerWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; time.Now().Before(stop); i++ {
				bs := bases()
				base := bs[rnd.IntN(len(bs))]
				switch {
				case w >= workers+productWorkers:
					customerStep(a.customers, base, rnd, w, i)
				case w >= workers:
					productStep(a.products, base, rnd, w, i)
				default:
					chaosStep(a, base, rnd, w, i)
				}
			}
		}()
	}
	wg.Wait()
	return a
}

// productStep is one product write of a chaos run: a create (of a SKU
// from a pool of 40, in any case: it may be taken), a change of name and
// price, of SKU or of active with a fresh version, a change with a stale
// one (never accepted), or a DELETE racing a PUT of the same version
// (never both accepted).
func productStep(a *ackedProducts, base string, rnd *rand.Rand, w, i int) {
	path := func(id int64) string { return "/products/" + strconv.FormatInt(id, 10) }
	sku := func() string {
		s := fmt.Sprintf("ch-%d", rnd.IntN(40))
		if rnd.IntN(2) == 0 {
			s = strings.ToUpper(s)
		}
		return s
	}
	price := func() string { return fmt.Sprintf("%d.%02d", rnd.IntN(1000), rnd.IntN(100)) }
	put := func(id int64, v map[string]any) (*testutil.Resp, error) {
		return call(base, http.MethodPut, path(id), "application/json", jsonOf(v), testutil.HJSON)
	}
	ackOf := func(kind string, id, version int64) func(r *testutil.Resp, err error) (productJSON, bool) {
		return func(r *testutil.Resp, err error) (productJSON, bool) { return ackWrite(a, kind, id, version, r, err) }
	}
	id := a.pickHot(rnd.IntN)
	op := rnd.IntN(100)
	if id == 0 || op < 20 {
		r, err := call(base, http.MethodPost, "/products", "application/json", jsonOf(map[string]any{
			"sku": sku(), "name": fmt.Sprintf("W%02d n%07d", w, i), "unit_price": price(), "active": rnd.IntN(4) > 0}), testutil.HJSON)
		if p, ok := ackOf("created", 0, 0)(r, err); ok {
			a.addHot(p.ID, 20)
		}
		return
	}
	p, ok := readMember[productJSON](base, path(id))
	if !ok {
		return
	}
	switch {
	case op < 40:
		ackOf("updated", id, p.Version)(put(id, map[string]any{"name": fmt.Sprintf("W%02d r%07d", w, i), "unit_price": price(), "version": p.Version}))
	case op < 55:
		ackOf("updated", id, p.Version)(put(id, map[string]any{"sku": sku(), "version": p.Version}))
	case op < 65:
		ackOf("updated", id, p.Version)(put(id, map[string]any{"active": !p.Active, "version": p.Version}))
	case op < 78:
		if p.Version < 2 {
			return
		}
		r, err := put(id, map[string]any{"name": fmt.Sprintf("stale %d/%d", w, i), "version": p.Version - 1})
		if err == nil && r.Status < 300 {
			a.problem("stale accepted", "PUT product %d with version %d (it was at v%d) answered %d", id, p.Version-1, p.Version, r.Status)
			return
		}
		ackOf("updated", id, p.Version-1)(r, err)
	default:
		raceDelete(a, base, "/products", id, p.Version, p.SKU, func() bool {
			// A price the product already has is a PUT that changes
			// nothing: 200 at the same version, which a DELETE of that
			// version may follow (one run in a hundred drew the same
			// price). Only a PUT that made a new version won.
			got, ok := ackOf("updated", id, p.Version)(put(id, map[string]any{"unit_price": price(), "version": p.Version}))
			return ok && got.Version > p.Version
		})
	}
}

var chaosWords = []string{"Ada", "Grace", "Edsger", "Barbara", "Alan", "Donald", "Frances", "Ken", "Radia", "Niklaus"}

// chaosName is a customer name no other write uses: its first word (K for
// a create, R for a rename, the worker and the step) is unique and no
// prefix of another, so q=<that word> finds exactly the order named so.
func chaosName(kind string, rnd *rand.Rand, w, i int) string {
	return fmt.Sprintf("%s%02dn%07d %s", kind, w, i, chaosWords[rnd.IntN(len(chaosWords))])
}

func chaosItems(rnd *rand.Rand) []map[string]any {
	items := make([]map[string]any, 1+rnd.IntN(3))
	for j := range items {
		items[j] = map[string]any{"name": "Part " + strconv.Itoa(j), "quantity": 1 + rnd.IntN(9),
			"unit_price": fmt.Sprintf("%d.%02d", rnd.IntN(100), rnd.IntN(100))}
	}
	return items
}

func chaosStep(a *acked, base string, rnd *rand.Rand, w, i int) {
	path := func(id int64) string { return "/orders/" + strconv.FormatInt(id, 10) }
	put := func(id int64, v map[string]any) (*testutil.Resp, error) {
		return call(base, http.MethodPut, path(id), "application/json", jsonOf(v), testutil.HJSON)
	}
	// ackOf(kind, id, version) records the outcome of a write of that kind
	// to order id (0: a create) carrying version; it reports whether it
	// was acknowledged.
	ackOf := func(kind string, id, version int64) func(r *testutil.Resp, err error) bool {
		return func(r *testutil.Resp, err error) bool {
			if err != nil || r.Status >= 500 {
				a.unknown(id, version)
				return false
			}
			switch r.Status {
			case http.StatusOK, http.StatusCreated:
				var o orderJSON
				if err := r.Decode(&o); err != nil || o.ID <= 0 {
					a.problem("bad body", "%s answered %d with %s", r.What, r.Status, testutil.Snippet(r.Body))
					return false
				}
				a.ack(o)
				a.count(kind)
				return true
			case http.StatusConflict:
				a.count("409")
			default:
				a.count(strconv.Itoa(r.Status))
			}
			return false
		}
	}
	id := a.pickHot(rnd.IntN)
	op := rnd.IntN(100)
	if id == 0 || op < 20 {
		v := map[string]any{"customer": chaosName("K", rnd, w, i), "items": chaosItems(rnd)}
		if cid := a.customers.pickHot(rnd.IntN); cid != 0 && rnd.IntN(2) == 0 {
			v["customer_id"] = cid // it may be deleted meanwhile: a 422
		}
		r, err := call(base, http.MethodPost, "/orders", "application/json", jsonOf(v), testutil.HJSON)
		if ackOf("created", 0, 0)(r, err) {
			var o orderJSON
			_ = r.Decode(&o)
			a.addHot(o.ID, 40)
		}
		return
	}
	o, ok := readMember[orderJSON](base, path(id))
	if !ok {
		return
	}
	switch {
	case op < 32: // a rename with the fresh version
		ackOf("updated", id, o.Version)(put(id, map[string]any{"customer": chaosName("R", rnd, w, i), "version": o.Version}))
	case op < 40: // a link to a customer (one that may be being deleted), or none
		var cid any = ""
		if c := a.customers.pickHot(rnd.IntN); c != 0 && rnd.IntN(3) > 0 {
			cid = c
		}
		ackOf("updated", id, o.Version)(put(id, map[string]any{"customer_id": cid, "version": o.Version}))
	case op < 55: // a status change along the lifecycle
		next := nextStatus[o.Status]
		if len(next) == 0 {
			return
		}
		ackOf("updated", id, o.Version)(put(id, map[string]any{"status": next[rnd.IntN(len(next))], "version": o.Version}))
	case op < 62: // new items (a new total) while they may still change
		if o.Status != "pending" && o.Status != "confirmed" {
			return
		}
		ackOf("updated", id, o.Version)(put(id, map[string]any{"items": chaosItems(rnd), "version": o.Version}))
	case op < 75: // a stale version: the stored one is o.Version or later
		if o.Version < 2 {
			return
		}
		r, err := put(id, map[string]any{"notes": fmt.Sprintf("stale %d/%d", w, i), "version": o.Version - 1})
		if err == nil && r.Status < 300 {
			a.problem("stale accepted", "PUT order %d with version %d (it was at v%d) answered %d", id, o.Version-1, o.Version, r.Status)
			return
		}
		ackOf("updated", id, o.Version-1)(r, err)
	default: // a DELETE racing a PUT that carries the same version
		raceDelete(a.ackedRecords, base, "/orders", id, o.Version, o.Customer, func() bool {
			return ackOf("updated", id, o.Version)(put(id, map[string]any{"notes": fmt.Sprintf("racing %d/%d", w, i), "version": o.Version}))
		})
	}
}

// reportChaos prints the summary line and fails on any problem, of the
// orders (v) or of the products (cat).
func reportChaos(t *testing.T, name string, workers int, d time.Duration, a *acked, v *invariants, cat *catalogue, extra string) {
	t.Helper()
	a.mu.Lock()
	c := maps.Clone(a.counts)
	a.mu.Unlock()
	a.products.mu.Lock()
	pc := maps.Clone(a.products.counts)
	a.products.mu.Unlock()
	a.customers.mu.Lock()
	cc := maps.Clone(a.customers.counts)
	a.customers.mu.Unlock()
	defer func() {
		line := fmt.Sprintf("chaos %s, customers: %d workers, acknowledged %d creates, %d updates, %d deletes; %d refused (409: stale, or orders), "+
			"%d refused for an email another customer holds (422), %d unknown (5xx or lost), all answers %v; %v", name, customerWorkers,
			cc["created"], cc["updated"], cc["deleted"], cc["409"], cc["422"], cc["unknown"], cc, v.Customers)
		figure(line)
		t.Log(line)
		if cc["created"] == 0 || cc["updated"] == 0 || cc["deleted"] == 0 || cc["409"] == 0 || cc["422"] == 0 {
			t.Errorf("the load did not exercise customer creates, updates, deletes, refused deletes and taken emails: %v", cc)
		}
		if v.Customers.Links == 0 || v.Customers.Refused == 0 {
			t.Errorf("the load left no order linking a customer to check: %v", v.Customers)
		}
	}()
	defer func() {
		line := fmt.Sprintf("chaos %s, products: %d workers, acknowledged %d creates, %d updates, %d deletes; %d refused as stale (409), "+
			"%d refused for a SKU another product holds (422), %d unknown (5xx or lost), all answers %v; %v", name, productWorkers,
			pc["created"], pc["updated"], pc["deleted"], pc["409"], pc["422"], pc["unknown"], pc, cat)
		figure(line)
		t.Log(line)
		wantCatalogue(t, cat)
		if pc["created"] == 0 || pc["updated"] == 0 || pc["deleted"] == 0 || pc["409"] == 0 || pc["422"] == 0 {
			t.Errorf("the load did not exercise product creates, updates, deletes, stale versions and taken SKUs: %v", pc)
		}
	}()
	var other []string
	for k, n := range c {
		switch k {
		case "created", "updated", "deleted", "409", "unknown", "stale accepted", "both won":
		default:
			other = append(other, fmt.Sprintf("%d×%s", n, k))
		}
	}
	sort.Strings(other)
	line := fmt.Sprintf("chaos %s: %d workers, %v, acknowledged %d creates, %d updates, %d deletes; %d refused as stale (409), "+
		"%d unknown (5xx or lost), other answers [%s]%s; %v",
		name, workers, d, c["created"], c["updated"], c["deleted"], c["409"], c["unknown"], strings.Join(other, " "), extra, v)
	figure(line)
	t.Log(line)
	if v.problems() > 0 {
		t.Errorf("%d invariant problems after the repair window, want 0:\n%s", v.problems(), strings.Join(v.details, "\n"))
	}
	if c["created"] == 0 || c["updated"] == 0 || c["deleted"] == 0 || c["409"] == 0 {
		t.Errorf("the load did not exercise creates, updates, deletes and stale versions: %v", c)
	}
}

// TestChaos: 16 workers against two app instances sharing a real Redis,
// then a real 3-node Cluster; after the 5 s repair window every list,
// total and search agrees with the orders that exist, and every
// acknowledged write is there.
func TestChaos(t *testing.T) {
	testutil.Long(t)
	d := chaosDuration()
	for _, target := range []string{"redis", "cluster"} {
		t.Run(target, func(t *testing.T) {
			began := time.Now()
			var redisArg string
			if target == "redis" {
				redisArg = startRedis(t, 0).url()
			} else {
				redisArg = startCluster(t, 3, 0).addrs()
			}
			apps := []*appServer{startApp(t, redisArg), startApp(t, redisArg)}
			bases := []string{apps[0].base, apps[1].base}
			a := chaos(t, func() []string { return bases }, 16, d)
			time.Sleep(5 * time.Second) // the repair window
			start := time.Now()
			v := checkInvariants(t, bases[0], a)
			st, rdb := storeOf(t, redisArg)
			cat := checkCatalogue(t, bases[0], st, rdb, "", a.products)
			reportChaos(t, target, 16, d, a, v, cat, fmt.Sprintf(", checked in %v, the whole test took %v",
				time.Since(start).Round(100*time.Millisecond), time.Since(began).Round(time.Second)))
		})
	}
}

// TestChaosWithFaults: the same load while faults fall between orders'
// transactions and their index writes: one of the two app instances is
// SIGKILLed every 3 s and started again on its port (requests in flight
// are "unknown", not acknowledged), and every 2 s a Redis node (each
// master of the Cluster in turn, or the single server) is paused with
// SIGSTOP for 600 ms — longer than the app's 500 ms Redis timeouts, so
// index writes time out after their record's transaction succeeded, and
// shorter than the Cluster's 1 s node timeout, so no failover. After 5 s
// the invariants hold.
func TestChaosWithFaults(t *testing.T) {
	testutil.Long(t)
	d := chaosDuration()
	for _, target := range []string{"redis", "cluster"} {
		t.Run(target, func(t *testing.T) {
			began := time.Now()
			var (
				redisArg string
				nodes    []*redisServer
			)
			if target == "redis" {
				r := startRedis(t, 0)
				redisArg, nodes = r.url(), []*redisServer{r}
			} else {
				tc := startCluster(t, 3, 0)
				redisArg, nodes = tc.addrs(), tc.masters(t)
			}
			steady := startApp(t, redisArg)
			victim := startApp(t, redisArg)
			var mu sync.Mutex
			bases := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return []string{steady.base, victim.base}
			}
			var kills, pauses atomic.Int64
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					case <-time.After(3 * time.Second):
					}
					mu.Lock()
					old := victim
					mu.Unlock()
					old.kill()
					kills.Add(1)
					next := restartApp(t, old, redisArg)
					mu.Lock()
					victim = next
					mu.Unlock()
				}
			}()
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-done:
						return
					case <-time.After(2 * time.Second):
					}
					n := nodes[i%len(nodes)]
					if n.cmd.Process.Signal(syscall.SIGSTOP) != nil {
						t.Errorf("SIGSTOP of redis-server %s failed: it exited (%v)", n.addr(), n.err)
						return
					}
					time.Sleep(600 * time.Millisecond)
					_ = n.cmd.Process.Signal(syscall.SIGCONT)
					pauses.Add(1)
				}
			}()
			a := chaos(t, bases, 16, d)
			close(done)
			wg.Wait()
			time.Sleep(5 * time.Second) // the repair window
			start := time.Now()
			v := checkInvariants(t, steady.base, a)
			st, rdb := storeOf(t, redisArg)
			cat := checkCatalogue(t, steady.base, st, rdb, "", a.products)
			extra := fmt.Sprintf(", %d app kills, %d Redis pauses, checked in %v, the whole test took %v", kills.Load(), pauses.Load(),
				time.Since(start).Round(100*time.Millisecond), time.Since(began).Round(time.Second))
			reportChaos(t, target+" with faults", 16, d, a, v, cat, extra)
		})
	}
}

// storeOf is a store over the Redis the apps use (redisArg as -redis
// takes it: a redis:// URL, or a Cluster's nodes separated by commas),
// for checks the HTTP API cannot make (SKU claims, store.Repair).
func storeOf(t *testing.T, redisArg string) (*redisstore.Store, redis.UniversalClient) {
	t.Helper()
	var rdb redis.UniversalClient
	cluster := !strings.HasPrefix(redisArg, "redis://")
	if cluster {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(redisArg, ","), ReadTimeout: 5 * time.Second})
	} else {
		opt, err := redis.ParseURL(redisArg)
		if err != nil {
			t.Fatalf("%s: %v", redisArg, err)
		}
		opt.ReadTimeout = 5 * time.Second
		rdb = redis.NewClient(opt)
	}
	t.Cleanup(func() { rdb.Close() })
	return redisstore.New(rdb, redisstore.Options{Cluster: cluster}), rdb
}

// restartApp starts the binary again on old's address.
func restartApp(t *testing.T, old *appServer, redisArg string) *appServer {
	addr := strings.TrimPrefix(old.base, "http://")
	cmd := exec.Command(appBinary(t), "-addr", addr, "-redis", redisArg, "-data", "")
	cmd.Env = appEnv()
	next := &appServer{proc: startProc(t, "app "+addr, cmd), base: old.base}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := quick.Get(next.base + "/healthz"); err == nil {
			res.Body.Close()
			return next
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the restarted app on %s did not answer; its output:\n%s", addr, tail(next.out.String(), 20))
	return next
}
