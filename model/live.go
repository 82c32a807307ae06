package model

import "time"

// LiveInstance is what one serving process publishes about itself for the live
// dashboard. It publishes about once a second. It holds its modes, when it
// started and published last, and its answer count.
type LiveInstance struct {
	ID        string    `json:"id"`
	LockMode  string    `json:"lockMode"`
	OrderMode string    `json:"orderMode"`
	Started   time.Time `json:"started"`
	// Seen is when the instance published last.
	Seen time.Time `json:"seen"`
	// Requests counts the seckill requests the instance answered since it
	// started, over every voucher.
	Requests int64 `json:"requests"`
	// Vouchers are the vouchers it answered for in the last seconds, the
	// most recent first (a sale going on).
	Vouchers []int64 `json:"vouchers,omitempty"`
}

// LiveCounts are a voucher's live counters by field name (the fields are
// package live's: answers by code, duplicates by where they were stopped,
// latency buckets).
type LiveCounts map[string]int64

// LiveCodes are the answer codes the live dashboard counts per voucher, in
// the order of its per-second history (LiveSecond.Answers). Any other code
// counts as OTHER.
var LiveCodes = []string{
	"OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED",
	"RATE_LIMITED", "UNAVAILABLE", "INTERNAL", "OTHER",
}

// LiveCodeField is the name of a code's counter in LiveCounts.
func LiveCodeField(code string) string { return "code:" + code }

// LiveSecond is one second of a voucher's answers, over every instance.
type LiveSecond struct {
	At      int64   // Unix seconds
	Answers []int64 // by code, in LiveCodes' order
}

// LiveHistory is a voucher's answers per second since its first one, the
// seconds without answers left out, in time order. Dropped counts the
// answers of the seconds past the history's bound.
type LiveHistory struct {
	Seconds []LiveSecond
	Dropped int64
}
