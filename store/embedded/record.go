package embedded

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// What a write left in each key it changed, as one log record. A record
// names values, not commands: replayed in order on the state the snapshot
// holds, it gives the state the write left, and replaying it a second time
// changes nothing.

// logRecord is one write (one command, one EXEC, one script).
type logRecord struct {
	// All: the write's keys were unknown; Keys is then every key, and
	// replaying the record first removes every other.
	All  bool       `json:"all,omitempty"`
	Keys []logEntry `json:"keys"`
}

// logEntry is one key as a write left it: gone, a whole value, or the
// hash fields, sorted-set members or stream entries the write changed.
// Exp is when it expires (Unix milliseconds; 0: never), whatever changed.
type logEntry struct {
	K    string             `json:"k"`
	Del  bool               `json:"del,omitempty"`
	Val  *snapshotItem      `json:"val,omitempty"`
	HSet map[string]string  `json:"hset,omitempty"`
	HDel []string           `json:"hdel,omitempty"`
	ZSet map[string]float64 `json:"zset,omitempty"`
	ZDel []string           `json:"zdel,omitempty"`
	// XAdd: entries added (newer than any before); XMin: the oldest entry
	// left (older ones were trimmed); XDel: entries deleted.
	XAdd streamEntries `json:"xadd,omitempty"`
	XMin string        `json:"xmin,omitempty"`
	XDel []string      `json:"xdel,omitempty"`
	Exp  int64         `json:"exp,omitempty"`
}

// touchKind says what of a key a command can change.
type touchKind uint8

const (
	touchTTL     touchKind = iota // only its expiry (or it is deleted)
	touchFields                   // named hash fields
	touchMembers                  // named sorted-set members
	touchZDiff                    // sorted-set members it does not name
	touchStream                   // stream entries: added, trimmed, named deletes
	touchWhole                    // anything: the whole value is logged
)

// touch is what one command can change in one key.
type touch struct {
	key   string
	kind  touchKind
	names []string // fields or members; XDEL's ids
}

// touchesOf names what a command that changes data can change; known is
// false for a command whose keys are not known here (the record is then
// every key). A script's keys are learned from the commands it runs.
func touchesOf(cmd string, args []string) (ts []touch, known bool) {
	if len(args) == 0 {
		return nil, isKnownWrite(cmd) // refused by the server: changes nothing
	}
	k := args[0]
	one := func(kind touchKind, names ...string) ([]touch, bool) {
		return []touch{{key: k, kind: kind, names: names}}, true
	}
	switch cmd {
	case "EVAL", "EVALSHA", "SCRIPT", "PUBLISH", "SELECT":
		return nil, true
	case "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL", "GETEX", "APPEND", "SETRANGE", "SETBIT",
		"INCR", "INCRBY", "INCRBYFLOAT", "DECR", "DECRBY",
		"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZRANGESTORE":
		return one(touchWhole)
	case "HSET", "HMSET":
		var fs []string
		for i := 1; i < len(args); i += 2 {
			fs = append(fs, args[i])
		}
		return one(touchFields, fs...)
	case "HSETNX", "HINCRBY", "HINCRBYFLOAT":
		if len(args) < 2 {
			return nil, true
		}
		return one(touchFields, args[1])
	case "HDEL":
		return one(touchFields, args[1:]...)
	case "ZADD":
		i := 1
	options:
		for ; i < len(args); i++ {
			switch strings.ToUpper(args[i]) {
			case "NX", "XX", "GT", "LT", "CH", "INCR":
			default:
				break options
			}
		}
		var ms []string
		for i++; i < len(args); i += 2 {
			ms = append(ms, args[i])
		}
		return one(touchMembers, ms...)
	case "ZINCRBY":
		if len(args) < 3 {
			return nil, true
		}
		return one(touchMembers, args[2])
	case "ZREM":
		return one(touchMembers, args[1:]...)
	case "ZPOPMIN", "ZPOPMAX", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX":
		return one(touchZDiff)
	case "XADD", "XTRIM":
		return one(touchStream)
	case "XDEL":
		return one(touchStream, args[1:]...)
	case "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST":
		return one(touchTTL)
	case "DEL", "UNLINK":
		for _, a := range args {
			ts = append(ts, touch{key: a, kind: touchWhole})
		}
		return ts, true
	case "RENAME", "RENAMENX", "COPY":
		if len(args) < 2 {
			return nil, true
		}
		return []touch{{key: args[0], kind: touchWhole}, {key: args[1], kind: touchWhole}}, true
	case "MSET", "MSETNX":
		for i := 0; i < len(args); i += 2 {
			ts = append(ts, touch{key: args[i], kind: touchWhole})
		}
		return ts, true
	}
	return nil, false
}

// isKnownWrite: a command touchesOf knows, which changes nothing when it
// has no arguments (the server refuses it).
func isKnownWrite(cmd string) bool {
	_, known := touchesOf(cmd, []string{"k", "f", "v"})
	return known
}

// keyTouch is what one record may have changed in one key, and what the
// key held before where the record cannot tell otherwise.
type keyTouch struct {
	kind  touchKind
	names map[string]struct{}
	// zBefore: the sorted set before its first touchZDiff (nil: none).
	zBefore map[string]float64
	// xLast: the stream's newest entry before the record ("": none);
	// xSeen: xLast is set.
	xLast string
	xSeen bool
}

// recorder gathers what one record changes: the command's own touches,
// and those of the commands a script runs (see gate), then builds the
// record from the store after the command ran. Its lock only guards
// against a connection gate cannot tell from a script's.
type recorder struct {
	mu    sync.Mutex
	all   bool
	keys  map[string]*keyTouch
	order []string
}

func (r *recorder) reset(all bool) {
	r.mu.Lock()
	r.all, r.keys, r.order = all, map[string]*keyTouch{}, r.order[:0]
	r.mu.Unlock()
}

// add notes touches, before the commands that make them run. db is nil
// for a command a script runs: miniredis holds its lock then, so what a
// key held before cannot be read, and a touch that needs it takes the
// whole key instead.
func (r *recorder) add(db *miniredis.RedisDB, ts []touch, known bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !known {
		r.all = true
	}
	if r.keys == nil {
		r.keys = map[string]*keyTouch{}
	}
	for _, t := range ts {
		if db == nil && (t.kind == touchZDiff || t.kind == touchStream) {
			t.kind = touchWhole
		}
		kt := r.keys[t.key]
		if kt == nil {
			kt = &keyTouch{kind: t.kind}
			r.keys[t.key] = kt
			r.order = append(r.order, t.key)
		}
		switch {
		case kt.kind == t.kind || t.kind == touchTTL:
		case kt.kind == touchTTL:
			kt.kind = t.kind
		case kt.kind == touchMembers && t.kind == touchZDiff, kt.kind == touchZDiff && t.kind == touchMembers:
			kt.kind = touchZDiff
		default:
			kt.kind = touchWhole
		}
		if len(t.names) > 0 {
			if kt.names == nil {
				kt.names = map[string]struct{}{}
			}
			for _, n := range t.names {
				kt.names[n] = struct{}{}
			}
		}
		if t.kind == touchZDiff && kt.zBefore == nil {
			kt.zBefore = map[string]float64{}
			if db.Type(t.key) == "zset" {
				z, _ := db.SortedSet(t.key)
				kt.zBefore = maps.Clone(z)
			}
		}
		if t.kind == touchStream && !kt.xSeen {
			kt.xSeen = true
			if db.Type(t.key) == "stream" {
				if s, _ := db.Stream(t.key); len(s) > 0 {
					kt.xLast = s[len(s)-1].ID
				}
			}
		}
	}
}

// build returns the record of what the command left, with the keys it
// changed (nil and all true: every key). tick is when miniredis last
// advanced its TTLs.
func (r *recorder) build(db *miniredis.RedisDB, tick time.Time) (rec logRecord, keys []string, all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.all {
		rec.All = true
		for _, k := range db.Keys() {
			if ck, ok := copyKey(db, k, tick); ok {
				it := ck.item
				rec.Keys = append(rec.Keys, logEntry{K: k, Val: &it, Exp: unixMs(ck.expireAt)})
			}
		}
		return rec, nil, true
	}
	for _, k := range r.order {
		rec.Keys = append(rec.Keys, entryOf(db, k, r.keys[k], tick))
	}
	return rec, r.order, false
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixMilli(), 1)
}

// entryOf is key k as the record left it.
func entryOf(db *miniredis.RedisDB, k string, kt *keyTouch, tick time.Time) logEntry {
	en := logEntry{K: k}
	typ := db.Type(k)
	if ttl := db.TTL(k); ttl > 0 && typ != "" {
		en.Exp = unixMs(tick.Add(ttl))
	}
	switch {
	case typ == "":
		en.Del = true
	case kt.kind == touchTTL:
	case kt.kind == touchFields && typ == "hash":
		fields, _ := db.HKeys(k)
		has := make(map[string]bool, len(fields))
		for _, f := range fields {
			has[f] = true
		}
		for f := range kt.names {
			if has[f] {
				if en.HSet == nil {
					en.HSet = map[string]string{}
				}
				en.HSet[f] = db.HGet(k, f)
			} else {
				en.HDel = append(en.HDel, f)
			}
		}
	case (kt.kind == touchMembers || kt.kind == touchZDiff) && typ == "zset":
		// SortedSet is miniredis's own map: read here, while no command
		// that changes data runs, and not kept.
		z, _ := db.SortedSet(k)
		set := func(m string, s float64) {
			if en.ZSet == nil {
				en.ZSet = map[string]float64{}
			}
			en.ZSet[m] = s
		}
		for m := range kt.names {
			if s, ok := z[m]; ok {
				set(m, s)
			} else {
				en.ZDel = append(en.ZDel, m)
			}
		}
		if kt.zBefore != nil {
			for m, s := range z {
				if b, ok := kt.zBefore[m]; !ok || b != s {
					set(m, s)
				}
			}
			for m := range kt.zBefore {
				if _, ok := z[m]; !ok {
					en.ZDel = append(en.ZDel, m)
				}
			}
		}
	case kt.kind == touchStream && typ == "stream":
		s, _ := db.Stream(k)
		if len(s) == 0 {
			en.Del, en.Exp = true, 0 // see streamEntries
			break
		}
		en.XMin = s[0].ID
		i := len(s)
		for i > 0 && (kt.xLast == "" || streamIDLess(kt.xLast, s[i-1].ID)) {
			i--
		}
		en.XAdd = slices.Clone(s[i:])
		for n := range kt.names {
			en.XDel = append(en.XDel, n)
		}
	default:
		ck, ok := copyKey(db, k, tick)
		if !ok {
			en.Del, en.Exp = true, 0
			break
		}
		it := ck.item
		en.Val = &it
	}
	return en
}

// streamID is a stream entry's ID as its two numbers.
func streamID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	if !found {
		return ms, 0, err1 == nil
	}
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, err1 == nil && err2 == nil
}

// streamIDLess reports whether stream entry ID a comes before b.
func streamIDLess(a, b string) bool {
	am, as, _ := streamID(a)
	bm, bs, _ := streamID(b)
	return am < bm || am == bm && as < bs
}

// replay applies a record to the keys loaded so far (cache: values and
// absolute expiry). Values in cache may be changed in place: nothing else
// holds them yet.
func replay(cache map[string]cachedKey, rec logRecord) error {
	if rec.All {
		clear(cache)
	}
	for _, en := range rec.Keys {
		if err := replayEntry(cache, en); err != nil {
			return fmt.Errorf("key %q: %w", en.K, err)
		}
	}
	return nil
}

func replayEntry(cache map[string]cachedKey, en logEntry) error {
	if en.Del {
		delete(cache, en.K)
		return nil
	}
	ck, exists := cache[en.K]
	switch {
	case en.Val != nil:
		ck = cachedKey{item: *en.Val}
		ck.item.TTLms = 0
	case en.HSet != nil || en.HDel != nil:
		if ck.item.Hash == nil {
			ck = cachedKey{item: snapshotItem{Hash: map[string]string{}}}
		}
		maps.Copy(ck.item.Hash, en.HSet)
		for _, f := range en.HDel {
			delete(ck.item.Hash, f)
		}
		if len(ck.item.Hash) == 0 {
			delete(cache, en.K)
			return nil
		}
	case en.ZSet != nil || en.ZDel != nil:
		if ck.item.ZSet == nil {
			ck = cachedKey{item: snapshotItem{ZSet: map[string]float64{}}}
		}
		maps.Copy(ck.item.ZSet, en.ZSet)
		for _, m := range en.ZDel {
			delete(ck.item.ZSet, m)
		}
		if len(ck.item.ZSet) == 0 {
			delete(cache, en.K)
			return nil
		}
	case en.XAdd != nil || en.XMin != "" || en.XDel != nil:
		if len(ck.item.Stream) == 0 {
			ck = cachedKey{}
		}
		s := ck.item.Stream
		for _, x := range en.XAdd {
			if _, _, ok := streamID(x.ID); !ok {
				return fmt.Errorf("a stream entry with the ID %q", x.ID)
			}
			if len(s) == 0 || streamIDLess(s[len(s)-1].ID, x.ID) {
				s = append(s, x)
			}
		}
		if en.XMin != "" {
			i, _ := slices.BinarySearchFunc(s, en.XMin, func(x miniredis.StreamEntry, id string) int {
				switch {
				case streamIDLess(x.ID, id):
					return -1
				case x.ID == id:
					return 0
				}
				return 1
			})
			s = s[i:]
		}
		if len(en.XDel) > 0 {
			s = slices.DeleteFunc(s, func(x miniredis.StreamEntry) bool { return slices.Contains(en.XDel, x.ID) })
		}
		if len(s) == 0 {
			delete(cache, en.K)
			return nil
		}
		ck.item.Stream = s
	case !exists:
		return nil // its expiry alone, for a key gone since
	}
	ck.expireAt = time.Time{}
	if en.Exp != 0 {
		ck.expireAt = time.UnixMilli(en.Exp)
	}
	cache[en.K] = ck
	return nil
}
