package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
	"seckill/testkit/faultproxy"
	"seckill/testkit/testenv"
)

// admitRig is a voucher with stock 5 loaded on the real Redis under a
// random id. Its testAdmission reaches Redis through a fault proxy. It appends
// to a stream of its own.
type admitRig struct {
	a      *testAdmission
	direct *redis.Client
	p      *faultproxy.Proxy
	vid    int64
}

// serviceClient is NewRedisClient on a server without a password.
func serviceClient(addr string) *redis.Client { return NewRedisClient(addr, RedisAuth{}) }

// newAdmitRig skips without SECKILL_REDIS_ADDR. client builds the
// testAdmission's client for the proxy's address.
func newAdmitRig(t *testing.T, client func(addr string) *redis.Client) *admitRig {
	t.Helper()
	addr := testenv.Need(t, "SECKILL_REDIS_ADDR")
	ctx := context.Background()
	direct := NewRedisClient(addr, RedisAuth{})
	t.Cleanup(func() { direct.Close() })
	// Cached on the server, so the first EVALSHA through the proxy runs.
	for _, sc := range []*redis.Script{scripts.Seckill, scripts.SeckillSettle} {
		if err := sc.Load(ctx, direct).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD: %v", err)
		}
	}
	p, err := faultproxy.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c := client(p.Addr())
	t.Cleanup(func() { c.Close() })
	r := &admitRig{
		a:      newTestAdmission(c, "test:stream:"+rand.Text()[:10]),
		direct: direct, p: p, vid: 1<<40 + mrand.Int64N(1<<40),
	}
	now := time.Now()
	sv := &model.SeckillVoucher{VoucherID: r.vid, InitialStock: 5, BeginTime: now.Add(-time.Minute), EndTime: now.Add(time.Hour)}
	if err := NewAsyncState(direct).Load(ctx, sv, 5, nil, nil); err != nil {
		t.Fatalf("load voucher: %v", err)
	}
	t.Cleanup(func() {
		direct.Del(context.Background(), StockKey(r.vid), BuyersKey(r.vid), VoucherKey(r.vid), r.a.streamKey(r.vid))
	})
	return r
}

// orderID returns a fresh order id whose order-info key is removed when
// the test ends.
func (r *admitRig) orderID(t *testing.T) int64 {
	id := 1<<50 + mrand.Int64N(1<<40)
	t.Cleanup(func() {
		r.direct.Del(context.Background(), OrderInfoKey(VoucherShard(r.vid), id))
	})
	return id
}

// admissions checks what Redis holds: stock, stream entries, buyers.
func (r *admitRig) admissions(t *testing.T, want int64) {
	t.Helper()
	ctx := context.Background()
	stock, _ := r.direct.Get(ctx, StockKey(r.vid)).Int64()
	entries := r.direct.XLen(ctx, r.a.streamKey(r.vid)).Val()
	buyers := r.direct.SCard(ctx, BuyersKey(r.vid)).Val()
	if stock != 5-want || entries != want || buyers != want {
		t.Errorf("Redis holds stock %d, %d stream entries, %d buyers; want %d, %d, %d (%d admission(s))",
			stock, entries, buyers, 5-want, want, want, want)
	}
}

// TestAdmitReplyLost: the admission script ran and its reply was lost. The
// order was admitted, so the answer is "admitted". Redis holds exactly one
// admission. A blind retry of the EVALSHA would find the user among the
// buyers. It would answer the admitted order DUPLICATE_ORDER.
func TestAdmitReplyLost(t *testing.T) {
	r := newAdmitRig(t, serviceClient)
	ctx := context.Background()
	oid := r.orderID(t)
	r.p.LoseReply("evalsha", nil)
	err := r.a.Admit(ctx, oid, 42, r.vid, 1, time.Now())
	if err != nil {
		t.Errorf("Admit whose reply was lost: got %v, want admitted (nil)", err)
	}
	// The admission once (not again on another connection), then its
	// settlement.
	admissions, settlements := r.p.SeenWith("evalsha", scripts.Seckill.Hash()), r.p.SeenWith("evalsha", scripts.SeckillSettle.Hash())
	if admissions != 1 || settlements != 1 {
		t.Errorf("EVALSHA of seckill.lua sent %d times, of seckill_settle.lua %d; want 1 and 1", admissions, settlements)
	}
	r.admissions(t, 1)
	if v := r.direct.Get(ctx, OrderInfoKey(VoucherShard(r.vid), oid)).Val(); v != "42:"+strconv.FormatInt(r.vid, 10)+":pending" {
		t.Errorf("order info: got %q, want 42:%d:pending", v, r.vid)
	}
}

// TestAdmitCommandLost: the admission command never reached Redis, and the
// client's retries are spent (none here). Admit cannot know that. It
// answers admitted only if the order is. Otherwise it voids the order id
// before answering 503. Should the command still arrive, it is refused. No
// order is admitted that nobody was told about. The user can buy with the
// next request.
func TestAdmitCommandLost(t *testing.T) {
	r := newAdmitRig(t, func(addr string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	})
	ctx := context.Background()
	oid := r.orderID(t)
	r.p.LoseCommand("evalsha")
	err := r.a.Admit(ctx, oid, 42, r.vid, 1, time.Now())
	if err == nil {
		t.Fatal("Admit whose command was lost: got admitted, want 503 (nothing was admitted)")
	}
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Admit whose command was lost: got %v, want ErrUnavailable (503)", err)
	}
	r.admissions(t, 0)

	// The lost command arrives late.
	code, err := scripts.Seckill.Run(ctx, r.direct,
		r.a.keys(r.vid, oid),
		42, r.vid, oid, time.Now().UnixMilli(), int64(OrderInfoTTL/time.Second)).Int()
	if err != nil {
		t.Fatalf("late seckill.lua: %v", err)
	}
	if code == scripts.SeckillOK {
		t.Errorf("the late command admitted order %d, which Admit had answered with an error", oid)
	} else if code != scripts.SeckillVoid {
		t.Errorf("the late command: got code %d, want %d (void)", code, scripts.SeckillVoid)
	}
	if _, err := r.a.OrderInfo(ctx, oid); !errors.Is(err, model.ErrOrderNotFound) {
		t.Errorf("OrderInfo of the void order: got %v, want ErrOrderNotFound", err)
	}
	r.admissions(t, 0)

	if err := r.a.Admit(ctx, r.orderID(t), 42, r.vid, 1, time.Now()); err != nil {
		t.Errorf("the user's next purchase: got %v, want admitted", err)
	}
	r.admissions(t, 1)
}

// TestAdmitReplyLostAfterWrite: the reply was lost. Before anyone asked
// again, a consumer wrote the order and acknowledged it. That dropped its
// order-info key. Redis no longer knows the order, so Admit must not answer
// DUPLICATE_ORDER. It answers unavailable with the order id void in Redis.
// The service then reads the database before answering
// (TestAsyncBuyAmbiguousAdmission).
func TestAdmitReplyLostAfterWrite(t *testing.T) {
	r := newAdmitRig(t, serviceClient)
	ctx := context.Background()
	oid := r.orderID(t)
	r.p.LoseReply("evalsha", func() {
		r.direct.Del(context.Background(), OrderInfoKey(VoucherShard(r.vid), oid))
	})
	err := r.a.Admit(ctx, oid, 42, r.vid, 1, time.Now())
	if errors.Is(err, model.ErrDuplicateOrder) {
		t.Fatalf("Admit of an admitted (and written) order: got %v, want no DUPLICATE_ORDER", err)
	}
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("Admit: got %v, want ErrUnavailable (the service asks the database)", err)
	}
	r.admissions(t, 1)
	if v := r.direct.Get(ctx, OrderInfoKey(VoucherShard(r.vid), oid)).Val(); v != scripts.OrderInfoVoid {
		t.Errorf("order info: got %q, want %q", v, scripts.OrderInfoVoid)
	}
}

// TestAdmitLoadsScript: a server without the script cached (NOSCRIPT: it
// did not run) gets it loaded, and the admission is sent again.
func TestAdmitLoadsScript(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	a := newTestAdmission(c, StreamName)
	now := time.Now()
	sv := &model.SeckillVoucher{VoucherID: 7, InitialStock: 5, BeginTime: now.Add(-time.Minute), EndTime: now.Add(time.Hour)}
	if err := a.Load(ctx, sv, 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	for user := int64(1); user <= 2; user++ {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := a.Admit(ctx, 100+user, user, 7, 1, now); err != nil {
			t.Fatalf("Admit of user %d after SCRIPT FLUSH: %v", user, err)
		}
	}
	if stock, _ := c.Get(ctx, StockKey(7)).Int64(); stock != 3 {
		t.Errorf("stock: got %d, want 3", stock)
	}
}
