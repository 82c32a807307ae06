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
