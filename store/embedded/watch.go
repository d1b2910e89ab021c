package embedded

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// WATCH on miniredis compares a version each key carries, and some
// commands change a key without raising it: a ZREM, ZREMRANGEBY*, ZPOPMIN
// or ZPOPMAX that leaves members in the set, an HDEL that leaves fields,
// an XTRIM, a GETEX that sets or drops a TTL, HEXPIRE and HPERSIST, and
// FLUSHALL and FLUSHDB. A transaction that watched such a key would then
// commit on a value it never saw, where Redis aborts it. gate repairs that
// for every connection: it knows which keys are watched, and after such a
// command it raises the version of each watched key the command did
// change (a key the command left as it was keeps its version, as on
// Redis), by moving the key to a spare database and back in one MULTI of a
// connection of its own (both moves raise it; the value, TTLs included,
// is unchanged, and no other command sees the key away). All of it runs
// while gate holds pause, as does every EXEC: no EXEC checks its watched
// keys between the command and the raise.

// spareDB is the database a raised key passes through. The app uses
// database 0 only; a key of the same name in spareDB would make the move
// fail and the raise be skipped, so nothing else may use it.
const spareDB = "15"

// missesOf names the keys a command may change without raising their
// version; all: every key (a flush).
func missesOf(cmd string, args []string) (keys []string, all bool) {
	switch cmd {
	case "FLUSHALL", "FLUSHDB":
		return nil, true
	case "ZREM", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX", "ZPOPMIN", "ZPOPMAX",
		"HDEL", "HEXPIRE", "HPERSIST", "XTRIM", "GETEX":
		if len(args) > 0 {
			return args[:1], false
		}
	case "BZPOPMIN", "BZPOPMAX":
		if len(args) > 1 {
			return args[:len(args)-1], false // the last is the timeout
		}
	case "EVAL", "EVALSHA":
		// The script's declared keys, printed before it runs (see
		// watchBefore); the commands it runs are noted as they run.
		if len(args) > 1 {
			if n, err := strconv.Atoi(args[1]); err == nil && n > 0 && n <= len(args)-2 {
				return args[2 : 2+n], false
			}
		}
	}
	return nil, false
}

// missNotes gathers what the commands a script runs may change unseen;
// they come through gate while miniredis holds its lock, when no key can
// be read. Its lock, like the recorder's, only guards against a
// connection gate cannot tell from a script's.
type missNotes struct {
	mu   sync.Mutex
	keys []string
	all  bool
}

func (n *missNotes) add(keys []string, all bool) {
	n.mu.Lock()
	n.keys = append(n.keys, keys...)
	n.all = n.all || all
	n.mu.Unlock()
}

// take returns what was noted since the last take, and forgets it.
func (n *missNotes) take() ([]string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	keys, all := n.keys, n.all
	n.keys, n.all = nil, false
	return keys, all
}

// watch notes that p watches keys. The caller holds mu.
func (e *Server) watch(p *peerState, keys []string) {
	for _, k := range keys {
		if !slices.Contains(p.watching, k) {
			p.watching = append(p.watching, k)
			e.watched[k]++
		}
	}
}

// unwatch notes that p watches nothing. The caller holds mu.
func (e *Server) unwatch(p *peerState) {
	for _, k := range p.watching {
		if e.watched[k]--; e.watched[k] <= 0 {
			delete(e.watched, k)
		}
	}
	p.watching = nil
}

// watchedOf returns the keys of keys (all: every key) that a connection
// watches now.
func (e *Server) watchedOf(keys []string, all bool) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	if all {
		for k := range e.watched {
			out = append(out, k)
		}
		return out
	}
	for _, k := range keys {
		if e.watched[k] > 0 && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// watchBefore prints the watched keys of those a command may change
// unseen, before it runs. The caller holds pause.
func (e *Server) watchBefore(db *miniredis.RedisDB, keys []string, all bool) map[string]string {
	if len(keys) == 0 && !all {
		return nil
	}
	w := e.watchedOf(keys, all)
	if len(w) == 0 {
		return nil
	}
	before := make(map[string]string, len(w))
	for _, k := range w {
		before[k] = printKey(db, k)
	}
	return before
}

// watchAfter raises the version of every watched key of those a command
// may have changed unseen (keys, all) that it did change: whose print
// differs from before, or that had none (a key a script's command named,
// or one whose WATCH came between the print and the command: its version
// may have been read before the change). The caller holds pause; the
// command ran.
func (e *Server) watchAfter(db *miniredis.RedisDB, before map[string]string, keys []string, all bool) {
	if len(keys) == 0 && !all {
		return
	}
	var raise []string
	for _, k := range e.watchedOf(keys, all) {
		if b, ok := before[k]; !ok || b != printKey(db, k) {
			raise = append(raise, k)
		}
	}
	e.raise(db, raise)
}

// printKey is what a command miniredis does not count may change of key k:
// its type, size and TTL, and its fields' TTLs.
func printKey(db *miniredis.RedisDB, k string) string {
	typ := db.Type(k)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d", typ, db.TTL(k))
	switch typ {
	case "zset":
		z, _ := db.SortedSet(k)
		fmt.Fprintf(&b, " %d", len(z))
	case "hash":
		fields, _ := db.HKeys(k)
		fmt.Fprintf(&b, " %d", len(fields))
		for _, f := range fields {
			if ttl := db.HTTL(k, f); ttl != 0 {
				fmt.Fprintf(&b, " %q %d", f, ttl)
			}
		}
	case "stream":
		s, _ := db.Stream(k)
		fmt.Fprintf(&b, " %d", len(s))
	}
	return b.String()
}

// raise raises the version of keys, leaving their values: a key that
// exists goes to spareDB and back, one that does not is set and deleted,
// all in one transaction. The caller holds pause.
func (e *Server) raise(db *miniredis.RedisDB, keys []string) {
	if len(keys) == 0 {
		return
	}
	cmds := [][]string{{"MULTI"}}
	var back [][]string
	for _, k := range keys {
		if db.Exists(k) {
			cmds = append(cmds, []string{"MOVE", k, spareDB})
			back = append(back, []string{"MOVE", k, "0"})
		} else {
			cmds = append(cmds, []string{"SET", k, ""}, []string{"DEL", k})
		}
	}
	if len(back) > 0 {
		cmds = append(cmds, []string{"SELECT", spareDB})
		cmds = append(cmds, back...)
		cmds = append(cmds, []string{"SELECT", "0"})
	}
	cmds = append(cmds, []string{"EXEC"})
	for _, c := range cmds {
		e.srv.Dispatch(e.raiser, c)
	}
}

// newRaiser is the connection raise uses, signed in with password; its
// answers are dropped.
func newRaiser(srv *server.Server, password string) *server.Peer {
	p := server.NewPeer(bufio.NewWriter(io.Discard))
	srv.Dispatch(p, []string{"AUTH", password})
	return p
}
