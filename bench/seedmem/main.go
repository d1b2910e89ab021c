// Command seedmem seeds a Redis with demo orders through store.Seed and
// reports the time it took and the memory the orders take: INFO memory
// used_memory before and after, divided by the count, and MEMORY USAGE of
// one order hash and of each index. It is part of the benchmark harness
// (bench/run.sh), not of the application.
//
//	go run ./bench/seedmem -redis 127.0.0.1:6379 -n 1000000 [-flush] [-cpuprofile f]
//	go run ./bench/seedmem -redis 127.0.0.1:6379 -db 0 -report   # no seeding: the sizes of what is there
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis host:port (a scratch one: see -flush)")
	n := flag.Int("n", 10000, "orders to seed")
	flush := flag.Bool("flush", false, "FLUSHALL first (the Redis must be a scratch one)")
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the seeding here")
	db := flag.Int("db", 0, "database number")
	report := flag.Bool("report", false, "seed nothing: report the sizes of the orders already there")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, DB: *db, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rdb.Close()
	st := redisstore.New(rdb, redisstore.Options{})
	if *report {
		c, err := st.CountOrders(ctx)
		if err != nil || c == 0 {
			log.Fatalf("no orders to report on (%v)", err)
		}
		sizes(ctx, rdb, int(c))
		return
	}
	if *flush {
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			log.Fatal(err)
		}
	}
	if c, err := st.CountOrders(ctx); err != nil || c != 0 {
		log.Fatalf("the store must be empty (%d orders, %v): use -flush on a scratch Redis", c, err)
	}
	before := usedMemory(ctx, rdb)
	cpuBefore := redisCPU(ctx, rdb)
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	wrote, err := st.Seed(ctx, *n, nil)
	took := time.Since(start)
	if err != nil {
		log.Fatalf("seed: %v (wrote %d)", err, wrote)
	}
	after := usedMemory(ctx, rdb)
	fmt.Printf("seeded %d orders in %.2f s (%.0f orders/s); redis-server CPU %.2f s\n",
		wrote, took.Seconds(), float64(wrote)/took.Seconds(), redisCPU(ctx, rdb)-cpuBefore)
	fmt.Printf("used_memory %d -> %d: %.0f bytes per order (indexes included)\n", before, after, float64(after-before)/float64(wrote))
	fmt.Printf("RESULT seed_orders=%d seed_seconds=%.2f bytes_per_order=%.0f\n", wrote, took.Seconds(), float64(after-before)/float64(wrote))
	sizes(ctx, rdb, wrote)
}

// sizes prints MEMORY USAGE of a sample order hash, of a sample of 1000
// order hashes, and of every index.
func sizes(ctx context.Context, rdb *redis.Client, wrote int) {
	sample := strconv.Itoa(wrote / 2)
	enc, _ := rdb.ObjectEncoding(ctx, "o:{"+sample+"}").Result()
	mu, _ := rdb.MemoryUsage(ctx, "o:{"+sample+"}").Result()
	hl, _ := rdb.HLen(ctx, "o:{"+sample+"}").Result()
	fmt.Printf("MEMORY USAGE o:{%s}: %d bytes (%s, %d fields)\n", sample, mu, enc, hl)
	if h, err := rdb.HGetAll(ctx, "o:{"+sample+"}").Result(); err == nil {
		fields := make([]string, 0, len(h))
		for f := range h {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		fmt.Printf("  HGETALL o:{%s}:", sample)
		for _, f := range fields {
			fmt.Printf(" %s=%q", f, h[f])
		}
		fmt.Println()
	}
	if cfg, err := rdb.ConfigGet(ctx, "*-max-listpack-*").Result(); err == nil {
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Printf("  %s %s\n", k, cfg[k])
		}
	}
	var sum, hashes, notListpack int64
	var keys []string
	for _, k := range []string{"ix:{id}", "ix:name", "ix:{up}", "ix:{tot}"} {
		for _, s := range append([]store.Status{""}, store.Statuses...) {
			key := k
			if s != "" {
				key += ":" + string(s)
			} else if key != "ix:name" {
				continue // per status only
			}
			keys = append(keys, key)
		}
	}
	// The search sets, split by status and a term's first character.
	var terms []string
	iter := rdb.Scan(ctx, 0, "ix:{w}:*", 1000).Iterator()
	for iter.Next(ctx) {
		terms = append(terms, iter.Val())
	}
	slices.Sort(terms)
	keys = append(keys, terms...)
	group := map[string]int64{}
	for _, key := range keys {
		u, _ := rdb.MemoryUsage(ctx, key, 0).Result()
		c, _ := rdb.ZCard(ctx, key).Result()
		enc, _ := rdb.ObjectEncoding(ctx, key).Result()
		sum += u
		g, _, _ := strings.Cut(strings.TrimPrefix(key, "ix:"), ":")
		g = strings.Trim(g, "{}")
		if g == "w" && strings.Count(key, ":") == 4 { // ix:{w}:<status>:<c>:<depth>
			g = "w dups"
		}
		group[g] += u
		if c > 0 && !strings.HasPrefix(key, "ix:{w}:") {
			fmt.Printf("  %-20s %8d entries %10d bytes %6.1f per entry (%s)\n", key, c, u, float64(u)/float64(max(c, 1)), enc)
		}
	}
	fmt.Printf("  ix:{w}:*             %d sets (terms by status and first character, and their dup sets)\n", len(terms))
	for _, g := range []string{"id", "up", "tot", "name", "w", "w dups"} {
		fmt.Printf("  %-8s %6.1f bytes per order\n", g, float64(group[g])/float64(wrote))
	}
	// The order hashes: a sample of MEMORY USAGE, scaled.
	const samples = 1000
	for i := 1; i <= samples; i++ {
		id := 1 + (i*wrote)/samples - 1
		key := "o:{" + strconv.Itoa(max(id, 1)) + "}"
		u, _ := rdb.MemoryUsage(ctx, key).Result()
		hashes += u
		if e, _ := rdb.ObjectEncoding(ctx, key).Result(); e != "listpack" {
			notListpack++
		}
	}
	fmt.Printf("indexes %.0f bytes per order; order hashes %.0f bytes per order (MEMORY USAGE, %d sampled, %d not listpack)\n",
		float64(sum)/float64(wrote), float64(hashes)/samples, samples, notListpack)
	fmt.Printf("RESULT hash_bytes=%.0f index_bytes=%.0f sample_hash=%d\n", float64(hashes)/samples, float64(sum)/float64(wrote), mu)
}

func usedMemory(ctx context.Context, rdb *redis.Client) int64 {
	return infoInt(ctx, rdb, "memory", "used_memory")
}

// redisCPU is the server's CPU seconds (user and system).
func redisCPU(ctx context.Context, rdb *redis.Client) float64 {
	s, _ := rdb.Info(ctx, "cpu").Result()
	var t float64
	for _, l := range strings.Split(s, "\r\n") {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(l, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				t += f
			}
		}
	}
	return t
}

func infoInt(ctx context.Context, rdb *redis.Client, section, field string) int64 {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
