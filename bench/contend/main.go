// Command contend measures what a costly list query does to everyone
// else: -c clients repeat one query (by default the date range with the
// total sort, at random pages) against a seeded Redis while one client
// reads plain order pages (GET /orders/<id> and the first List page); it
// prints the plain reads' latency alone and under the load, and how the
// costly query was answered. It is part of the benchmark harness, not of
// the application.
//
//	go run ./bench/contend -redis 127.0.0.1:6379 -d 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "a Redis seeded with demo orders (bench/seedmem)")
	clients := flag.Int("c", 4, "clients repeating the costly query")
	dur := flag.Duration("d", 10*time.Second, "how long each phase runs")
	sort := flag.String("sort", "-total", "the costly query's sort")
	days := flag.Int("days", 0, "the costly query's range in days back from today (0: from 2000-01-01, everything)")
	flag.Parse()
	ctx := context.Background()
	o := &redis.Options{Addr: *addr}
	redisstore.Deadlines(o)
	rdb := redis.NewClient(o)
	defer rdb.Close()
	s := redisstore.New(rdb, redisstore.Options{})
	n, err := s.CountOrders(ctx)
	if err != nil || n == 0 {
		log.Fatalf("no orders (%v): seed with bench/seedmem first", err)
	}
	costly := store.OrderQuery{Sort: store.Sort(*sort), From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), PerPage: 25}
	if *days > 0 {
		costly.From = time.Now().UTC().AddDate(0, 0, -*days)
	}
	plain := func() []time.Duration {
		var got []time.Duration
		for end := time.Now().Add(*dur); time.Now().Before(end); {
			start := time.Now()
			req, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			_, err := s.GetOrder(req, 1+rand.Int64N(n))
			if err == nil {
				_, err = s.ListOrders(req, store.OrderQuery{PerPage: 25})
			}
			cancel()
			if err != nil {
				got = append(got, -1)
				continue
			}
			got = append(got, time.Since(start))
		}
		return got
	}
	report := func(what string, d []time.Duration) {
		failed := 0
		ok := d[:0:0]
		for _, x := range d {
			if x < 0 {
				failed++
			} else {
				ok = append(ok, x)
			}
		}
		slices.Sort(ok)
		q := func(p float64) float64 {
			if len(ok) == 0 {
				return 0
			}
			return float64(ok[int(p*float64(len(ok)-1))]) / float64(time.Millisecond)
		}
		fmt.Printf("%-34s %6d reads  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  %d failed\n", what, len(d), q(0.5), q(0.99), q(1), failed)
	}
	fmt.Printf("%d orders; costly query: sort=%s from=%s, random pages, %d clients\n", n, costly.Sort, costly.From.Format(time.DateOnly), *clients)
	report("plain reads alone", plain())
	var stop atomic.Bool
	var answered, refused, failed atomic.Int64
	var wg sync.WaitGroup
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				q := costly
				q.Page = 1 + rand.IntN(int(n)/25)
				req, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
				_, err := s.ListOrders(req, q)
				cancel()
				switch {
				case err == nil:
					answered.Add(1)
				case store.ErrorCode(err) == store.EBROAD:
					refused.Add(1)
				default:
					failed.Add(1)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	report(fmt.Sprintf("plain reads beside %d costly", *clients), plain())
	stop.Store(true)
	wg.Wait()
	fmt.Printf("costly query: %d answered, %d refused as too broad (400), %d failed (503)\n", answered.Load(), refused.Load(), failed.Load())
}
