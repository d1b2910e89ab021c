package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orders/testutil"
)

// startEmbedded runs the built program on the embedded store with its data
// file at data, and waits until /healthz answers.
func startEmbedded(t *testing.T, data string, env ...string) *appServer {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(appBinary(t), "-addr", addr, "-data", data)
	cmd.Env = appEnv(env...)
	a := &appServer{proc: startProc(t, "app "+addr, cmd), base: "http://" + addr}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if res, err := quick.Get(a.base + "/healthz"); err == nil {
			res.Body.Close()
			return a
		}
		if !a.running() || time.Now().After(deadline) {
			t.Fatalf("the app did not start; its output:\n%s", tail(a.out.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answered is what the writers were told: every answer that acknowledged a
// write.
type answered struct {
	mu       sync.Mutex
	live     []int64
	created  map[int64]bool
	version  map[int64]int64     // the highest version acknowledged
	order    map[int64]orderJSON // the order as that answer showed it
	deleted  map[int64]bool      // 204
	unknown  map[int64]bool      // a DELETE with no answer: either way
	reused   []int64             // ids a 201 gave that an earlier 201 had given
	writes   int
	creates  int
	updates  int
	deletes  int
	cutShort int // requests that got no answer (the kills)
}

// write runs one random create, update or delete and notes its answer.
func (a *answered) write(base string, r *rand.Rand, w int) {
	a.mu.Lock()
	var id int64
	if len(a.live) > 0 {
		id = a.live[r.IntN(len(a.live))]
	}
	a.mu.Unlock()
	op := r.IntN(100)
	method, path, body := http.MethodPost, "/orders", map[string]any{}
	switch {
	case id == 0 || op < 40:
		body["customer"] = uniqueName(r, w)
		body["items"] = randomItems(r)
	case op < 85:
		method, path = http.MethodPut, "/orders/"+strconv.FormatInt(id, 10)
		if r.IntN(2) == 0 {
			body["customer"] = uniqueName(r, w)
		} else {
			body["items"] = randomItems(r)
		}
	default:
		method, path, body = http.MethodDelete, "/orders/"+strconv.FormatInt(id, 10), nil
	}
	var payload []byte
	ctype := ""
	if body != nil {
		payload, ctype = jsonOf(body), "application/json"
	}
	res, err := call(base, method, path, ctype, payload, testutil.HJSON)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.cutShort++
		if method == http.MethodDelete {
			a.unknown[id] = true
		}
		return
	}
	switch res.Status {
	case http.StatusCreated, http.StatusOK:
		var o orderJSON
		if res.Decode(&o) != nil || o.ID == 0 {
			return
		}
		a.writes++
		if method == http.MethodPost {
			a.creates++
			if a.created[o.ID] {
				a.reused = append(a.reused, o.ID)
			}
			a.created[o.ID] = true
			a.live = append(a.live, o.ID)
		} else {
			a.updates++
		}
		if o.Version > a.version[o.ID] {
			a.version[o.ID], a.order[o.ID] = o.Version, o
		}
	case http.StatusNoContent:
		a.writes++
		a.deletes++
		a.deleted[id] = true
		for i, x := range a.live {
			if x == id {
				a.live = append(a.live[:i], a.live[i+1:]...)
				break
			}
		}
	}
}

// check fetches every order a write was acknowledged for and counts what
// is lost: a created order gone, an update undone, a deleted order back.
func (a *answered) check(t *testing.T, base string) (lost int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]int64, 0, len(a.created))
	for id := range a.created {
		if !a.unknown[id] || a.deleted[id] {
			ids = append(ids, id)
		}
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next = make(chan int64)
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if lost++; lost <= 10 {
			t.Errorf(format, args...)
		}
	}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				r, err := call(base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
				if err != nil {
					report("GET /orders/%d: %v", id, err)
					continue
				}
				if a.deleted[id] {
					if r.Status != http.StatusNotFound {
						report("order %d: its DELETE was acknowledged (204), but after the restart GET answers %d", id, r.Status)
					}
					continue
				}
				var o orderJSON
				if r.Status != http.StatusOK || r.Decode(&o) != nil {
					report("order %d: created (201) and acknowledged at version %d, but after the restart GET answers %d %s", id, a.version[id], r.Status, testutil.Snippet(r.Body))
					continue
				}
				want := a.order[id]
				switch {
				case o.Version < want.Version:
					report("order %d: version %d after the restart, but version %d was acknowledged", id, o.Version, want.Version)
				case o.Version == want.Version && (o.Customer != want.Customer || o.Total != want.Total || o.ItemCount != want.ItemCount):
					report("order %d at version %d: %+v after the restart, %+v acknowledged", id, o.Version, o.summary(), want.summary())
				}
			}
		}()
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return lost
}

// TestEmbeddedKillLosesNoAcknowledgedWrite: the default store under 4
// concurrent writers (creates, updates, deletes over HTTP), killed with
// SIGKILL at a random moment, three times in a row, each time restarted on
// the same files: every create, update and delete that was answered is
// there after every restart, and no id answered before is handed out
// again. Snapshots every 500 ms, so kills also fall around them.
func TestEmbeddedKillLosesNoAcknowledgedWrite(t *testing.T) {
	testutil.Long(t)
	const writers, kills = 4, 3
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	data := filepath.Join(t.TempDir(), "orders.json")
	env := "ORDERS_SNAPSHOT_INTERVAL=500ms"
	a := &answered{created: map[int64]bool{}, version: map[int64]int64{}, order: map[int64]orderJSON{},
		deleted: map[int64]bool{}, unknown: map[int64]bool{}}
	app := startEmbedded(t, data, env)
	lost := 0
	for k := 1; k <= kills; k++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed+uint64(k), uint64(w)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					a.write(app.base, r, w)
				}
			}()
		}
		time.Sleep(time.Duration(1000+rnd.IntN(2000)) * time.Millisecond)
		if !app.running() {
			t.Fatalf("the app exited under load (%v):\n%s", app.err, tail(app.out.String(), 30))
		}
		close(stop) // no writer starts another request; those in flight are cut short
		app.signal(t, syscall.SIGKILL)
		<-app.exited
		wg.Wait()
		app = startEmbedded(t, data, env)
		n := a.check(t, app.base)
		lost += n
		t.Logf("kill %d: %d writes acknowledged so far, %d of them lost", k, a.writes, n)
	}
	// A new order after the last restart gets an id never handed out.
	var fresh orderJSON
	mustCall(t, app.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "After the kills"}), testutil.HJSON).
		WantStatus(t, http.StatusCreated).JSON(t, &fresh)
	if a.created[fresh.ID] {
		a.reused = append(a.reused, fresh.ID)
	}
	if len(a.reused) > 0 {
		t.Errorf("%d ids were handed out twice (answered 201 before a kill and again after): %v", len(a.reused), a.reused[:min(10, len(a.reused))])
	}
	if a.creates < 50 || a.updates < 50 || a.deletes < 10 {
		t.Errorf("the load was too light to prove anything: %d creates, %d updates, %d deletes acknowledged", a.creates, a.updates, a.deletes)
	}
	if out := app.out.String(); strings.Contains(out, "WARNING") {
		t.Logf("the last start warned:\n%s", tail(out, 5))
	}
	figure(fmt.Sprintf("embedded store, kill -9 under %d writers: %d kills, %d acknowledged writes (%d creates, %d updates, %d deletes), %d lost, %d ids handed out twice, %d requests cut short by the kills",
		writers, kills, a.writes, a.creates, a.updates, a.deletes, lost, len(a.reused), a.cutShort))
}

// TestEmbeddedSecondProcessOnTheSameDataRefusesToStart: a second program
// started on the data file another one is using exits non-zero at once,
// saying which file and that another process holds it; the first goes on
// serving, and its data is whole after it stops and starts again.
func TestEmbeddedSecondProcessOnTheSameDataRefusesToStart(t *testing.T) {
	testutil.Long(t)
	data := filepath.Join(t.TempDir(), "orders.json")
	first := startEmbedded(t, data)
	create := func(name string) int64 {
		t.Helper()
		var o orderJSON
		mustCall(t, first.base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": name}), testutil.HJSON).
			WantStatus(t, http.StatusCreated).JSON(t, &o)
		return o.ID
	}
	ada := create("Ada")

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(appBinary(t), "-addr", addr, "-data", data)
	cmd.Env = appEnv()
	second := startProc(t, "second app "+addr, cmd)
	select {
	case <-second.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("a second program on the data file %s of a running one still runs after 10 s; want it to refuse to start. Its output:\n%s", data, tail(second.out.String(), 10))
	}
	var exit *exec.ExitError
	if !errors.As(second.err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("the second program exited with %v, want a non-zero status", second.err)
	}
	if out := second.out.String(); !strings.Contains(out, data) || !strings.Contains(out, "another process") {
		t.Errorf("the second program's output does not name %s and say another process holds it:\n%s", data, tail(out, 10))
	}

	grace := create("Grace")
	for _, id := range []int64{ada, grace} {
		mustCall(t, first.base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON).WantStatus(t, http.StatusOK)
	}
	first.signal(t, syscall.SIGTERM)
	<-first.exited
	again := startEmbedded(t, data)
	for _, id := range []int64{ada, grace} {
		mustCall(t, again.base, http.MethodGet, "/orders/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON).WantStatus(t, http.StatusOK)
	}
}
