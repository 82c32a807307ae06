package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// The ids and fields of stream entries, and the shards they belong to.

// msgID is the MsgID of entry id of shard i. entryID reads it back (ok
// false for an id this package did not make).
func msgID(shard int, id string) string { return strconv.Itoa(shard) + "/" + id }

func entryID(msgID string) (shard int, id string, ok bool) {
	sh, id, found := strings.Cut(msgID, "/")
	n, err := strconv.Atoi(sh)
	if !found || err != nil || n < 0 || n >= Shards {
		return 0, "", false
	}
	return n, id, true
}

// byShard groups msgs by shard, with their entry ids. An id this package
// did not make is an error.
func byShard(msgs []model.QueuedOrder) (map[int][]model.QueuedOrder, error) {
	out := map[int][]model.QueuedOrder{}
	for _, m := range msgs {
		sh, _, ok := entryID(m.MsgID)
		if !ok {
			return nil, fmt.Errorf("stream entry %q: not an id of the order stream", m.MsgID)
		}
		out[sh] = append(out[sh], m)
	}
	return out, nil
}

// isCluster reports whether c is a Redis Cluster client. There a command
// may name the keys of one slot only. So each shard is read on its own.
func isCluster(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

// parseEntry reads entry m of shard: orderId, userId and voucherId. An
// entry without fields was deleted after delivery.
func parseEntry(shard int, m redis.XMessage) model.QueuedOrder {
	q := model.QueuedOrder{MsgID: msgID(shard, m.ID)}
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
	q.TraceParent = q.Raw["traceparent"] // absent in entries of untraced requests
	q.Admitted = entryTime(m.ID)
	if raw, ok := q.Raw["buyerShard"]; ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n >= Shards {
			bad = append(bad, "buyerShard")
		}
		q.Away, q.BuyerShard = true, n
	}
	if len(bad) > 0 {
		q.Malformed = "malformed " + strings.Join(bad, ", ")
	}
	return q
}

// entryTime is the time in a stream entry id ("<ms>-<seq>"), zero when
// the id has none.
func entryTime(id string) time.Time {
	ms, _, ok := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
