package failover

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-sql-driver/mysql"

	"seckill/e2e/apptest"
)

// proxy forwards TCP to target until cut (connections refused and closed)
// or frozen (connections accepted, bytes never forwarded: a hung server).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	frozen bool
	cut    bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { p.close() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c)
		frozen := p.frozen
		p.mu.Unlock()
		if frozen {
			continue // hold the connection open, never answer
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies while the proxy is not frozen. Once frozen it stops
// forwarding but keeps both connections open.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			frozen := p.frozen
			p.mu.Unlock()
			if frozen {
				io.Copy(io.Discard, src) //nolint:errcheck // swallow everything from now on
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// freeze stops forwarding on every connection, old and new.
func (p *proxy) freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// kill closes every connection and refuses new ones.
func (p *proxy) kill() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.kill()
	p.ln.Close()
}

// TestDependencyFailures: Redis or the database is gone or hung. A buy then
// gets 503 UNAVAILABLE within the request deadline, never a 500. No stock
// is taken without an order.
func TestDependencyFailures(t *testing.T) {
	dsn, _ := apptest.IntegrationEnv(t)
	tests := []struct {
		name  string
		setup func(t *testing.T) (env map[string]string, breakIt func())
	}{
		{"redis down", func(t *testing.T) (map[string]string, func()) {
			m := miniredis.NewMiniRedis()
			m.ClockTTL(true)
			if err := m.Start(); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"SECKILL_REDIS_ADDR": m.Addr()}, m.Close
		}},
		{"database down", func(t *testing.T) (map[string]string, func()) {
			p := newProxy(t, mysqlAddr(t, dsn))
			return map[string]string{"SECKILL_MYSQL_DSN": withAddr(t, dsn, p.addr())}, p.kill
		}},
		{"database hangs", func(t *testing.T) (map[string]string, func()) {
			p := newProxy(t, mysqlAddr(t, dsn))
			return map[string]string{"SECKILL_MYSQL_DSN": withAddr(t, dsn, p.addr())}, p.freeze
		}},
		{"redis hangs", func(t *testing.T) (map[string]string, func()) {
			_, redisAddr := apptest.IntegrationEnv(t)
			p := newProxy(t, redisAddr)
			return map[string]string{"SECKILL_REDIS_ADDR": p.addr()}, p.freeze
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, breakIt := tt.setup(t)
			env["SECKILL_LOCK_MODE"] = "lua"
			env["SECKILL_REQUEST_TIMEOUT"] = "1s"
			a := apptest.Start(t, env)
			vid := apptest.PublishVoucher(t, a.Handler(), 10)
			tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
			path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
			if r := apptest.Call(t, a.Handler(), http.MethodPost, path, tok, nil); r.Status != http.StatusOK {
				t.Fatalf("before the failure: got %d %s, want 200", r.Status, r.Body.Code)
			}
			breakIt()
			for i := 0; i < 3; i++ {
				tok2, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
				start := time.Now()
				r := apptest.Call(t, a.Handler(), http.MethodPost, path, tok2, nil)
				took := time.Since(start)
				if r.Status != http.StatusServiceUnavailable || r.Body.Code != "UNAVAILABLE" {
					t.Errorf("attempt %d: got %d %s, want 503 UNAVAILABLE", i, r.Status, r.Body.Code)
				}
				if took > 5*time.Second {
					t.Errorf("attempt %d: answered after %v, want an answer near the 1s request deadline, not a hang", i, took)
				}
			}
			if r := apptest.Call(t, a.Handler(), http.MethodGet, "/readyz", "", nil); r.Status != http.StatusServiceUnavailable {
				t.Errorf("readyz: got %d, want 503", r.Status)
			}
			if strings.Contains(tt.name, "redis") {
				stock, orders := apptest.StockOf(t, vid)
				if stock != 9 || orders != 1 {
					t.Errorf("got stock %d and %d orders, want 9 and 1: nothing taken without an order", stock, orders)
				}
			}
		})
	}
}

func mysqlAddr(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}

func withAddr(t *testing.T, dsn, addr string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = addr
	cfg.ReadTimeout, cfg.WriteTimeout, cfg.Timeout = 2*time.Second, 2*time.Second, time.Second
	return cfg.FormatDSN()
}
