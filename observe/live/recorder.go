// Package live feeds the live sale dashboard (GET /admin/vouchers/:id/live).
//
// Each serving process counts its seckill answers per voucher in memory
// (Recorder: a map lookup and a few atomic adds per request, no I/O). A
// Publisher adds the counts to shared per-voucher counters in Redis every
// quarter second, and records the process as alive. A View serves one
// dashboard stream. It reads the shared counters of every instance and the
// voucher's audit. It turns them into one Snapshot per second: totals,
// rates, latency quantiles, the instances and their modes. A process's
// counts reach the dashboard only through Redis. So any instance behind a
// load balancer shows the whole sale.
package live

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"seckill/model"
)

// Codes are the answer codes counted per voucher. Any other code counts as
// OTHER. They are the codes the seckill route answers (handler.Classify).
// Requests that never reach a voucher are not counted at all: a bad id, an
// unknown voucher, no token.
var Codes = model.LiveCodes

func codeIndex(code string) int {
	switch code {
	case "OK":
		return 0
	case "SOLD_OUT":
		return 1
	case "DUPLICATE_ORDER":
		return 2
	case "SECKILL_NOT_STARTED":
		return 3
	case "SECKILL_ENDED":
		return 4
	case "RATE_LIMITED":
		return 5
	case "UNAVAILABLE":
		return 6
	case "INTERNAL":
		return 7
	}
	return 8
}

// StoppedBy says where a DUPLICATE_ORDER answer was stopped.
type StoppedBy int

// Where a duplicate was stopped.
const (
	// NotDuplicate: not a duplicate.
	NotDuplicate StoppedBy = iota
	// StoppedByLock: the per-user lock was held (model.ErrLockRefused).
	StoppedByLock
	// StoppedByFence: past the lock, the fencing token was stale
	// (model.ErrStaleFence).
	StoppedByFence
	// StoppedByCheck: past the lock by the transaction's "already bought" check
	// (sync), or by the admission script's buyers set (async).
	StoppedByCheck
	// StoppedByUniqueKey: only by the database's unique key (model.ErrUniqueKey):
	// the lock did not do its job.
	StoppedByUniqueKey
)

// dupNames name the StoppedBy values in the counters (NotDuplicate has none).
var dupNames = [...]string{"", "lock", "fence", "check", "unique"}

// latencyBounds are the upper bounds of the latency buckets. One more
// bucket holds the slower answers.
var latencyBounds = [...]time.Duration{
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2500 * time.Millisecond, 5 * time.Second,
}

const (
	nCodes   = 9
	nDups    = len(dupNames)
	nBuckets = len(latencyBounds) + 1
	// nFields is the number of counters of one voucher: codes, duplicates,
	// bucket counts, bucket sums and the sum of every latency.
	nFields = nCodes + nDups + 2*nBuckets + 1
)

// The names of the counters in model.LiveCounts (and the Redis hash).
const (
	codePrefix   = "code:"
	dupPrefix    = "dup:"
	bucketPrefix = "lat:"
	// bucketSumPrefix names a bucket's sum of latencies, in nanoseconds.
	// It places the bucket's answers within the bucket.
	bucketSumPrefix = "lat:ns:"
	// latSumField is the sum of the latencies, in microseconds.
	latSumField = "lat:sum"
)

// fieldNames names the counters of one voucher, in the order of values().
var fieldNames = func() [nFields]string {
	var f [nFields]string
	i := 0
	for _, c := range Codes {
		f[i] = codePrefix + c
		i++
	}
	for _, d := range dupNames {
		f[i] = dupPrefix + d // "dup:" for NotDuplicate: never incremented
		i++
	}
	for b := 0; b < nBuckets; b++ {
		f[i] = bucketPrefix + strconv.Itoa(b)
		i++
	}
	for b := 0; b < nBuckets; b++ {
		f[i] = bucketSumPrefix + strconv.Itoa(b)
		i++
	}
	f[i] = latSumField
	return f
}()

// counters are one voucher's counters in one process.
type counters struct {
	codes      [nCodes]atomic.Int64
	dups       [nDups]atomic.Int64
	latency    [nBuckets]atomic.Int64
	bucketSums [nBuckets]atomic.Int64 // nanoseconds
	latencySum atomic.Int64           // microseconds
}

// values returns the counters in the order of fieldNames.
func (c *counters) values() [nFields]int64 {
	var v [nFields]int64
	i := 0
	for _, group := range [][]atomic.Int64{c.codes[:], c.dups[:], c.latency[:], c.bucketSums[:]} {
		for k := range group {
			v[i] = group[k].Load()
			i++
		}
	}
	v[i] = c.latencySum.Load()
	return v
}

// MaxVouchers bounds how many vouchers one Recorder counts at a time
// (voucher ids come from clients). A voucher idle for IdleAfter is dropped
// (after its counts are published) and frees its place.
const (
	MaxVouchers = 1024
	IdleAfter   = 10 * time.Minute
)

// Recorder counts one process's seckill answers per voucher, in memory.
// Observe is safe for concurrent use and costs no I/O.
type Recorder struct {
	vouchers sync.Map // int64 -> *counters
	n        atomic.Int64
	// dropped counts answers not counted because MaxVouchers vouchers were
	// counted already.
	dropped atomic.Int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Observe counts one seckill answer for voucherID: its code ("OK" on
// success), where a duplicate was stopped, and how long the answer took.
// Only an answer that proves the voucher exists (ExistenceProof) gives it
// counters. Any other answer is counted for a voucher that has them
// already, and dropped otherwise. So made-up voucher ids, refused before
// the voucher was read (a rate limit), never take a place.
func (r *Recorder) Observe(voucherID int64, code string, dup StoppedBy, elapsed time.Duration) {
	var c *counters
	if ExistenceProof(code) {
		c = r.counters(voucherID)
	} else if v, ok := r.vouchers.Load(voucherID); ok {
		c = v.(*counters)
	}
	if c == nil {
		return
	}
	c.codes[codeIndex(code)].Add(1)
	if dup > NotDuplicate && int(dup) < nDups {
		c.dups[dup].Add(1)
	}
	b := 0
	for b < len(latencyBounds) && elapsed > latencyBounds[b] {
		b++
	}
	c.latency[b].Add(1)
	c.bucketSums[b].Add(max(1, elapsed.Nanoseconds()))
	c.latencySum.Add(elapsed.Microseconds())
}

// ExistenceProof reports whether an answer with code can only be given
// after the voucher was read: a sale's outcome or its window.
func ExistenceProof(code string) bool {
	switch code {
	case "OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED":
		return true
	}
	return false
}

func (r *Recorder) counters(voucherID int64) *counters {
	if v, ok := r.vouchers.Load(voucherID); ok {
		return v.(*counters)
	}
	if r.n.Load() >= MaxVouchers {
		r.dropped.Add(1)
		return nil
	}
	v, loaded := r.vouchers.LoadOrStore(voucherID, &counters{})
	if !loaded {
		r.n.Add(1)
	}
	return v.(*counters)
}

// Dropped returns how many answers were not counted because MaxVouchers
// vouchers were counted already.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// forget drops voucherID's counters and returns them (nil when none).
func (r *Recorder) forget(voucherID int64) *counters {
	v, ok := r.vouchers.LoadAndDelete(voucherID)
	if !ok {
		return nil
	}
	r.n.Add(-1)
	return v.(*counters)
}

// each calls f with every counted voucher.
func (r *Recorder) each(f func(voucherID int64, c *counters)) {
	r.vouchers.Range(func(k, v any) bool {
		f(k.(int64), v.(*counters))
		return true
	})
}

// deltas returns the counters of cur that differ from sent, as differences
// (nil when none differ).
func deltas(cur, sent [nFields]int64) model.LiveCounts {
	var d model.LiveCounts
	for i := range cur {
		if n := cur[i] - sent[i]; n != 0 {
			if d == nil {
				d = model.LiveCounts{}
			}
			d[fieldNames[i]] = n
		}
	}
	return d
}
