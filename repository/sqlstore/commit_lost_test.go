package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"seckill/model"
	"seckill/testkit/testenv"
)

// commitProxy is a TCP proxy between the MySQL driver and MariaDB that
// loses one COMMIT. Losing its reply, the server commits while the client
// sees the connection break. Losing the command, the server never commits
// and rolls back on close. It spots the COMMIT as a COM_QUERY packet
// (0x03) whose text is COMMIT: one per transaction, without TLS here.
type commitProxy struct {
	ln       net.Listener
	target   string
	loseOnly string // "reply" or "command"
	armed    atomic.Bool
	fired    chan struct{}
	wg       sync.WaitGroup
}

func startCommitProxy(t *testing.T, target, lose string) *commitProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitProxy{ln: ln, target: target, loseOnly: lose, fired: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *commitProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(2)
		var once sync.Once
		closeBoth := func() { once.Do(func() { c.Close(); s.Close() }) }
		lost := make(chan struct{})
		// client -> server: watches for the COMMIT.
		go func() {
			defer p.wg.Done()
			defer closeBoth()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					if bytes.Contains(chunk, []byte("\x03COMMIT")) && p.armed.CompareAndSwap(true, false) {
						if p.loseOnly == "command" {
							close(p.fired)
							return // never forwarded. Both sides close
						}
						// Marked lost before it is forwarded: the server's
						// reply can come back before this goroutine runs
						// again, and must find the mark (the client waits
						// for each reply, so the next bytes are COMMIT's).
						close(lost)
						if _, err := s.Write(chunk); err != nil {
							return
						}
						continue
					}
					if _, err := s.Write(chunk); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		// server -> client: after a forwarded COMMIT, swallows the reply
		// (the server has run the COMMIT once it answers) and breaks the
		// connection.
		go func() {
			defer p.wg.Done()
			defer closeBoth()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				select {
				case <-lost:
					if n > 0 || err == nil {
						close(p.fired)
					}
					return
				default:
				}
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// proxiedMySQL opens the MariaDB of SECKILL_MYSQL_DSN through a commit
// proxy (skipping without it, failing when CI=true).
func proxiedMySQL(t *testing.T, lose string) (*DB, *commitProxy) {
	t.Helper()
	dsn := testenv.Need(t, "SECKILL_MYSQL_DSN")
	databases(t) // the schema
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startCommitProxy(t, cfg.Addr, lose)
	cfg.Addr = p.ln.Addr().String()
	db, err := OpenMySQL(context.Background(), cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, p
}

// TestCreateOrderCommitLost: the proxy loses the COMMIT or its reply, and
// CreateOrder reads the order back by its id to tell what happened.
func TestCreateOrderCommitLost(t *testing.T) {
	tests := []struct {
		lose    string // what the proxy loses
		user    int64
		wantErr error
		stock   int
		orders  int64
	}{
		// The server commits, but its reply never reaches the service; the
		// database dies at that moment. The order is in the database, so the
		// purchase is done: answering "invalid connection" as 503 would hide
		// an order the buyer holds.
		{"reply", 7001, nil, 4, 1},
		// The COMMIT never reaches the server, which rolls the transaction
		// back when the connection closes: unavailable (503), no order and
		// the stock untouched.
		{"command", 7002, model.ErrUnavailable, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.lose, func(t *testing.T) {
			db, p := proxiedMySQL(t, tt.lose)
			vid := newVoucher(t, db, 5)
			o := order(vid, tt.user)
			p.armed.Store(true)
			err := NewOrders(db).CreateOrder(context.Background(), o, nil)
			select {
			case <-p.fired:
			default:
				t.Fatalf("the proxy lost no COMMIT %s (CreateOrder: %v)", tt.lose, err)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("CreateOrder after a lost COMMIT %s: got %v, want %v", tt.lose, err, tt.wantErr)
			}
			stock, orders := stockAndOrders(t, db, vid)
			if stock != tt.stock || orders != tt.orders {
				t.Fatalf("got stock %d, %d orders, want %d and %d", stock, orders, tt.stock, tt.orders)
			}
		})
	}
}

// TestOutcomeUnknown: which errors leave an order transaction's outcome
// open.
func TestOutcomeUnknown(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{mysql.ErrInvalidConn, true},
		{io.ErrUnexpectedEOF, true},
		{context.DeadlineExceeded, true},
		{&mysql.MySQLError{Number: 2013, Message: "lost"}, true},
		{&mysql.MySQLError{Number: 1927, Message: "killed"}, true},
		{&mysql.MySQLError{Number: 1213, Message: "deadlock"}, false},
		{&mysql.MySQLError{Number: 1062, Message: "dup"}, false},
		{model.ErrSoldOut, false},
		{errors.New("syntax"), false},
	} {
		if got := outcomeUnknown(c.err); got != c.want {
			t.Errorf("outcomeUnknown(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
