package repository

import (
	"strconv"
	"time"
)

// Every Redis key this package reads or writes, and every TTL it gives
// them, in one place (README, "Redis keys"). The Lua scripts of seckill/lua
// receive their keys from here as KEYS; the lock keys (lock:order:<userId>,
// the reconciler's lock, their fencing counters) belong to package service
// and package lock. internal/audit (the harness and the root tests) and the
// benchmark (cmd/harness) use these names too.

// The async-mode streams and the epoch.
const (
	// StreamKey is the order stream; GroupName its consumer group.
	StreamKey = "stream.orders"
	GroupName = "g1"
	// DeadLetterKey is the dead-letter stream.
	DeadLetterKey = "stream.orders.dlq"
	// EpochKey holds the epoch also stored in tb_seckill_meta: equal values
	// mean Redis still holds what the service put there.
	EpochKey = "seckill:epoch"
)

// The prefixes of the per-voucher and per-order keys, for the builders
// below and for tools that match or template them (the benchmark's
// redis-benchmark command lines and clean-up patterns).
const (
	StockPrefix     = "seckill:stock:"
	BuyersPrefix    = "seckill:order:"
	VoucherPrefix   = "seckill:voucher:"
	OrderInfoPrefix = "seckill:orderinfo:"
	DuprejPrefix    = "seckill:duprej:"
)

// StockKey is seckill:stock:<voucherId>.
func StockKey(voucherID int64) string { return StockPrefix + strconv.FormatInt(voucherID, 10) }

// BuyersKey is seckill:order:<voucherId>, the set of buyers.
func BuyersKey(voucherID int64) string { return BuyersPrefix + strconv.FormatInt(voucherID, 10) }

// VoucherKey is seckill:voucher:<voucherId>, the hash {begin, end, initial,
// state}.
func VoucherKey(voucherID int64) string { return VoucherPrefix + strconv.FormatInt(voucherID, 10) }

// OrderInfoKey is seckill:orderinfo:<orderId>.
func OrderInfoKey(orderID int64) string { return OrderInfoPrefix + strconv.FormatInt(orderID, 10) }

// DuprejKey is seckill:duprej:<voucherId>, the count of unique-key
// rejections of the voucher.
func DuprejKey(voucherID int64) string { return DuprejPrefix + strconv.FormatInt(voucherID, 10) }

// The live dashboard's keys (package live): each instance adds its counts
// to the voucher's hash and records itself in the instances hash about four
// times a second; dashboards read both.
const (
	// LivePrefix is the prefix of seckill:live:<voucherId>.
	LivePrefix = "seckill:live:"
	// LiveInstancesKey is the hash of the instances publishing live
	// counters: instance id -> JSON (model.LiveInstance).
	LiveInstancesKey = "seckill:live:instances"
)

// LiveKey is seckill:live:<voucherId>, the hash of the voucher's live
// counters (answers by code, duplicates by where they were stopped, latency
// buckets) summed over every instance.
func LiveKey(voucherID int64) string { return LivePrefix + strconv.FormatInt(voucherID, 10) }

// loginCodeKey is login:code:<phone>, the login code sent to phone.
func loginCodeKey(phone string) string { return "login:code:" + phone }

// idDay is the day of t (UTC) as the ID worker's sequence key spells it:
// yyyy:MM:dd.
func idDay(t time.Time) string { return t.UTC().Format("2006:01:02") }

// idSequenceKey is icr:order:<yyyy:MM:dd>, the ID worker's sequence of day
// (an idDay).
func idSequenceKey(day string) string { return "icr:order:" + day }

// The TTLs of the keys above. Keys not listed here never expire (stream,
// dead-letter stream, epoch, duprej counters, ID sequences); the login
// code's TTL is the caller's (SaveCode).
const (
	// OrderInfoTTL is how long seckill:orderinfo:<orderId> lives.
	OrderInfoTTL = 24 * time.Hour
	// VoidTTL is how long a void order id stays refused: far longer than
	// an admission can be in flight.
	VoidTTL = time.Hour
	// VoucherStateGrace is how long after its end a voucher's Redis state
	// (stock, buyers, voucher hash) is kept.
	VoucherStateGrace = 7 * 24 * time.Hour
	// LiveCountsTTL is how long a voucher's live counters live after an
	// instance last added to them.
	LiveCountsTTL = 7 * 24 * time.Hour
	// LiveInstancesTTL is how long the instances hash lives after any
	// instance last published; an instance's own entry is dropped by
	// readers once it is LiveInstanceForget old (a process that died
	// without retiring).
	LiveInstancesTTL   = time.Minute
	LiveInstanceForget = time.Minute
)
