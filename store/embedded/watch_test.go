package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store/embedded"
)

// watchCase is a command run by another client between a WATCH of key and
// the EXEC of the watcher's transaction, after setup.
type watchCase struct {
	name  string
	setup [][]any
	key   string
	cmd   []any
	// same: the command leaves the key as it was, and the transaction
	// commits (as on Redis, which marks a key changed only when it is).
	same bool
}

func watchCases() []watchCase {
	str := [][]any{{"SET", "k", "v"}}
	num := [][]any{{"SET", "k", "1"}}
	strTTL := [][]any{{"SET", "k", "v", "EX", "100"}}
	other := [][]any{{"SET", "o", "w"}}
	hash := [][]any{{"HSET", "k", "a", "1", "b", "2"}}
	hashTTL := [][]any{{"HSET", "k", "a", "1", "b", "2"}, {"HEXPIRE", "k", "100", "FIELDS", "1", "a"}}
	list := [][]any{{"RPUSH", "k", "a", "b", "c"}}
	set := [][]any{{"SADD", "k", "a", "b", "c"}}
	zset := [][]any{{"ZADD", "k", "1", "a", "2", "b", "3", "c"}}
	zlex := [][]any{{"ZADD", "k", "0", "a", "0", "b", "0", "c"}}
	zother := [][]any{{"ZADD", "o", "5", "x"}}
	stream := [][]any{{"XADD", "k", "1-1", "f", "v"}, {"XADD", "k", "2-1", "f", "v"}}
	with := func(a ...[][]any) [][]any { return slices.Concat(a...) }
	return []watchCase{
		// Keys of any type.
		{name: "DEL", setup: hash, key: "k", cmd: []any{"DEL", "k"}},
		{name: "UNLINK", setup: zset, key: "k", cmd: []any{"UNLINK", "k"}},
		{name: "EXPIRE", setup: hash, key: "k", cmd: []any{"EXPIRE", "k", "100"}},
		{name: "EXPIRE a zset", setup: zset, key: "k", cmd: []any{"EXPIRE", "k", "100"}},
		{name: "EXPIRE a stream", setup: stream, key: "k", cmd: []any{"EXPIRE", "k", "100"}},
		{name: "PEXPIRE", setup: strTTL, key: "k", cmd: []any{"PEXPIRE", "k", "500000"}},
		{name: "EXPIREAT", setup: str, key: "k", cmd: []any{"EXPIREAT", "k", "4102444800"}},
		{name: "PEXPIREAT", setup: str, key: "k", cmd: []any{"PEXPIREAT", "k", "4102444800000"}},
		{name: "EXPIRE in the past", setup: hash, key: "k", cmd: []any{"EXPIRE", "k", "0"}},
		{name: "PERSIST", setup: strTTL, key: "k", cmd: []any{"PERSIST", "k"}},
		{name: "PERSIST without a TTL", setup: str, key: "k", cmd: []any{"PERSIST", "k"}, same: true},
		{name: "RENAME from", setup: str, key: "k", cmd: []any{"RENAME", "k", "o"}},
		{name: "RENAME onto", setup: with(str, other), key: "k", cmd: []any{"RENAME", "o", "k"}},
		{name: "RENAMENX onto", setup: other, key: "k", cmd: []any{"RENAMENX", "o", "k"}},
		{name: "COPY onto", setup: with(str, other), key: "k", cmd: []any{"COPY", "o", "k", "REPLACE"}},
		{name: "MOVE", setup: hash, key: "k", cmd: []any{"MOVE", "k", "3"}},
		{name: "FLUSHDB", setup: hash, key: "k", cmd: []any{"FLUSHDB"}},
		{name: "FLUSHALL", setup: zset, key: "k", cmd: []any{"FLUSHALL"}},

		// Strings.
		{name: "SET", setup: str, key: "k", cmd: []any{"SET", "k", "v2"}},
		{name: "SET KEEPTTL", setup: strTTL, key: "k", cmd: []any{"SET", "k", "v2", "KEEPTTL"}},
		{name: "SETNX", key: "k", cmd: []any{"SETNX", "k", "v"}},
		{name: "SETEX", setup: str, key: "k", cmd: []any{"SETEX", "k", "100", "v2"}},
		{name: "PSETEX", setup: str, key: "k", cmd: []any{"PSETEX", "k", "100000", "v2"}},
		{name: "GETSET", setup: str, key: "k", cmd: []any{"GETSET", "k", "v2"}},
		{name: "GETDEL", setup: str, key: "k", cmd: []any{"GETDEL", "k"}},
		{name: "GETEX", setup: str, key: "k", cmd: []any{"GETEX", "k", "EX", "100"}},
		{name: "GETEX PERSIST", setup: strTTL, key: "k", cmd: []any{"GETEX", "k", "PERSIST"}},
		{name: "APPEND", setup: str, key: "k", cmd: []any{"APPEND", "k", "x"}},
		{name: "SETRANGE", setup: str, key: "k", cmd: []any{"SETRANGE", "k", "0", "x"}},
		{name: "SETBIT", setup: str, key: "k", cmd: []any{"SETBIT", "k", "1", "0"}},
		{name: "INCR", setup: num, key: "k", cmd: []any{"INCR", "k"}},
		{name: "INCRBY", setup: num, key: "k", cmd: []any{"INCRBY", "k", "5"}},
		{name: "INCRBYFLOAT", setup: num, key: "k", cmd: []any{"INCRBYFLOAT", "k", "0.5"}},
		{name: "DECR", setup: num, key: "k", cmd: []any{"DECR", "k"}},
		{name: "DECRBY", setup: num, key: "k", cmd: []any{"DECRBY", "k", "5"}},
		{name: "MSET", setup: str, key: "k", cmd: []any{"MSET", "o", "1", "k", "2"}},
		{name: "MSETNX", key: "k", cmd: []any{"MSETNX", "o", "1", "k", "2"}},

		// Hashes.
		{name: "HSET", setup: hash, key: "k", cmd: []any{"HSET", "k", "a", "9"}},
		{name: "HMSET", setup: hash, key: "k", cmd: []any{"HMSET", "k", "c", "3"}},
		{name: "HSETNX", setup: hash, key: "k", cmd: []any{"HSETNX", "k", "c", "3"}},
		{name: "HDEL one of two fields", setup: hash, key: "k", cmd: []any{"HDEL", "k", "a"}},
		{name: "HDEL the last field", setup: hash, key: "k", cmd: []any{"HDEL", "k", "a", "b"}},
		{name: "HDEL a missing field", setup: hash, key: "k", cmd: []any{"HDEL", "k", "z"}, same: true},
		{name: "HINCRBY", setup: hash, key: "k", cmd: []any{"HINCRBY", "k", "a", "1"}},
		{name: "HINCRBYFLOAT", setup: hash, key: "k", cmd: []any{"HINCRBYFLOAT", "k", "a", "0.5"}},
		{name: "HEXPIRE", setup: hash, key: "k", cmd: []any{"HEXPIRE", "k", "100", "FIELDS", "1", "a"}},
		{name: "HPERSIST", setup: hashTTL, key: "k", cmd: []any{"HPERSIST", "k", "FIELDS", "1", "a"}},
		{name: "HSETEX", setup: hash, key: "k", cmd: []any{"HSETEX", "k", "EX", "100", "FIELDS", "1", "a", "9"}},

		// Sorted sets.
		{name: "ZADD", setup: zset, key: "k", cmd: []any{"ZADD", "k", "9", "a"}},
		{name: "ZINCRBY", setup: zset, key: "k", cmd: []any{"ZINCRBY", "k", "1", "a"}},
		{name: "ZREM one of three members", setup: zset, key: "k", cmd: []any{"ZREM", "k", "a"}},
		{name: "ZREM the last members", setup: zset, key: "k", cmd: []any{"ZREM", "k", "a", "b", "c"}},
		{name: "ZREM a missing member", setup: zset, key: "k", cmd: []any{"ZREM", "k", "z"}, same: true},
		{name: "ZREMRANGEBYSCORE", setup: zset, key: "k", cmd: []any{"ZREMRANGEBYSCORE", "k", "1", "1"}},
		{name: "ZREMRANGEBYSCORE out of range", setup: zset, key: "k", cmd: []any{"ZREMRANGEBYSCORE", "k", "10", "20"}, same: true},
		{name: "ZREMRANGEBYRANK", setup: zset, key: "k", cmd: []any{"ZREMRANGEBYRANK", "k", "0", "0"}},
		{name: "ZREMRANGEBYLEX", setup: zlex, key: "k", cmd: []any{"ZREMRANGEBYLEX", "k", "[a", "[a"}},
		{name: "ZPOPMIN", setup: zset, key: "k", cmd: []any{"ZPOPMIN", "k"}},
		{name: "ZPOPMAX", setup: zset, key: "k", cmd: []any{"ZPOPMAX", "k"}},
		{name: "ZMPOP", setup: zset, key: "k", cmd: []any{"ZMPOP", "1", "k", "MIN"}},
		{name: "ZUNIONSTORE", setup: with(zset, zother), key: "k", cmd: []any{"ZUNIONSTORE", "k", "1", "o"}},
		{name: "ZINTERSTORE", setup: with(zset, zother), key: "k", cmd: []any{"ZINTERSTORE", "k", "1", "o"}},
		{name: "GEOADD", setup: zset, key: "k", cmd: []any{"GEOADD", "k", "13.36", "38.11", "p"}},

		// Streams.
		{name: "XADD", setup: stream, key: "k", cmd: []any{"XADD", "k", "*", "f", "v"}},
		{name: "XADD MAXLEN", setup: stream, key: "k", cmd: []any{"XADD", "k", "MAXLEN", "1", "*", "f", "v"}},
		{name: "XDEL", setup: stream, key: "k", cmd: []any{"XDEL", "k", "1-1"}},
		{name: "XTRIM", setup: stream, key: "k", cmd: []any{"XTRIM", "k", "MAXLEN", "1"}},
		{name: "XTRIM nothing", setup: stream, key: "k", cmd: []any{"XTRIM", "k", "MAXLEN", "5"}, same: true},

		// Lists and sets (the app keeps none; the server has them).
		{name: "LPUSH", setup: list, key: "k", cmd: []any{"LPUSH", "k", "x"}},
		{name: "RPUSH", setup: list, key: "k", cmd: []any{"RPUSH", "k", "x"}},
		{name: "LPOP", setup: list, key: "k", cmd: []any{"LPOP", "k"}},
		{name: "RPOP", setup: list, key: "k", cmd: []any{"RPOP", "k"}},
		{name: "LREM", setup: list, key: "k", cmd: []any{"LREM", "k", "1", "b"}},
		{name: "LSET", setup: list, key: "k", cmd: []any{"LSET", "k", "0", "z"}},
		{name: "LTRIM", setup: list, key: "k", cmd: []any{"LTRIM", "k", "0", "1"}},
		{name: "LINSERT", setup: list, key: "k", cmd: []any{"LINSERT", "k", "BEFORE", "b", "x"}},
		{name: "LMOVE from", setup: list, key: "k", cmd: []any{"LMOVE", "k", "o", "LEFT", "LEFT"}},
		{name: "RPOPLPUSH", setup: list, key: "k", cmd: []any{"RPOPLPUSH", "k", "o"}},
		{name: "SADD", setup: set, key: "k", cmd: []any{"SADD", "k", "d"}},
		{name: "SREM", setup: set, key: "k", cmd: []any{"SREM", "k", "a"}},
		{name: "SPOP", setup: set, key: "k", cmd: []any{"SPOP", "k"}},
		{name: "SMOVE from", setup: set, key: "k", cmd: []any{"SMOVE", "k", "o", "a"}},
		{name: "SUNIONSTORE", setup: with(set, [][]any{{"SADD", "o", "x"}}), key: "k", cmd: []any{"SUNIONSTORE", "k", "o"}},
	}
}

// keyState is what a client can read of key: its type, value and TTL
// (to 10 s; a hash's fields' TTLs too).
func keyState(ctx context.Context, c interface {
	redis.Cmdable
	Do(context.Context, ...any) *redis.Cmd
}, key string) string {
	typ := c.Type(ctx, key).Val()
	ttl, _ := c.Do(ctx, "PTTL", key).Int64()
	if ttl > 0 {
		ttl = 1 + ttl/10000
	}
	var val any
	switch typ {
	case "string":
		val = c.Get(ctx, key).Val()
	case "hash":
		h := c.HGetAll(ctx, key).Val()
		fields := slices.Sorted(func(yield func(string) bool) {
			for f := range h {
				if !yield(f) {
					return
				}
			}
		})
		var b strings.Builder
		for _, f := range fields {
			fttl, _ := c.Do(ctx, "HTTL", key, "FIELDS", "1", f).Int64Slice()
			fmt.Fprintf(&b, "%s=%s ttl %v;", f, h[f], fttl)
		}
		val = b.String()
	case "list":
		val = c.LRange(ctx, key, 0, -1).Val()
	case "set":
		val = c.SMembers(ctx, key).Val()
		slices.Sort(val.([]string))
	case "zset":
		val = c.ZRangeWithScores(ctx, key, 0, -1).Val()
	case "stream":
		val = c.XRange(ctx, key, "-", "+").Val()
	}
	return fmt.Sprintf("%s ttl %d: %v", typ, ttl, val)
}

// TestWatchSeesEveryChange: a transaction that WATCHed a key fails (EXEC
// answers nil, nothing of it is applied) when another client changed the
// key after the WATCH, whatever the command, run alone, in a MULTI or in
// a script; and it commits when the command left the key as it was. With
// a data file and without (the two ways the app opens the store).
func TestWatchSeesEveryChange(t *testing.T) {
	bothWays(t, func(t *testing.T, cl *redis.Client) {
		ctx := context.Background()
		runs := []struct {
			name string
			run  func(cmd []any, key string) error
		}{
			{"alone", func(cmd []any, _ string) error { return cl.Do(ctx, cmd...).Err() }},
			{"in a MULTI", func(cmd []any, _ string) error {
				_, err := cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Do(ctx, cmd...)
					return nil
				})
				return err
			}},
			{"in a script", func(cmd []any, key string) error {
				return cl.Eval(ctx, "redis.call(unpack(ARGV)) return 1", []string{key}, cmd...).Err()
			}},
		}
		for _, c := range watchCases() {
			for _, r := range runs {
				t.Run(c.name+" "+r.name, func(t *testing.T) {
					if err := cl.FlushAll(ctx).Err(); err != nil {
						t.Fatal(err)
					}
					for _, s := range c.setup {
						if err := cl.Do(ctx, s...).Err(); err != nil {
							t.Fatalf("setup %v: %v", s, err)
						}
					}
					err := cl.Watch(ctx, func(tx *redis.Tx) error {
						before := keyState(ctx, tx, c.key)
						if err := r.run(c.cmd, c.key); err != nil && !errors.Is(err, redis.Nil) {
							t.Fatalf("%v: %v", c.cmd, err)
						}
						after := keyState(ctx, tx, c.key)
						if c.same != (before == after) {
							t.Fatalf("%v took %s from %q to %q; the case is wrong", c.cmd, c.key, before, after)
						}
						_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "probe", "1", 0)
							return nil
						})
						return err
					}, c.key)
					probe := cl.Exists(ctx, "probe").Val()
					switch {
					case c.same && err != nil:
						t.Errorf("%v left %s as it was, yet the transaction that watched it failed: %v", c.cmd, c.key, err)
					case !c.same && !errors.Is(err, redis.TxFailedErr):
						t.Errorf("%v changed %s after its WATCH, yet the transaction committed (err %v)", c.cmd, c.key, err)
					case !c.same && probe != 0:
						t.Errorf("the failed transaction was applied")
					}
				})
			}
		}
	})
}

// TestWatchLeavesOneOfTwoRemovingEachOther: two clients each WATCH a set
// of two members, read both there, and remove their own only when another
// stays (the app's last-admin rule): of the two, exactly one commits, and
// one member stays, for a sorted set (ZREM) and a hash (HDEL), alone and
// in a script.
func TestWatchLeavesOneOfTwoRemovingEachOther(t *testing.T) {
	bothWays(t, func(t *testing.T, cl *redis.Client) {
		ctx := context.Background()
		kinds := []struct {
			name   string
			fill   []any
			count  func(tx *redis.Tx) int64
			remove func(p redis.Pipeliner, m string)
		}{
			{"sorted set", []any{"ZADD", "admins", "1", "a", "2", "b"},
				func(tx *redis.Tx) int64 { return tx.ZCard(ctx, "admins").Val() },
				func(p redis.Pipeliner, m string) { p.ZRem(ctx, "admins", m) }},
			{"hash", []any{"HSET", "admins", "a", "1", "b", "1"},
				func(tx *redis.Tx) int64 { return tx.HLen(ctx, "admins").Val() },
				func(p redis.Pipeliner, m string) { p.HDel(ctx, "admins", m) }},
			{"sorted set in a script", []any{"ZADD", "admins", "1", "a", "2", "b"},
				func(tx *redis.Tx) int64 { return tx.ZCard(ctx, "admins").Val() },
				func(p redis.Pipeliner, m string) {
					p.Eval(ctx, "return redis.call('ZREM', KEYS[1], ARGV[1])", []string{"admins"}, m)
				}},
		}
		for _, k := range kinds {
			t.Run(k.name, func(t *testing.T) {
				for round := range 20 {
					cl.Del(ctx, "admins")
					if err := cl.Do(ctx, k.fill...).Err(); err != nil {
						t.Fatal(err)
					}
					var read sync.WaitGroup
					read.Add(2)
					errs := make([]error, 2)
					var wg sync.WaitGroup
					for i, m := range []string{"a", "b"} {
						wg.Add(1)
						go func() {
							defer wg.Done()
							errs[i] = cl.Watch(ctx, func(tx *redis.Tx) error {
								n := k.count(tx)
								read.Done()
								read.Wait() // both read two members before either writes
								if n < 2 {
									return errors.New("the last one stays")
								}
								_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
									k.remove(p, m)
									return nil
								})
								return err
							}, "admins")
						}()
					}
					wg.Wait()
					left, _ := cl.Exists(ctx, "admins").Result()
					failed := 0
					for _, err := range errs {
						if errors.Is(err, redis.TxFailedErr) {
							failed++
						} else if err != nil {
							t.Fatal(err)
						}
					}
					if left != 1 || failed != 1 {
						t.Fatalf("round %d: %d transactions failed and the key exists %d times; want exactly one failed and the key kept", round, failed, left)
					}
				}
			})
		}
	})
}

// bothWays runs f on the embedded store opened with a data file and
// without: the two ways the app opens it.
func bothWays(t *testing.T, f func(t *testing.T, cl *redis.Client)) {
	for _, mode := range []struct {
		name string
		path bool
	}{{"with a data file", true}, {"without a data file", false}} {
		t.Run(mode.name, func(t *testing.T) {
			var opt embedded.Options
			if mode.path {
				opt.Path = filepath.Join(t.TempDir(), "orders.json")
			}
			e := openEmbedded(t, opt)
			defer e.Close()
			f(t, e.Client())
		})
	}
}
