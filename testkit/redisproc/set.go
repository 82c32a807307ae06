package redisproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetOptions configure a Set. Only Dir is required.
type SetOptions struct {
	// Dir holds the working directories of every process. Required.
	Dir string
	// MasterName is the name the Sentinels monitor the primary under.
	// Default "seckill".
	MasterName string
	// Replicas is how many replicas the primary gets. Default 1.
	Replicas int
	// Sentinels is how many Sentinels watch the primary. Default 3.
	Sentinels int
	// Quorum, DownAfter and FailoverTimeout are the Sentinels' settings.
	// defaults as in SentinelOptions (2, 1s, 5s).
	Quorum          int
	DownAfter       time.Duration
	FailoverTimeout time.Duration
	// ServerArgs are further redis-server arguments of every data server.
	ServerArgs []string
	// Log receives one line per process started and killed. Default:
	// discard.
	Log *slog.Logger
}

// Set is a Sentinel-managed Redis: a primary, its replicas and the
// Sentinels that watch them, all on private loopback ports.
type Set struct {
	// MasterName is the name the Sentinels know the primary by.
	MasterName string
	// Servers are the data servers: Servers[0] started as the primary, the
	// others as its replicas. After a failover the Sentinels name another
	// one (Primary).
	Servers []*Server
	// Sentinels watch the primary.
	Sentinels []*Sentinel
}

// StartSet starts the primary, its replicas and the Sentinels. It waits until
// the replicas are linked, so that the Sentinels find them at once. Then it
// waits until the Set is healthy (WaitHealthy). ctx bounds all waits together
// (DefaultWait per step when ctx has no deadline). On error every process
// started so far is killed.
func StartSet(ctx context.Context, o SetOptions) (s *Set, err error) {
	if o.MasterName == "" {
		o.MasterName = "seckill"
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	s = &Set{MasterName: o.MasterName}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
			s = nil
		}
	}()
	primary, err := Start(ctx, Options{Dir: o.Dir, Args: o.ServerArgs, Log: o.Log})
	if err != nil {
		return s, err
	}
	s.Servers = append(s.Servers, primary)
	for range o.Replicas {
		r, err := Start(ctx, Options{Dir: o.Dir, ReplicaOf: primary.Addr(), Args: o.ServerArgs, Log: o.Log})
		if err != nil {
			return s, err
		}
		s.Servers = append(s.Servers, r)
	}
	if err := poll(ctx, "the replicas link to the primary", func(ctx context.Context) error {
		for _, r := range s.Servers[1:] {
			if err := linkedTo(ctx, r, primary); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return s, err
	}
	for range o.Sentinels {
		st, err := StartSentinel(ctx, SentinelOptions{Dir: o.Dir, MasterName: o.MasterName, Master: primary.Addr(),
			Quorum: o.Quorum, DownAfter: o.DownAfter, FailoverTimeout: o.FailoverTimeout, Log: o.Log})
		if err != nil {
			return s, err
		}
		s.Sentinels = append(s.Sentinels, st)
	}
	return s, s.WaitHealthy(ctx)
}

// SentinelAddrs are the Sentinels' addresses, for a failover client.
func (s *Set) SentinelAddrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, st := range s.Sentinels {
		addrs[i] = st.Addr()
	}
	return addrs
}

// Primary returns the server every Sentinel names as the primary. An
// error when a Sentinel does not answer or they disagree.
func (s *Set) Primary(ctx context.Context) (*Server, error) {
	var named string
	for _, st := range s.Sentinels {
		addr, err := s.masterOf(ctx, st)
		if err != nil {
			return nil, err
		}
		if named != "" && addr != named {
			return nil, fmt.Errorf("the Sentinels disagree on the primary: %s and %s", named, addr)
		}
		named = addr
	}
	for _, srv := range s.Servers {
		if srv.Addr() == named {
			return srv, nil
		}
	}
	return nil, fmt.Errorf("the Sentinels name %s, not a server of the set", named)
}

// PrimaryAndReplica returns the primary (Primary) and a server of the set
// that is not it: with one replica, the heir of a failover.
func (s *Set) PrimaryAndReplica(ctx context.Context) (primary, replica *Server, err error) {
	primary, err = s.Primary(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, srv := range s.Servers {
		if srv != primary {
			replica = srv
		}
	}
	if replica == nil {
		return nil, nil, fmt.Errorf("the set has no server besides the primary %s", primary.Addr())
	}
	return primary, replica, nil
}

// WaitHealthy polls, within ctx (DefaultWait when ctx has no deadline),
// until every Sentinel names the same primary, which reports role master.
// Every other server is its replica, linked, and has applied what the
// primary had written when the check began. And every Sentinel sees the
// primary up, knows every other Sentinel and sees every replica up and
// linked.
func (s *Set) WaitHealthy(ctx context.Context) error {
	return poll(ctx, "the Sentinel set to be healthy", s.healthy)
}

func (s *Set) healthy(ctx context.Context) error {
	primary, err := s.Primary(ctx)
	if err != nil {
		return err
	}
	pinfo, err := Info(ctx, primary.Addr(), "replication")
	if err != nil {
		return err
	}
	if pinfo["role"] != "master" {
		return fmt.Errorf("%s: role %q, want master", primary.Addr(), pinfo["role"])
	}
	for _, srv := range s.Servers {
		if srv == primary {
			continue
		}
		if err := inSync(ctx, srv, primary); err != nil {
			return err
		}
	}
	for _, st := range s.Sentinels {
		if err := s.sentinelSees(ctx, st, primary); err != nil {
			return err
		}
	}
	return nil
}

// sentinelSees checks st's view: primary up, the other Sentinels known,
// every replica up and linked.
func (s *Set) sentinelSees(ctx context.Context, st *Sentinel, primary *Server) error {
	c := sentinelClient(st.Addr())
	defer c.Close()
	m, err := c.Master(ctx, s.MasterName).Result()
	if err != nil {
		return fmt.Errorf("sentinel %s: SENTINEL MASTER: %w", st.Addr(), err)
	}
	if m["flags"] != "master" {
		return fmt.Errorf("sentinel %s: primary flags %q, want master", st.Addr(), m["flags"])
	}
	if m["num-other-sentinels"] != strconv.Itoa(len(s.Sentinels)-1) {
		return fmt.Errorf("sentinel %s: knows %s other Sentinels, want %d", st.Addr(), m["num-other-sentinels"], len(s.Sentinels)-1)
	}
	reps, err := c.Replicas(ctx, s.MasterName).Result()
	if err != nil {
		return fmt.Errorf("sentinel %s: SENTINEL REPLICAS: %w", st.Addr(), err)
	}
	up := map[string]bool{}
	for _, r := range reps {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			up[net.JoinHostPort(r["ip"], r["port"])] = true
		}
	}
	for _, srv := range s.Servers {
		if srv != primary && !up[srv.Addr()] {
			return fmt.Errorf("sentinel %s: replica %s not listed up and linked (%v)", st.Addr(), srv.Addr(), reps)
		}
	}
	return nil
}

// WaitPrimary polls, within ctx (DefaultWait when ctx has no deadline),
// until every Sentinel names srv as the primary and srv reports role
// master: a failover to srv has completed.
func (s *Set) WaitPrimary(ctx context.Context, srv *Server) error {
	return poll(ctx, "the Sentinels to name "+srv.Addr()+" the primary", func(ctx context.Context) error {
		p, err := s.Primary(ctx)
		if err != nil {
			return err
		}
		if p != srv {
			return fmt.Errorf("the Sentinels name %s", p.Addr())
		}
		info, err := Info(ctx, srv.Addr(), "replication")
		if err != nil {
			return err
		}
		if info["role"] != "master" {
			return fmt.Errorf("%s: role %q", srv.Addr(), info["role"])
		}
		return nil
	})
}

// Close kills the Sentinels first (so that none reacts to the rest), then
// the servers.
func (s *Set) Close() error {
	var errs []error
	for _, st := range s.Sentinels {
		errs = append(errs, st.Kill())
	}
	for _, srv := range s.Servers {
		errs = append(errs, srv.Kill())
	}
	return errors.Join(errs...)
}

func (s *Set) masterOf(ctx context.Context, st *Sentinel) (string, error) {
	c := sentinelClient(st.Addr())
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		return "", fmt.Errorf("sentinel %s: get-master-addr-by-name: %w", st.Addr(), err)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// WaitReplica polls within ctx until replica is in sync with primary. It uses
// DefaultWait when ctx has no deadline. In sync means replica names primary
// as its primary, with the link up. It has also applied everything primary
// had written when the check began. So a restarted server is back as a
// replica in sync. It asks the two servers only, not the Sentinels
// (WaitHealthy does).
func WaitReplica(ctx context.Context, replica, primary *Server) error {
	return poll(ctx, replica.Addr()+" to be in sync with "+primary.Addr(), func(ctx context.Context) error {
		return inSync(ctx, replica, primary)
	})
}

// inSync checks that replica is linked to primary and has applied what
// primary has written so far.
func inSync(ctx context.Context, replica, primary *Server) error {
	pinfo, err := Info(ctx, primary.Addr(), "replication")
	if err != nil {
		return err
	}
	written, _ := strconv.ParseInt(pinfo["master_repl_offset"], 10, 64)
	if err := linkedTo(ctx, replica, primary); err != nil {
		return err
	}
	info, err := Info(ctx, replica.Addr(), "replication")
	if err != nil {
		return err
	}
	if applied, _ := strconv.ParseInt(info["master_repl_offset"], 10, 64); applied < written {
		return fmt.Errorf("replica %s: applied offset %d, primary at %d", replica.Addr(), applied, written)
	}
	return nil
}

// linkedTo checks that replica reports primary as its primary, with the
// link up.
func linkedTo(ctx context.Context, replica, primary *Server) error {
	info, err := Info(ctx, replica.Addr(), "replication")
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(primary.Addr())
	if info["role"] != "slave" || info["master_host"] != host || info["master_port"] != port ||
		info["master_link_status"] != "up" {
		return fmt.Errorf("%s: role %s of %s:%s, link %s; want the linked replica of %s", replica.Addr(),
			info["role"], info["master_host"], info["master_port"], info["master_link_status"], primary.Addr())
	}
	return nil
}

// Info returns the fields of the INFO section of the server at addr.
func Info(ctx context.Context, addr, section string) (map[string]string, error) {
	c := redis.NewClient(quick(addr))
	defer c.Close()
	text, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO %s of %s: %w", section, addr, err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

func sentinelClient(addr string) *redis.SentinelClient { return redis.NewSentinelClient(quick(addr)) }

// quick are the options of the one-off clients of the checks: one
// connection, no retries, short timeouts.
func quick(addr string) *redis.Options {
	return &redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, DialerRetries: 1}
}

// poll runs check every 50ms until it returns nil or ctx (DefaultWait when
// it has no deadline) ends. Then the error names what was awaited and the
// last reason.
func poll(ctx context.Context, what string, check func(context.Context) error) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
