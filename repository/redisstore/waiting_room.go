package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// Rooms keeps the vouchers' waiting rooms in Redis, five keys per voucher
// in the voucher's slot (docs/waiting-room.md). Every call is one run of
// waiting_room.lua; concurrent joins of one room share a run (joins).
type Rooms struct {
	rdb   redis.UniversalClient
	joins roomJoins
}

// NewRooms returns the rooms on rdb.
func NewRooms(rdb redis.UniversalClient) *Rooms { return &Rooms{rdb: rdb} }

// roomArgs are the script's ARGV for op of the user.
func roomArgs(op string, userID int64, c model.RoomCall) []any {
	base := ""
	if c.Base >= 0 {
		base = strconv.Itoa(c.Base)
	}
	return []any{op, userID, c.Begin.UnixMilli(), c.ExpireAt.UnixMilli(), c.TokenTTL.Milliseconds(),
		strconv.FormatFloat(c.Overbook, 'f', -1, 64), rand.Text(), base, c.Units, c.Took.Milliseconds()}
}

// Drop deletes the voucher's room: its five keys, in one slot.
func (s *Rooms) Drop(ctx context.Context, voucherID int64) error {
	return redisErr(s.rdb.Del(ctx, roomKeys(voucherID)...).Err())
}

// Step runs op (join or poll) for the user and answers the user's state.
// model.ErrRoomNeedsBase: the room is to be drawn and c.Base was not read.
// A join without c.Base shares its run with the joins of the room that
// arrive while one is in flight (roomJoins).
func (s *Rooms) Step(ctx context.Context, voucherID, userID int64, op string, c model.RoomCall) (model.RoomAnswer, error) {
	if op == "join" && c.Base < 0 {
		return s.joins.join(ctx, s.rdb, voucherID, userID, c)
	}
	v, err := scripts.WaitingRoom.Run(ctx, s.rdb, roomKeys(voucherID), roomArgs(op, userID, c)...).Slice()
	if err != nil {
		return model.RoomAnswer{}, redisErr(err)
	}
	return roomAnswer(v)
}

// roomAnswer reads one answer of the script: {status, position, ahead,
// expires, now, new}, or {"needbase"}.
func roomAnswer(v []any) (model.RoomAnswer, error) {
	if st, _ := v[0].(string); st == "needbase" {
		return model.RoomAnswer{}, model.ErrRoomNeedsBase
	}
	if len(v) != 6 {
		return model.RoomAnswer{}, fmt.Errorf("waiting room: %d fields, want 6", len(v))
	}
	st, _ := v[0].(string)
	var n [5]int64
	for i := range n {
		n[i], _ = v[i+1].(int64)
	}
	a := model.RoomAnswer{Status: st, Position: n[0], Ahead: n[1], Now: time.UnixMilli(n[3]), New: n[4] == 1}
	if n[2] > 0 {
		a.Expires = time.UnixMilli(n[2])
	}
	return a, nil
}

// Notify runs bought (the user bought), soldout (a purchase met SOLD_OUT)
// or returned (c.Units came back on sale).
// A room Redis lost is left as it is.
func (s *Rooms) Notify(ctx context.Context, voucherID, userID int64, op string, c model.RoomCall) error {
	v, err := scripts.WaitingRoom.Run(ctx, s.rdb, roomKeys(voucherID), roomArgs(op, userID, c)...).Slice()
	if err != nil {
		return redisErr(err)
	}
	if st, _ := v[0].(string); st == "needbase" {
		return model.ErrRoomNeedsBase
	}
	return nil
}

// Audit reads the room's counters and seed; nil when Redis holds no room.
func (s *Rooms) Audit(ctx context.Context, voucherID int64, c model.RoomCall) (*model.RoomAudit, error) {
	v, err := scripts.WaitingRoom.Run(ctx, s.rdb, roomKeys(voucherID), roomArgs("audit", 0, c)...).Slice()
	if err != nil {
		return nil, redisErr(err)
	}
	switch st, _ := v[0].(string); {
	case st == "none":
		return nil, nil
	case st == "needbase":
		return nil, model.ErrRoomNeedsBase
	case len(v) != 12:
		return nil, fmt.Errorf("waiting room audit: %d fields, want 12", len(v))
	}
	num := func(i int) int64 {
		switch x := v[i].(type) {
		case int64:
			return x
		case string:
			n, _ := strconv.ParseInt(x, 10, 64) // "" (not drawn) reads 0
			return n
		}
		return 0
	}
	a := &model.RoomAudit{Joined: num(0), Admitted: num(1), Purchased: num(2), Lapsed: num(3),
		Serving: num(5), Pool: num(6), Base: num(7), Outstanding: num(9), Returned: num(11)}
	a.Seed, _ = v[4].(string)
	state, _ := v[8].(string)
	drawn, _ := v[10].(string)
	switch {
	case drawn == "":
		a.State = "waiting"
	case state == "":
		a.State = "open"
	default:
		a.State = state
	}
	return a, nil
}
