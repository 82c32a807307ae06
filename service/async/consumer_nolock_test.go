package async

import (
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/repository/redisstore"
	"seckill/service/internal/servicetest"
)

// Consumers without the per-user lock (SECKILL_CONSUMER_LOCK=off, the
// default). The database decides one order per user: the unique key, the
// outcome row of each order id. These tests drive the races the lock used
// to serialize, against the real MariaDB and Redis.

// unlockedConsumer is a consumer over the test's stores that takes no lock.
func (e *raceEnv) unlockedConsumer(name string, cfg ConsumerConfig) (*consumer, *consCounts) {
	counts := &consCounts{dead: map[string]int{}}
	g := NewConsumerGroup(ConsumerDeps{
		Orders: e.orders, Queue: e.queue, Rejects: counts,
		Observer: counts, Metrics: counts, Log: servicetest.DiscardLog(),
	}, cfg)
	return g.newConsumer(name+"-"+rand.Text()[:6], make(chan struct{})), counts
}

// admitUser runs the admission script for user and returns the order id.
func (e *raceEnv) admitUser(t *testing.T, vid, user int64) int64 {
	t.Helper()
	orderID := 1_000_000 + mrand.Int64N(1<<50)
	err := redisstore.NewSeckillScriptOn(e.rdb, e.stream).Run(context.Background(), orderID, user, vid, 0, model.AdmitOnly, 0, time.Now())
	if err != nil {
		t.Fatalf("admission of user %d: %v", user, err)
	}
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), redisstore.OrderInfoKey(redisstore.VoucherShard(vid), orderID))
	})
	return orderID
}

// TestUnlockedConsumersDoubleAdmission: a failover lost the user's buyer
// mark, so the user was admitted twice (two order ids). Two consumers
// without locks write the two entries at the same time, then a third gets
// the first entry again (a redelivery). Exactly one order must exist, the
// other entry dead-lettered as a duplicate with its unit given back and the
// buyer mark kept, and invariant 5 must hold (stock and buyers).
func TestUnlockedConsumersDoubleAdmission(t *testing.T) {
	e := newRaceEnv(t)
	ctx := context.Background()
	const initial = 3
	vid := e.voucher(t, initial)
	user := 1_000_000 + mrand.Int64N(1<<40)
	first := e.admitUser(t, vid, user)
	// The failover: the replica promoted had not seen the buyer mark.
	if err := e.rdb.SRem(ctx, redisstore.BuyersKey(vid), user).Err(); err != nil {
		t.Fatal(err)
	}
	second := e.admitUser(t, vid, user)

	a, ca := e.unlockedConsumer("A", ConsumerConfig{})
	b, cb := e.unlockedConsumer("B", ConsumerConfig{})
	ma, err := e.queue.ReadNew(ctx, a.name, 1, -1)
	if err != nil || len(ma) != 1 || ma[0].OrderID != first {
		t.Fatalf("A read %v, %v, want the entry of order %d", ma, err, first)
	}
	mb, err := e.queue.ReadNew(ctx, b.name, 1, -1)
	if err != nil || len(mb) != 1 || mb[0].OrderID != second {
		t.Fatalf("B read %v, %v, want the entry of order %d", mb, err, second)
	}
	var wg sync.WaitGroup
	var leftA, leftB []model.QueuedOrder
	wg.Add(2)
	go func() { defer wg.Done(); leftA = a.process(ma) }()
	go func() { defer wg.Done(); leftB = b.process(mb) }()
	wg.Wait()
	if len(leftA)+len(leftB) != 0 {
		t.Fatalf("left pending: A %v, B %v, want none", leftA, leftB)
	}
	// A redelivery of the first entry to a third consumer (its
	// acknowledgement lost): it must find the order, not write another.
	c, _ := e.unlockedConsumer("C", ConsumerConfig{})
	c.process(ma)

	var orders int64
	if err := e.db.Gorm.WithContext(ctx).Model(&model.VoucherOrder{}).
		Where("user_id = ? AND voucher_id = ?", user, vid).Count(&orders).Error; err != nil {
		t.Fatal(err)
	}
	if orders != 1 {
		t.Errorf("orders of the user: got %d, want 1", orders)
	}
	dups := ca.dead[ReasonDuplicate] + cb.dead[ReasonDuplicate]
	if dups != 1 {
		t.Errorf("duplicate dead letters: got %d (A %v, B %v), want 1", dups, ca.dead, cb.dead)
	}
	st := e.state(t, vid)
	if st.dead != 1 {
		t.Errorf("dead-letter stream: got %d entries, want 1", st.dead)
	}
	checkInvariant5(t, st, initial)
	buyers, err := e.rdb.SCard(ctx, redisstore.BuyersKey(vid)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if buyers != st.orders+st.pending {
		t.Errorf("invariant 5: buyers %d, want orders %d + pending %d", buyers, st.orders, st.pending)
	}
}

// TestUnlockedConsumersSameEntry: two consumers without locks hold the same
// entry (one claimed it from the other) and write it at the same time. One
// order must be written, none dead-lettered, invariant 5 kept.
func TestUnlockedConsumersSameEntry(t *testing.T) {
	e := newRaceEnv(t)
	ctx := context.Background()
	const initial = 2
	vid := e.voucher(t, initial)
	user, orderID := e.admit(t, vid)
	a, _ := e.unlockedConsumer("A", ConsumerConfig{})
	b, _ := e.unlockedConsumer("B", ConsumerConfig{})
	msgs, err := e.queue.ReadNew(ctx, a.name, 10, -1)
	if err != nil || len(msgs) != 1 || msgs[0].OrderID != orderID {
		t.Fatalf("A read %v, %v, want the entry of order %d", msgs, err, orderID)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.process(msgs) }()
	go func() { defer wg.Done(); b.process(msgs) }()
	wg.Wait()

	var orders int64
	if err := e.db.Gorm.WithContext(ctx).Model(&model.VoucherOrder{}).
		Where("user_id = ? AND voucher_id = ?", user, vid).Count(&orders).Error; err != nil {
		t.Fatal(err)
	}
	st := e.state(t, vid)
	if orders != 1 || st.dead != 0 {
		t.Errorf("got %d orders and %d dead letters, want 1 and 0", orders, st.dead)
	}
	checkInvariant5(t, st, initial)
}
