package store

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterRefresh is how often a Cluster client re-reads the slot map when
// nothing else made it: a failover is seen within this much of the
// replica's promotion.
const clusterRefresh = 500 * time.Millisecond

// NewClusterClient returns a Redis Cluster client that follows a failover
// in well under a second (CONTRACT §8: service again within 2 s of the
// promotion). go-redis re-reads the slot map only on MOVED/ASK or every 60
// s by default, and a refused connection to a dead master triggers
// neither; this client re-reads it on every connection error, and every
// clusterRefresh in any case, and retries a failed call (on the new master
// once the map says so). The returned function stops the refresh and
// closes the client.
func NewClusterClient(opt *redis.ClusterOptions) (*redis.ClusterClient, func() error) {
	opt.ClusterStateReloadInterval = clusterRefresh
	if opt.MaxRedirects == 0 {
		opt.MaxRedirects = 4
	}
	if opt.MinRetryBackoff == 0 {
		opt.MinRetryBackoff = 20 * time.Millisecond
		opt.MaxRetryBackoff = 150 * time.Millisecond
	}
	rdb := redis.NewClusterClient(opt)
	rdb.AddHook(reloadOnNetError{rdb})
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(clusterRefresh)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rdb.ReloadState(context.Background())
			}
		}
	}()
	var once sync.Once
	return rdb, func() error {
		once.Do(func() { close(stop) })
		return rdb.Close()
	}
}

// reloadOnNetError asks the client to re-read the slot map after a call
// failed to reach a node.
type reloadOnNetError struct{ rdb *redis.ClusterClient }

func (h reloadOnNetError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			h.rdb.ReloadState(ctx)
		}
		return c, err
	}
}

func (h reloadOnNetError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if netError(err) {
			h.rdb.ReloadState(ctx)
		}
		return err
	}
}

func (h reloadOnNetError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if netError(err) {
			h.rdb.ReloadState(ctx)
		}
		return err
	}
}

// netError reports an error of the connection rather than an answer.
func netError(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
