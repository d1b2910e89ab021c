package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/testutil"
)

// startPausableRedis starts a redis-server of the test's own on a free
// loopback port (one the test may pause), stopped when the test ends. It
// skips without redis-server, unless ORDERS_REQUIRE_REDIS=1.
func startPausableRedis(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("ORDERS_REQUIRE_REDIS") == "1" {
			t.Fatalf("*** redis-server is not installed (%v), and ORDERS_REQUIRE_REDIS=1 ***", err)
		}
		testutil.Skip(t, testutil.NoRedisServer)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", t.TempDir(),
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for range 200 {
		if c.Ping(context.Background()).Err() == nil {
			return addr
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return ""
}

// TestARedisPauseLogsAFewLinesNotOnePerRequest: while Redis is paused for
// 5 s and 64 clients keep asking, every request still gets its one access
// log line, but the warnings and errors beside them are a handful: the
// first of each kind in full, then one line per interval with a count.
func TestARedisPauseLogsAFewLinesNotOnePerRequest(t *testing.T) {
	testutil.Long(t)
	addr := startPausableRedis(t)
	r := startObserved(t, nil, "-redis", addr, "-log-format", "json")
	createOrder(t, r.base, "Ada Lovelace")

	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "5000", "ALL").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	paused := time.Now()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var (
		wg       sync.WaitGroup
		requests atomic.Int64
	)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(paused) < 6*time.Second {
				req, _ := http.NewRequest(http.MethodGet, r.base+"/orders", nil)
				req.Header.Set("Accept", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	var (
		access, unavailable, other int
		firstInFull, summarised    bool
		others                     []string
	)
	sc := bufio.NewScanner(strings.NewReader(r.log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a log line is no JSON object (%v): %s", err, sc.Text())
		}
		if l["msg"] == "request" {
			access++
			if l["status"] == 503.0 {
				unavailable++
			}
			continue
		}
		if l["level"] != "WARN" && l["level"] != "ERROR" {
			continue
		}
		other++
		others = append(others, sc.Text())
		if l["msg"] == "redis unavailable" {
			if _, ok := l["repeated"]; ok {
				summarised = true
			} else if l["err"] != nil && l["request_id"] != nil {
				firstInFull = true
			}
		}
	}
	t.Logf("Redis paused 5 s: %d requests answered, %d access lines (%d of them 503), %d other WARN/ERROR lines",
		requests.Load(), access, unavailable, other)
	if unavailable < 100 {
		t.Fatalf("only %d requests got 503 during the pause: the test proves nothing", unavailable)
	}
	if int64(access) != requests.Load()+1 { // and the create before the pause
		t.Errorf("%d access lines for %d requests answered and one create: want one per request", access, requests.Load())
	}
	if other > 24 {
		t.Errorf("%d WARN/ERROR lines besides the access log during a 5 s pause, want at most a few dozen; the first ones:\n%s",
			other, strings.Join(others[:min(10, len(others))], "\n"))
	}
	if !firstInFull || !summarised {
		t.Errorf("the first 'redis unavailable' in full: %v; a summary line with its count: %v; want both:\n%s",
			firstInFull, summarised, strings.Join(others, "\n"))
	}
}
