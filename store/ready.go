package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ready reports whether the store can serve requests: Redis answers (on a
// Cluster, every slot has a master that answers) and the Health function
// of Options, if any, reports no error.
func (s *Store) Ready(ctx context.Context) error {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		if err := s.clusterReady(ctx, cc); err != nil {
			return unavailable(err)
		}
	} else if err := s.Ping(ctx); err != nil {
		return err
	}
	if s.health != nil {
		if err := s.health(); err != nil {
			return &Error{Code: EUNAVAILABLE, Message: err.Error(), Err: err}
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

const readyCacheFor = 250 * time.Millisecond

// clusterReady checks that the slot map covers all 16384 slots and that
// every master answers PING: while a dead master's replica has not taken
// over, its slots have no master that answers (CONTRACT §8).
func (s *Store) clusterReady(ctx context.Context, cc *redis.ClusterClient) error {
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	if time.Since(s.ready.at) < readyCacheFor {
		return s.ready.err
	}
	err := func() error {
		slots, err := cc.ClusterSlots(ctx).Result()
		if err != nil {
			return err
		}
		covered := 0
		for _, sl := range slots {
			if len(sl.Nodes) == 0 {
				return fmt.Errorf("slots %d-%d have no master", sl.Start, sl.End)
			}
			covered += sl.End - sl.Start + 1
			c := redis.NewClient(&redis.Options{Addr: sl.Nodes[0].Addr, Username: cc.Options().Username,
				Password: cc.Options().Password, TLSConfig: cc.Options().TLSConfig,
				DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
			perr := c.Ping(ctx).Err()
			c.Close()
			if perr != nil {
				return fmt.Errorf("the master of slots %d-%d (%s) does not answer: %w", sl.Start, sl.End, sl.Nodes[0].Addr, perr)
			}
		}
		if covered != 16384 {
			return fmt.Errorf("only %d of 16384 slots have a master", covered)
		}
		return nil
	}()
	s.ready.at, s.ready.err = time.Now(), err
	return err
}
