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

// Admission runs the async admission script and keeps each voucher's Redis
// state (stock, buyers, voucher hash) and the epoch (keys.go names the keys).
type Admission struct {
	rdb    redis.UniversalClient
	stream string       // StreamKey; tests use a stream of their own
	batch  admitBatcher // coalesces concurrent admissions
}

// NewAdmission returns the Redis side of async mode.
func NewAdmission(rdb redis.UniversalClient) *Admission {
	return &Admission{rdb: rdb, stream: StreamKey}
}

// settleTimeout bounds the settlement of an admission whose answer was
// lost. It runs on a context detached from the request's, whose end may be
// what cut the admission short.
const settleTimeout = time.Second

// Admit runs lua/seckill.lua for one order: nil when admitted (queued in
// stream.orders, status pending); otherwise model.ErrSoldOut,
// model.ErrDuplicateOrder, model.ErrSeckillNotStarted, model.ErrSeckillEnded,
// or model.ErrUnavailable wrapping model.ErrVoucherNotLoaded or
// model.ErrVoucherUnsafe.
//
// The script is sent once: go-redis does not repeat it after a lost reply
// (a repeat after a consumer wrote the order would find the user among the
// buyers and answer DUPLICATE_ORDER for an admitted order). When no answer
// comes (a timeout, a dropped connection, the context's end: the script may
// or may not have run, or may still run), Admit settles the order id with
// lua/seckill_settle.lua: nil when the order was admitted; otherwise the id
// is void in Redis (a late admission is refused) and the error is
// model.ErrUnavailable. The order may then have been admitted and written
// to the database already (its Redis record dropped): the caller reads the
// database before answering. A caller whose context ends while its
// admission still waits for a round trip (admitBatcher) gets
// model.ErrUnavailable at once: the admission was never sent.
//
// Concurrent admissions share pipelined round trips (admitBatcher); each
// keeps its own verdict and its own settlement.
func (a *Admission) Admit(ctx context.Context, orderID, userID, voucherID int64, now time.Time) error {
	code, err := a.batch.eval(ctx, a.rdb, []any{5,
		StockKey(voucherID), BuyersKey(voucherID), VoucherKey(voucherID), a.stream, OrderInfoKey(orderID),
		userID, voucherID, orderID, now.UnixMilli(), int64(OrderInfoTTL / time.Second)}).Int()
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		return redisErr(err) // Redis answered: the script did not admit
	case errors.Is(err, errAdmitNotSent):
		return fmt.Errorf("%w: order %d: %w", model.ErrUnavailable, orderID, err) // never sent: nothing to settle
	case err != nil:
		return a.settle(ctx, orderID, userID, voucherID, err)
	}
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
	}
	return fmt.Errorf("seckill.lua: unexpected code %d", code)
}

// settle decides an admission whose answer was lost (cause): nil when it
// admitted the order, else model.ErrUnavailable with the order id void in
// Redis, or not settled at all when Redis cannot be reached.
func (a *Admission) settle(ctx context.Context, orderID, userID, voucherID int64, cause error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	// Safe to repeat: a second run finds what the first one left.
	v, err := lua.SeckillSettle.Run(sctx, a.rdb, []string{OrderInfoKey(orderID)},
		userID, voucherID, int64(VoidTTL/time.Second)).Int()
	switch {
	case err != nil:
		return fmt.Errorf("%w: admission of order %d unknown (%w); settling it: %w",
			model.ErrUnavailable, orderID, cause, err)
	case v == lua.SettleAdmitted:
		return nil
	case v == lua.SettleVoid:
		return fmt.Errorf("%w: admission of order %d unknown (%w): order id void",
			model.ErrUnavailable, orderID, cause)
	}
	return fmt.Errorf("seckill_settle.lua: unexpected verdict %d", v)
}

// onceCmd is a command go-redis sends at most once: after a failure once
// it was written (a lost reply, a timeout) it returns the error instead of
// sending the command again on another connection.
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command a second time.
func (onceCmd) NoRetry() bool { return true }

// evalOnce runs script by EVALSHA with args (what follows the script's
// hash: the key count, the keys, then ARGV), sent at most once; when the
// server does not have the script (NOSCRIPT: it did not run), it loads it
// and sends EVALSHA once more.
func evalOnce(ctx context.Context, c redis.UniversalClient, script *redis.Script, args []any) *redis.Cmd {
	send := func() *redis.Cmd {
		cmd := newEvalSHA(ctx, script, args)
		_ = c.Process(ctx, onceCmd{cmd}) // the error is the command's
		return cmd
	}
	cmd := send()
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := script.Load(ctx, c).Err(); err != nil {
			cmd.SetErr(err)
			return cmd
		}
		cmd = send()
	}
	return cmd
}

// newEvalSHA returns the command EVALSHA <script's hash> args....
func newEvalSHA(ctx context.Context, script *redis.Script, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 2+len(args))
	cmdArgs = append(cmdArgs, "evalsha", script.Hash())
	return redis.NewCmd(ctx, append(cmdArgs, args...)...)
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

// Identity returns the run id of the Redis server that answers (new at
// each start of a server, different on every node, so it changes when
// Redis restarts or a replica is promoted; "" when the server does not
// tell) and the epoch stored in it, in one round trip.
func (a *Admission) Identity(ctx context.Context) (model.RedisIdentity, error) {
	pipe := a.rdb.Pipeline()
	epoch := pipe.Get(ctx, EpochKey)
	info := pipe.Info(ctx, "server")
	_, _ = pipe.Exec(ctx)
	if err := epoch.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return model.RedisIdentity{}, redisErr(err)
	}
	id := model.RedisIdentity{Epoch: epoch.Val()}
	if err := info.Err(); err != nil {
		if !strings.Contains(err.Error(), "not supported") {
			return model.RedisIdentity{}, redisErr(err)
		}
		// A server without INFO server (a test double) leaves the run
		// id empty: only the epoch tells then.
	}
	for _, line := range strings.Split(info.Val(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			id.RunID = v
		}
	}
	return id, nil
}

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
