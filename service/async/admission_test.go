package async

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/catalog/catalogtest"
	"seckill/service/internal/ordertest"
	"seckill/service/internal/servicetest"
)

// ambigScript answers every run of seckill.lua with err.
type ambigScript struct {
	SeckillScript
	err error
}

func (a *ambigScript) Run(context.Context, int64, int64, int64, int, model.AdmitMode, int, time.Time) error {
	return a.err
}

// ambigVouchers adds ListLive to catalogtest.Vouchers.
type ambigVouchers struct{ *catalogtest.Vouchers }

func (ambigVouchers) ListLive(context.Context, time.Time) ([]model.SeckillVoucher, error) {
	return nil, nil
}

// ambigOrders is the database: GetOrder only, counted.
type ambigOrders struct {
	AsyncOrderStore
	f     *ordertest.Orders
	reads atomic.Int64
}

func (o *ambigOrders) GetOrder(ctx context.Context, id int64) (*model.VoucherOrder, error) {
	o.reads.Add(1)
	return o.f.GetOrder(ctx, id)
}

// TestAsyncBuyAmbiguousAdmission: Buy reads the database when the admission's
// outcome is unknown. Admit then reports Redis unavailable, having voided the
// order id unless it was admitted. A consumer may have written the order
// already, and then it was admitted.
func TestAsyncBuyAmbiguousAdmission(t *testing.T) {
	ioErr := model.Unavailable(errors.New("read tcp: i/o timeout"))
	tests := []struct {
		name      string
		admitErr  error
		written   bool // the order is in the database
		getErr    error
		wantErr   error
		wantReads int64
	}{
		{name: "written already", admitErr: ioErr, written: true, wantReads: 1},
		{name: "not written", admitErr: ioErr, wantErr: model.ErrUnavailable, wantReads: 1},
		{name: "database down too", admitErr: ioErr, getErr: model.Unavailable(errors.New("db down")), wantErr: model.ErrUnavailable, wantReads: 1},
		{name: "voucher not loaded: a refusal, no read", admitErr: fmt.Errorf("%w: %w", model.ErrUnavailable, model.ErrVoucherNotLoaded), written: true, wantErr: model.ErrVoucherNotLoaded},
		{name: "voucher unsafe: a refusal, no read", admitErr: fmt.Errorf("%w: %w", model.ErrUnavailable, model.ErrVoucherUnsafe), written: true, wantErr: model.ErrVoucherUnsafe},
		{name: "duplicate: no read", admitErr: model.ErrDuplicateOrder, written: true, wantErr: model.ErrDuplicateOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			v := catalogtest.NewVouchers(100)
			v.Put(model.SeckillVoucher{VoucherID: 7, InitialStock: 5, Stock: 5, BeginTime: now.Add(-time.Hour), EndTime: now.Add(time.Hour)})
			ids := &ordertest.IDs{}
			orders := &ambigOrders{f: ordertest.NewOrders(nil, v)}
			orders.f.GetErr = tt.getErr
			const user = 42
			wantID := int64(1<<40 + 1) // ordertest.IDs' first id
			if tt.written {
				orders.f.Orders[wantID] = model.VoucherOrder{ID: wantID, UserID: user, VoucherID: 7, Status: model.OrderStatusCreated}
			}
			s := NewAsyncSeckill(AsyncSeckillDeps{
				Vouchers: ambigVouchers{v}, Orders: orders, IDs: ids,
				Script: &ambigScript{err: tt.admitErr}, Log: servicetest.DiscardLog(),
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			id, err := s.Buy(ctx, user, 7)
			if got := orders.reads.Load(); got != tt.wantReads {
				t.Errorf("database reads: got %d, want %d", got, tt.wantReads)
			}
			if servicetest.CheckErr(t, err, "", tt.wantErr) {
				return
			}
			if id != wantID {
				t.Errorf("order id: got %d, want %d", id, wantID)
			}
		})
	}
}

// scriptRun is one run of seckill.lua a stepScript saw.
type scriptRun struct {
	b, home int
	mode    model.AdmitMode
}

// stepScript is seckill.lua as a table: reply[b] is bucket b's answer (nil:
// admitted), and lost[b] loses it (settled with verdict[b]).
type stepScript struct {
	mu       sync.Mutex
	reply    map[int]error
	lost     map[int]bool
	verdict  map[int]error
	runs     []scriptRun
	settled  []int
	releases chan bool // moved, per release
	relErr   error
}

func (s *stepScript) Run(_ context.Context, _, _, _ int64, b int, mode model.AdmitMode, home int, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, scriptRun{b: b, home: home, mode: mode})
	if s.lost[b] {
		return fmt.Errorf("%w: read tcp: i/o timeout", model.ErrReplyLost)
	}
	return s.reply[b]
}

func (s *stepScript) Settle(_ context.Context, _, _, _ int64, b int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled = append(s.settled, b)
	return s.verdict[b]
}

func (s *stepScript) Release(_ context.Context, _, _, _ int64, _ int, moved bool) error {
	s.releases <- moved
	return s.relErr
}

// TestAdmitOrderSteps: what AdmitOrder makes of seckill.lua's replies on a
// voucher of three buckets. The user's home bucket is tried first, then
// the next ones "away", and the home bucket's reservation is released:
// "moved" when another bucket admitted the order, "void" otherwise. A
// lost reply is settled in its bucket.
func TestAdmitOrderSteps(t *testing.T) {
	const user, buckets = 7, 3
	home := model.HomeBucket(user, buckets)
	next, last := (home+1)%buckets, (home+2)%buckets
	tests := []struct {
		name    string
		reply   map[int]error
		lost    map[int]bool
		verdict map[int]error
		want    error
		runs    []int
		settled []int
		moved   []bool // the releases
	}{
		{name: "admitted at home", reply: map[int]error{home: nil}, runs: []int{home}},
		{name: "duplicate at home", reply: map[int]error{home: model.ErrDuplicateOrder}, want: model.ErrDuplicateOrder, runs: []int{home}},
		{name: "moved to the last bucket", reply: map[int]error{home: model.ErrNextBucket, next: model.ErrSoldOut, last: nil},
			runs: []int{home, next, last}, moved: []bool{true}},
		{name: "sold out everywhere", reply: map[int]error{home: model.ErrNextBucket, next: model.ErrSoldOut, last: model.ErrSoldOut},
			want: model.ErrSoldOut, runs: []int{home, next, last}, moved: []bool{false}},
		{name: "ended away", reply: map[int]error{home: model.ErrNextBucket, next: model.ErrSeckillEnded},
			want: model.ErrSeckillEnded, runs: []int{home, next}, moved: []bool{false}},
		{name: "home reply lost, settled moving", lost: map[int]bool{home: true}, verdict: map[int]error{home: model.ErrNextBucket},
			reply: map[int]error{next: nil}, runs: []int{home, next}, settled: []int{home}, moved: []bool{true}},
		{name: "home reply lost, settled admitted", lost: map[int]bool{home: true}, verdict: map[int]error{home: nil},
			runs: []int{home}, settled: []int{home}},
		{name: "away reply lost, settled admitted", reply: map[int]error{home: model.ErrNextBucket}, lost: map[int]bool{next: true},
			verdict: map[int]error{next: nil}, runs: []int{home, next}, settled: []int{next}, moved: []bool{true}},
		{name: "away reply lost, settled void", reply: map[int]error{home: model.ErrNextBucket}, lost: map[int]bool{next: true},
			verdict: map[int]error{next: model.ErrOrderVoid}, want: model.ErrUnavailable, runs: []int{home, next}, settled: []int{next}, moved: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stepScript{reply: tt.reply, lost: tt.lost, verdict: tt.verdict, releases: make(chan bool, 4)}
			err := AdmitOrder(context.Background(), s, 1<<40, user, 9, buckets, time.Now())
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("AdmitOrder: got %v, want %v", err, tt.want)
			}
			var runs []int
			for i, r := range s.runs {
				runs = append(runs, r.b)
				wantMode := model.AdmitAway
				if i == 0 {
					wantMode = model.AdmitHome
				}
				if r.mode != wantMode || r.home != home {
					t.Errorf("run %d in bucket %d: mode %d, home %d; want %d, %d", i, r.b, r.mode, r.home, wantMode, home)
				}
			}
			if !slices.Equal(runs, tt.runs) {
				t.Errorf("buckets run: got %v, want %v", runs, tt.runs)
			}
			if !slices.Equal(s.settled, tt.settled) {
				t.Errorf("buckets settled: got %v, want %v", s.settled, tt.settled)
			}
			close(s.releases)
			var moved []bool
			for m := range s.releases {
				moved = append(moved, m)
			}
			if !slices.Equal(moved, tt.moved) {
				t.Errorf("releases (moved): got %v, want %v", moved, tt.moved)
			}
		})
	}
}

// TestAdmitOrderReleasesInBackground: when the home bucket's answer is
// unavailable, a reservation may have been made: AdmitOrder answers
// ErrUnavailable and releases it ("void") in the background, retrying
// until Redis answers.
func TestAdmitOrderReleasesInBackground(t *testing.T) {
	const user, buckets = 7, 2
	s := &unavailableScript{releases: make(chan bool)}
	err := AdmitOrder(context.Background(), s, 1<<40, user, 9, buckets, time.Now())
	if !errors.Is(err, model.ErrUnavailable) {
		t.Fatalf("AdmitOrder: got %v, want ErrUnavailable", err)
	}
	if moved := <-s.releases; moved {
		t.Error("background release: moved, want void")
	}
	if moved := <-s.releases; moved { // a second try after the failed first
		t.Error("background release retried: moved, want void")
	}
}

// unavailableScript answers every run ErrUnavailable. Its first release
// fails, the next ones succeed.
type unavailableScript struct {
	SeckillScript
	releases chan bool
	n        atomic.Int64
}

func (*unavailableScript) Run(context.Context, int64, int64, int64, int, model.AdmitMode, int, time.Time) error {
	return model.Unavailable(errors.New("dial tcp: connection refused"))
}

func (s *unavailableScript) Release(_ context.Context, _, _, _ int64, _ int, moved bool) error {
	s.releases <- moved
	if s.n.Add(1) == 1 {
		return model.Unavailable(errors.New("dial tcp: connection refused"))
	}
	return nil
}
