package lock_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log"
	"strconv"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"seckill/lock"
	"seckill/testkit/testenv"
)

func init() {
	// The driver logs every killed connection ("unexpected EOF"); killing
	// connections is what these tests do.
	if err := mysqldrv.SetLogger(log.New(io.Discard, "", 0)); err != nil {
		panic(err)
	}
	contractBackends = append(contractBackends, backend{
		name: "mysql",
		new: func(tb testing.TB, opts ...lock.Option) lock.Locker {
			return must(tb)(lock.NewMySQL(mysqlDB(tb), opts...))
		},
		exclusive: true, sharedAcrossLockers: true,
		// No lease: the lock lives as long as the holder's session, so the
		// holder "dies" by having its connection killed.
		kill: func(tb testing.TB, l lock.Lock) { killMySQLHolder(tb, l.Key()) },
	})
}

// mysqlDB opens SECKILL_MYSQL_DSN (skipping without it) and closes it when
// the test ends.
func mysqlDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("mysql", testenv.Need(tb, "SECKILL_MYSQL_DSN"))
	if err != nil {
		tb.Fatalf("open MySQL: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close MySQL: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		tb.Fatalf("ping MySQL: %v", err)
	}
	return db
}

// killMySQLHolder finds the session holding key (IS_USED_LOCK) and kills
// it from another connection, as a crash or a network cut would end it.
func killMySQLHolder(tb testing.TB, key string) {
	tb.Helper()
	db := mysqlDB(tb)
	m := must(tb)(lock.NewMySQL(db)).(*lock.MySQL)
	ctx := testContext(tb, 5*time.Second)
	id, held, err := m.HolderConnID(ctx, key)
	if err != nil {
		tb.Fatalf("holder of %q: %v", key, err)
	}
	if !held {
		tb.Fatalf("holder of %q: nobody holds it, want a session", key)
	}
	if _, err := db.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10)); err != nil {
		tb.Fatalf("KILL %d: %v", id, err)
	}
}

// TestMySQLReleasedOnDisconnect: the server frees a named lock when the
// session holding it ends. Killing the holder's connection lets a waiter
// in, and the dead holder's Release reports ErrNotHeld.
func TestMySQLReleasedOnDisconnect(t *testing.T) {
	holder := must(t)(lock.NewMySQL(mysqlDB(t))).(*lock.MySQL)
	waiter := must(t)(lock.NewMySQL(mysqlDB(t), lock.WithWait(10*time.Second)))
	ctx := testContext(t, 20*time.Second)
	key := testKey(t)

	dead := obtain(t, holder, ctx, key)
	if _, held, err := holder.HolderConnID(ctx, key); err != nil || !held {
		t.Fatalf("IS_USED_LOCK after Obtain: held %v, err %v; want held", held, err)
	}
	if _, err := must(t)(lock.NewMySQL(mysqlDB(t))).Obtain(ctx, key); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain while held: got %v, want ErrNotObtained", err)
	}

	killMySQLHolder(t, key)
	l, err := waiter.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("Obtain after the holder's connection was killed: %v", err)
	}
	if err := dead.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("dead holder's Release: got %v, want ErrNotHeld", err)
	}
	mustRelease(t, l)
	if _, held, err := holder.HolderConnID(ctx, key); err != nil || held {
		t.Errorf("IS_USED_LOCK after Release: held %v, err %v; want free", held, err)
	}
}

// TestMySQLCancelledWaiterLeavesNoGhost: a waiter whose context ends in the
// middle of GET_LOCK has its server session killed. When the holder
// releases, the lock is free for the next caller. It does not go to the
// abandoned wait.
func TestMySQLCancelledWaiterLeavesNoGhost(t *testing.T) {
	db := mysqlDB(t)
	lk := must(t)(lock.NewMySQL(db, lock.WithWait(30*time.Second))).(*lock.MySQL)
	ctx := testContext(t, 20*time.Second)
	key := testKey(t)
	h := obtain(t, lk, ctx, key)

	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := lk.Obtain(wctx, key); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("waiter past its deadline: got %v, want ErrNotObtained and DeadlineExceeded", err)
	}
	mustRelease(t, h)
	if id, held, err := lk.HolderConnID(ctx, key); err != nil || held {
		t.Fatalf("after Release: held by session %d (%v, err %v), want free: the abandoned wait took it", id, held, err)
	}
	try := must(t)(lock.NewMySQL(db))
	mustRelease(t, obtain(t, try, ctx, key))
}

// TestMySQLLockNames: keys longer than MySQL's 64-character limit, or with
// characters unsafe in SQL text, are hashed into distinct names. They lock,
// exclude and do not collide.
func TestMySQLLockNames(t *testing.T) {
	lk := must(t)(lock.NewMySQL(mysqlDB(t)))
	ctx := testContext(t, 10*time.Second)
	base := testKey(t)
	keys := []string{
		base + ":" + strings.Repeat("x", 80) + ":1",
		base + ":" + strings.Repeat("x", 80) + ":2",
		base + ":it's \"quoted\"; DROP TABLE tb_user; --",
		base + ":ключ",
	}
	var held []lock.Lock
	for _, k := range keys {
		l, err := lk.Obtain(ctx, k)
		if err != nil {
			t.Fatalf("Obtain %q: %v (names must not collide)", k, err)
		}
		held = append(held, l)
		if _, err := lk.Obtain(ctx, k); !errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("second Obtain %q: got %v, want ErrNotObtained", k, err)
		}
	}
	for _, l := range held {
		mustRelease(t, l)
	}
}

// TestNewBuildsMySQL: the factory needs Deps.DB for mysql and builds the
// backend without touching the server (sql.Open connects lazily).
func TestNewBuildsMySQL(t *testing.T) {
	if _, err := lock.New("mysql", lock.Deps{}); err == nil || !strings.Contains(err.Error(), "database") {
		t.Errorf("New(mysql) without a DB: got %v, want an error naming the database", err)
	}
	db, err := sql.Open("mysql", "nobody:secret@tcp(127.0.0.1:1)/none")
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	lk, err := lock.New("mysql", lock.Deps{DB: db})
	if err != nil {
		t.Fatalf("New(mysql): %v", err)
	}
	if lk.Name() != "mysql" {
		t.Errorf("Name() = %q, want mysql", lk.Name())
	}
	// The server is unreachable: an I/O error, not a refusal.
	if _, err := lk.Obtain(testContext(t, 5*time.Second), testKey(t)); err == nil || errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("Obtain with the server down: got %v, want an I/O error", err)
	}
}
