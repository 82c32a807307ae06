package lock

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// MySQL is the database lock backend: MySQL or MariaDB named locks
// (GET_LOCK, RELEASE_LOCK). Each lock pins one pooled connection while held.
// The server frees a lock when its session ends, so there is no lease. A
// stuck but live holder keeps the lock; TTL and Watchdog are ignored. It
// mints no fencing token. Give it a pool sized for the holders plus the
// queries. docs/locks.md explains these choices.
type MySQL struct {
	db   *sql.DB
	opts Options
}

var _ Locker = (*MySQL)(nil)

// NewMySQL returns a named-lock backend on db. Options.Wait becomes
// GET_LOCK's timeout (0: one attempt); TTL and Watchdog do not apply.
// The db stays owned by the caller.
func NewMySQL(db *sql.DB, opts ...Option) (*MySQL, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("lock: mysql: nil *sql.DB")
	}
	return &MySQL{db: db, opts: o}, nil
}

// Name returns "mysql".
func (m *MySQL) Name() string { return "mysql" }

// Obtain pins a connection and runs GET_LOCK on it. The server waits up to
// Options.Wait (fractions of a second allowed; 0 is a single attempt). When
// ctx ends during the wait, the driver closes the connection. Obtain then
// kills the orphaned session from another connection and waits until it is
// gone. So the server cannot grant the lock to a session nobody listens to.
func (m *MySQL) Obtain(ctx context.Context, key string) (Lock, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("lock: mysql: obtain %q: %w", key, waitErr(ctx))
	}
	name := mysqlLockName(key)
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock: mysql: obtain %q: pin connection: %w", key, err)
	}
	wait := m.opts.Wait
	var connID int64
	if wait > 0 {
		if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&connID); err != nil {
			return nil, errors.Join(fmt.Errorf("lock: mysql: obtain %q: connection id: %w", key, err), discardConn(conn))
		}
	}
	q := "SELECT GET_LOCK('" + name + "', " + strconv.FormatFloat(wait.Seconds(), 'f', -1, 64) + ")"
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, q).Scan(&got); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("lock: mysql: obtain %q: %w", key, waitErr(ctx))
			if connID != 0 {
				err = errors.Join(err, m.kill(connID))
			}
			return nil, errors.Join(err, discardConn(conn))
		}
		return nil, errors.Join(fmt.Errorf("lock: mysql: obtain %q: %w", key, err), discardConn(conn))
	}
	switch {
	case !got.Valid:
		// NULL: an error inside the server (out of memory, statement killed).
		return nil, errors.Join(fmt.Errorf("lock: mysql: obtain %q: GET_LOCK returned NULL", key), discardConn(conn))
	case got.Int64 != 1:
		if err := conn.Close(); err != nil {
			return nil, fmt.Errorf("lock: mysql: obtain %q: %w (return connection: %w)", key, ErrNotObtained, err)
		}
		return nil, fmt.Errorf("lock: mysql: obtain %q: %w", key, ErrNotObtained)
	}
	return &mysqlLock{key: key, name: name, conn: conn}, nil
}

// HolderConnID returns the connection id of the session holding the lock
// on key (IS_USED_LOCK), and false when nobody holds it. It is a
// diagnostic: the answer may be stale by the time it returns.
func (m *MySQL) HolderConnID(ctx context.Context, key string) (int64, bool, error) {
	var id sql.NullInt64
	if err := m.db.QueryRowContext(ctx, "SELECT IS_USED_LOCK('"+mysqlLockName(key)+"')").Scan(&id); err != nil {
		return 0, false, fmt.Errorf("lock: mysql: holder of %q: %w", key, err)
	}
	return id.Int64, id.Valid, nil
}

// kill ends session id from another connection, on a context that
// survives the caller's cancellation, and waits until the session is gone.
// The driver has already closed its side. Without the KILL the server
// would go on waiting and might grant the lock to a session nobody listens
// to, until it noticed the disconnect. KILL only flags the session, so
// kill then watches the process list until the session has ended (and its
// locks with it).
func (m *MySQL) kill(id int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.ReleaseTimeout)
	defer cancel()
	// KILL takes no placeholders; id is an integer from the server.
	if _, err := m.db.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10)); err != nil && !mysqlUnknownThread(err) {
		return fmt.Errorf("kill waiting session %d: %w", id, err)
	}
	b := backoff{min: m.opts.BackoffMin, max: m.opts.BackoffMax}
	for {
		var n int
		if err := m.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
			return fmt.Errorf("wait for killed session %d to end: %w", id, err)
		}
		if n == 0 {
			return nil
		}
		t := time.NewTimer(b.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for killed session %d to end: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// mysqlUnknownThread reports the server's "Unknown thread id" error
// (1094): the session is already gone.
func mysqlUnknownThread(err error) bool {
	var mysqlErr *mysqldrv.MySQLError
	return errors.As(err, &mysqlErr) && mysqlErr.Number == 1094
}

// mysqlLockName maps key to a server lock name that is at most 64
// characters and safe to inline in SQL.
func mysqlLockName(key string) string {
	if len(key) > 0 && len(key) <= 64 {
		safe := true
		for i := 0; i < len(key); i++ {
			c := key[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.' || c == '-') {
				safe = false
				break
			}
		}
		if safe {
			return key
		}
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// discardConn closes conn and removes it from the pool, so that the server
// ends its session (and frees any lock it holds).
func discardConn(conn *sql.Conn) error {
	err := conn.Raw(func(any) error { return driver.ErrBadConn })
	if err != nil && !errors.Is(err, driver.ErrBadConn) && !errors.Is(err, sql.ErrConnDone) {
		return fmt.Errorf("discard connection: %w", err)
	}
	return nil
}

// mysqlLock is one named lock held by its pinned connection.
type mysqlLock struct {
	key  string
	name string

	mu   sync.Mutex
	conn *sql.Conn // nil once released
}

// Key returns the locked key.
func (l *mysqlLock) Key() string { return l.key }

// Token returns false: named locks have no counter (see MySQL).
func (l *mysqlLock) Token() (int64, bool) { return 0, false }

// Release runs RELEASE_LOCK on the pinned connection and always gives the
// connection back. RELEASE_LOCK answering 0 (held by another session) or
// NULL (no such lock), a second Release, or a connection that died (and
// with it the lock) all return ErrNotHeld.
func (l *mysqlLock) Release(ctx context.Context) error {
	l.mu.Lock()
	conn := l.conn
	l.conn = nil
	l.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("lock: mysql: release %q: %w (already released)", l.key, ErrNotHeld)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK('"+l.name+"')").Scan(&got); err != nil {
		// The session is unusable; dropping it makes the server free the lock
		// if it still held it.
		derr := discardConn(conn)
		if ctx.Err() != nil {
			return errors.Join(fmt.Errorf("lock: mysql: release %q: %w", l.key, ctx.Err()), derr)
		}
		return errors.Join(fmt.Errorf("lock: mysql: release %q: %w (session lost: %w)", l.key, ErrNotHeld, err), derr)
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("lock: mysql: release %q: return connection: %w", l.key, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("lock: mysql: release %q: %w", l.key, ErrNotHeld)
	}
	return nil
}
