package redisstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
	"seckill/service/async"
)

// testAdmission is the Redis side of async mode as app wires it, with the
// service's step over it: the tests of this package admit through it.
type testAdmission struct {
	*AsyncState
	*SeckillScript
}

// newTestAdmission admits into the streams named stream.
func newTestAdmission(rdb redis.UniversalClient, stream string) *testAdmission {
	return &testAdmission{NewAsyncState(rdb), NewSeckillScriptOn(rdb, stream)}
}

// Admit is async.AdmitOrder over a's SeckillScript.
func (a *testAdmission) Admit(ctx context.Context, orderID, userID, voucherID int64, buckets int, now time.Time) error {
	return async.AdmitOrder(ctx, a.SeckillScript, orderID, userID, voucherID, buckets, now)
}

// admitBatch runs one Admit per user at once and returns their answers.
// Every admission goes in one pipeline. The batcher's round trips all count
// as in flight until every admission waits. Then one ends.
func admitBatch(t *testing.T, r *admitRig, ctx context.Context, oids []int64, users []int64) []error {
	t.Helper()
	b := r.a.batch
	b.mu.Lock()
	b.inFlight = evalInFlight
	b.mu.Unlock()
	errs := make([]error, len(users))
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() { errs[i] = r.a.Admit(ctx, oids[i], users[i], r.vid, 1, time.Now()) })
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n == len(users) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d admissions queued, want %d", n, len(users))
		}
		time.Sleep(time.Millisecond)
	}
	b.release(r.a.rdb) // one round trip ends: the next takes the queue
	wg.Wait()
	b.mu.Lock()
	b.inFlight -= evalInFlight - 1 // the ones the test pretended
	b.mu.Unlock()
	return errs
}

// TestAdmitPipelineCut: a pipeline of five admissions is cut after the
// second. The third reaches Redis half, the rest not at all. Each member is
// admitted exactly once and told so. Or it is told 503 with its order id
// void. Should its command still arrive, it is refused.
func TestAdmitPipelineCut(t *testing.T) {
	const cutAfter = 2
	r := newAdmitRig(t, serviceClient)
	r.p.CutPipeline("evalsha", scripts.Seckill.Hash(), cutAfter)
	ctx := context.Background()

	users := []int64{41, 42, 43, 44, 45}
	oids := make([]int64, len(users))
	for i := range oids {
		oids[i] = r.orderID(t)
	}
	errs := admitBatch(t, r, ctx, oids, users)

	admitted := int64(0)
	for i, err := range errs {
		info := r.direct.Get(ctx, OrderInfoKey(VoucherShard(r.vid), oids[i])).Val()
		switch {
		case err == nil:
			admitted++
			if want := strconv.FormatInt(users[i], 10) + ":" + strconv.FormatInt(r.vid, 10) + ":pending"; info != want {
				t.Errorf("member %d told admitted: order info %q, want %q", i, info, want)
			}
		case errors.Is(err, model.ErrUnavailable):
			if info != scripts.OrderInfoVoid {
				t.Errorf("member %d told %v: order info %q, want %q", i, err, info, scripts.OrderInfoVoid)
			}
			// Its command arrives late: refused.
			code, lerr := scripts.Seckill.Run(ctx, r.direct,
				r.a.keys(r.vid, oids[i]),
				users[i], r.vid, oids[i], time.Now().UnixMilli(), int64(OrderInfoTTL/time.Second)).Int()
			if lerr != nil || code != scripts.SeckillVoid {
				t.Errorf("member %d's late command: got %d, %v; want %d (void)", i, code, lerr, scripts.SeckillVoid)
			}
		default:
			t.Errorf("member %d: got %v, want admitted or ErrUnavailable", i, err)
		}
	}
	if admitted != cutAfter {
		t.Errorf("%d members admitted, want the %d sent whole before the cut", admitted, cutAfter)
	}
	r.admissions(t, admitted)
}

// TestAdmitPipelineReplyAndCommandLost: a whole pipeline's replies or
// commands are lost. With replies lost, every admission ran. Each member is
// told admitted and sent once. With commands lost, none ran. Each member is
// told 503, its order id void.
func TestAdmitPipelineReplyAndCommandLost(t *testing.T) {
	tests := []struct {
		name     string
		loseCmd  bool
		admitted int64
	}{
		{"reply lost", false, 3},
		{"command lost", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newAdmitRig(t, serviceClient)
			ctx := context.Background()
			if tt.loseCmd {
				r.p.LoseCommand("evalsha")
			} else {
				r.p.LoseReply("evalsha", nil)
			}
			users := []int64{41, 42, 43}
			oids := []int64{r.orderID(t), r.orderID(t), r.orderID(t)}
			errs := admitBatch(t, r, ctx, oids, users)
			for i, err := range errs {
				if tt.admitted > 0 && err != nil {
					t.Errorf("member %d: got %v, want admitted", i, err)
				}
				if tt.admitted == 0 && !errors.Is(err, model.ErrUnavailable) {
					t.Errorf("member %d: got %v, want ErrUnavailable", i, err)
				}
			}
			// (A lost command's pipeline is counted, though dropped.)
			if n := int64(r.p.SeenWith("evalsha", scripts.Seckill.Hash())); !tt.loseCmd && n != tt.admitted {
				t.Errorf("EVALSHA of seckill.lua reached Redis %d times, want %d (each at most once)", n, tt.admitted)
			}
			r.admissions(t, tt.admitted)
		})
	}
}

// TestAdmitDeadlineWhileQueued: a caller whose context ends while its
// admission waits for a round trip is answered at once, and its admission
// is never sent.
func TestAdmitDeadlineWhileQueued(t *testing.T) {
	r := newAdmitRig(t, serviceClient)
	b := r.a.batch
	b.mu.Lock()
	b.inFlight = evalInFlight // every round trip busy
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.a.Admit(ctx, r.orderID(t), 42, r.vid, 1, time.Now())
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("Admit answered after %v, want about the 50 ms deadline", took)
	}
	if !errors.Is(err, model.ErrUnavailable) || !errors.Is(err, errAdmitNotSent) {
		t.Errorf("Admit: got %v, want ErrUnavailable, not sent", err)
	}
	b.mu.Lock()
	queued := len(b.queue)
	b.inFlight = 0
	b.mu.Unlock()
	if queued != 0 {
		t.Errorf("%d admissions left queued, want 0", queued)
	}
	if n := r.p.SeenWith("evalsha", scripts.Seckill.Hash()); n != 0 {
		t.Errorf("EVALSHA of seckill.lua sent %d times, want 0", n)
	}
	r.admissions(t, 0)
}

// TestAdmitDeadlineInFlight: a caller's context ends while its pipeline is
// in flight. The replies are held for 2 s. The settlement answers it
// promptly. The admission ran, so it is admitted, once.
func TestAdmitDeadlineInFlight(t *testing.T) {
	r := newAdmitRig(t, serviceClient)
	r.p.StallPipeline("evalsha", scripts.Seckill.Hash(), 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	users := []int64{41, 42}
	oids := []int64{r.orderID(t), r.orderID(t)}
	start := time.Now()
	errs := admitBatch(t, r, ctx, oids, users)
	if took := time.Since(start); took > time.Second {
		t.Errorf("answers after %v, want about the 200 ms deadline", took)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %d: got %v, want admitted (settled)", i, err)
		}
	}
	r.admissions(t, 2)
	time.Sleep(2200 * time.Millisecond) // the held replies arrive: nothing more
	r.admissions(t, 2)
}

// TestAdmitPipelineObserved: ObservePipelines is told of every round trip
// with the admissions it carries: 1 for an admission sent alone, the
// pipeline's size for queued ones.
func TestAdmitPipelineObserved(t *testing.T) {
	r := newAdmitRig(t, serviceClient)
	var mu sync.Mutex
	var seen []int
	r.a.ObservePipelines(func(n int) {
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
	})
	ctx := context.Background()
	if err := r.a.Admit(ctx, r.orderID(t), 40, r.vid, 1, time.Now()); err != nil {
		t.Fatalf("lone admission: %v", err)
	}
	users := []int64{41, 42, 43}
	oids := []int64{r.orderID(t), r.orderID(t), r.orderID(t)}
	for i, err := range admitBatch(t, r, ctx, oids, users) {
		if err != nil {
			t.Errorf("member %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 3 {
		t.Errorf("round trips observed: %v, want [1 3] (one alone, then a pipeline of 3)", seen)
	}
	r.admissions(t, 4)
}
