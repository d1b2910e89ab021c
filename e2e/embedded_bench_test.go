package e2e

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"orders/testutil"
)

// BenchmarkEmbeddedCreatesOverHTTP measures what a user of the default
// store sees: the built program on the embedded store with a data file,
// 16 HTTP clients creating orders at once; the figure is creates per
// second.
//
//	go test -run '^$' -bench EmbeddedCreatesOverHTTP -benchtime 20000x ./e2e
func BenchmarkEmbeddedCreatesOverHTTP(b *testing.B) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort(b))
	cmd := exec.Command(appBinary(b), "-addr", addr, "-data", filepath.Join(b.TempDir(), "orders.json"))
	cmd.Env = appEnv()
	app := &appServer{proc: startProc(b, "app "+addr, cmd), base: "http://" + addr}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if res, err := quick.Get(app.base + "/healthz"); err == nil {
			res.Body.Close()
			break
		}
		if !app.running() || time.Now().After(deadline) {
			b.Fatalf("the app did not start; its output:\n%s", tail(app.out.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
	body := jsonOf(map[string]any{"customer": "Bench", "items": []any{
		map[string]any{"sku": "SKU-1", "name": "Part", "quantity": 2, "unit_price": "9.99"}}})
	b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := call(app.base, http.MethodPost, "/orders", "application/json", body, testutil.HJSON)
			if err != nil || r.Status != http.StatusCreated {
				b.Errorf("POST /orders: %v %v", err, r)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}
