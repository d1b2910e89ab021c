package routes

import (
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store/redisstore"
	"orders/testutil"
)

// TestTwoInstances: two application instances that share nothing but Redis
// (each its own client and connections) serve the same orders, and a stale
// write through one after a change through the other is refused.
func TestTwoInstances(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			var second redis.UniversalClient
			switch c := tg.Client.(type) {
			case *redis.Client:
				second = redis.NewClient(&redis.Options{Addr: c.Options().Addr})
			case *redis.ClusterClient:
				second = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Options().Addrs})
			default:
				t.Skipf("unknown client %T", c)
			}
			t.Cleanup(func() { second.Close() })
			a := newTestApp(t, tg.Name+"-a", redisstore.New(tg.Client, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster}))
			b := newTestApp(t, tg.Name+"-b", redisstore.New(second, redisstore.Options{Prefix: tg.Prefix, Cluster: tg.Cluster}))

			o := a.create(t, map[string]any{"customer": "Shared Customer", "items": []any{item("Mug", 2, "1.50")}})
			got := b.fetch(t, o.ID)
			if got.Customer != "Shared Customer" || got.Total != "3.00" {
				t.Fatalf("instance b reads %+v, want the order instance a created", got)
			}
			b.update(t, o.ID, map[string]any{"status": "confirmed", "version": 1})
			// Instance a still holds version 1: its write is stale.
			a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"notes": "late", "version": 1}), testutil.HJSON).
				WantStatus(t, http.StatusConflict)
			if l := a.list(t, "/orders?status=confirmed"); l.Total != 1 {
				t.Errorf("instance a lists %d confirmed orders after b confirmed one, want 1", l.Total)
			}
			if l := b.list(t, "/orders?q=shared"); l.Total != 1 {
				t.Errorf("instance b finds %d orders for 'shared', want 1", l.Total)
			}
		})
	}
}
