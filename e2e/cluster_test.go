package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/testutil"
)

// testCluster is a Redis Cluster of the test's own on loopback: addrs for
// -redis, masters, and kill/pause/resume of one node.
type testCluster struct {
	nodes []*redisServer
}

// startCluster starts masters × (1 + replicas) redis-servers in cluster
// mode (node timeout 1 s, so a failover takes a few seconds), joins them
// with redis-cli --cluster create and waits until every slot is served
// and every replica is in sync.
func startCluster(t testing.TB, masters, replicas int) *testCluster {
	t.Helper()
	bin := redisServerPath(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli is not installed: %v", err)
	}
	tc := &testCluster{}
	taken := map[int]bool{}
	var addrs []string
	for range masters * (1 + replicas) {
		port := testutil.ClusterPort(t, taken)
		dir := t.TempDir()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0")
		n := &redisServer{proc: startProc(t, "redis-server :"+strconv.Itoa(port), cmd), port: port}
		tc.nodes = append(tc.nodes, n)
		addrs = append(addrs, n.addr())
	}
	for _, n := range tc.nodes {
		waitPing(t, n)
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, n := range tc.nodes {
			c := shortClient(n.addr())
			info, err := c.ClusterInfo(context.Background()).Result()
			role, _ := c.Do(context.Background(), "ROLE").Slice()
			c.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok = false
				break
			}
			if len(role) > 3 && role[0] == "slave" && role[3] != "connected" {
				ok = false
				break
			}
		}
		if ok {
			return tc
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster did not become ok with its replicas in sync within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shortClient is a client for one check, with short timeouts and no retries.
func shortClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
}

func waitPing(t testing.TB, n *redisServer) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if !n.running() || time.Now().After(deadline) {
			t.Fatalf("redis-server %s did not answer PING; its output:\n%s", n.addr(), tail(n.out.String(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addrs is the comma-separated node list for -redis.
func (tc *testCluster) addrs() string {
	var a []string
	for _, n := range tc.nodes {
		a = append(a, n.addr())
	}
	return strings.Join(a, ",")
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string
	isMaster, failed bool
}

// view reads CLUSTER NODES from node n.
func (tc *testCluster) view(t testing.TB, n *redisServer) ([]clusterNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	c := shortClient(n.addr())
	defer c.Close()
	s, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		out = append(out, clusterNode{id: f[0], addr: addr, master: f[3],
			isMaster: strings.Contains(f[2], "master"), failed: strings.Contains(f[2], "fail")})
	}
	return out, nil
}

// node returns the server listening on addr.
func (tc *testCluster) node(addr string) *redisServer {
	for _, n := range tc.nodes {
		if n.addr() == addr {
			return n
		}
	}
	return nil
}

// aMasterWithReplica returns a master and the address of its replica.
func (tc *testCluster) aMasterWithReplica(t testing.TB) (*redisServer, string) {
	t.Helper()
	nodes, err := tc.view(t, tc.nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range nodes {
		if !m.isMaster {
			continue
		}
		for _, r := range nodes {
			if r.master == m.id {
				return tc.node(m.addr), r.addr
			}
		}
	}
	t.Fatal("no master with a replica")
	return nil, ""
}

// masters returns the nodes that are masters now, as CLUSTER NODES of the
// first running node that answers says.
func (tc *testCluster) masters(t testing.TB) []*redisServer {
	t.Helper()
	for _, n := range tc.nodes {
		if !n.running() {
			continue
		}
		nodes, err := tc.view(t, n)
		if err != nil {
			continue
		}
		var out []*redisServer
		for _, m := range nodes {
			if m.isMaster && !m.failed {
				if s := tc.node(m.addr); s != nil {
					out = append(out, s)
				}
			}
		}
		return out
	}
	t.Fatal("no node of the cluster answers CLUSTER NODES")
	return nil
}

// kill is kill -9 of node n.
func (tc *testCluster) kill(t testing.TB, n *redisServer) { n.signal(t, syscall.SIGKILL) }
