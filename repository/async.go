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
	stream string      // StreamName; tests use a stream of their own
	batch  evalBatcher // coalesces concurrent admissions
	// traceParent names the admitting request's span for the stream
	// entry; nil (tracing off) stores none.
	traceParent func(context.Context) string
}

// CarryTrace stores in each stream entry what f returns for the admitting
// request's context (its W3C traceparent), so that the consumer's write
// can be linked to the request.
func (a *Admission) CarryTrace(f func(context.Context) string) { a.traceParent = f }

// traceOf is the traceparent of ctx for the stream entry, "" when none.
func (a *Admission) traceOf(ctx context.Context) string {
	if a.traceParent == nil {
		return ""
	}
	return a.traceParent(ctx)
}

// NewAdmission returns the Redis side of async mode.
func NewAdmission(rdb redis.UniversalClient) *Admission {
	return &Admission{rdb: rdb, stream: StreamName}
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
// admission still waits for a round trip (evalBatcher) gets
// model.ErrUnavailable at once: the admission was never sent.
//
// Concurrent admissions share pipelined round trips (evalBatcher); each
// keeps its own verdict and its own settlement.
//
// A voucher whose stock is split in buckets (buckets > 1) admits the user in
// the user's home bucket (HomeBucket) when it has stock; otherwise the home
// bucket reserves the user's buyer mark (lua.SeckillMove) and the other
// buckets are tried in a fixed order for that user (seckill_away.lua), the
// first with stock admitting the order; SOLD_OUT only when every bucket
// was empty, the reservation then undone (seckill_release.lua).
func (a *Admission) Admit(ctx context.Context, orderID, userID, voucherID int64, buckets int, now time.Time) error {
	if buckets <= 1 {
		return a.admitIn(ctx, VoucherShard(voucherID), orderID, userID, voucherID, false, now)
	}
	home := HomeBucket(userID, buckets)
	homeShard := BucketShard(voucherID, home)
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

// releaseEventually retries, in the background, the release ("void") of a
// home bucket's reservation of an order that was not admitted, for up to
// releaseRetryFor (a failover of the home bucket's master takes seconds).
// The release changes nothing unless the order info says the order is
// moving, so it is safe when there was no reservation.
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

// admitIn runs lua/seckill.lua in the bucket of shard (reserving the buyer
// mark when sold out there, with reserve), settling a lost answer.
func (a *Admission) admitIn(ctx context.Context, shard int, orderID, userID, voucherID int64, reserve bool, now time.Time) error {
	k := SeckillKeysIn(a.stream, shard, voucherID, orderID)
	args := []any{5, k[0], k[1], k[2], k[3], k[4],
		userID, voucherID, orderID, now.UnixMilli(), int64(OrderInfoTTL / time.Second)}
	if reserve {
		args = append(args, "reserve")
	}
	if tp := a.traceOf(ctx); tp != "" {
		if !reserve {
			args = append(args, "")
		}
		args = append(args, tp)
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

// admitErr is the error of a seckill.lua (or seckill_away.lua) code.
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

// fallOver admits an order whose home bucket reserved the buyer mark in
// the other buckets, in the user's order (home+1, home+2, ...), and then
// ends the reservation: "moved" when a bucket admitted it, "void" when
// none did (every bucket sold out: ErrSoldOut) or one refused it for
// another reason (its error).
func (a *Admission) fallOver(ctx context.Context, orderID, userID, voucherID int64, buckets, home int, now time.Time) error {
	homeShard := BucketShard(voucherID, home)
	for i := 1; i < buckets; i++ {
		shard := BucketShard(voucherID, (home+i)%buckets)
		k := SeckillKeysIn(a.stream, shard, voucherID, orderID)
		code, err := evalOnce(ctx, a.rdb, lua.SeckillAway, []any{4, k[0], k[2], k[3], k[4],
			userID, voucherID, orderID, now.UnixMilli(), int64(OrderInfoTTL / time.Second), homeShard, a.traceOf(ctx)}).Int()
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

// release ends the home bucket's reservation of an order (moved: admitted
// in another bucket; else void: the buyer mark goes) and returns result.
// When the release itself fails, an order that was not admitted is
// answered 503: its buyer mark may still be held (until a rebuild from the
// facts drops it); an admitted order stays admitted (the reservation is
// its buyer mark; only its home record stays, as "moving", until it
// expires).
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
		[]string{BuyersKeyIn(homeShard, voucherID), OrderInfoKey(homeShard, orderID)},
		userID, voucherID, outcome, int64(VoidTTL/time.Second)).Err())
}

// keys are the KEYS of lua/seckill.lua for the order (one bucket).
func (a *Admission) keys(voucherID, orderID int64) []string {
	return SeckillKeys(a.stream, voucherID, orderID)
}

// streamKey is the order stream of the voucher's shard.
func (a *Admission) streamKey(voucherID int64) string {
	return ShardKey(VoucherShard(voucherID), a.stream)
}

// SeckillKeys are the KEYS of lua/seckill.lua for an order of the voucher
// (its bucket 0) admitted into the stream named stream (StreamName, or a
// test's), all in the voucher's shard.
func SeckillKeys(stream string, voucherID, orderID int64) []string {
	return SeckillKeysIn(stream, VoucherShard(voucherID), voucherID, orderID)
}

// SeckillKeysIn are the KEYS of lua/seckill.lua in the bucket of shard:
// stock, buyers, voucher hash, stream, order info.
func SeckillKeysIn(stream string, shard int, voucherID, orderID int64) []string {
	return []string{StockKeyIn(shard, voucherID), BuyersKeyIn(shard, voucherID), VoucherKeyIn(shard, voucherID),
		ShardKey(shard, stream), OrderInfoKey(shard, orderID)}
}

// settle decides an admission whose answer was lost (cause): nil when it
// admitted the order, else model.ErrUnavailable with the order id void in
// Redis, or not settled at all when Redis cannot be reached.
//
// The admission ran in the bucket of shard; a home bucket's reservation
// (lua.SettleMoving) is errMove: the caller goes on to the other buckets.
func (a *Admission) settle(ctx context.Context, shard int, orderID, userID, voucherID int64, cause error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	// Safe to repeat: a second run finds what the first one left.
	v, err := lua.SeckillSettle.Run(sctx, a.rdb, []string{OrderInfoKey(shard, orderID)},
		userID, voucherID, int64(VoidTTL/time.Second)).Int()
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
		cmd := newEvalSHA(ctx, script.Hash(), args)
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

// newEvalSHA returns the command EVALSHA hash args....
func newEvalSHA(ctx context.Context, hash string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 2+len(args))
	cmdArgs = append(cmdArgs, "evalsha", hash)
	return redis.NewCmd(ctx, append(cmdArgs, args...)...)
}

// OrderInfo returns what Redis knows of an order not (yet) in the database:
// its owner, voucher and status (pending or failed), with the creation time
// read from the id. model.ErrOrderNotFound when there is no record. The
// record is in the shard of the order's voucher, which the id does not
// tell: every shard is asked, in one pipeline (one round trip per master).
func (a *Admission) OrderInfo(ctx context.Context, orderID int64) (*model.VoucherOrder, error) {
	cmds := make([]*redis.StringCmd, Shards)
	_, _ = a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
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

// Voucher returns the voucher's Redis state, read in one MULTI.
func (a *Admission) Voucher(ctx context.Context, voucherID int64) (model.RedisVoucher, error) {
	m, err := a.Vouchers(ctx, []int64{voucherID})
	return m[voucherID], err
}

// vouchersChunk is how many vouchers one MULTI of Vouchers reads.
const vouchersChunk = 100

// Vouchers returns the Redis state of each voucher summed over its
// buckets, each bucket read atomically (one MULTI per shard per chunk of
// vouchers).
func (a *Admission) Vouchers(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, error) {
	sums := newVoucherSums(len(voucherIDs))
	for start := 0; start < len(voucherIDs); start += vouchersChunk {
		if err := a.vouchers(ctx, voucherIDs[start:min(start+vouchersChunk, len(voucherIDs))], sums); err != nil {
			return nil, err
		}
	}
	return sums.out, nil
}

// vouchers reads the buckets in each shard in one MULTI (a MULTI names the
// keys of one slot only on a cluster).
func (a *Admission) vouchers(ctx context.Context, voucherIDs []int64, sums *voucherSums) error {
	refs, err := bucketRefs(ctx, a.rdb, voucherIDs)
	if err != nil {
		return err
	}
	for shard, ids := range refs {
		if len(ids) == 0 {
			continue
		}
		var read func(*voucherSums)
		_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			read = queueBucketReads(ctx, p, shard, ids)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return redisErr(err)
		}
		read(sums)
	}
	return nil
}

// SetState sets the state field of the voucher's hash in every bucket
// (VoucherBuckets; creating a hash holding only the state where a bucket
// is not loaded: the admission scripts then refuse it as not trusted).
func (a *Admission) SetState(ctx context.Context, voucherID int64, state string) error {
	n, err := VoucherBuckets(ctx, a.rdb, []int64{voucherID})
	if err != nil {
		return err
	}
	_, err = a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range n[voucherID] {
			p.HSet(ctx, VoucherKeyIn(BucketShard(voucherID, b), voucherID), "state", state)
		}
		return nil
	})
	return redisErr(err)
}

// Load replaces the voucher's Redis state, one MULTI per bucket: stock
// (split evenly over the buckets), buyers (each in the user's home
// bucket), the returned sets (each cancelled order in its ReturnBucket,
// so that giveback.lua never adds its unit again) and the voucher hash
// with state ok.
func (a *Admission) Load(ctx context.Context, sv *model.SeckillVoucher, stock int64, buyers, returned []int64) error {
	n := sv.Buckets()
	byHome := make([][]int64, n)
	for _, u := range buyers {
		h := HomeBucket(u, n)
		byHome[h] = append(byHome[h], u)
	}
	byReturn := make([][]int64, n)
	for _, o := range returned {
		b := ReturnBucket(o, n)
		byReturn[b] = append(byReturn[b], o)
	}
	for b := range n {
		_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			loadBucket(ctx, p, sv, b, share(stock, n, b), byHome[b])
			loadReturned(ctx, p, sv, b, byReturn[b])
			return nil
		})
		if err != nil {
			return redisErr(err)
		}
	}
	return nil
}

// share is bucket b's part of total split evenly over n buckets (the
// first total mod n buckets one more).
func share(total int64, n, b int) int64 {
	q, r := total/int64(n), total%int64(n)
	if int64(b) < r {
		return q + 1
	}
	return q
}

// LoadNew loads a voucher just published (stock = initial, split over its
// buckets, no buyers): each bucket unless its hash exists already (a
// reconciler got there first and owns it). It reports whether it loaded
// every bucket.
func (a *Admission) LoadNew(ctx context.Context, sv *model.SeckillVoucher) (bool, error) {
	n := sv.Buckets()
	all := true
	for b := range n {
		key := VoucherKeyIn(BucketShard(sv.VoucherID, b), sv.VoucherID)
		loaded := false
		err := a.rdb.Watch(ctx, func(tx *redis.Tx) error {
			exists, err := tx.Exists(ctx, key).Result()
			if err != nil || exists > 0 {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				loadBucket(ctx, p, sv, b, share(int64(sv.InitialStock), n, b), nil)
				return nil
			})
			loaded = err == nil
			return err
		}, key)
		if err != nil && !errors.Is(err, redis.TxFailedErr) {
			return false, redisErr(err)
		}
		// TxFailedErr: someone touched the hash: they own it.
		all = all && loaded
	}
	return all, nil
}

// buyersChunk bounds the members of one SADD.
const buyersChunk = 5000

// loadBucket queues the load of bucket b of the voucher: its stock, its
// buyers, and its hash (the window, its part of the initial stock, the
// voucher's bucket count, state ok), all in the bucket's shard.
func loadBucket(ctx context.Context, p redis.Pipeliner, sv *model.SeckillVoucher, b int, stock int64, buyers []int64) {
	id, shard := sv.VoucherID, BucketShard(sv.VoucherID, b)
	stockKey, buyersKey, hashKey := StockKeyIn(shard, id), BuyersKeyIn(shard, id), VoucherKeyIn(shard, id)
	p.Del(ctx, stockKey, buyersKey, hashKey)
	p.Set(ctx, stockKey, stock, 0)
	for start := 0; start < len(buyers); start += buyersChunk {
		end := min(start+buyersChunk, len(buyers))
		members := make([]any, 0, end-start)
		for _, u := range buyers[start:end] {
			members = append(members, u)
		}
		p.SAdd(ctx, buyersKey, members...)
	}
	p.HSet(ctx, hashKey,
		"begin", sv.BeginTime.UnixMilli(), "end", sv.EndTime.UnixMilli(),
		"initial", share(int64(sv.InitialStock), sv.Buckets(), b), "state", model.VoucherStateOK,
		"buckets", sv.Buckets())
	// The state outlives the sale by a week, time for late entries to be
	// written or dead-lettered; then Redis forgets it.
	expire := sv.EndTime.Add(VoucherStateGrace)
	for _, k := range []string{stockKey, buyersKey, hashKey} {
		p.ExpireAt(ctx, k, expire)
	}
}

// loadReturned queues the replacement of bucket b's returned set by ids.
func loadReturned(ctx context.Context, p redis.Pipeliner, sv *model.SeckillVoucher, b int, ids []int64) {
	key := ReturnedKeyIn(BucketShard(sv.VoucherID, b), sv.VoucherID)
	p.Del(ctx, key)
	for start := 0; start < len(ids); start += buyersChunk {
		end := min(start+buyersChunk, len(ids))
		members := make([]any, 0, end-start)
		for _, o := range ids[start:end] {
			members = append(members, o)
		}
		p.SAdd(ctx, key, members...)
	}
	if len(ids) > 0 {
		p.ExpireAt(ctx, key, sv.EndTime.Add(VoucherStateGrace))
	}
}

// Identity returns who answers for the shards and the epoch they hold, in
// one round trip per master: RunID joins, shard by shard, the run id of
// the server that answered (new at each start of a server, different on
// every node, so it changes when Redis restarts, a replica is promoted or
// a slot moves; empty when a server does not tell), and Epoch is the
// shards' epoch (Epoch's rule).
func (a *Admission) Identity(ctx context.Context) (model.RedisIdentity, error) {
	epoch, err := a.Epoch(ctx)
	if err != nil {
		return model.RedisIdentity{}, err
	}
	ids, err := a.runIDs(ctx)
	if err != nil {
		return model.RedisIdentity{}, err
	}
	return model.RedisIdentity{Epoch: epoch, RunID: ids}, nil
}

// runIDs is the run id of the server answering for each shard, joined
// by ",": on a cluster the master of each shard's slot, else the one
// server (its run id once).
func (a *Admission) runIDs(ctx context.Context) (string, error) {
	cc, ok := a.rdb.(*redis.ClusterClient)
	if !ok {
		return runID(ctx, a.rdb)
	}
	byAddr := map[string]string{}
	ids := make([]string, Shards)
	for i := range Shards {
		node, err := cc.MasterForKey(ctx, EpochKey(i))
		if err != nil {
			return "", redisErr(err)
		}
		addr := node.Options().Addr
		if _, seen := byAddr[addr]; !seen {
			if byAddr[addr], err = runID(ctx, node); err != nil {
				return "", err
			}
		}
		ids[i] = byAddr[addr]
	}
	return strings.Join(ids, ","), nil
}

// runID is the run id INFO server reports ("" when the server does not
// tell: a test double).
func runID(ctx context.Context, c redis.Cmdable) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		if strings.Contains(err.Error(), "not supported") {
			return "", nil
		}
		return "", redisErr(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v, nil
		}
	}
	return "", nil
}

// Epoch returns the epoch stored in Redis: the value every shard holds;
// "" when a shard holds none (it lost its data, or the layout is new);
// when the shards differ, a value no epoch can equal (so that it is
// treated as lost too).
func (a *Admission) Epoch(ctx context.Context) (string, error) {
	cmds := make([]*redis.StringCmd, Shards)
	_, _ = a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			cmds[i] = p.Get(ctx, EpochKey(i))
		}
		return nil
	})
	var vals []string
	for _, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		if err != nil {
			return "", redisErr(err)
		}
		vals = append(vals, v)
	}
	differ := 0
	for _, v := range vals[1:] {
		if v != vals[0] {
			differ++
		}
	}
	if differ > 0 {
		return fmt.Sprintf("mixed:%d/%d", differ, Shards), nil
	}
	return vals[0], nil
}

// LegacyEpoch returns the epoch of the key layout before the shards
// (LegacyEpochKey; "" when none).
func (a *Admission) LegacyEpoch(ctx context.Context) (string, error) {
	v, err := a.rdb.Get(ctx, LegacyEpochKey).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, redisErr(err)
}

// SetEpoch stores the epoch in every shard.
func (a *Admission) SetEpoch(ctx context.Context, epoch string) error {
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			p.Set(ctx, EpochKey(i), epoch, 0)
		}
		return nil
	})
	return redisErr(err)
}
