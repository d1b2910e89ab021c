// Command export measures the CSV export of the orders' List: it serves
// the application over a Redis that holds the orders (seed them first with
// bench/seedmem), downloads /orders.csv over HTTP, checks it has one row
// per order, and prints the rows per second and how much the server's
// memory grew while it streamed (the Go heap in use and the process's
// resident set, each sampled every 10 ms, peak minus before). It is part
// of the benchmark harness, not of the application.
//
//	go run ./bench/seedmem -redis 127.0.0.1:21500 -n 1000000 -flush
//	go run ./bench/export -redis 127.0.0.1:21500 [-query status=shipped]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/routes"
	"orders/store/redisstore"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:21500", "Redis host:port holding the orders")
	query := flag.String("query", "", "the List's query, e.g. status=shipped&sort=-total")
	path := flag.String("path", "/orders.csv", "the export to download")
	root := flag.String("root", ".", "the repository (its layouts, partials and public)")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rdb.Close()
	st := redisstore.New(rdb, redisstore.Options{})
	n, err := st.CountOrders(ctx)
	if err != nil || n == 0 {
		log.Fatalf("no orders in %s (%v): seed them with bench/seedmem", *addr, err)
	}
	app, err := routes.New(routes.Config{Store: st, Files: os.DirFS(*root), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go app.Listener(ln)
	defer app.Shutdown()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := rss()
	var peakHeap, peakRSS, peakLive atomic.Uint64
	peakLive.Store(before.HeapAlloc)
	peakHeap.Store(before.HeapInuse)
	peakRSS.Store(rssBefore)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for tick := 1; ; tick++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if tick%200 == 0 {
				// Every 2 s, what is live: the heap right after a collection.
				runtime.GC()
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peakLive.Load() {
					peakLive.Store(m.HeapAlloc)
				}
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peakHeap.Load() {
				peakHeap.Store(m.HeapInuse)
			}
			if r := rss(); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
		}
	}()

	url := "http://" + ln.Addr().String() + *path
	if *query != "" {
		url += "?" + *query
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = "127.0.0.1"
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		log.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	// Lines, not records: the demo orders have no line breaks in their cells.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var rows, bytes int64
	for sc.Scan() {
		rows++
		bytes += int64(len(sc.Bytes())) + 1
	}
	resp.Body.Close()
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	rows-- // the header
	fmt.Printf("GET %s: %d rows (%d orders in the store), %.1f MB in %.2f s: %.0f rows/s\n",
		*path+"?"+*query, rows, n, float64(bytes)/1e6, took.Seconds(), float64(rows)/took.Seconds())
	fmt.Printf("heap in use: %.1f MB before, peak %.1f MB (growth %.1f MB); RSS %.1f MB before, peak %.1f MB (growth %.1f MB)\n",
		mb(before.HeapInuse), mb(peakHeap.Load()), mb(peakHeap.Load())-mb(before.HeapInuse),
		mb(rssBefore), mb(peakRSS.Load()), mb(peakRSS.Load())-mb(rssBefore))
	fmt.Printf("live heap (after a collection, every 2 s): %.1f MB before, peak %.1f MB (growth %.1f MB)\n",
		mb(before.HeapAlloc), mb(peakLive.Load()), mb(peakLive.Load())-mb(before.HeapAlloc))
	fmt.Printf("RESULT export_rows=%d export_seconds=%.2f rows_per_second=%.0f heap_growth_mb=%.1f rss_growth_mb=%.1f live_growth_mb=%.1f\n",
		rows, took.Seconds(), float64(rows)/took.Seconds(), mb(peakHeap.Load())-mb(before.HeapInuse), mb(peakRSS.Load())-mb(rssBefore),
		mb(peakLive.Load())-mb(before.HeapAlloc))
	if *query == "" && *path == "/orders.csv" && rows != n {
		fmt.Fprintf(os.Stderr, "MISMATCH: %d rows, %d orders\n", rows, n)
		os.Exit(1)
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// rss is the process's resident set in bytes (Linux), 0 elsewhere.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
