// Package testutil gives tests the Redis servers to run against: always an
// in-process miniredis, and a real Redis (and a Redis Cluster) when one is
// reachable. It is imported by tests only.
package testutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store/redisstore"
)

// Target is one Redis a suite runs against.
type Target struct {
	// Name is the subtest name: "miniredis", "redis" or "cluster".
	Name string
	// Client talks to the target.
	Client redis.UniversalClient
	// Prefix is put before every key, so runs that share a Redis never meet.
	Prefix string
	// Cluster is true for a Redis Cluster (redisstore.Options.Cluster).
	Cluster bool
}

// Miniredis returns a target over a fresh in-process miniredis, closed when
// the test ends. Its prefix is empty, as in the embedded default.
func Miniredis(t testing.TB) Target {
	t.Helper()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return Target{Name: "miniredis", Client: c}
}

const defaultRedis = "127.0.0.1:6379"

// NoRealRedis is the reason a test that needs a real Redis was skipped.
const NoRealRedis = "no real Redis (set ORDERS_TEST_REDIS=host:port, or run .ci/run)"

// NoRedisServer is the reason a test that starts its own redis-server was
// skipped.
const NoRedisServer = "no redis-server installed (apt-get install redis-server, or run .ci/run)"

// NoCluster is the reason a test ran, or was skipped, without a Redis
// Cluster.
const NoCluster = "no Redis Cluster (set ORDERS_TEST_CLUSTER=host:port,…; .ci/run starts one)"

// Targets returns a fresh miniredis target and, when reachable, a real Redis
// at $ORDERS_TEST_REDIS (default 127.0.0.1:6379) and a Redis Cluster at
// $ORDERS_TEST_CLUSTER (comma-separated addresses). What it could not
// reach it leaves out and counts on the package's summary line (Main); a
// missing Redis fails the test instead with ORDERS_REQUIRE_REDIS=1. Real targets get a unique key prefix whose keys
// are deleted when the test ends.
func Targets(t testing.TB) []Target {
	t.Helper()
	targets := []Target{Miniredis(t)}

	addr := os.Getenv("ORDERS_TEST_REDIS")
	if addr == "" {
		addr = defaultRedis
	}
	c := redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  time.Second,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := c.Ping(ctx).Err()
	cancel()
	if err != nil {
		_ = c.Close()
		if os.Getenv("ORDERS_REQUIRE_REDIS") == "1" {
			t.Fatalf("*** no Redis at %s (%v), and ORDERS_REQUIRE_REDIS=1 ***", addr, err)
		}
		t.Logf("no Redis at %s: %v", addr, err)
		Missed(t, "real-Redis", NoRealRedis)
	} else {
		targets = append(targets, realTarget(t, "redis", c, false))
	}

	if addrs := os.Getenv("ORDERS_TEST_CLUSTER"); addrs != "" {
		cc := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        strings.Split(addrs, ","),
			DialTimeout:  time.Second,
			ReadTimeout:  time.Second,
			WriteTimeout: time.Second,
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := cc.Ping(ctx).Err()
		cancel()
		if err != nil {
			_ = cc.Close()
			t.Fatalf("ORDERS_TEST_CLUSTER=%s: %v", addrs, err)
		}
		targets = append(targets, realTarget(t, "cluster", cc, true))
	} else {
		Missed(t, "Cluster", NoCluster)
	}
	return targets
}

// realTarget gives c a unique prefix and deletes the prefix's keys, then
// closes c, when the test ends.
func realTarget(t testing.TB, name string, c redis.UniversalClient, cluster bool) Target {
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if cc, ok := c.(*redis.ClusterClient); ok {
			err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
				return deletePrefix(ctx, n, prefix)
			})
		} else {
			err = deletePrefix(ctx, c, prefix)
		}
		if err != nil {
			t.Errorf("cleaning up keys %s*: %v", prefix, err)
		}
	})
	return Target{Name: name, Client: c, Prefix: prefix, Cluster: cluster}
}

// deletePrefix deletes every key of one node that starts with prefix.
func deletePrefix(ctx context.Context, c redis.Cmdable, prefix string) error {
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		// One key per UNLINK: on a cluster, keys of one node may still
		// belong to different slots.
		if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}

// NewStore returns a store over tg with tg's prefix and cluster mode.
func NewStore(t testing.TB, tg Target) *redisstore.Store {
	t.Helper()
	return redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster})
}

// Counter counts the round trips a client makes: one per command, and one
// per pipeline or transaction however many commands it holds.
type Counter struct{ n atomic.Int64 }

// Calls returns the round trips counted since the last Reset.
func (c *Counter) Calls() int64 { return c.n.Load() }

// Reset sets the count back to zero.
func (c *Counter) Reset() { c.n.Store(0) }

// DialHook implements redis.Hook.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// CountingClient returns a new client to the same single Redis as tg (not
// a Cluster: it skips the test then) that counts its round trips. Its pools
// are warmed (a command, a pipeline, a transaction) and the count reset, so
// connection setup (HELLO, CLIENT SETINFO) is not counted.
func CountingClient(t testing.TB, tg Target) (*redis.Client, *Counter) {
	t.Helper()
	base, ok := tg.Client.(*redis.Client)
	if !ok {
		t.Skipf("%s: round trips are counted on a single Redis only", tg.Name)
	}
	o := base.Options()
	c := redis.NewClient(&redis.Options{
		Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	n := &Counter{}
	c.AddHook(n)
	// go-redis keeps pipelines in a pool of their own: warm both.
	ctx := context.Background()
	warm := func(p redis.Pipeliner) error { p.Ping(ctx); return nil }
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s: ping: %v", tg.Name, err)
	}
	if _, err := c.Pipelined(ctx, warm); err != nil {
		t.Fatalf("%s: pipelined ping: %v", tg.Name, err)
	}
	if _, err := c.TxPipelined(ctx, warm); err != nil {
		t.Fatalf("%s: transaction ping: %v", tg.Name, err)
	}
	n.Reset()
	return c, n
}
