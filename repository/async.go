package repository

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/lua"
	"seckill/model"
)

// Redis keys of async mode (README, "Redis keys").
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

// OrderInfoTTL is how long seckill:orderinfo:<orderId> lives.
const OrderInfoTTL = 24 * time.Hour

// StockKey is seckill:stock:<voucherId>.
func StockKey(voucherID int64) string { return "seckill:stock:" + strconv.FormatInt(voucherID, 10) }

// BuyersKey is seckill:order:<voucherId>, the set of buyers.
func BuyersKey(voucherID int64) string { return "seckill:order:" + strconv.FormatInt(voucherID, 10) }

// VoucherKey is seckill:voucher:<voucherId>, the hash {begin, end, initial,
// state}.
func VoucherKey(voucherID int64) string {
	return "seckill:voucher:" + strconv.FormatInt(voucherID, 10)
}

// OrderInfoKey is seckill:orderinfo:<orderId>.
func OrderInfoKey(orderID int64) string {
	return "seckill:orderinfo:" + strconv.FormatInt(orderID, 10)
}

// Admission runs the async admission script and keeps each voucher's Redis
// state (stock, buyers, voucher hash) and the epoch.
type Admission struct {
	rdb    redis.UniversalClient
	stream string // StreamKey; tests use a stream of their own
}

// NewAdmission returns the Redis side of async mode.
func NewAdmission(rdb redis.UniversalClient) *Admission {
	return &Admission{rdb: rdb, stream: StreamKey}
}

// Codes returned by lua/seckill.lua.
const (
	admitOK = iota
	admitSoldOut
	admitDuplicate
	admitNotStarted
	admitEnded
	admitNotLoaded
	admitUnsafe
)

// Admit runs lua/seckill.lua for one order: nil when admitted (queued in
// stream.orders, status pending); otherwise model.ErrSoldOut,
// model.ErrDuplicateOrder, model.ErrSeckillNotStarted, model.ErrSeckillEnded,
// or model.ErrUnavailable wrapping model.ErrVoucherNotLoaded or
// model.ErrVoucherUnsafe.
func (a *Admission) Admit(ctx context.Context, orderID, userID, voucherID int64, now time.Time) error {
	code, err := lua.Seckill.Run(ctx, a.rdb,
		[]string{StockKey(voucherID), BuyersKey(voucherID), VoucherKey(voucherID), a.stream, OrderInfoKey(orderID)},
		userID, voucherID, orderID, now.UnixMilli(), int64(OrderInfoTTL/time.Second)).Int()
	if err != nil {
		return redisErr(err)
	}
	switch code {
	case admitOK:
		return nil
	case admitSoldOut:
		return model.ErrSoldOut
	case admitDuplicate:
		return model.ErrDuplicateOrder
	case admitNotStarted:
		return model.ErrSeckillNotStarted
	case admitEnded:
		return model.ErrSeckillEnded
	case admitNotLoaded:
		return fmt.Errorf("%w: voucher %d: %w", model.ErrUnavailable, voucherID, model.ErrVoucherNotLoaded)
	case admitUnsafe:
		return fmt.Errorf("%w: voucher %d: %w", model.ErrUnavailable, voucherID, model.ErrVoucherUnsafe)
	}
	return fmt.Errorf("seckill.lua: unexpected code %d", code)
}

// OrderInfo returns what Redis knows of an order not (yet) in the database:
// its owner, voucher and status (pending or failed), with the creation time
// read from the id. model.ErrOrderNotFound when there is no record.
func (a *Admission) OrderInfo(ctx context.Context, orderID int64) (*model.VoucherOrder, error) {
	v, err := a.rdb.Get(ctx, OrderInfoKey(orderID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, model.ErrOrderNotFound
	}
	if err != nil {
		return nil, redisErr(err)
	}
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("order info %d: malformed %q", orderID, v)
	}
	user, err1 := strconv.ParseInt(parts[0], 10, 64)
	voucher, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("order info %d: malformed %q: %w", orderID, v, err)
	}
	status := model.OrderStatusPending
	if parts[2] == "failed" {
		status = model.OrderStatusFailed
	}
	created := IDTime(orderID)
	return &model.VoucherOrder{
		ID: orderID, UserID: user, VoucherID: voucher, PayType: 1, Status: status,
		CreateTime: created, UpdateTime: created,
	}, nil
}

// IDTime returns the second an order id was made (its upper 31 bits).
func IDTime(orderID int64) time.Time {
	return IDEpoch.Add(time.Duration(orderID>>32) * time.Second)
}

// Voucher returns the voucher's Redis state, read in one MULTI.
func (a *Admission) Voucher(ctx context.Context, voucherID int64) (model.RedisVoucher, error) {
	m, err := a.Vouchers(ctx, []int64{voucherID})
	return m[voucherID], err
}

// vouchersChunk is how many vouchers one MULTI of Vouchers reads.
const vouchersChunk = 100

// Vouchers returns the Redis state of each voucher, each read atomically
// (one MULTI per chunk of vouchers).
func (a *Admission) Vouchers(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, error) {
	out := make(map[int64]model.RedisVoucher, len(voucherIDs))
	for start := 0; start < len(voucherIDs); start += vouchersChunk {
		if err := a.vouchers(ctx, voucherIDs[start:min(start+vouchersChunk, len(voucherIDs))], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (a *Admission) vouchers(ctx context.Context, voucherIDs []int64, out map[int64]model.RedisVoucher) error {
	var read func(map[int64]model.RedisVoucher)
	_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		read = queueVoucherReads(ctx, p, voucherIDs)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return redisErr(err)
	}
	read(out)
	return nil
}

// SetState sets the voucher hash's state field (creating a hash holding
// only the state when the voucher is not loaded: the admission script then
// refuses it as not trusted).
func (a *Admission) SetState(ctx context.Context, voucherID int64, state string) error {
	return redisErr(a.rdb.HSet(ctx, VoucherKey(voucherID), "state", state).Err())
}

// Load replaces the voucher's Redis state in one MULTI: stock, buyers and
// the voucher hash with state ok.
func (a *Admission) Load(ctx context.Context, sv *model.SeckillVoucher, stock int64, buyers []int64) error {
	_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		loadVoucher(ctx, p, sv, stock, buyers)
		return nil
	})
	return redisErr(err)
}

// LoadNew loads a voucher just published (stock = initial, no buyers)
// unless its hash exists already (a reconciler got there first and owns
// it). It reports whether it loaded.
func (a *Admission) LoadNew(ctx context.Context, sv *model.SeckillVoucher) (bool, error) {
	key := VoucherKey(sv.VoucherID)
	loaded := false
	err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Exists(ctx, key).Result()
		if err != nil || n > 0 {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			loadVoucher(ctx, p, sv, int64(sv.InitialStock), nil)
			return nil
		})
		loaded = err == nil
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return false, nil // someone touched the hash: they own it
	}
	return loaded, redisErr(err)
}

// buyersChunk bounds the members of one SADD.
const buyersChunk = 5000

func loadVoucher(ctx context.Context, p redis.Pipeliner, sv *model.SeckillVoucher, stock int64, buyers []int64) {
	id := sv.VoucherID
	p.Del(ctx, StockKey(id), BuyersKey(id), VoucherKey(id))
	p.Set(ctx, StockKey(id), stock, 0)
	for start := 0; start < len(buyers); start += buyersChunk {
		end := min(start+buyersChunk, len(buyers))
		members := make([]any, 0, end-start)
		for _, b := range buyers[start:end] {
			members = append(members, b)
		}
		p.SAdd(ctx, BuyersKey(id), members...)
	}
	p.HSet(ctx, VoucherKey(id),
		"begin", sv.BeginTime.UnixMilli(), "end", sv.EndTime.UnixMilli(),
		"initial", sv.InitialStock, "state", model.VoucherStateOK)
	// The state outlives the sale by a week, time for late entries to be
	// written or dead-lettered; then Redis forgets it.
	expire := sv.EndTime.Add(VoucherStateGrace)
	for _, k := range []string{StockKey(id), BuyersKey(id), VoucherKey(id)} {
		p.ExpireAt(ctx, k, expire)
	}
}

// VoucherStateGrace is how long after its end a voucher's Redis state
// (stock, buyers, voucher hash) is kept.
const VoucherStateGrace = 7 * 24 * time.Hour

// Epoch returns the epoch stored in Redis ("" when none).
func (a *Admission) Epoch(ctx context.Context) (string, error) {
	v, err := a.rdb.Get(ctx, EpochKey).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, redisErr(err)
}

// SetEpoch stores the epoch in Redis.
func (a *Admission) SetEpoch(ctx context.Context, epoch string) error {
	return redisErr(a.rdb.Set(ctx, EpochKey, epoch, 0).Err())
}
