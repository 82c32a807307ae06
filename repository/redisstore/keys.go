package redisstore

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"

	"seckill/model"
	"seckill/repository"
)

// Every Redis key the stores read or write, and every TTL they give them.
// The keys of the locks that service takes are in package lock (keys.go),
// which derives their fencing counters. internal/house's
// TestRedisKeysDeclared keeps this so. script_keys.go builds each Lua
// script's KEYS from these names; the audit, the tests and the tools take
// their key names from here.

// The async-mode keys live in Shards shards. Shard i's keys carry the hash
// tag ShardTag(i). Its cluster slot lies in the i-th sixteenth of the slot
// space. So a script touches the keys of one slot only. The shards spread
// over the masters of a cluster split in slot ranges. A voucher lives in
// shard VoucherShard(voucherId), with its orders' info and stream entries.
// Each shard has its own stream, dead-letter stream and epoch. The
// consumers read every shard. One Redis uses the same layout, where the
// tags are only names.
const (
	// Shards is the number of shards: fixed, part of the key layout.
	Shards = 16
	// GroupName is the consumer group of every shard's order stream.
	GroupName = "g1"
	// StreamName and DeadLetterName are the last parts of the shard's
	// stream keys (StreamKey, DeadLetterKey). Tests use names of their own.
	StreamName     = "orders"
	DeadLetterName = "orders.dlq"
	// LegacyStreamKey is the order stream of the single-stream layout
	// before the shards. start-up refuses async mode while it holds
	// entries (docs/operations.md, "Upgrading the key layout").
	LegacyStreamKey = "stream.orders"
	// LegacyEpochKey is the epoch of that layout. When it equals the
	// database's, start-up sees an upgrade. It then rebuilds every live
	// voucher from the facts.
	LegacyEpochKey = "seckill:epoch"
)

// shardTags are the shards' hash tags (without braces).
var shardTags = func() [Shards]string {
	var tags [Shards]string
	per := repository.ClusterSlots / Shards
	for i := range tags {
		for n := 0; ; n++ {
			tag := "s" + strconv.Itoa(i) + "." + strconv.Itoa(n)
			if int(repository.Slot(tag))/per == i {
				tags[i] = tag
				break
			}
		}
	}
	return tags
}()

// ShardTag is the hash tag of shard i (0 <= i < Shards), without braces.
func ShardTag(i int) string { return shardTags[i] }

// VoucherShard is the shard of the voucher's Redis state.
func VoucherShard(voucherID int64) int { return int(uint64(voucherID) % Shards) }

// shardPrefix is "seckill:{<tag>}:", the prefix of shard i's keys.
func shardPrefix(i int) string { return shardPrefixes[i] }

// shardPrefixes are the shards' prefixes, built once: every key of a
// request starts with one.
var shardPrefixes = func() (p [Shards]string) {
	for i := range p {
		p[i] = "seckill:{" + shardTags[i] + "}:"
	}
	return p
}()

// ShardKey is seckill:{<tag>}:<name>, the key name in shard i. Tests and
// tools name streams of their own this way.
func ShardKey(i int, name string) string { return shardPrefix(i) + name }

// StreamKey is seckill:{<tag>}:orders, shard i's order stream (group g1).
func StreamKey(i int) string { return shardPrefix(i) + StreamName }

// DeadLetterKey is seckill:{<tag>}:orders.dlq, shard i's dead-letter stream.
func DeadLetterKey(i int) string { return shardPrefix(i) + DeadLetterName }

// EpochKey is seckill:{<tag>}:epoch, the epoch in shard i. tb_seckill_meta
// stores it too. Equal values in every shard mean Redis still holds what
// the service put there.
func EpochKey(i int) string { return shardPrefix(i) + "epoch" }

// A voucher's Redis stock may be split in buckets (SECKILL_STOCK_BUCKETS,
// or the voucher's stockBuckets at publish time). Bucket b lives in shard
// BucketShard(voucherId, b), so a voucher's buckets are on different
// slots. Each shard uses the same key names. Bucket 0 is the voucher's
// shard, so a voucher of one bucket has exactly the keys below.
// A user's home bucket (model.HomeBucket) holds the user's buyer mark.
const MaxBuckets = model.MaxStockBuckets

// BucketShard is the shard of bucket b (0 <= b < MaxBuckets) of the
// voucher. It lies bucketStride shards after the previous bucket's. So
// consecutive buckets fall in different ranges of the slot space. On three
// masters, buckets 0, 1 and 2 are on three masters. The stride is odd, so
// the 16 buckets are 16 shards.
func BucketShard(voucherID int64, b int) int {
	return (VoucherShard(voucherID) + b*bucketStride) % Shards
}

// bucketStride is the shards between a voucher's consecutive buckets.
const bucketStride = 11

// StockKey is seckill:{<tag>}:stock:<voucherId> (bucket 0).
func StockKey(voucherID int64) string { return StockKeyIn(VoucherShard(voucherID), voucherID) }

// BuyersKey is seckill:{<tag>}:order:<voucherId>, the set of buyers
// (bucket 0).
func BuyersKey(voucherID int64) string { return BuyersKeyIn(VoucherShard(voucherID), voucherID) }

// VoucherKey is seckill:{<tag>}:voucher:<voucherId>, the hash {begin, end,
// initial, state, buckets} (bucket 0).
func VoucherKey(voucherID int64) string { return VoucherKeyIn(VoucherShard(voucherID), voucherID) }

// StockKeyIn, BuyersKeyIn and VoucherKeyIn are those keys in shard
// (a bucket's: BucketShard).
func StockKeyIn(shard int, voucherID int64) string  { return voucherKey(shard, voucherID, "stock:") }
func BuyersKeyIn(shard int, voucherID int64) string { return voucherKey(shard, voucherID, "order:") }

// ReturnedKeyIn is seckill:{<tag>}:returned:<voucherId>, the ids of the
// cancelled orders whose unit the bucket in shard took back.
func ReturnedKeyIn(shard int, voucherID int64) string {
	return voucherKey(shard, voucherID, "returned:")
}

// ReturnBucket is the bucket that takes back a cancelled order's unit. The
// voucher has n buckets.
func ReturnBucket(orderID int64, n int) int { return int(uint64(orderID) % uint64(max(n, 1))) }
func VoucherKeyIn(shard int, voucherID int64) string {
	return voucherKey(shard, voucherID, "voucher:")
}

func voucherKey(shard int, voucherID int64, kind string) string {
	return shardPrefix(shard) + kind + strconv.FormatInt(voucherID, 10)
}

// OrderInfoKey is seckill:{<tag>}:orderinfo:<orderId>. It lives in the
// shard of the bucket that admitted the order. The admission script writes
// it with the entry.
func OrderInfoKey(shard int, orderID int64) string {
	return OrderInfoPrefix(shard) + strconv.FormatInt(orderID, 10)
}

// OrderInfoPrefix is seckill:{<tag>}:orderinfo: of shard (tools that match
// or template the order-info keys).
func OrderInfoPrefix(shard int) string { return shardPrefix(shard) + "orderinfo:" }

// DuplicateRejectionsPrefix is the prefix of DuplicateRejectionsKey (one key, outside the shards).
const DuplicateRejectionsPrefix = "seckill:duprej:"

// DuplicateRejectionsKey is seckill:duprej:<voucherId>, the count of unique-key
// rejections of the voucher.
func DuplicateRejectionsKey(voucherID int64) string {
	return DuplicateRejectionsPrefix + strconv.FormatInt(voucherID, 10)
}

// The live dashboard's keys (package live). About four times a second, each
// instance adds its counts to the voucher's hash. It also records itself in
// the instances hash. Dashboards read both.
const (
	// LivePrefix is the prefix of seckill:live:<voucherId>.
	LivePrefix = "seckill:live:"
	// LiveInstancesKey is the hash of the instances publishing live
	// counters: instance id -> JSON (model.LiveInstance).
	LiveInstancesKey = "seckill:live:instances"
)

// LiveKey is seckill:live:<voucherId>, the hash of the voucher's live
// counters. It sums every instance's answers by code, duplicates by where
// they were stopped, and latency buckets.
func LiveKey(voucherID int64) string { return LivePrefix + strconv.FormatInt(voucherID, 10) }

// LiveHistoryKey is seckill:live:<voucherId>:history, the hash of the
// voucher's answers by code per second (Unix second -> "<n>,<n>,...",
// model.LiveCodes' order), summed over every instance, and "dropped": the
// answers of seconds past LiveHistoryMaxFields. The dashboard draws the
// sale's curve from it, during the sale and after.
func LiveHistoryKey(voucherID int64) string {
	return LivePrefix + strconv.FormatInt(voucherID, 10) + ":history"
}

// LiveHistoryMaxFields bounds a voucher's history: six hours of seconds
// with answers (a second without any takes no field), about 0.6 MB.
const LiveHistoryMaxFields = 6 * 3600

// LoginCodeKey is login:code:<phone>, the login code sent to phone and
// its wrong guesses ("<code>:<wrong guesses>").
func LoginCodeKey(phone string) string { return "login:code:" + phone }

// RatePrefix is the prefix redis_rate gives every key of a Limiter: the
// key of Limiter.Allow(ctx, key, ...) is rate:<key>, one key per call.
const RatePrefix = "rate:"

// The Limiter keys of the code flow, stored as rate:<key>. They hold the
// phone's cooldown and daily cap, and the client address's sends.
func CodeCooldownKey(phone string) string { return "login:cooldown:" + phone }
func CodeDailyKey(phone string) string    { return "login:daily:" + phone }
func CodeAddrKey(addr string) string      { return "login:addr:" + addr }

// The Limiter keys of the purchase, stored as rate:<key>. They count the
// user's, the voucher's and the client address's purchases.
func PurchaseUserKey(userID int64) string {
	return "seckill:limit:user:" + strconv.FormatInt(userID, 10)
}
func PurchaseVoucherKey(voucherID int64) string {
	return "seckill:limit:voucher:" + strconv.FormatInt(voucherID, 10)
}
func PurchaseAddrKey(addr string) string { return "seckill:limit:addr:" + addr }

// The Limiter keys of the redemption at the shop, stored as rate:<key>:
// every attempt of one staff member, and of one shop's staff (guessing a
// code is bounded by both, over every instance).
func RedeemStaffKey(userID int64) string {
	return "seckill:limit:redeem:staff:" + strconv.FormatInt(userID, 10)
}
func RedeemShopKey(shopID int64) string {
	return "seckill:limit:redeem:shop:" + strconv.FormatInt(shopID, 10)
}

// The Limiter keys of the waiting room's joins and polls that reach its
// script, stored as rate:<key>: the user's and the client address's.
func QueueUserKey(userID int64) string {
	return "seckill:limit:queue:user:" + strconv.FormatInt(userID, 10)
}
func QueueAddrKey(addr string) string { return "seckill:limit:queue:addr:" + addr }

// IdempotencyKey is seckill:idem:{<userId>}:<keyHash>, one user's
// Idempotency-Key record, named by the key's hash (IdempotencyKeyHash).
// Every user has a key space of their own, in one cluster slot with the
// user's index (IdempotencyIndexKey).
func IdempotencyKey(userID int64, key string) string {
	return IdempotencyIndexKey(userID) + ":" + IdempotencyKeyHash(key)
}

// IdempotencyIndexKey is seckill:idem:{<userId>}, the sorted set of the
// user's live keys (their hashes), each scored by when it expires (Unix
// ms). It counts the keys against SECKILL_IDEMPOTENCY_MAX_KEYS.
func IdempotencyIndexKey(userID int64) string {
	return "seckill:idem:{" + strconv.FormatInt(userID, 10) + "}"
}

// IdempotencyKeyHash names an Idempotency-Key in Redis: the first 128 bits
// of its SHA-256, base64url (22 bytes, whatever the key's length).
func IdempotencyKeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// IDDay is the day of t (UTC) as the ID worker's sequence key spells it:
// yyyy:MM:dd.
func IDDay(t time.Time) string { return t.UTC().Format("2006:01:02") }

// IDSequenceKey is icr:order:<yyyy:MM:dd>, the ID worker's sequence of day
// (an IDDay).
func IDSequenceKey(day string) string { return "icr:order:" + day }

// The TTLs of the keys above. Keys not listed here never expire (stream,
// dead-letter stream, epoch, duprej counters, ID sequences). The login
// code's TTL is the caller's (SaveCode). A Limiter key lives until its
// limit has forgotten every event (redis_rate sets it).
const (
	// OrderInfoTTL is how long seckill:orderinfo:<orderId> lives.
	OrderInfoTTL = 24 * time.Hour
	// VoidTTL is how long a void order id stays refused. It is far longer
	// than an admission can be in flight.
	VoidTTL = time.Hour
	// VoucherStateGrace is how long after its end a voucher's Redis state
	// (stock, buyers, voucher hash) is kept.
	VoucherStateGrace = 7 * 24 * time.Hour
	// LiveCountsTTL is how long a voucher's live counters live after an
	// instance last added to them.
	LiveCountsTTL = 7 * 24 * time.Hour
	// LiveHistoryTTL is how long a voucher's per-second history lives
	// after an instance last added to it: as long as its counters.
	LiveHistoryTTL = LiveCountsTTL
	// LiveInstancesTTL is how long the instances hash lives after any
	// instance last published. Readers drop an instance's own entry once it
	// is LiveInstanceForget old. That is a process that died without
	// retiring.
	LiveInstancesTTL   = time.Minute
	LiveInstanceForget = time.Minute
)

// The waiting room's keys (docs/waiting-room.md) live in the voucher's
// shard, beside its stock: one script call touches one slot.

// RoomKey is seckill:{<tag>}:room:<voucherId>, the room's hash.
func RoomKey(voucherID int64) string { return voucherKey(VoucherShard(voucherID), voucherID, "room:") }

// RoomPoolKey is seckill:{<tag>}:roompool:<voucherId>, who joined before
// the start, by draw key.
func RoomPoolKey(voucherID int64) string {
	return voucherKey(VoucherShard(voucherID), voucherID, "roompool:")
}

// RoomLineKey is seckill:{<tag>}:roomline:<voucherId>, who joined after
// the start, by arrival.
func RoomLineKey(voucherID int64) string {
	return voucherKey(VoucherShard(voucherID), voucherID, "roomline:")
}

// RoomAdmittedKey is seckill:{<tag>}:roomadm:<voucherId>, the admitted who
// have not bought, by expiry.
func RoomAdmittedKey(voucherID int64) string {
	return voucherKey(VoucherShard(voucherID), voucherID, "roomadm:")
}

// RoomDoneKey is seckill:{<tag>}:roomdone:<voucherId>, who bought or
// lapsed.
func RoomDoneKey(voucherID int64) string {
	return voucherKey(VoucherShard(voucherID), voucherID, "roomdone:")
}

// VoucherChangesChannel is the Pub/Sub channel on which the instance that
// edited or closed a voucher names it (its id in decimal): every instance
// drops its cached copy (docs/waiting-room.md, "An edit reaches every
// instance").
const VoucherChangesChannel = "seckill:vouchers:changed"
