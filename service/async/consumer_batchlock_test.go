package async

import (
	"slices"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/lock"
	"seckill/model"
	"seckill/testkit/testenv"
)

// newLuaConsRig is newConsRig with the lua lock on an in-process Redis.
func newLuaConsRig(t *testing.T) (*consRig, *miniredis.Miniredis, *testenv.ScriptCounter) {
	t.Helper()
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	calls := &testenv.ScriptCounter{}
	rdb.AddHook(calls)
	locker, err := lock.NewScripted(rdb)
	if err != nil {
		t.Fatal(err)
	}
	return newConsRigWith(locker), srv, calls
}

// TestConsumerBatchLocks: with the lua lock a batch locks its users in one
// script call. It gives them back in one more. A user whose lock someone else
// holds is left pending alone. That holder's lock is untouched.
func TestConsumerBatchLocks(t *testing.T) {
	r, srv, calls := newLuaConsRig(t)
	msgs := entries(5)
	msgs = append(msgs, model.QueuedOrder{MsgID: "m6", OrderID: 106, UserID: 1, VoucherID: 8}) // user 1 again
	srv.Set(lock.OrderKey(3), "someone else")

	left := r.c.process(msgs)
	if got := calls.Scripts.Load(); got != 2 {
		t.Errorf("script calls for a batch of 5 users: got %d, want 2 (one acquire, one release)", got)
	}
	if len(left) != 1 || left[0].MsgID != "m3" {
		t.Errorf("left pending: got %v, want m3 alone", left)
	}
	slices.Sort(r.q.acked)
	if want := []string{"m1", "m2", "m4", "m5", "m6"}; !slices.Equal(r.q.acked, want) {
		t.Errorf("acknowledged: got %v, want %v", r.q.acked, want)
	}
	if r.counts.lockNo != 1 {
		t.Errorf("locks not obtained: got %d, want 1", r.counts.lockNo)
	}
	for _, u := range []int64{1, 2, 4, 5} {
		if srv.Exists(lock.OrderKey(u)) {
			t.Errorf("lock of user %d still held after the batch", u)
		}
	}
	if v, err := srv.Get(lock.OrderKey(3)); err != nil || v != "someone else" {
		t.Errorf("the other holder's lock: got %q, %v, want it untouched", v, err)
	}
}

// TestConsumerBatchLocksRedisError: the lock script fails part-way through the
// batch. One user's fencing counter is not a number. Nothing is written, every
// entry stays pending, and no lock of the batch stays held.
func TestConsumerBatchLocksRedisError(t *testing.T) {
	r, srv, _ := newLuaConsRig(t)
	srv.HSet(lock.FenceKey(lock.OrderKey(3)), "not", "a counter")
	left := r.c.process(entries(5))
	if len(left) != 5 || len(r.q.acked) != 0 || len(r.orders.written) != 0 {
		t.Errorf("got %d left, %v acknowledged, %d written; want 5, none, none", len(left), r.q.acked, len(r.orders.written))
	}
	for u := int64(1); u <= 5; u++ {
		if srv.Exists(lock.OrderKey(u)) {
			t.Errorf("lock of user %d left held after the failed batch", u)
		}
	}
}
