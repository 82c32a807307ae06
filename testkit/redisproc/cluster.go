package redisproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterOptions configure a Cluster. Only Dir is required.
type ClusterOptions struct {
	// Dir holds the working directories of every node. Required.
	Dir string
	// Masters is how many masters share the 16,384 slots (in ranges, as
	// redis-cli --cluster create splits them). Default 3.
	Masters int
	// Replicas is how many replicas each master gets. Default 0.
	Replicas int
	// NodeTimeout is cluster-node-timeout: how long a master may not
	// answer before its replica is promoted. Default 2s.
	NodeTimeout time.Duration
	// Log receives one line per process started and killed. Default:
	// discard.
	Log *slog.Logger
	// Password is every node's requirepass and masterauth. Default: none.
	Password string
}

// Cluster is a Redis Cluster of private nodes on loopback ports.
type Cluster struct {
	// Nodes are every node, the masters first (as created: Nodes[i] the
	// master of the i-th slot range), then the replicas. After a failover
	// a replica is the master of its range (Master tells).
	Nodes    []*Server
	password string
}

// StartCluster starts the nodes, creates the cluster with redis-cli
// --cluster create (masters first, then replicas) and waits until every
// node reports cluster_state:ok and knows every other. All waits together
// are bounded by ctx (DefaultWait per step when ctx has no deadline). On
// error every process started so far is killed.
func StartCluster(ctx context.Context, o ClusterOptions) (c *Cluster, err error) {
	if o.Masters == 0 {
		o.Masters = 3
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = 2 * time.Second
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, fmt.Errorf("redisproc: redis-cli (Debian package redis-tools) is needed to create a cluster: %w", err)
	}
	c = &Cluster{password: o.Password}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", fmt.Sprint(o.NodeTimeout.Milliseconds())}
	if o.Password != "" {
		args = append(args, "--requirepass", o.Password, "--masterauth", o.Password)
	}
	for range o.Masters * (1 + o.Replicas) {
		n, err := Start(ctx, Options{Dir: o.Dir, Args: args, Log: o.Log, Password: o.Password})
		if err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	create := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		create = append(create, n.Addr())
	}
	create = append(create, "--cluster-replicas", fmt.Sprint(o.Replicas), "--cluster-yes")
	cctx, cancel := bounded(ctx)
	defer cancel()
	cli := exec.CommandContext(cctx, "redis-cli", create...)
	if o.Password != "" {
		cli.Env = append(os.Environ(), "REDISCLI_AUTH="+o.Password) // not on the command line
	}
	if out, err := cli.CombinedOutput(); err != nil {
		return c, fmt.Errorf("redisproc: redis-cli --cluster create: %w: %s", err, tailOf(string(out), 400))
	}
	return c, c.WaitHealthy(ctx)
}

// Addrs are the nodes' addresses (seeds for a cluster client).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// WaitHealthy polls until every running node reports cluster_state:ok and
// knows every node of the cluster.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return poll(ctx, "the cluster to be healthy", func(ctx context.Context) error {
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			info, err := c.clusterInfo(ctx, n.Addr())
			if err != nil {
				return err
			}
			if info["cluster_state"] != "ok" {
				return fmt.Errorf("%s: cluster_state %s", n.Addr(), info["cluster_state"])
			}
			if info["cluster_known_nodes"] != fmt.Sprint(len(c.Nodes)) {
				return fmt.Errorf("%s: knows %s nodes, want %d", n.Addr(), info["cluster_known_nodes"], len(c.Nodes))
			}
		}
		return nil
	})
}

// MasterOfSlot returns the node that reports itself master of slot, as a
// running node sees the cluster (CLUSTER NODES).
func (c *Cluster) MasterOfSlot(ctx context.Context, slot int) (*Server, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := c.client(n.Addr())
		nodes, err := cl.ClusterNodes(ctx).Result()
		cl.Close()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			for _, r := range f[8:] {
				lo, hi, found := strings.Cut(r, "-")
				var a, b int
				fmt.Sscan(lo, &a)
				b = a
				if found {
					fmt.Sscan(hi, &b)
				}
				if slot >= a && slot <= b {
					for _, m := range c.Nodes {
						if m.Addr() == addr {
							return m, nil
						}
					}
				}
			}
		}
		return nil, fmt.Errorf("redisproc: no master of slot %d in CLUSTER NODES of %s", slot, n.Addr())
	}
	return nil, errors.New("redisproc: no running node")
}

// Close kills every node.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// client is a quick client of the node at addr, with the cluster's
// password.
func (c *Cluster) client(addr string) *redis.Client {
	o := quick(addr)
	o.Password = c.password
	return redis.NewClient(o)
}

// clusterInfo is CLUSTER INFO of the node at addr as a map.
func (c *Cluster) clusterInfo(ctx context.Context, addr string) (map[string]string, error) {
	cl := c.client(addr)
	defer cl.Close()
	s, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
