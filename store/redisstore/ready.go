package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Ready reports whether the store can serve requests: Redis answers (on a
// Cluster, every slot has a master that answers) and the Health function
// of Options, if any, reports no error; and, after Redis forgot writes,
// not before each id counter is past every id in use.
func (s *Store) Ready(ctx context.Context) error {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		if err := s.clusterReady(ctx, cc); err != nil {
			return unavailable(err)
		}
	} else if err := s.Ping(ctx); err != nil {
		return err
	}
	if s.forgot.unsafe.Load() {
		return &store.Error{Code: store.EUNAVAILABLE, Message: "Redis forgot writes; the id counters are being moved past the ids in use"}
	}
	if s.health != nil {
		if err := s.health(); err != nil {
			return &store.Error{Code: store.EUNAVAILABLE, Message: err.Error(), Err: err}
		}
	}
	return nil
}

// readyCache keeps a Cluster's readiness for a moment, so a flood of
// probes costs the Cluster little.
type readyCache struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

const (
	readyCacheFor = 250 * time.Millisecond
	readyTimeout  = 400 * time.Millisecond
)

// clusterReady checks that the slot map covers all 16384 slots and that
// every master answers PING: while a dead master's replica has not taken
// over, its slots have no master that answers, and the app is not ready
// (/readyz 503) while any slot has none. The masters
// are pinged over connections of the probe's own, in parallel: the
// client's ForEachMaster would re-read its slot map as a side effect, and
// a probe must not be what keeps the app's routing fresh. It takes at most
// readyTimeout.
func (s *Store) clusterReady(ctx context.Context, cc *redis.ClusterClient) error {
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	if time.Since(s.ready.at) < readyCacheFor {
		return s.ready.err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := func() error {
		//lint:ignore SA1019 its successor, CLUSTER SHARDS, needs Redis 7; we support Redis 6
		slots, err := cc.ClusterSlots(ctx).Result()
		if err != nil {
			return err
		}
		covered := 0
		masters := map[string]bool{}
		for _, sl := range slots {
			covered += sl.End - sl.Start + 1
			if len(sl.Nodes) > 0 {
				masters[sl.Nodes[0].Addr] = true
			}
		}
		if covered != 16384 {
			return fmt.Errorf("only %d of 16384 slots have a master", covered)
		}
		o := cc.Options()
		errs := make(chan error, len(masters))
		for addr := range masters {
			go func() {
				c := redis.NewClient(&redis.Options{Addr: addr, Username: o.Username, Password: o.Password,
					TLSConfig: o.TLSConfig, DialTimeout: readyTimeout, ContextTimeoutEnabled: true,
					MaxRetries: -1, DialerRetries: 1, PoolSize: 1})
				defer c.Close()
				if err := c.Ping(ctx).Err(); err != nil {
					errs <- fmt.Errorf("the master %s does not answer: %w", addr, err)
					return
				}
				errs <- nil
			}()
		}
		for range masters {
			if e := <-errs; e != nil && err == nil {
				err = e
			}
		}
		return err
	}()
	s.ready.at, s.ready.err = time.Now(), err
	return err
}
