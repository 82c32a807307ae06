package live

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"seckill/model"
)

// Reading defaults.
const (
	// Window is how far back the rates and latency quantiles of a Snapshot
	// look. Two seconds hold eight publications of each instance, which keeps
	// them steady.
	Window = 2 * time.Second
	// windowSlack is how much younger than Window a base reading may be.
	// Snapshots come once a second, give or take a scheduling delay.
	windowSlack = 300 * time.Millisecond
	// readTimeout bounds a Snapshot's read of the counters.
	readTimeout = 800 * time.Millisecond
	// auditTimeout bounds one audit.
	auditTimeout = 5 * time.Second
	// auditWait is how long a snapshot waits for the audit it started.
	auditWait = 300 * time.Millisecond
	// auditDuty is the share of time audits may take. After an audit that took
	// d, the next one waits max(1s, d/auditDuty). So a slow database under load
	// is not audited back to back.
	auditDuty = 0.2
)

// AuditFunc audits a voucher (the route GET /admin/vouchers/:id/audit's
// service call).
type AuditFunc func(ctx context.Context, voucherID int64) (*model.Audit, error)

// Board makes Views.
type Board struct {
	store Store
	audit AuditFunc
	now   func() time.Time
}

// NewBoard returns a Board reading store and auditing with audit; now is
// the clock (nil: time.Now).
func NewBoard(store Store, audit AuditFunc, now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{store: store, audit: audit, now: now}
}

// Sales is what goes on over every instance. It lists the live instances and
// the vouchers they answered for within ActiveFor, newest first.
type Sales struct {
	Instances []model.LiveInstance `json:"instances"`
	Vouchers  []int64              `json:"vouchers"`
}

// Sales reads the live instances and their active vouchers.
func (b *Board) Sales(ctx context.Context) (Sales, error) {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	insts, err := b.store.Instances(rctx)
	if err != nil {
		return Sales{}, err
	}
	now := b.now()
	out := Sales{Instances: []model.LiveInstance{}, Vouchers: []int64{}}
	for _, in := range insts {
		if now.Sub(in.Seen) > InstanceTTL {
			continue
		}
		out.Instances = append(out.Instances, in)
		for _, id := range in.Vouchers {
			if !slices.Contains(out.Vouchers, id) {
				out.Vouchers = append(out.Vouchers, id)
			}
		}
	}
	slices.SortFunc(out.Instances, func(a, b model.LiveInstance) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(out.Vouchers)
	slices.Reverse(out.Vouchers)
	return out, nil
}

// Snapshot is what the dashboard shows of one voucher at one moment, over
// every instance.
type Snapshot struct {
	VoucherID int64     `json:"voucherId"`
	At        time.Time `json:"at"`
	// Audit is the voucher's latest audit (stock, orders, async pending, the
	// verdict), taken at AuditAt. AuditError says why the latest attempt
	// failed. The audit shown is then the one before.
	Audit      *model.Audit `json:"audit"`
	AuditAt    time.Time    `json:"auditAt"`
	AuditError string       `json:"auditError,omitempty"`
	// Instances are the live ones (published within InstanceTTL).
	Instances []InstanceView `json:"instances"`
	// LockModes and OrderModes are the distinct modes of the instances
	// serving the voucher, that is, answering for it within ActiveFor.
	// While none does, they are the modes of all instances. Every instance
	// should run the same.
	LockModes  []string `json:"lockModes"`
	OrderModes []string `json:"orderModes"`
	// Answers counts the voucher's seckill answers by code over every
	// instance since its first request; Requests is their sum.
	Answers  map[string]int64 `json:"answers"`
	Requests int64            `json:"requests"`
	// Duplicates splits the DUPLICATE_ORDER answers by where they were stopped.
	// lock: the per-user lock. fence: a stale fencing token. check: the
	// transaction's check (sync) or the buyers set (async). uniqueKey: only the
	// database's unique key, so the lock failed.
	Duplicates Duplicates `json:"duplicates"`
	// PerSecond is the answers per second by code over the last
	// WindowSeconds, RequestsPerSecond their sum, Latency the quantiles
	// of those answers. All three are absent on a stream's first
	// snapshot (no earlier reading to compare with).
	PerSecond         map[string]float64 `json:"perSecond,omitempty"`
	RequestsPerSecond *float64           `json:"requestsPerSecond,omitempty"`
	Latency           *Latency           `json:"latency,omitempty"`
	WindowSeconds     float64            `json:"windowSeconds"`
	// Error says that the counters could not be read (Redis unavailable).
	// The counters are then the last ones read.
	Error string `json:"error,omitempty"`
}

// Duplicates are DUPLICATE_ORDER answers by where they were stopped.
type Duplicates struct {
	Lock      int64 `json:"lock"`
	Fence     int64 `json:"fence"`
	Check     int64 `json:"check"`
	UniqueKey int64 `json:"uniqueKey"`
}

// Latency is the quantiles and mean of the answers' latencies in a window,
// in milliseconds, estimated from buckets (linear within a bucket).
type Latency struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	// Count is the number of answers they are computed over.
	Count int64 `json:"count"`
}

// InstanceView is one live instance on the dashboard.
type InstanceView struct {
	model.LiveInstance
	// RequestsPerSecond is the instance's seckill answers per second
	// (every voucher) since the stream's previous reading of it.
	RequestsPerSecond *float64 `json:"requestsPerSecond,omitempty"`
	// Serving says that it answered for this voucher within ActiveFor.
	Serving bool `json:"serving"`
}

// View is one dashboard stream's reader of one voucher. It keeps the
// readings of the last seconds for the rates. Next and Start are for one
// goroutine; Close waits for an audit still running.
type View struct {
	b         *Board
	voucherID int64
	history   []reading
	instances map[string]instState
	last      Snapshot

	auditc    chan auditResult
	running   bool
	nextAudit time.Time
	wg        sync.WaitGroup
}

type reading struct {
	at     time.Time
	counts [nFields]int64
}

type auditResult struct {
	a    *model.Audit
	err  error
	at   time.Time
	took time.Duration
}

// View returns a reader of voucherID.
func (b *Board) View(voucherID int64) *View {
	return &View{b: b, voucherID: voucherID, instances: map[string]instState{}, auditc: make(chan auditResult, 1)}
}

// Start audits the voucher once and reads the counters: the first
// Snapshot. Its error is the audit's (model.ErrVoucherNotFound for an
// unknown voucher, model.ErrUnavailable, ...): the stream should not start.
func (v *View) Start(ctx context.Context) (Snapshot, error) {
	started := v.b.now()
	actx, cancel := context.WithTimeout(ctx, auditTimeout)
	a, err := v.b.audit(actx, v.voucherID)
	cancel()
	if err != nil {
		return Snapshot{}, err
	}
	now := v.b.now()
	v.last.Audit, v.last.AuditAt = a, now
	v.scheduleAudit(now, now.Sub(started))
	return v.read(ctx), nil
}

// Next returns the next Snapshot: fresh counters, and the latest audit.
// Audits run beside the stream. Next waits up to auditWait for one it
// started, then reads the counters: the orders and the answers of a
// snapshot are then taken moments apart, not an audit interval. A slower
// audit shows in a later snapshot.
func (v *View) Next(ctx context.Context) Snapshot {
	select {
	case r := <-v.auditc:
		v.applyAudit(r)
	default:
	}
	if !v.running && !v.b.now().Before(v.nextAudit) {
		v.running = true
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			started := v.b.now()
			actx, cancel := context.WithTimeout(ctx, auditTimeout)
			a, err := v.b.audit(actx, v.voucherID)
			cancel()
			at := v.b.now()
			v.auditc <- auditResult{a: a, err: err, at: at, took: at.Sub(started)}
		}()
		wait := time.NewTimer(auditWait)
		select {
		case r := <-v.auditc:
			v.applyAudit(r)
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
	}
	return v.read(ctx)
}

func (v *View) applyAudit(r auditResult) {
	v.running = false
	if r.err != nil {
		v.last.AuditError = errorText(r.err)
	} else {
		v.last.Audit, v.last.AuditAt, v.last.AuditError = r.a, r.at, ""
	}
	v.scheduleAudit(r.at, r.took)
}

// Close waits for an audit still running (its context is the stream's:
// ending the stream ends it).
func (v *View) Close() { v.wg.Wait() }

func (v *View) scheduleAudit(at time.Time, took time.Duration) {
	v.nextAudit = at.Add(max(time.Second, time.Duration(float64(took)/auditDuty)))
}

// errorText is what a snapshot says of a failed read: never the error's
// own text (it may name hosts), only its kind.
func errorText(err error) string {
	switch {
	case errors.Is(err, model.ErrVoucherNotFound):
		return "voucher not found"
	case errors.Is(err, model.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return "redis or the database unavailable"
	}
	return "internal error (see the log)"
}

// read reads the counters and the instances and builds the snapshot.
func (v *View) read(ctx context.Context) Snapshot {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	now := v.b.now()
	s := v.last
	s.VoucherID, s.At, s.WindowSeconds, s.Error = v.voucherID, now, Window.Seconds(), ""
	counts, err := v.b.store.Counts(rctx, v.voucherID)
	var insts []model.LiveInstance
	if err == nil {
		insts, err = v.b.store.Instances(rctx)
	}
	if err != nil {
		s.Error = errorText(err)
		s.PerSecond, s.RequestsPerSecond, s.Latency = nil, nil, nil
		v.last = s
		return s
	}
	cur := reading{at: now}
	for i, name := range fieldNames {
		cur.counts[i] = counts[name]
	}
	s.Answers = map[string]int64{}
	for i, c := range Codes {
		s.Answers[c] = cur.counts[i]
	}
	s.Requests = answers(cur.counts)
	d := func(k StoppedBy) int64 { return cur.counts[nCodes+int(k)] }
	s.Duplicates = Duplicates{Lock: d(StoppedByLock), Fence: d(StoppedByFence), Check: d(StoppedByCheck), UniqueKey: d(StoppedByUniqueKey)}
	s.PerSecond, s.RequestsPerSecond, s.Latency = nil, nil, nil
	if base, ok := v.base(now); ok {
		secs := now.Sub(base.at).Seconds()
		s.PerSecond = map[string]float64{}
		var delta [nFields]int64
		for i := range delta {
			delta[i] = max(0, cur.counts[i]-base.counts[i])
		}
		for i, c := range Codes {
			s.PerSecond[c] = round(float64(delta[i])/secs, 1)
		}
		rps := round(float64(answers(delta))/secs, 1)
		s.RequestsPerSecond = &rps
		s.Latency = latency(delta)
	}
	v.history = append(v.history, cur)
	if len(v.history) > 16 {
		v.history = slices.Delete(v.history, 0, len(v.history)-16)
	}
	alive := insts[:0]
	for _, in := range insts {
		if now.Sub(in.Seen) <= InstanceTTL {
			alive = append(alive, in)
		}
	}
	s.Instances, s.LockModes, s.OrderModes = v.instanceViews(alive)
	v.last = s
	return s
}

// base returns the reading the rates are computed against. That is the
// latest one about Window old, a tick's jitter short of it included. A
// stream younger than Window uses its oldest reading.
func (v *View) base(now time.Time) (reading, bool) {
	for i := len(v.history) - 1; i >= 0; i-- {
		if now.Sub(v.history[i].at) >= Window-windowSlack {
			return v.history[i], true
		}
	}
	if len(v.history) > 0 && now.Sub(v.history[0].at) > 0 {
		return v.history[0], true
	}
	return reading{}, false
}

func (v *View) instanceViews(insts []model.LiveInstance) ([]InstanceView, []string, []string) {
	out := make([]InstanceView, 0, len(insts))
	next := make(map[string]instState, len(insts))
	for _, in := range insts {
		st := v.instances[in.ID]
		if len(st.seen) == 0 || in.Seen.After(st.seen[len(st.seen)-1].Seen) {
			st.seen = append(st.seen, in)
			if len(st.seen) > 16 {
				st.seen = slices.Delete(st.seen, 0, len(st.seen)-16)
			}
		}
		next[in.ID] = st
		out = append(out, InstanceView{LiveInstance: in, RequestsPerSecond: st.rate(), Serving: slices.Contains(in.Vouchers, v.voucherID)})
	}
	v.instances = next
	slices.SortFunc(out, func(a, b InstanceView) int { return strings.Compare(a.ID, b.ID) })
	serving := slices.ContainsFunc(out, func(instance InstanceView) bool { return instance.Serving })
	var locks, orders []string
	for _, instance := range out {
		if serving && !instance.Serving {
			continue
		}
		if !slices.Contains(locks, instance.LockMode) {
			locks = append(locks, instance.LockMode)
		}
		if !slices.Contains(orders, instance.OrderMode) {
			orders = append(orders, instance.OrderMode)
		}
	}
	slices.Sort(locks)
	slices.Sort(orders)
	return out, locks, orders
}

// instState holds the latest publications of an instance a View read.
type instState struct {
	seen []model.LiveInstance
}

// rate is the instance's requests per second over the same window as the
// voucher's rates (Window), between two of its own publications. So the
// table and the tiles never measure different seconds. It is nil before a
// second publication.
func (st instState) rate() *float64 {
	if len(st.seen) < 2 {
		return nil
	}
	last := st.seen[len(st.seen)-1]
	base := st.seen[0]
	for i := len(st.seen) - 2; i >= 0; i-- {
		if last.Seen.Sub(st.seen[i].Seen) >= Window-windowSlack {
			base = st.seen[i]
			break
		}
	}
	r := round(float64(max(0, last.Requests-base.Requests))/last.Seen.Sub(base.Seen).Seconds(), 1)
	return &r
}

// latency estimates the quantiles from the bucket counts of delta. A
// bucket's answers are taken as spread evenly over a range around their own
// mean (the bucket's sum over its count). So answers of a few microseconds
// give quantiles of a few microseconds, not the bucket's middle.
func latency(delta [nFields]int64) *Latency {
	const at = nCodes + nDups
	counts := delta[at : at+nBuckets]
	sums := delta[at+nBuckets : at+2*nBuckets]
	var n, ns int64
	exact := true // every answer's bucket has its sum
	for i, c := range counts {
		n += c
		ns += sums[i]
		if c > 0 && sums[i] <= 0 {
			exact = false
		}
	}
	if n == 0 {
		return nil
	}
	q := func(p float64) float64 {
		rank := p * float64(n)
		var below int64
		for i, c := range counts {
			if c == 0 || float64(below+c) < rank {
				below += c
				continue
			}
			lo, hi := bucketRange(i, c, sums[i])
			return round(lo+(hi-lo)*(rank-float64(below))/float64(c), 3)
		}
		return ms(latencyBounds[len(latencyBounds)-1])
	}
	mean := float64(delta[nFields-1]) / float64(n) / 1000
	if exact {
		mean = float64(ns) / float64(n) / 1e6
	}
	return &Latency{P50: q(0.5), P95: q(0.95), P99: q(0.99), Mean: round(mean, 3), Count: n}
}

// bucketRange is the range, in milliseconds, over which bucket i's c
// answers are spread. It is centred on their mean when their sum (ns) is
// known: an older instance publishes none.
func bucketRange(i int, c, sum int64) (lo, hi float64) {
	if i > 0 {
		lo = ms(latencyBounds[i-1])
	}
	open := i == len(latencyBounds) // the last bucket has no upper bound
	if !open {
		hi = ms(latencyBounds[i])
	}
	m := float64(sum) / float64(c) / 1e6
	switch {
	case sum <= 0 || m < lo || (!open && m > hi):
		if open {
			return lo, lo
		}
		return lo, hi
	case open:
		return m, m
	case m-lo < hi-m:
		return lo, 2*m - lo
	}
	return 2*m - hi, hi
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
