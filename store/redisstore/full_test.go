package redisstore_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestAFullRedisIsAnOutage: a Redis that refuses writes (maxmemory reached
// under noeviction: "OOM command not allowed", and, for a command queued
// in a MULTI, "EXECABORT Transaction discarded") makes every write a 503
// the client may retry (EUNAVAILABLE), never a 500 (EINTERNAL), and
// stores nothing half; once it takes writes again, they go through. (A
// 500 was seen once under a Cluster failover, where a queued command can
// be refused the same way.)
func TestAFullRedisIsAnOutage(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testutil.Skip(t, testutil.NoRedisServer)
	}
	port := testutil.ClusterPort(t, map[int]bool{})
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--maxmemory-policy", "noeviction")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx := context.Background()
	o := &redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)}
	redisstore.Deadlines(o)
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(5 * time.Second); c.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("redis-server does not answer")
		}
	}
	s := redisstore.New(c, redisstore.Options{})
	ada, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Ada Lovelace"), HasItems: true,
		Items: []store.ItemInput{{Name: "Widget", Quantity: "1", UnitPrice: "1.00"}}})
	must(t, err)

	must(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	if _, err := s.CreateOrder(ctx, store.OrderInput{Customer: ptr("Grace Hopper")}); store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("a create while Redis is full: %v (code %v), want EUNAVAILABLE", err, store.ErrorCode(err))
	}
	if _, err := s.UpdateOrder(ctx, ada.ID, store.OrderInput{Status: ptr("confirmed")}, 0); store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("an update while Redis is full: %v (code %v), want EUNAVAILABLE", err, store.ErrorCode(err))
	}
	if _, err := s.AddOrderNote(ctx, ada.ID, "Called"); store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("a note while Redis is full: %v (code %v), want EUNAVAILABLE", err, store.ErrorCode(err))
	}
	if got, err := s.GetOrder(ctx, ada.ID); err != nil || got.Version != 1 {
		t.Errorf("reading while Redis is full: %+v, %v; want version 1, unchanged", got, err)
	}

	must(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	got, err := s.UpdateOrder(ctx, ada.ID, store.OrderInput{Status: ptr("confirmed")}, 0)
	if err != nil || got.Version != 2 {
		t.Fatalf("an update once Redis takes writes again: %+v, %v", got, err)
	}
	h, err := s.OrderHistory(ctx, ada.ID, "", 10)
	if err != nil || len(h.Entries) != 2 {
		t.Errorf("history after the refused writes: %+v, %v; want the create and the one update", h.Entries, err)
	}
}
