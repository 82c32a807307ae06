package lockrun

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/tools/cmd/harness/testbed"
	"seckill/tools/internal/lockcheck"
)

// lcClientConfig is what the parent hands one client process.
type lcClientConfig struct {
	Process    int
	Clients    int // goroutines in this process
	ClientBase int // the first client's id; ids are unique across processes
	Mode       string
	Fencing    bool
	TTL        time.Duration
	OpTimeout  time.Duration // bound of each operation
	WorkMax    time.Duration // longest sleep between the register's read and write
	Users      []int64
	RedisAddr  string // simple, owner, lua, reentrant
	// SentinelAddrs and MasterName, when set, replace RedisAddr with a
	// Sentinel-managed primary (the failover fault).
	SentinelAddrs []string
	MasterName    string
	RedlockAddrs  []string // redsync, multi
	ZKAddrs       []string // zookeeper
	LockDSN       string   // mysql
	RegisterDSN   string   // the guarded register
	Out           string   // the JSON-lines history
}

// RunClient is one client process of the lock-check workload: its
// clients loop over obtain, guarded read-modify-write, release until
// SIGTERM, recording every operation.
func RunClient(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: harness lockcheck-client CONFIG.json")
		return 2
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var cfg lcClientConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := lcClient(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "lockcheck-client %d: %v\n", cfg.Process, err)
		return 1
	}
	return 0
}

func lcClient(ctx context.Context, cfg lcClientConfig) error {
	deps := lock.Deps{}
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c() // best effort at exit
		}
	}()
	if cfg.RedisAddr != "" {
		c := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
		closers = append(closers, c.Close)
		deps.Redis = c
	}
	if len(cfg.SentinelAddrs) > 0 {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cfg.MasterName, SentinelAddrs: cfg.SentinelAddrs})
		closers = append(closers, c.Close)
		deps.Redis = c
	}
	for _, a := range cfg.RedlockAddrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		closers = append(closers, c.Close)
		deps.Nodes = append(deps.Nodes, c)
	}
	if cfg.LockDSN != "" {
		db, err := sql.Open("mysql", cfg.LockDSN)
		if err != nil {
			return err
		}
		db.SetMaxOpenConns(4 * cfg.Clients)
		closers = append(closers, db.Close)
		deps.DB = db
	}
	deps.ZKServers = cfg.ZKAddrs
	opts := []lock.Option{lock.WithTTL(cfg.TTL), lock.WithReleaseTimeout(cfg.OpTimeout)}
	var locker lock.Locker
	var err error
	if cfg.Mode == "zookeeper" {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		locker, err = lock.DialZookeeper(dctx, cfg.ZKAddrs, nil, opts...)
		cancel()
	} else {
		locker, err = lock.New(cfg.Mode, deps, opts...)
	}
	if err != nil {
		return err
	}
	if c, ok := locker.(interface{ Close() error }); ok {
		closers = append(closers, c.Close)
	}
	reg, err := sql.Open("mysql", cfg.RegisterDSN)
	if err != nil {
		return err
	}
	reg.SetMaxOpenConns(2 * cfg.Clients)
	closers = append(closers, reg.Close)

	f, err := os.Create(cfg.Out)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex // guards rec and recErr
	rec := lockcheck.NewRecorder(f)
	var recErr error // the first failed write: the history is incomplete
	record := func(op lockcheck.Op) {
		mu.Lock()
		defer mu.Unlock()
		op.Process = cfg.Process
		// Flushed at once: a stopped process has written all it did.
		err := rec.Record(op)
		if err == nil {
			err = rec.Flush()
		}
		if err != nil && recErr == nil {
			recErr = err
		}
	}
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		w := lcWorker{cfg: cfg, id: cfg.ClientBase + i, locker: locker, reg: reg, record: record}
		wg.Go(func() { w.loop(ctx) })
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if recErr != nil {
		return fmt.Errorf("history %s: %w", cfg.Out, recErr)
	}
	return rec.Flush()
}

// lcWorker is one client: one goroutine, one operation at a time.
type lcWorker struct {
	cfg    lcClientConfig
	id     int
	locker lock.Locker
	reg    *sql.DB
	record func(lockcheck.Op)
}

func (w lcWorker) loop(ctx context.Context) {
	rng := mrand.New(mrand.NewPCG(uint64(w.id), uint64(testbed.MachineNanos())))
	for ctx.Err() == nil {
		user := w.cfg.Users[rng.IntN(len(w.cfg.Users))]
		w.cycle(user, rng)
		time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
	}
}

// cycle obtains the user's lock, updates the register under it and
// releases it. Operations run on their own contexts: SIGTERM ends the loop
// only between cycles, never one operation midway.
func (w lcWorker) cycle(user int64, rng *mrand.Rand) {
	key := lock.OrderKey(user)
	// The hold's context bounds the obtain and keeps a watchdog renewing
	// until the release.
	hold, cancel := context.WithTimeout(context.Background(), 3*w.cfg.OpTimeout+w.cfg.WorkMax)
	defer cancel()
	op := lockcheck.Op{Client: w.id, Key: key, Kind: lockcheck.KindAcquire, Call: testbed.MachineNanos()}
	l, err := w.locker.Obtain(hold, key)
	op.Return = testbed.MachineNanos()
	switch {
	case err == nil:
		op.Outcome = lockcheck.OK
		op.Token, _ = l.Token()
	case errors.Is(err, lock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		op.Outcome = lockcheck.Refused
	default:
		op.Outcome, op.Return, op.Err = lockcheck.Unknown, 0, err.Error()
	}
	w.record(op)
	if err != nil {
		return
	}
	tok, fenced := l.Token()
	w.rmw(key, user, tok, fenced && w.cfg.Fencing, rng)
	op = lockcheck.Op{Client: w.id, Key: key, Kind: lockcheck.KindRelease, Call: testbed.MachineNanos()}
	rctx, rcancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	err = l.Release(rctx)
	rcancel()
	op.Return = testbed.MachineNanos()
	switch {
	case err == nil:
		op.Outcome = lockcheck.OK
	case errors.Is(err, lock.ErrNotHeld):
		op.Outcome = lockcheck.Refused
	default:
		op.Outcome, op.Return, op.Err = lockcheck.Unknown, 0, err.Error()
	}
	w.record(op)
}

// rmw is the guarded write: read the user's register, work a little, write
// it plus one. Fenced, the read first claims the register for tok (refused
// when a newer token claimed it) and the write applies only while tok is
// still the newest: the database refuses a stale holder.
func (w lcWorker) rmw(key string, user, tok int64, fenced bool, rng *mrand.Rand) {
	op := lockcheck.Op{Client: w.id, Key: key, Kind: lockcheck.KindRMW, Call: testbed.MachineNanos()}
	if fenced {
		op.Token = tok
	}
	done := func(outcome string, err error) {
		op.Return, op.Outcome = testbed.MachineNanos(), outcome
		if outcome == lockcheck.Unknown {
			op.Return = 0
		}
		if err != nil {
			op.Err = err.Error()
		}
		w.record(op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	defer cancel()
	if fenced {
		res, err := w.reg.ExecContext(ctx, "UPDATE lockcheck_register SET token = ? WHERE user_id = ? AND token < ?", tok, user, tok)
		if err != nil {
			done(lockcheck.Failed, err) // the value is untouched either way
			return
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			done(lockcheck.Refused, err)
			return
		}
	}
	if err := w.reg.QueryRowContext(ctx, "SELECT value FROM lockcheck_register WHERE user_id = ?", user).Scan(&op.Read); err != nil {
		done(lockcheck.Failed, err)
		return
	}
	time.Sleep(time.Duration(rng.Int64N(int64(w.cfg.WorkMax) + 1)))
	op.Wrote = op.Read + 1
	q, args := "UPDATE lockcheck_register SET value = ? WHERE user_id = ?", []any{op.Wrote, user}
	if fenced {
		q, args = q+" AND token = ?", append(args, tok)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	defer wcancel()
	res, err := w.reg.ExecContext(wctx, q, args...)
	if err != nil {
		done(lockcheck.Unknown, err) // sent: it may have applied
		return
	}
	if n, err := res.RowsAffected(); err != nil {
		done(lockcheck.Unknown, err)
	} else if n == 0 {
		done(lockcheck.Refused, nil)
	} else {
		done(lockcheck.OK, nil)
	}
}
