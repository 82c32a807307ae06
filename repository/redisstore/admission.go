package redisstore

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
	"seckill/repository"
)

// Admission runs the admission scripts and reads the order-info records
// they write. It carries the voucher states and the epochs too, so that
// one value serves the service's Redis store.
type Admission struct {
	*VoucherStates // each voucher's buckets: load, read, state
	*Epochs        // who answers for the shards, and their epoch

	rdb    redis.UniversalClient
	stream string       // StreamName. Tests use a stream of their own
	batch  *evalBatcher // coalesces concurrent admissions
	// traceParent names the admitting request's span for the stream
	// entry. nil (tracing off) stores none.
	traceParent func(context.Context) string
}

// CarryTrace stores in each stream entry what f returns for the admitting
// request's context. That is its W3C traceparent. It links the consumer's
// write to the request.
func (a *Admission) CarryTrace(f func(context.Context) string) { a.traceParent = f }

// ObservePipelines has f told of every admission round trip to Redis. f
// gets the number of scripts the trip carries: admissions, and the checks
// of the purchase limits on a's round trips (PurchaseLimits). A script sent
// at once, alone, is 1. A pipeline is up to evalBatchMax. A pipeline re-sent
// after NOSCRIPT counts once. f runs on the admitting goroutines. It must
// be quick and safe for concurrent use (a metric). nil (the default) turns
// it off. Set it before the first Admit: it is not guarded.
func (a *Admission) ObservePipelines(f func(n int)) { a.batch.observe = f }

// traceOf is the traceparent of ctx for the stream entry, "" when none.
func (a *Admission) traceOf(ctx context.Context) string {
	if a.traceParent == nil {
		return ""
	}
	return a.traceParent(ctx)
}

// NewAdmission returns the Redis side of async mode.
func NewAdmission(rdb redis.UniversalClient) *Admission {
	return newAdmissionOn(rdb, repository.StreamName)
}

// newAdmissionOn returns an admission into the streams named stream.
func newAdmissionOn(rdb redis.UniversalClient, stream string) *Admission {
	return &Admission{VoucherStates: NewVoucherStates(rdb), Epochs: NewEpochs(rdb), rdb: rdb, stream: stream, batch: &evalBatcher{}}
}

// settleTimeout bounds the settlement of an admission whose answer was
// lost. It runs on a context detached from the request's, whose end may be
// what cut the admission short.
const settleTimeout = time.Second

// Admit runs seckill.lua for one order: nil when admitted and queued.
// Otherwise model.ErrSoldOut, model.ErrDuplicateOrder,
// model.ErrSeckillNotStarted, model.ErrSeckillEnded, or model.ErrUnavailable
// (wrapping model.ErrVoucherNotLoaded or model.ErrVoucherUnsafe).
// The script is sent at most once. A lost answer is settled by
// seckill_settle.lua, and a void order id answers ErrUnavailable.
// A split voucher tries the home bucket, then the others in mode "away".
// docs/async.md tells the lost answers and the buckets in full.
func (a *Admission) Admit(ctx context.Context, orderID, userID, voucherID int64, buckets int, now time.Time) error {
	if buckets <= 1 {
		return a.admitIn(ctx, repository.VoucherShard(voucherID), orderID, userID, voucherID, false, now)
	}
	home := repository.HomeBucket(userID, buckets)
	homeShard := repository.BucketShard(voucherID, home)
	err := a.admitIn(ctx, homeShard, orderID, userID, voucherID, true, now)
	if errors.Is(err, model.ErrUnavailable) && !errors.Is(err, model.ErrVoucherNotLoaded) && !errors.Is(err, model.ErrVoucherUnsafe) {
		// Unknown whether the home bucket reserved the buyer mark: undo a
		// reservation, if any, once Redis answers again.
		a.releaseEventually(homeShard, orderID, userID, voucherID)
	}
	if !errors.Is(err, errMove) {
		return err
	}
	return a.fallOver(ctx, orderID, userID, voucherID, buckets, home, now)
}

// releaseEventually retries the release ("void") of a home bucket's
// reservation, in the background. The order was not admitted. It retries
// for up to releaseRetryFor, since a failover of the home master takes
// seconds. The release changes nothing unless the order info says the order
// is moving. So it is safe when there was no reservation.
func (a *Admission) releaseEventually(homeShard int, orderID, userID, voucherID int64) {
	go func() {
		for deadline := time.Now().Add(releaseRetryFor); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			err := a.runRelease(ctx, homeShard, orderID, userID, voucherID, false)
			cancel()
			if err == nil {
				return
			}
		}
	}()
}

// releaseRetryFor bounds releaseEventually.
const releaseRetryFor = 30 * time.Second

// errMove is admitIn's answer when the home bucket reserved the buyer mark
// and had no stock (lua.SeckillMove).
var errMove = errors.New("admit in another bucket")

// admitIn runs seckill.lua in the bucket of shard and settles a lost
// answer. With reserve, a sold-out bucket reserves the buyer mark.
func (a *Admission) admitIn(ctx context.Context, shard int, orderID, userID, voucherID int64, reserve bool, now time.Time) error {
	mode := lua.SeckillOnly
	if reserve {
		mode = lua.SeckillHome
	}
	args := a.admitArgs(shard, orderID, userID, voucherID, now)
	if tp := a.traceOf(ctx); tp != "" {
		args = append(args, mode, tp)
	} else if reserve {
		args = append(args, mode)
	}
	code, err := a.batch.eval(ctx, a.rdb, lua.Seckill.Hash(), lua.Seckill, args).Int()
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		return redisErr(err) // Redis answered: the script did not admit
	case errors.Is(err, errAdmitNotSent):
		return fmt.Errorf("%w: order %d: %w", model.ErrUnavailable, orderID, err) // never sent: nothing to settle
	case err != nil:
		return a.settle(ctx, shard, orderID, userID, voucherID, err)
	}
	return admitErr(code, orderID, voucherID)
}

// admitArgs are what follows seckill.lua's hash up to ARGV[5]. First the
// key count and the KEYS in the bucket of shard. Then the order and the
// time.
func (a *Admission) admitArgs(shard int, orderID, userID, voucherID int64, now time.Time) []any {
	k := SeckillKeysIn(a.stream, shard, voucherID, orderID)
	return []any{len(k), k[0], k[1], k[2], k[3], k[4],
		userID, voucherID, orderID, now.UnixMilli(), int64(repository.OrderInfoTTL / time.Second)}
}

// admitErr is the error of a seckill.lua code.
func admitErr(code int, orderID, voucherID int64) error {
	switch code {
	case lua.SeckillOK:
		return nil
	case lua.SeckillSoldOut:
		return model.ErrSoldOut
	case lua.SeckillDuplicate:
		return model.ErrDuplicateOrder
	case lua.SeckillNotStarted:
		return model.ErrSeckillNotStarted
	case lua.SeckillEnded:
		return model.ErrSeckillEnded
	case lua.SeckillNotLoaded:
		return fmt.Errorf("%w: voucher %d: %w", model.ErrUnavailable, voucherID, model.ErrVoucherNotLoaded)
	case lua.SeckillUnsafe:
		return fmt.Errorf("%w: voucher %d: %w", model.ErrUnavailable, voucherID, model.ErrVoucherUnsafe)
	case lua.SeckillVoid:
		return fmt.Errorf("%w: order id %d is void", model.ErrUnavailable, orderID)
	case lua.SeckillMove:
		return errMove
	}
	return fmt.Errorf("seckill.lua: unexpected code %d", code)
}

// fallOver admits an order whose home bucket reserved the buyer mark. It
// tries the other buckets in the user's order: home+1, home+2, and so on.
// Then it ends the reservation. The result is "moved" when a bucket
// admitted the order. It is "void" when no bucket did. Then every bucket
// sold out (ErrSoldOut), or one refused it for another reason (its error).
func (a *Admission) fallOver(ctx context.Context, orderID, userID, voucherID int64, buckets, home int, now time.Time) error {
	homeShard := repository.BucketShard(voucherID, home)
	for i := 1; i < buckets; i++ {
		shard := repository.BucketShard(voucherID, (home+i)%buckets)
		args := append(a.admitArgs(shard, orderID, userID, voucherID, now),
			lua.SeckillAway, a.traceOf(ctx), homeShard)
		code, err := evalOnce(ctx, a.rdb, lua.Seckill, args).Int()
		var reply redis.Error
		switch {
		case err != nil && errors.As(err, &reply):
			return a.release(ctx, homeShard, orderID, userID, voucherID, false, redisErr(err))
		case err != nil:
			if serr := a.settle(ctx, shard, orderID, userID, voucherID, err); serr != nil {
				return a.release(ctx, homeShard, orderID, userID, voucherID, false, serr)
			}
			code = lua.SeckillOK
		}
		switch err := admitErr(code, orderID, voucherID); {
		case err == nil:
			return a.release(ctx, homeShard, orderID, userID, voucherID, true, nil)
		case !errors.Is(err, model.ErrSoldOut):
			return a.release(ctx, homeShard, orderID, userID, voucherID, false, err)
		}
	}
	return a.release(ctx, homeShard, orderID, userID, voucherID, false, model.ErrSoldOut)
}

// release ends the home bucket's reservation of an order and returns
// result. Moved means admitted in another bucket. void drops the buyer
// mark. When the release fails, an order not admitted is answered 503:
// its buyer mark may stay until a rebuild from the facts drops it.
// An admitted order stays admitted: the reservation is its buyer mark,
// and its home record stays "moving" until it expires.
func (a *Admission) release(ctx context.Context, homeShard int, orderID, userID, voucherID int64, moved bool, result error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err := a.runRelease(rctx, homeShard, orderID, userID, voucherID, moved)
	if err != nil && !moved {
		a.releaseEventually(homeShard, orderID, userID, voucherID)
		return fmt.Errorf("%w: order %d: releasing its buyer mark: %w (after %w)", model.ErrUnavailable, orderID, err, result)
	}
	return result
}

// runRelease runs lua/seckill_release.lua once.
func (a *Admission) runRelease(ctx context.Context, homeShard int, orderID, userID, voucherID int64, moved bool) error {
	outcome := "void"
	if moved {
		outcome = "moved"
	}
	return redisErr(lua.SeckillRelease.Run(ctx, a.rdb,
		releaseKeys(homeShard, voucherID, orderID),
		userID, voucherID, outcome, int64(repository.VoidTTL/time.Second)).Err())
}

// keys are the KEYS of lua/seckill.lua for the order (one bucket).
func (a *Admission) keys(voucherID, orderID int64) []string {
	return SeckillKeys(a.stream, voucherID, orderID)
}

// streamKey is the order stream of the voucher's shard.
func (a *Admission) streamKey(voucherID int64) string {
	return repository.ShardKey(repository.VoucherShard(voucherID), a.stream)
}

// settle decides an admission whose answer was lost (cause). nil means it
// admitted the order. Otherwise it is model.ErrUnavailable with the order
// id void in Redis. When Redis cannot be reached, nothing is settled.
//
// The admission ran in the bucket of shard. A home bucket's reservation
// (lua.SettleMoving) is errMove. The caller then goes on to the other
// buckets.
func (a *Admission) settle(ctx context.Context, shard int, orderID, userID, voucherID int64, cause error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	// Safe to repeat: a second run finds what the first one left.
	v, err := lua.SeckillSettle.Run(sctx, a.rdb, settleKeys(shard, orderID),
		userID, voucherID, int64(repository.VoidTTL/time.Second)).Int()
	switch {
	case err != nil:
		return fmt.Errorf("%w: admission of order %d unknown (%w); settling it: %w",
			model.ErrUnavailable, orderID, cause, err)
	case v == lua.SettleAdmitted:
		return nil
	case v == lua.SettleMoving:
		return errMove
	case v == lua.SettleVoid:
		return fmt.Errorf("%w: admission of order %d unknown (%w): order id void",
			model.ErrUnavailable, orderID, cause)
	}
	return fmt.Errorf("seckill_settle.lua: unexpected verdict %d", v)
}

// OrderInfo returns what Redis knows of an order not (yet) in the database.
// That is its owner, voucher and status (pending or failed). The creation
// time is read from the id. model.ErrOrderNotFound when there is no record.
// The record is in the shard of the order's voucher, which the id does not
// tell. So every shard is asked, in one pipeline: one round trip per
// master.
func (a *Admission) OrderInfo(ctx context.Context, orderID int64) (*model.VoucherOrder, error) {
	cmds := make([]*redis.StringCmd, repository.Shards)
	_, _ = a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range repository.Shards {
			cmds[i] = p.Get(ctx, repository.OrderInfoKey(i, orderID))
		}
		return nil
	})
	// A home bucket's "moving" record counts only when no other shard has
	// one (the bucket that admitted the order writes its own).
	v, err := "", error(redis.Nil)
	for _, c := range cmds {
		if cerr := c.Err(); !errors.Is(cerr, redis.Nil) {
			if v != "" && strings.HasSuffix(c.Val(), ":"+lua.OrderInfoMoving) {
				continue
			}
			v, err = c.Val(), cerr
			if cerr != nil || !strings.HasSuffix(v, ":"+lua.OrderInfoMoving) {
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
	if v == lua.OrderInfoVoid {
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
	if parts[2] == lua.OrderInfoFailed {
		status = model.OrderStatusFailed
	}
	created := model.OrderIDTime(orderID)
	return &model.VoucherOrder{
		ID: orderID, UserID: user, VoucherID: voucher, PayType: 1, Status: status,
		CreateTime: created, UpdateTime: created,
	}, nil
}
