package embedded_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/embedded"
	"orders/store/redisstore"
)

// BenchmarkEmbeddedCreates measures the embedded store's write rate with a
// data file: orders created per second by 16 goroutines at once, through
// the store as the app calls it (each create is an INCR of the id counter
// and one MULTI/EXEC).
//
//	go test -run '^$' -bench EmbeddedCreates -benchtime 20000x ./store/embedded
func BenchmarkEmbeddedCreates(b *testing.B) {
	e, err := embedded.Open(embedded.Options{Path: filepath.Join(b.TempDir(), "orders.json")}, &redis.Options{PoolSize: 32})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	s := redisstore.New(e.Client(), redisstore.Options{})
	ctx := context.Background()
	b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var n atomic.Int64
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			name, qty := "Bench "+strconv.FormatInt(i, 10), "2"
			if _, err := s.CreateOrder(ctx, store.OrderInput{Customer: &name, HasItems: true,
				Items: []store.ItemInput{{SKU: "SKU-1", Name: "Part", Quantity: qty, UnitPrice: "9.99"}}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/create")
}

// cpuTime is the CPU time the process used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
