package testutil

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// ClusterPort returns a free loopback port below 45000 whose Cluster bus
// port (port+10000) is free too, and not in taken, which it adds both to:
// the nodes of one test cluster, picked before any of them listens, never
// share a port.
func ClusterPort(t testing.TB, taken map[int]bool) int {
	t.Helper()
	for range 200 {
		p := 20000 + rand.IntN(25000)
		if taken[p] || taken[p+10000] {
			continue
		}
		free := true
		for _, q := range []int{p, p + 10000} {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			taken[p], taken[p+10000] = true, true
			return p
		}
	}
	t.Fatal("no free port pair below 45000")
	return 0
}
