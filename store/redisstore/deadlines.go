package redisstore

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// Every call to Redis has a deadline, so a dead or hung Redis answers 503
// within 2 seconds instead of hanging a request. These are
// the one place the deadlines are set: the single client, the embedded
// store's client and the Cluster client all get them here.
const (
	dialTimeout = 500 * time.Millisecond
	ioTimeout   = 500 * time.Millisecond
	poolTimeout = time.Second
)

// Deadlines sets o's timeouts, turns on context deadlines (go-redis lets a
// context's deadline bound a read only with ContextTimeoutEnabled) and
// allows one retry and one dial retry (the defaults, 3 retries and 5 dial
// retries, each up to its timeout, keep a request waiting many seconds).
func Deadlines(o *redis.Options) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = dialTimeout, ioTimeout, ioTimeout, poolTimeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = 1
	o.DialerRetries = 1
}

// ClusterDeadlines sets the same timeouts on a Cluster client's options,
// and one dial retry; its command retries are left to NewClusterClient,
// which spends them on following a failover.
func ClusterDeadlines(o *redis.ClusterOptions) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = dialTimeout, ioTimeout, ioTimeout, poolTimeout
	o.ContextTimeoutEnabled = true
	o.DialerRetries = 1
}
