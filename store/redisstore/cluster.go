package redisstore

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
// within a second (the service must answer again within 2 s of a
// replica's promotion). Left alone, go-redis v9 re-reads the slot map only on
// MOVED/ASK or every 60 s; a refused connection to a dead master triggers
// neither, and its retries go back to the node the stale map names (a
// WATCH or MULTI/EXEC retries the same node every time). This client
// re-reads the map on every connection error of any node, when the map is
// older than clusterRefresh, and every clusterRefresh in any case; a
// command's later retries then go to the new master. The returned function
// stops the refresh and closes the client.
func NewClusterClient(opt *redis.ClusterOptions) (*redis.ClusterClient, func() error) {
	opt.ClusterStateReloadInterval = clusterRefresh
	if opt.MaxRedirects == 0 {
		// Attempts 0 and 1 go to the node the map names; 2 and later ask
		// the map again, which the hook has had reloaded by then.
		opt.MaxRedirects = 4
	}
	if opt.MinRetryBackoff == 0 {
		opt.MinRetryBackoff = 20 * time.Millisecond
		opt.MaxRetryBackoff = 150 * time.Millisecond
	}
	rdb := redis.NewClusterClient(opt)
	// Node clients, not the ClusterClient: a ClusterClient's hooks never
	// see dials, nor the commands of a WATCH, which run on the node's Tx.
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(reloadOnNetError{rdb}) })
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(clusterRefresh)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// Asynchronous, and coalesced with any reload under way.
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

// reloadOnNetError asks the Cluster client to re-read the slot map when a
// node could not be reached. ReloadState is asynchronous and go-redis runs
// at most one reload at a time (then waits 200 ms), so a storm of errors
// costs a few CLUSTER SLOTS a second.
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

// netError reports an error of the connection (refused, reset, closed,
// timed out) rather than an answer of Redis.
func netError(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
