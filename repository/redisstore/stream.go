package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// OrderStream is the order stream, one per shard (StreamKey(i)). It is read
// through consumer group g1 on every shard. After an order is written, its
// entry is acknowledged AND deleted. So the streams hold only orders not
// yet written: never delivered, or pending. The entries it returns carry
// their shard in MsgID ("<shard>/<entry id>"). entryID reads it back. So
// the service sees one queue.
type OrderStream struct {
	streamShards
}

// streamShards is the order stream's layout: each shard's stream and
// dead-letter stream, and the reads and claims of the shards one by one,
// under which OrderStream keeps the queue's protocol.
type streamShards struct {
	rdb         redis.UniversalClient
	stream, dlq string // StreamName and DeadLetterName (tests use their own)
}

// NewOrderStream returns the order stream.
func NewOrderStream(rdb redis.UniversalClient) *OrderStream {
	return &OrderStream{streamShards{rdb: rdb, stream: StreamName, dlq: DeadLetterName}}
}

// NewOrderStreamOn returns an order stream on other names than StreamName
// and DeadLetterName. Tests and tools use it to stay off the live streams.
// Shard i's keys are seckill:{<tag>}:<stream> and seckill:{<tag>}:<dlq>.
func NewOrderStreamOn(rdb redis.UniversalClient, stream, dlq string) *OrderStream {
	return &OrderStream{streamShards{rdb: rdb, stream: stream, dlq: dlq}}
}

// key is shard i's stream. dlqKey its dead-letter stream.
func (s *streamShards) key(i int) string { return ShardKey(i, s.stream) }

func (s *streamShards) dlqKey(i int) string { return ShardKey(i, s.dlq) }

// EnsureGroup creates group g1 (and the stream) of every shard when
// missing. The group starts at the beginning of the stream. Every entry in
// it is an order not yet written, so none may be skipped.
func (s *OrderStream) EnsureGroup(ctx context.Context) error {
	cmds := make([]*redis.StatusCmd, Shards)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			cmds[i] = p.XGroupCreateMkStream(ctx, s.key(i), GroupName, "0")
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return redisErr(err)
		}
	}
	return nil
}

// readPoll bounds the pause between two polls of the shards. ReadNew polls
// while it waits on a Redis Cluster. There one blocking read cannot name
// every shard.
const readPoll = 20 * time.Millisecond

// ReadNew returns up to count entries never delivered to the group from
// each shard. It waits up to block for the first; block < 0 means do not
// wait. On one Redis it is one blocking XREADGROUP of every shard's stream.
// On a cluster, it pipelines one non-blocking XREADGROUP per shard. That
// costs one round trip per master. It repeats every few milliseconds until
// block has passed.
func (s *OrderStream) ReadNew(ctx context.Context, consumer string, count int, block time.Duration) ([]model.QueuedOrder, error) {
	if !isCluster(s.rdb) {
		streams := make([]string, 0, 2*Shards)
		for i := range Shards {
			streams = append(streams, s.key(i))
		}
		for range Shards {
			streams = append(streams, ">")
		}
		if block < 0 {
			block = -1
		}
		return s.read(ctx, consumer, streams, count, block)
	}
	deadline := time.Now().Add(block)
	pause := time.Millisecond
	for {
		out, err := s.readEach(ctx, consumer, ">", count)
		if err != nil || len(out) > 0 || block <= 0 || time.Now().After(deadline) {
			return out, err
		}
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		pause = min(2*pause, readPoll)
	}
}

// ReadOwn returns up to count entries per shard delivered to consumer and
// not yet acknowledged (its pending entries).
func (s *OrderStream) ReadOwn(ctx context.Context, consumer string, count int) ([]model.QueuedOrder, error) {
	return s.readEach(ctx, consumer, "0", count)
}

// readEach reads every shard from id, one XREADGROUP per shard, pipelined.
func (s *streamShards) readEach(ctx context.Context, consumer, id string, count int) ([]model.QueuedOrder, error) {
	cmds := make([]*redis.XStreamSliceCmd, Shards)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range Shards {
			cmds[i] = p.XReadGroup(ctx, &redis.XReadGroupArgs{
				Group: GroupName, Consumer: consumer, Streams: []string{s.key(i), id},
				Count: int64(count), Block: -1,
			})
		}
		return nil
	})
	// Entries read from some shards are returned even when others failed:
	// they are delivered (pending with consumer) and must be handled.
	var out []model.QueuedOrder
	var firstErr error
	for i, c := range cmds {
		res, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		out = s.appendEntries(out, i, res)
	}
	if len(out) == 0 && firstErr != nil {
		return nil, redisErr(firstErr)
	}
	return out, nil
}

// read is one XREADGROUP of streams (keys, then ids).
func (s *streamShards) read(ctx context.Context, consumer string, streams []string, count int, block time.Duration) ([]model.QueuedOrder, error) {
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: GroupName, Consumer: consumer, Streams: streams,
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
		out = s.appendEntries(out, s.shardOfKey(st.Stream), []redis.XStream{st})
	}
	return out, nil
}

// shardOfKey is the shard of one of this stream's keys.
func (s *streamShards) shardOfKey(key string) int {
	for i := range Shards {
		if s.key(i) == key {
			return i
		}
	}
	return -1
}

func (s *streamShards) appendEntries(out []model.QueuedOrder, shard int, res []redis.XStream) []model.QueuedOrder {
	for _, st := range res {
		for _, m := range st.Messages {
			out = append(out, parseEntry(shard, m))
		}
	}
	return out
}

// Claim moves to consumer up to count entries pending for longer than
// minIdle (XAUTOCLAIM). It takes them from any consumer. It returns them
// with their delivery counts, and the cursor for the next call. The cursor
// names a shard and a position in it ("<shard>/<id>"). "0-0" is the
// beginning of the first shard. The returned cursor is "0-0" once the last
// shard's scan is complete. Shards with nothing to claim are passed in the
// same call.
func (s *OrderStream) Claim(ctx context.Context, consumer string, minIdle time.Duration, start string, count int) ([]model.QueuedOrder, string, error) {
	shard, pos := 0, "0-0"
	if sh, id, ok := entryID(start); ok {
		shard, pos = sh, id
	}
	for ; shard < Shards; shard, pos = shard+1, "0-0" {
		msgs, next, err := s.claim(ctx, shard, consumer, minIdle, pos, count)
		if err != nil {
			return nil, msgID(shard, pos), err
		}
		if next != "0-0" {
			return msgs, msgID(shard, next), nil
		}
		if len(msgs) > 0 {
			if shard+1 == Shards {
				return msgs, "0-0", nil
			}
			return msgs, msgID(shard+1, "0-0"), nil
		}
	}
	return nil, "0-0", nil
}

// claim is XAUTOCLAIM on one shard, with the delivery counts.
func (s *streamShards) claim(ctx context.Context, shard int, consumer string, minIdle time.Duration, start string, count int) ([]model.QueuedOrder, string, error) {
	msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.key(shard), Group: GroupName, Consumer: consumer,
		MinIdle: minIdle, Start: start, Count: int64(count),
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, start, redisErr(err)
	}
	if next == "" {
		next = "0-0"
	}
	if len(msgs) == 0 {
		return nil, next, nil
	}
	out := make([]model.QueuedOrder, len(msgs))
	for i, m := range msgs {
		out[i] = parseEntry(shard, m)
	}
	// The delivery counts: how often the group handed each entry out.
	pend, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: s.key(shard), Group: GroupName, Consumer: consumer,
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
		out[i].Deliveries = counts[msgs[i].ID]
	}
	return out, next, nil
}

// touchChunk bounds the ids of one touch.lua call.
const touchChunk = 100

// Touch runs touch.lua on msgs, the entries a consumer keeps for a retry.
// It returns those still pending with consumer, their idle time reset
// (XCLAIM JUSTID, which counts no delivery). Other consumers then do not
// take them for a dead consumer's. An entry another consumer claimed, or
// one no longer pending, is not returned: the consumer drops it.
func (s *OrderStream) Touch(ctx context.Context, consumer string, msgs []model.QueuedOrder) ([]model.QueuedOrder, error) {
	shards, err := byShard(msgs)
	if err != nil {
		return nil, err
	}
	owned := make(map[string]bool, len(msgs))
	for shard, ms := range shards {
		for start := 0; start < len(ms); start += touchChunk {
			chunk := ms[start:min(start+touchChunk, len(ms))]
			args := make([]any, 0, 2+len(chunk))
			args = append(args, GroupName, consumer)
			for _, m := range chunk {
				_, id, _ := entryID(m.MsgID)
				args = append(args, id)
			}
			ids, err := scripts.Touch.Run(ctx, s.rdb, touchKeys(s.stream, shard), args...).StringSlice()
			if err != nil && strings.Contains(err.Error(), "NOGROUP") {
				// The group is gone (Redis lost its data): nothing is
				// pending with anyone in this shard.
				continue
			}
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, redisErr(err)
			}
			for _, id := range ids {
				owned[msgID(shard, id)] = true
			}
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

// Ack settles written orders, in one MULTI per shard. It runs XACK and XDEL
// on their entries. It deletes their order-info keys, since the database
// answers for them now.
func (s *OrderStream) Ack(ctx context.Context, msgs []model.QueuedOrder) error {
	shards, err := byShard(msgs)
	if err != nil {
		return err
	}
	for shard, ms := range shards {
		ids := make([]string, len(ms))
		var info []string
		for i, m := range ms {
			_, ids[i], _ = entryID(m.MsgID)
			if m.OrderID > 0 {
				info = append(info, OrderInfoKey(shard, m.OrderID))
			}
		}
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.XAck(ctx, s.key(shard), GroupName, ids...)
			p.XDel(ctx, s.key(shard), ids...)
			if len(info) > 0 {
				p.Del(ctx, info...)
			}
			return nil
		})
		if err != nil {
			return redisErr(err)
		}
	}
	return nil
}

// DeadLetter runs scripts/deadletter.lua for m. It reports true when it moved
// the entry to its shard's dead-letter stream. It then gave back what give
// says: its unit of stock, its buyer mark. false when another consumer
// settled the entry first. The voucher's Redis state may be missing or not
// ok. Then it changes nothing and returns model.ErrUnavailable wrapping
// model.ErrVoucherUnsafe. The entry stays pending until the state is
// rebuilt.
func (s *OrderStream) DeadLetter(ctx context.Context, m model.QueuedOrder, reason string, attempts int, give model.GiveBack) (bool, error) {
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	v := m.VoucherID
	shard, id, ok := entryID(m.MsgID)
	if !ok {
		return false, fmt.Errorf("dead-letter entry %q: not an id of the order stream", m.MsgID)
	}
	// The entry's bucket is in its shard. An order admitted away from home
	// has its buyer mark in the home bucket. That mark is given back after
	// the script, since it is in another slot.
	buyerHere := give.Buyer && !m.Away
	code, err := scripts.DeadLetter.Run(ctx, s.rdb,
		deadLetterKeys(s.stream, s.dlq, shard, v, m.OrderID),
		GroupName, id, m.OrderID, m.UserID, v, reason, attempts, flag(buyerHere), int64(OrderInfoTTL/time.Second),
		flag(give.Stock)).Int()
	if err != nil {
		return false, redisErr(err)
	}
	switch code {
	case scripts.DeadLettered:
		if give.Buyer && m.Away {
			// If this is lost, the mark stays until a rebuild from the
			// facts drops it. Until then the user is refused as a
			// duplicate.
			if err := s.rdb.SRem(ctx, BuyersKeyIn(m.BuyerShard, v), m.UserID).Err(); err != nil {
				return true, fmt.Errorf("dead letter of order %d: giving back the buyer mark in shard %d: %w", m.OrderID, m.BuyerShard, redisErr(err))
			}
		}
		return true, nil
	case scripts.DeadLetterNotPending:
		return false, nil
	}
	return false, fmt.Errorf("%w: voucher %d: dead letter: %w", model.ErrUnavailable, v, model.ErrVoucherUnsafe)
}

// DeadLetterMalformed moves an entry that cannot be parsed to its shard's
// dead-letter stream. It stores its fields, the reason and the original id,
// then settles it. Nothing can be given back.
func (s *OrderStream) DeadLetterMalformed(ctx context.Context, m model.QueuedOrder, reason string) error {
	shard, id, ok := entryID(m.MsgID)
	if !ok {
		return fmt.Errorf("stream entry %q: not an id of the order stream", m.MsgID)
	}
	fields := []any{"reason", reason, "msgId", id}
	for k, v := range m.Raw {
		fields = append(fields, "raw."+k, v)
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.dlqKey(shard), Values: fields})
		p.XAck(ctx, s.key(shard), GroupName, id)
		p.XDel(ctx, s.key(shard), id)
		return nil
	})
	return redisErr(err)
}

// rangePage is the page size of Entries.
const rangePage = 1000

// Entries returns every entry of every shard's stream (orders not yet
// written: undelivered or pending), oldest first in each shard. It costs
// a full scan: start-up reconciliation and the audit only.
func (s *OrderStream) Entries(ctx context.Context) ([]model.QueuedOrder, error) {
	var out []model.QueuedOrder
	for shard := range Shards {
		start := "-"
		for {
			msgs, err := s.rdb.XRangeN(ctx, s.key(shard), start, "+", rangePage).Result()
			if err != nil {
				return nil, redisErr(err)
			}
			for _, m := range msgs {
				out = append(out, parseEntry(shard, m))
			}
			if len(msgs) < rangePage {
				break
			}
			start = "(" + msgs[len(msgs)-1].ID
		}
	}
	return out, nil
}

// LegacyEntries returns the length of the order stream of the layout before
// the shards (LegacyStreamKey). Those are orders an older version admitted
// and has not written yet.
func (s *OrderStream) LegacyEntries(ctx context.Context) (int64, error) {
	n, err := s.rdb.XLen(ctx, LegacyStreamKey).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, redisErr(err)
}

// RemoveConsumer deletes consumer from the group of every shard where it
// has no pending entries. Deleting a consumer drops its pending entries. So
// a consumer with some is left for XAUTOCLAIM.
func (s *OrderStream) RemoveConsumer(ctx context.Context, consumer string) error {
	for shard := range Shards {
		pend, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: s.key(shard), Group: GroupName, Consumer: consumer, Start: "-", End: "+", Count: 1,
		}).Result()
		if err != nil {
			return redisErr(err)
		}
		if len(pend) > 0 {
			continue
		}
		if err := s.rdb.XGroupDelConsumer(ctx, s.key(shard), GroupName, consumer).Err(); err != nil {
			return redisErr(err)
		}
	}
	return nil
}

// PruneConsumers deletes, in every shard, the consumers idle for longer
// than idle with nothing pending. Those belong to processes killed without
// a graceful stop. Their pending entries, if any, are claimed first. A live
// consumer deleted by mistake is recreated by its next read. It returns how
// many it deleted.
func (s *OrderStream) PruneConsumers(ctx context.Context, idle time.Duration) (int, error) {
	n := 0
	for shard := range Shards {
		consumers, err := s.rdb.XInfoConsumers(ctx, s.key(shard), GroupName).Result()
		if err != nil {
			return n, redisErr(err)
		}
		for _, c := range consumers {
			if c.Pending > 0 || c.Idle < idle {
				continue
			}
			if err := s.rdb.XGroupDelConsumer(ctx, s.key(shard), GroupName, c.Name).Err(); err != nil {
				return n, redisErr(err)
			}
			n++
		}
	}
	return n, nil
}

// The reads of start-up reconciliation and rebuilds, each one consistent
// snapshot. One MULTI reads the Redis side. OrderReads.OrderFacts reads the
// database side. Read in several steps, a voucher on sale looks
// inconsistent for an instant. An order admitted between the stock read and
// the stream read is counted twice or not at all. So is one written between
// two queries.

// Snapshot returns the Redis state of each voucher, in one MULTI per shard.
// It adds every entry of the streams of the shards holding its buckets. A
// bucket and its entries share a shard. The scripts change stock and
// entries together. So stock plus entries is exact for each bucket. It is
// exact for a voucher once its buckets are quiet.
func (s *OrderStream) Snapshot(ctx context.Context, voucherIDs []int64) (map[int64]model.RedisVoucher, []model.QueuedOrder, error) {
	refs, err := bucketRefs(ctx, s.rdb, voucherIDs)
	if err != nil {
		return nil, nil, err
	}
	agg := newVoucherSums(len(voucherIDs))
	var entries []model.QueuedOrder
	for shard := range Shards {
		if len(refs[shard]) == 0 {
			// No bucket of these vouchers here: none of their entries
			// either. (Reading it would only widen the gap between the
			// Redis read and the caller's database read.)
			continue
		}
		var read func(*voucherSums)
		var rng *redis.XMessageSliceCmd
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			read = queueBucketReads(ctx, p, shard, refs[shard])
			rng = p.XRange(ctx, s.key(shard), "-", "+")
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, redisErr(err)
		}
		read(agg)
		msgs, err := rng.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, redisErr(err)
		}
		for _, m := range msgs {
			entries = append(entries, parseEntry(shard, m))
		}
	}
	return agg.out, entries, nil
}
