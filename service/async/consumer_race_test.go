package async

import (
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/repository/sqlstore"
	"seckill/service/internal/servicetest"
	"seckill/testkit/testenv"
)

// Integration tests of the consumers against the real MariaDB and Redis.
// They need SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR, and skip without them.
// Two consumers race for one entry, their steps driven one by one.
// Invariant 5 (Redis stock + orders + pending = initial) is checked after.
// Each test has its own stream, dead-letter stream and voucher.

// raceEnv is one test's stores.
type raceEnv struct {
	rdb    *redis.Client
	db     *sqlstore.DB
	orders *sqlstore.Orders
	queue  *redisstore.OrderStream
	stream string
	dlq    string
	locker *lock.Local
}

func newRaceEnv(t *testing.T) *raceEnv {
	t.Helper()
	dsn, addr := testenv.Need(t, "SECKILL_MYSQL_DSN"), testenv.Need(t, "SECKILL_REDIS_ADDR")
	ctx := context.Background()
	db, err := sqlstore.OpenMySQL(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rdb := redisstore.NewRedisClient(addr, redisstore.RedisAuth{})
	sfx := rand.Text()[:10]
	e := &raceEnv{rdb: rdb, db: db, orders: sqlstore.NewOrders(db),
		stream: "test:race:stream:" + sfx, dlq: "test:race:dlq:" + sfx}
	e.queue = redisstore.NewOrderStreamOn(rdb, e.stream, e.dlq)
	t.Cleanup(func() {
		for i := range redisstore.Shards {
			rdb.Del(context.Background(), redisstore.ShardKey(i, e.stream), redisstore.ShardKey(i, e.dlq))
		}
		rdb.Close()
	})
	if err := e.queue.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if e.locker, err = lock.NewLocal(); err != nil {
		t.Fatal(err)
	}
	return e
}

// voucher publishes a voucher on sale with stock in the database and loads
// it into Redis.
func (e *raceEnv) voucher(t *testing.T, stock int) int64 {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	v := &model.Voucher{ShopID: 9, Title: "race", PayValue: 1, ActualValue: 2, Type: 1, Status: 1, CreateTime: now, UpdateTime: now}
	sv := &model.SeckillVoucher{Stock: stock, InitialStock: stock, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour), CreateTime: now, UpdateTime: now}
	if err := sqlstore.NewVouchers(e.db).CreateSeckill(ctx, v, sv); err != nil {
		t.Fatal(err)
	}
	if err := redisstore.NewAsyncState(e.rdb).Load(ctx, sv, int64(stock), nil, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), redisstore.StockKey(v.ID), redisstore.BuyersKey(v.ID), redisstore.VoucherKey(v.ID))
	})
	return v.ID
}

// admit runs the admission script for a new user into the test's stream
// and returns the user and the order id.
func (e *raceEnv) admit(t *testing.T, vid int64) (user, orderID int64) {
	t.Helper()
	user, orderID = 1_000_000+mrand.Int64N(1<<40), 1_000_000+mrand.Int64N(1<<50)
	err := redisstore.NewSeckillScriptOn(e.rdb, e.stream).Run(context.Background(), orderID, user, vid, 0, model.AdmitOnly, 0, time.Now())
	if err != nil {
		t.Fatalf("admission: %v", err)
	}
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), redisstore.OrderInfoKey(redisstore.VoucherShard(vid), orderID))
	})
	return user, orderID
}

// readOne has c read the stream's one new entry, that of orderID.
func (e *raceEnv) readOne(t *testing.T, c *consumer, orderID int64) []model.QueuedOrder {
	t.Helper()
	msgs, err := e.queue.ReadNew(context.Background(), c.name, 10, -1)
	if err != nil || len(msgs) != 1 || msgs[0].OrderID != orderID {
		t.Fatalf("%s read %v, %v, want the entry of order %d", c.name, msgs, err, orderID)
	}
	return msgs
}

// consumer returns a consumer named name over the test's stores; queue
// replaces the test's stream when set.
func (e *raceEnv) consumer(name string, cfg ConsumerConfig, queue OrderQueue) *consumer {
	if queue == nil {
		queue = e.queue
	}
	counts := &consCounts{dead: map[string]int{}}
	g := NewConsumerGroup(ConsumerDeps{
		Orders: e.orders, Queue: queue, Locker: e.locker, Rejects: counts,
		Observer: counts, Metrics: counts, Log: servicetest.DiscardLog(),
	}, cfg)
	return g.newConsumer(name+"-"+rand.Text()[:6], make(chan struct{}))
}

// claimer is consumer B: it claims what was idle for a millisecond.
// It dead-letters an entry delivered twice (MaxAttempts 1).
// That is how the entries of a consumer taken for dead are given up.
func (e *raceEnv) claimer(queue OrderQueue) *consumer {
	return e.consumer("B", ConsumerConfig{ClaimIdle: time.Millisecond, MaxAttempts: 1}, queue)
}

// claim has b claim and process what is idle. The entry read by the other
// consumer must be idle for ClaimIdle (1ms) first. Sleeping longer can only make
// it idler, so a slow machine cannot change the outcome.
func claim(t *testing.T, b *consumer) {
	t.Helper()
	time.Sleep(5 * time.Millisecond)
	if left := b.claim(context.Background(), nil); len(left) != 0 {
		t.Fatalf("B left %d entries pending, want none", len(left))
	}
}

// state is what invariant 5 is made of, for one voucher.
type raceState struct {
	redisStock, orders, pending, dead int64
}

func (e *raceEnv) state(t *testing.T, vid int64) raceState {
	t.Helper()
	ctx := context.Background()
	var st raceState
	var err error
	if st.redisStock, err = e.rdb.Get(ctx, redisstore.StockKey(vid)).Int64(); err != nil {
		t.Fatal(err)
	}
	entries, err := e.queue.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mine := queued(entries, func(v int64) bool { return v == vid })
	tally, err := e.orders.VoucherSnapshot(ctx, vid, mine)
	if err != nil {
		t.Fatal(err)
	}
	st.orders, st.pending = tally.Orders, int64(len(pending(mine, tally.Written)))
	if st.dead, err = e.rdb.XLen(ctx, redisstore.ShardKey(redisstore.VoucherShard(vid), e.dlq)).Result(); err != nil {
		t.Fatal(err)
	}
	return st
}

// checkInvariant5 fails unless Redis stock + orders + pending = initial.
func checkInvariant5(t *testing.T, st raceState, initial int64) {
	t.Helper()
	if sum := st.redisStock + st.orders + st.pending; sum != initial {
		t.Errorf("invariant 5: redis stock %d + orders %d + pending %d = %d, want %d (initial stock)",
			st.redisStock, st.orders, st.pending, sum, initial)
	}
}

// TestConsumerDoesNotWriteEntryItLost: A keeps an entry for a retry, its user's
// lock busy. While A backs off, B claims the entry and dead-letters it. A's
// retry must then drop the entry, not write it.
func TestConsumerDoesNotWriteEntryItLost(t *testing.T) {
	e := newRaceEnv(t)
	ctx := context.Background()
	const initial = 2
	vid := e.voucher(t, initial)
	user, orderID := e.admit(t, vid)
	a, b := e.consumer("A", ConsumerConfig{}, nil), e.claimer(nil)

	msgs := e.readOne(t, a, orderID)
	// A's first attempt: the user's lock is held elsewhere, the entry stays
	// pending with A, kept in memory for a retry.
	busy, err := e.locker.Obtain(ctx, lock.OrderKey(user))
	if err != nil {
		t.Fatal(err)
	}
	left := a.process(msgs)
	if err := busy.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 {
		t.Fatalf("A left %d entries pending, want 1", len(left))
	}
	kept, err := a.touch(ctx, left)
	if err != nil || len(kept) != 1 {
		t.Fatalf("A touched %v, %v, want the entry kept", kept, err)
	}

	// While A backs off, B claims the entry and dead-letters it.
	claim(t, b)
	if st := e.state(t, vid); st.dead != 1 || st.redisStock != initial || st.orders != 0 {
		t.Fatalf("after B: got %+v, want the entry dead-lettered and its stock back (%d)", st, initial)
	}

	// A retries from memory.
	retry, err := a.touch(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	a.process(retry)

	st := e.state(t, vid)
	if st.orders != 0 {
		t.Errorf("A wrote order %d after B dead-lettered its entry (kept %d entries after touching)", orderID, len(retry))
	}
	checkInvariant5(t, st, initial)
}

// deadLetterHook is an OrderQueue that runs before at the start of
// DeadLetter.
type deadLetterHook struct {
	OrderQueue
	before func()
}

func (h *deadLetterHook) DeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int, give model.GiveBack) (bool, error) {
	if h.before != nil {
		h.before()
		h.before = nil
	}
	return h.OrderQueue.DeadLetter(ctx, m, reason, attempts, give)
}

// TestDeadLetterRacesWrite: A's batch transaction runs while B decides to
// dead-letter the entry. A's transaction commits after B's decision and before
// B's dead-letter script. The entry must end up written or dead-lettered, never
// both. Invariant 5 must hold.
func TestDeadLetterRacesWrite(t *testing.T) {
	e := newRaceEnv(t)
	ctx := context.Background()
	const initial = 2
	vid := e.voucher(t, initial)
	_, orderID := e.admit(t, vid)
	a := e.consumer("A", ConsumerConfig{}, nil)

	msgs := e.readOne(t, a, orderID)
	var aErr error
	hooked := false
	b := e.claimer(&deadLetterHook{OrderQueue: e.queue, before: func() {
		// A's batch transaction commits now.
		hooked = true
		now := time.Now()
		_, aErr = e.orders.WriteBatch(ctx, "", []model.VoucherOrder{{
			ID: orderID, UserID: msgs[0].UserID, VoucherID: vid, PayType: 1,
			Status: model.OrderStatusCreated, CreateTime: now, UpdateTime: now,
		}})
	}})
	claim(t, b)
	if !hooked {
		t.Fatal("B never reached its dead-letter script")
	}
	t.Logf("A's transaction: %v", aErr)
	// A's batch goes on (acknowledges what it wrote, or retries what it
	// could not).
	a.process(msgs)

	st := e.state(t, vid)
	if st.orders != 0 && st.dead != 0 {
		t.Errorf("order %d written and dead-lettered: %d orders, %d dead letters", orderID, st.orders, st.dead)
	}
	if st.orders+st.dead != 1 {
		t.Errorf("got %d orders and %d dead letters, want exactly one of them", st.orders, st.dead)
	}
	checkInvariant5(t, st, initial)
}
