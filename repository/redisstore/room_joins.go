package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// The bounds of a room's shared joins (roomJoins).
const (
	// roomJoinsMax is the most users one run of the script joins.
	roomJoinsMax = 256
	// roomJoinsInFlight is how many runs of one room may be in flight.
	// Joins arriving while they all are wait for the next run.
	roomJoinsInFlight = 1
)

// roomJoins lets concurrent joins of one room share a run of
// waiting_room.lua (op joins): the run reads the room, lapses, advances
// the serving number and sets the keys' expiry once for all of them
// (docs/waiting-room.md, "The join's cost"). With no run in flight a join
// goes at once, alone, on its caller's goroutine. A join is idempotent, so
// a run whose reply was lost is an error for each of its users, who may
// join again. Its zero value is ready to use.
type roomJoins struct {
	mu    sync.Mutex
	rooms map[roomJoinKey]*roomJoinQueue
}

// roomJoinKey groups the joins that one run may carry: one room, the same
// call.
type roomJoinKey struct {
	voucherID              int64
	begin, expireAt, ttlMs int64
	overbook               float64
}

// roomJoinQueue is one room's runs in flight and joins waiting.
type roomJoinQueue struct {
	inFlight int
	waiting  []*roomJoin
}

// roomJoin is one user's join waiting for its run.
type roomJoin struct {
	userID int64
	answer model.RoomAnswer
	err    error
	done   chan struct{}
	queued bool // guarded by roomJoins.mu: still waiting, not sent
}

// join joins the user to the voucher's room, in a run shared with the
// joins that wait meanwhile.
func (j *roomJoins) join(ctx context.Context, rdb redis.UniversalClient, voucherID, userID int64, c model.RoomCall) (model.RoomAnswer, error) {
	key := roomJoinKey{voucherID: voucherID, begin: c.Begin.UnixMilli(), expireAt: c.ExpireAt.UnixMilli(),
		ttlMs: c.TokenTTL.Milliseconds(), overbook: c.Overbook}
	me := &roomJoin{userID: userID}
	j.mu.Lock()
	if j.rooms == nil {
		j.rooms = map[roomJoinKey]*roomJoinQueue{}
	}
	q := j.rooms[key]
	if q == nil {
		q = &roomJoinQueue{}
		j.rooms[key] = q
	}
	if q.inFlight < roomJoinsInFlight && len(q.waiting) == 0 {
		q.inFlight++
		j.mu.Unlock()
		runJoins(ctx, rdb, key, c, []*roomJoin{me})
		if next := j.next(key, q); next != nil {
			go j.drain(rdb, key, c, q, next)
		}
		return me.answer, me.err
	}
	me.done, me.queued = make(chan struct{}), true
	q.waiting = append(q.waiting, me)
	j.mu.Unlock()
	select {
	case <-me.done:
		return me.answer, me.err
	case <-ctx.Done():
	}
	j.mu.Lock()
	if me.queued {
		q.waiting = removeJoin(q.waiting, me)
		me.queued = false
		j.mu.Unlock()
		return model.RoomAnswer{}, fmt.Errorf("%w: %w", model.ErrUnavailable, ctx.Err())
	}
	j.mu.Unlock()
	<-me.done // in flight: its run ends within the client's timeouts
	return me.answer, me.err
}

// next ends a run of q: the joins waiting, up to roomJoinsMax, for the
// next one, or nil (and the room forgotten when idle).
func (j *roomJoins) next(key roomJoinKey, q *roomJoinQueue) []*roomJoin {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(q.waiting) == 0 {
		q.inFlight--
		if q.inFlight == 0 {
			delete(j.rooms, key)
		}
		return nil
	}
	return takeBatch(&q.waiting, roomJoinsMax, func(w *roomJoin) { w.queued = false })
}

// drain runs batch, then the joins waiting meanwhile, until none is. Its
// context is none of the callers': one caller's end must not cut the
// others' joins.
func (j *roomJoins) drain(rdb redis.UniversalClient, key roomJoinKey, c model.RoomCall, q *roomJoinQueue, batch []*roomJoin) {
	for batch != nil {
		runJoins(context.Background(), rdb, key, c, batch)
		for _, w := range batch {
			close(w.done)
		}
		batch = j.next(key, q)
	}
}

// runJoins runs the script's joins for batch and sets each one's answer.
func runJoins(ctx context.Context, rdb redis.UniversalClient, key roomJoinKey, c model.RoomCall, batch []*roomJoin) {
	args := make([]any, 0, 10+len(batch))
	args = append(args, "joins", 0, key.begin, key.expireAt, key.ttlMs,
		strconv.FormatFloat(key.overbook, 'f', -1, 64), rand.Text(), "", 0, 0)
	for _, w := range batch {
		args = append(args, w.userID)
	}
	v, err := scripts.WaitingRoom.Run(ctx, rdb, roomKeys(key.voucherID), args...).Slice()
	fail := func(err error) {
		for _, w := range batch {
			w.err = err
		}
	}
	switch {
	case err != nil:
		fail(redisErr(err))
		return
	case len(v) == 1:
		if st, _ := v[0].(string); st == "needbase" {
			fail(model.ErrRoomNeedsBase)
			return
		}
	}
	if len(v) != len(batch) {
		fail(fmt.Errorf("waiting room: %d answers for %d joins", len(v), len(batch)))
		return
	}
	for i, w := range batch {
		a, _ := v[i].([]any)
		if len(a) == 0 {
			w.err = fmt.Errorf("waiting room: answer %d is %T", i, v[i])
			continue
		}
		w.answer, w.err = roomAnswer(a)
	}
}

// removeJoin removes w from joins.
func removeJoin(joins []*roomJoin, w *roomJoin) []*roomJoin {
	for i, x := range joins {
		if x == w {
			return append(joins[:i], joins[i+1:]...)
		}
	}
	return joins
}
