package redisstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"seckill/model"
)

// TestRedisErrConnectionLost: a connection closed in the middle of a reply
// is Redis unavailable (503), not an internal error (500).
func TestRedisErrConnectionLost(t *testing.T) {
	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, fmt.Errorf("read: %w", io.EOF)} {
		if got := redisErr(err); !errors.Is(got, model.ErrUnavailable) {
			t.Errorf("redisErr(%v): got %v, want ErrUnavailable", err, got)
		}
	}
}

// TestRedisErrClusterUnavailable: a cluster answers some errors while a
// slot has no master or moves. Those are Redis unavailable (503). Other
// Redis errors are not.
func TestRedisErrClusterUnavailable(t *testing.T) {
	for _, msg := range []string{"CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot",
		"LOADING Redis is loading the dataset in memory", "MASTERDOWN Link with MASTER is down", "READONLY You can't write against a read only replica."} {
		if got := redisErr(replyErr(msg)); !errors.Is(got, model.ErrUnavailable) {
			t.Errorf("redisErr(%q): got %v, want ErrUnavailable", msg, got)
		}
	}
	if got := redisErr(replyErr("ERR wrong number of arguments")); errors.Is(got, model.ErrUnavailable) {
		t.Errorf("a script error: got %v, want not ErrUnavailable", got)
	}
}

// replyErr is an error reply of a Redis server (redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestRedisAuthEveryClient: RedisAuth's credentials and TLS reach every
// client. That is the plain, Sentinel and Cluster clients and the Redlock
// nodes. The Sentinel password reaches only the Sentinel client's options.
func TestRedisAuthEveryClient(t *testing.T) {
	auth := RedisAuth{Username: "app", Password: "pw", SentinelPassword: "spw", TLS: &tls.Config{MinVersion: tls.VersionTLS12}}
	check := func(name, user, pw string, tc *tls.Config) {
		t.Helper()
		if user != "app" || pw != "pw" || tc != auth.TLS {
			t.Errorf("%s: got user %q, password %q, TLS %p, want app, pw, %p", name, user, pw, tc, auth.TLS)
		}
	}
	u := serviceOptions([]string{"127.0.0.1:6379"}, "", auth)
	s := u.Simple()
	check("plain", s.Username, s.Password, s.TLSConfig)
	f := serviceOptions([]string{"127.0.0.1:26379"}, "m", auth).Failover()
	check("sentinel", f.Username, f.Password, f.TLSConfig)
	if f.SentinelPassword != "spw" {
		t.Errorf("sentinel: got SentinelPassword %q, want spw", f.SentinelPassword)
	}
	c := NewClusterRedisClient([]string{"127.0.0.1:7001"}, auth)
	defer c.Close()
	co := c.Options()
	check("cluster", co.Username, co.Password, co.TLSConfig)
	if co.ClusterStateReloadInterval != clusterReload {
		t.Errorf("cluster: reload every %v, want %v", co.ClusterStateReloadInterval, clusterReload)
	}
	n := NewRedlockNodeClient("127.0.0.1:6380", auth)
	defer n.Close()
	no := n.Options()
	check("redlock node", no.Username, no.Password, no.TLSConfig)
	// go-redis turns MaxRetries -1 (none) into 0 when it builds the client.
	if no.MaxRetries != 0 || no.DialerRetries != 1 || no.DialTimeout != 500*time.Millisecond || no.MinIdleConns != 0 || !no.ContextTimeoutEnabled {
		t.Errorf("redlock node: got retries %d, dial attempts %d, dial timeout %v, idle %d, context timeout %v; want 0, 1, 500ms, 0, true",
			no.MaxRetries, no.DialerRetries, no.DialTimeout, no.MinIdleConns, no.ContextTimeoutEnabled)
	}
	p := NewRedisClient("127.0.0.1:6379", RedisAuth{})
	defer p.Close()
	if po := p.Options(); po.Password != "" || po.Username != "" || po.TLSConfig != nil {
		t.Errorf("zero RedisAuth: got user %q, password %q, TLS %v, want none", po.Username, po.Password, po.TLSConfig)
	}
}
