package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// AsyncState is the Redis state of async mode beside the order stream:
// each voucher's buckets (VoucherStates), the epochs (Epochs) and the
// order-info records that seckill.lua writes (OrderInfo).
type AsyncState struct {
	*VoucherStates // each voucher's buckets: load, read, state
	*Epochs        // who answers for the shards, and their epoch
}

// NewAsyncState returns the Redis state of async mode on rdb.
func NewAsyncState(rdb redis.UniversalClient) *AsyncState {
	return &AsyncState{VoucherStates: NewVoucherStates(rdb), Epochs: NewEpochs(rdb)}
}

// OrderInfo returns what Redis knows of an order not (yet) in the database.
// That is its owner, voucher and status (pending or failed). The creation
// time is read from the id. model.ErrOrderNotFound when there is no record.
// The record is in the shard of the order's voucher, which the id does not
// tell. So every shard is asked, in one pipeline: one round trip per
// master.
func (a *AsyncState) OrderInfo(ctx context.Context, orderID int64) (*model.VoucherOrder, error) {
	cmds := make([]*redis.StringCmd, Shards)
	_, _ = a.VoucherStates.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			cmds[i] = p.Get(ctx, OrderInfoKey(i, orderID))
		}
		return nil
	})
	// A home bucket's "moving" record counts only when no other shard has
	// one (the bucket that admitted the order writes its own).
	v, err := "", error(redis.Nil)
	for _, c := range cmds {
		if cerr := c.Err(); !errors.Is(cerr, redis.Nil) {
			if v != "" && strings.HasSuffix(c.Val(), ":"+scripts.OrderInfoMoving) {
				continue
			}
			v, err = c.Val(), cerr
			if cerr != nil || !strings.HasSuffix(v, ":"+scripts.OrderInfoMoving) {
				break
			}
		}
	}
	if errors.Is(err, redis.Nil) {
		return nil, model.ErrOrderNotFound
	}
	if err != nil {
		return nil, redisErr(err)
	}
	if v == scripts.OrderInfoVoid {
		return nil, model.ErrOrderNotFound // given up: never admitted
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
	if parts[2] == scripts.OrderInfoFailed {
		status = model.OrderStatusFailed
	}
	created := model.OrderIDTime(orderID)
	return &model.VoucherOrder{
		ID: orderID, UserID: user, VoucherID: voucher, PayType: 1, Status: status,
		CreateTime: created, UpdateTime: created,
	}, nil
}
