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

// OrderStream is stream.orders read through consumer group g1. After an
// order is written the entry is acknowledged AND deleted, so the stream
// holds only orders not yet written (never delivered, or pending).
type OrderStream struct {
	rdb         redis.UniversalClient
	stream, dlq string // StreamKey and DeadLetterKey (tests use their own)
}

// NewOrderStream returns the order stream.
func NewOrderStream(rdb redis.UniversalClient) *OrderStream {
	return &OrderStream{rdb: rdb, stream: StreamKey, dlq: DeadLetterKey}
}

// NewOrderStreamOn returns an order stream on other keys than StreamKey and
// DeadLetterKey (tests and tools that must not touch the live stream).
func NewOrderStreamOn(rdb redis.UniversalClient, stream, dlq string) *OrderStream {
	return &OrderStream{rdb: rdb, stream: stream, dlq: dlq}
}

// EnsureGroup creates group g1 (and the stream) when missing. The group
// starts at the beginning of the stream: every entry in it is an order not
// yet written, so none may be skipped.
func (s *OrderStream) EnsureGroup(ctx context.Context) error {
	err := s.rdb.XGroupCreateMkStream(ctx, s.stream, GroupName, "0").Err()
	if err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return nil
	}
	return redisErr(err)
}

// ReadNew returns up to count entries never delivered to the group,
// waiting up to block for the first (block < 0: do not wait).
func (s *OrderStream) ReadNew(ctx context.Context, consumer string, count int, block time.Duration) ([]model.QueuedOrder, error) {
	if block < 0 {
		block = -1
	}
	return s.read(ctx, consumer, ">", count, block)
}

// ReadOwn returns up to count entries delivered to consumer and not yet
// acknowledged (its pending entries).
func (s *OrderStream) ReadOwn(ctx context.Context, consumer string, count int) ([]model.QueuedOrder, error) {
	return s.read(ctx, consumer, "0", count, -1)
}

func (s *OrderStream) read(ctx context.Context, consumer, id string, count int, block time.Duration) ([]model.QueuedOrder, error) {
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: GroupName, Consumer: consumer, Streams: []string{s.stream, id},
		Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, redisErr(err)
	}
	var out []model.QueuedOrder
	for _, st := range res {
		for _, m := range st.Messages {
			out = append(out, parseEntry(m))
		}
	}
	return out, nil
}

// Claim moves to consumer up to count entries pending for longer than
// minIdle with any consumer (XAUTOCLAIM from start, "0-0" for the
// beginning) and returns them with their delivery counts, and the cursor
// for the next call ("0-0" when the scan is complete).
func (s *OrderStream) Claim(ctx context.Context, consumer string, minIdle time.Duration, start string, count int) ([]model.QueuedOrder, string, error) {
	msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.stream, Group: GroupName, Consumer: consumer,
		MinIdle: minIdle, Start: start, Count: int64(count),
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, start, redisErr(err)
	}
	if len(msgs) == 0 {
		return nil, next, nil
	}
	out := make([]model.QueuedOrder, len(msgs))
	for i, m := range msgs {
		out[i] = parseEntry(m)
	}
	// The delivery counts: how often the group handed each entry out.
	pend, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: s.stream, Group: GroupName, Consumer: consumer,
		Start: msgs[0].ID, End: msgs[len(msgs)-1].ID, Count: int64(len(msgs)),
	}).Result()
	if err != nil {
		return out, next, redisErr(err)
	}
	counts := make(map[string]int64, len(pend))
	for _, p := range pend {
		counts[p.ID] = p.RetryCount
	}
	for i := range out {
		out[i].Deliveries = counts[out[i].MsgID]
	}
	return out, next, nil
}

// touchChunk bounds the ids of one touch.lua call.
const touchChunk = 100

// Touch runs lua/touch.lua: of msgs, the entries a consumer keeps for a
// retry, it returns those still pending with consumer, their idle time
// reset (XCLAIM JUSTID, which counts no delivery) so that other consumers
// do not take them for a dead consumer's. An entry claimed by another
// consumer is left with it, and one no longer pending is not returned:
// the consumer must drop both, never write them.
func (s *OrderStream) Touch(ctx context.Context, consumer string, msgs []model.QueuedOrder) ([]model.QueuedOrder, error) {
	owned := make(map[string]bool, len(msgs))
	for start := 0; start < len(msgs); start += touchChunk {
		chunk := msgs[start:min(start+touchChunk, len(msgs))]
		args := make([]any, 0, 2+len(chunk))
		args = append(args, GroupName, consumer)
		for _, m := range chunk {
			args = append(args, m.MsgID)
		}
		ids, err := lua.Touch.Run(ctx, s.rdb, []string{s.stream}, args...).StringSlice()
		if err != nil && strings.Contains(err.Error(), "NOGROUP") {
			// The group is gone (Redis lost its data): nothing is
			// pending with anyone.
			return nil, nil
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, redisErr(err)
		}
		for _, id := range ids {
			owned[id] = true
		}
	}
	var out []model.QueuedOrder
	for _, m := range msgs {
		if owned[m.MsgID] {
			out = append(out, m)
		}
	}
	return out, nil
}

// parseEntry reads orderId, userId and voucherId; an entry without fields
// was deleted after delivery.
func parseEntry(m redis.XMessage) model.QueuedOrder {
	q := model.QueuedOrder{MsgID: m.ID}
	if len(m.Values) == 0 {
		q.Deleted = true
		return q
	}
	q.Raw = make(map[string]string, len(m.Values))
	for k, v := range m.Values {
		q.Raw[k] = fmt.Sprint(v)
	}
	var bad []string
	field := func(name string) int64 {
		n, err := strconv.ParseInt(q.Raw[name], 10, 64)
		if err != nil || n <= 0 {
			bad = append(bad, name)
		}
		return n
	}
	q.OrderID, q.UserID, q.VoucherID = field("orderId"), field("userId"), field("voucherId")
	if len(bad) > 0 {
		q.Malformed = "malformed " + strings.Join(bad, ", ")
	}
	return q
}

// Ack settles written orders: XACK and XDEL their entries and delete their
// order-info keys (the database answers for them now), in one MULTI.
func (s *OrderStream) Ack(ctx context.Context, msgs []model.QueuedOrder) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]string, len(msgs))
	var info []string
	for i, m := range msgs {
		ids[i] = m.MsgID
		if m.OrderID > 0 {
			info = append(info, OrderInfoKey(m.OrderID))
		}
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, s.stream, GroupName, ids...)
		p.XDel(ctx, s.stream, ids...)
		if len(info) > 0 {
			p.Del(ctx, info...)
		}
		return nil
	})
	return redisErr(err)
}

// DeadLetter runs lua/deadletter.lua for m: it reports true when it moved
// the entry to stream.orders.dlq and gave back what give says (its unit of
// stock, its buyer mark); false when another consumer settled the
// entry first. When the voucher's Redis state is missing or not ok it
// changes nothing and returns model.ErrUnavailable wrapping
// model.ErrVoucherUnsafe: the entry stays pending until the state is
// rebuilt.
func (s *OrderStream) DeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int, give model.GiveBack) (bool, error) {
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	v := m.VoucherID
	code, err := lua.DeadLetter.Run(ctx, s.rdb,
		[]string{s.stream, s.dlq, StockKey(v), BuyersKey(v), VoucherKey(v), OrderInfoKey(m.OrderID)},
		GroupName, m.MsgID, m.OrderID, m.UserID, v, reason, attempts, flag(give.Buyer), int64(OrderInfoTTL/time.Second),
		flag(give.Stock)).Int()
	if err != nil {
		return false, redisErr(err)
	}
	switch code {
	case lua.DeadLettered:
		return true, nil
	case lua.DeadLetterNotPending:
		return false, nil
	}
	return false, fmt.Errorf("%w: dead-letter voucher %d: %w", model.ErrUnavailable, v, model.ErrVoucherUnsafe)
}

// DeadLetterMalformed moves an entry that cannot be parsed to the
// dead-letter stream (its fields, the reason and the original id) and
// settles it; nothing can be given back.
func (s *OrderStream) DeadLetterMalformed(ctx context.Context, m model.QueuedOrder, reason string) error {
	fields := []any{"reason", reason, "msgId", m.MsgID}
	for k, v := range m.Raw {
		fields = append(fields, "raw."+k, v)
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.dlq, Values: fields})
		p.XAck(ctx, s.stream, GroupName, m.MsgID)
		p.XDel(ctx, s.stream, m.MsgID)
		return nil
	})
	return redisErr(err)
}

// rangePage is the page size of Entries.
const rangePage = 1000

// Entries returns every entry in the stream (orders not yet written:
// undelivered or pending), oldest first. It costs a full scan: start-up
// reconciliation and the audit only.
func (s *OrderStream) Entries(ctx context.Context) ([]model.QueuedOrder, error) {
	var out []model.QueuedOrder
	start := "-"
	for {
		msgs, err := s.rdb.XRangeN(ctx, s.stream, start, "+", rangePage).Result()
		if err != nil {
			return nil, redisErr(err)
		}
		for _, m := range msgs {
			out = append(out, parseEntry(m))
		}
		if len(msgs) < rangePage {
			return out, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// RemoveConsumer deletes consumer from the group when it has no pending
// entries (deleting a consumer drops its pending entries, so one that has
// some is left for XAUTOCLAIM).
func (s *OrderStream) RemoveConsumer(ctx context.Context, consumer string) error {
	pend, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: s.stream, Group: GroupName, Consumer: consumer, Start: "-", End: "+", Count: 1,
	}).Result()
	if err != nil {
		return redisErr(err)
	}
	if len(pend) > 0 {
		return nil
	}
	return redisErr(s.rdb.XGroupDelConsumer(ctx, s.stream, GroupName, consumer).Err())
}

// PruneConsumers deletes the consumers that have nothing pending and were
// idle for longer than idle: those of processes killed without a graceful
// stop (their pending entries, if any, are claimed first). A live consumer
// deleted by mistake is recreated by its next read. It returns how many it
// deleted.
func (s *OrderStream) PruneConsumers(ctx context.Context, idle time.Duration) (int, error) {
	consumers, err := s.rdb.XInfoConsumers(ctx, s.stream, GroupName).Result()
	if err != nil {
		return 0, redisErr(err)
	}
	n := 0
	for _, c := range consumers {
		if c.Pending > 0 || c.Idle < idle {
			continue
		}
		if err := s.rdb.XGroupDelConsumer(ctx, s.stream, GroupName, c.Name).Err(); err != nil {
			return n, redisErr(err)
		}
		n++
	}
	return n, nil
}
