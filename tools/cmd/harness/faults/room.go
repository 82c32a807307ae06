package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"seckill/repository/redisstore"
	"seckill/testkit/proc"
)

// The waiting room's cases (docs/waiting-room.md): every buyer joins the
// voucher's room, polls and buys with the admission token, while an
// instance is killed.

// roomPollCap bounds the pause between two polls (Retry-After is 1 s or
// more). So the case learns the outcome within a load's length.
const roomPollCap = 200 * time.Millisecond

// Every roomRushEvery-th slot (each user's first, with FAULTS_DUPS=3) is a
// purchase sent at once without joining, marked roomSkipped.
const (
	roomRushEvery = 3
	roomSkipped   = "not joined"
)

// roomWait bounds one buyer's stay in the room.
const roomWait = 60 * time.Second

// roomAnswer is the answer of the queue routes.
type roomAnswer struct {
	Status       string `json:"status"`
	RetryAfterMs int64  `json:"retryAfterMs"`
	Token        string `json:"token"`
}

// roomBuy is one buyer of slot (but see roomRushEvery): join (POST .../queue), poll (GET) until the
// room answers admitted, sold_out or closed, then the purchase: with the
// token when admitted, else without one (which must be refused
// NOT_ADMITTED). Every request goes to the live instances in turn: a
// transport error is retried on the next one. A purchase with a token that
// meets a transport error is sent again once (as a buyer would retry): the
// retry is one of the load's extra shots.
func (l *loadRun) roomBuy(ctx context.Context, slot, u int) shot {
	tok := l.plan.Users[u].Token
	if slot%roomRushEvery == 0 {
		// A buyer who fires at once, without joining: refused while
		// units remain.
		inst := l.pick(slot)
		s := shot{Seq: slot, User: u, Inst: inst, Sent: l.since(), Room: roomSkipped, NoToken: true}
		l.api.buy(ctx, l.urls[inst], l.plan.Voucher, tok, &s)
		return s
	}
	queue := func(inst int) string {
		return fmt.Sprintf("%s/voucher-order/seckill/%d/queue", l.urls[inst], l.plan.Voucher)
	}
	method, ans, turn := http.MethodPost, roomAnswer{Status: "waiting"}, slot
	deadline := time.Now().Add(roomWait)
	for ans.Status == "waiting" && time.Now().Before(deadline) && ctx.Err() == nil {
		turn++
		status, env, err := l.api.call(ctx, method, queue(l.pick(turn)), tok, nil)
		switch {
		case err != nil || env == nil:
			time.Sleep(20 * time.Millisecond)
			continue
		case status == http.StatusForbidden && env.Code == "NOT_ADMITTED" && method == http.MethodGet:
			method = http.MethodPost // not in the room: join again
			continue
		case status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
			time.Sleep(roomPollCap)
			continue
		case status != http.StatusOK:
			ans.Status = env.Code
			continue
		}
		if json.Unmarshal(env.Data, &ans) != nil {
			ans.Status = "OTHER"
		}
		method = http.MethodGet
		if ans.Status == "waiting" {
			time.Sleep(min(time.Duration(ans.RetryAfterMs)*time.Millisecond, roomPollCap))
		}
	}
	inst := l.pick(turn + 1)
	s := shot{Seq: slot, User: u, Inst: inst, Sent: l.since(), Room: ans.Status, NoToken: ans.Token == ""}
	l.api.buyAdmitted(ctx, l.urls[inst], l.plan.Voucher, tok, ans.Token, &s)
	if s.Code == "TRANSPORT" && ans.Token != "" {
		again := shot{Seq: -1, User: u, Inst: l.pick(turn + 2), Sent: l.since(), Room: ans.Status}
		l.api.buyAdmitted(ctx, l.urls[again.Inst], l.plan.Voucher, tok, ans.Token, &again)
		again.Done = l.since()
		l.mu.Lock()
		l.extra = append(l.extra, again)
		l.mu.Unlock()
	}
	return s
}

// roomFacts are the room as the surviving instance and Redis show it once
// the load is over.
type roomFacts struct {
	Audit map[string]any // the audit route's waitingRoom
	Keys  int            // of the room's five keys, those in Redis
	Hash  bool           // the room's hash (seed, serving, counts) is there
	Err   string         // why the facts could not be read
}

// roomKill kills instance 2 mid-sale (as killInstance), then waits for the
// load's end and reads the room: the audit route of the survivor and the
// room's keys in Redis.
func roomKill(ctx context.Context, s *suite, e *caseEnv, l *loadRun) error {
	if err := killInstance(ctx, s, e, l); err != nil {
		return err
	}
	l.recover()
	e.room = &roomFacts{}
	err := proc.WaitFor(ctx, "every buyer's answer", 3*time.Minute, 50*time.Millisecond, nil, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, sh := range l.shots {
			if sh.Done == 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		e.room.Err = err.Error()
		return nil
	}
	status, env, err := s.api.call(ctx, http.MethodGet, e.ins[0].URL+"/admin/vouchers/"+strconv.FormatInt(e.voucher, 10)+"/audit", s.admin, nil)
	var audit struct {
		WaitingRoom map[string]any `json:"waitingRoom"`
	}
	switch {
	case err != nil || env == nil:
		e.room.Err = fmt.Sprintf("the survivor's audit: status %d %v", status, err)
	case status != http.StatusOK || json.Unmarshal(env.Data, &audit) != nil:
		e.room.Err = fmt.Sprintf("the survivor's audit: status %d %s", status, env.Code)
	}
	e.room.Audit = audit.WaitingRoom
	for _, k := range []string{redisstore.RoomKey(e.voucher), redisstore.RoomPoolKey(e.voucher), redisstore.RoomLineKey(e.voucher),
		redisstore.RoomAdmittedKey(e.voucher), redisstore.RoomDoneKey(e.voucher)} {
		if n, err := e.rdb.Exists(ctx, k).Result(); err == nil && n == 1 {
			e.room.Keys++
			e.room.Hash = e.room.Hash || k == redisstore.RoomKey(e.voucher)
		}
	}
	return nil
}

// judgeRoom: the invariants of app-kill (nothing oversold, every 200 in
// the database, no 500), no purchase without a token served, every buyer
// told the outcome by the room, the room intact in Redis after the kill
// and the survivor selling on.
func judgeRoom(j judgement) {
	r := j.r
	outcome := map[string]int{}
	noToken200, tokenRefused, refused := 0, 0, 0
	// early: purchases without a token answered before the last 200.
	var last time.Duration
	for _, sh := range j.shots {
		if sh.Code == "OK" && sh.Done > last {
			last = sh.Done
		}
	}
	early := 0
	for _, sh := range j.shots {
		if sh.NoToken && sh.Done > 0 && sh.Done < last {
			early++
		}
		if sh.Seq >= 0 {
			outcome[sh.Room]++
		}
		switch {
		case sh.NoToken && sh.Code == "OK":
			noToken200++
		case sh.NoToken && sh.Code == "NOT_ADMITTED":
			refused++
		case !sh.NoToken && sh.Code == "NOT_ADMITTED":
			tokenRefused++
		}
	}
	r.refusedOK = refused
	judgeCommon(r, false)
	told := outcome["admitted"] + outcome["sold_out"] + outcome["closed"]
	untold := len(j.l.plan.Seq) - told - outcome[roomSkipped]
	r.addMeasure("room answers", "admitted %d, sold_out %d, closed %d, other %d", outcome["admitted"], outcome["sold_out"], outcome["closed"], untold)
	r.addMeasure("without a token", "403 %d, 200 %d (%d sent without joining, %d while units remained)", refused, noToken200,
		outcome[roomSkipped], early)
	r.addMeasure("transport", "%d", r.Codes["TRANSPORT"])
	if noToken200 > 0 {
		r.fail("%d purchase(s) without an admission token got 200", noToken200)
	}
	if tokenRefused > 0 {
		r.fail("%d purchase(s) with an admission token were refused NOT_ADMITTED", tokenRefused)
	}
	if untold > 0 {
		r.fail("%d buyer(s) never got a final answer from the room within %s", untold, roomWait)
	}
	judgeRoomFacts(j)
	sellsAgain(j, "instance 2 killed")
}

// judgeRoomFacts checks the room the survivor reports: its hash in Redis
// (the admitted set is gone once every admission ended), everyone it
// admitted counted as joined, sold out.
func judgeRoomFacts(j judgement) {
	r, f := j.r, j.e.room
	if f == nil || f.Err != "" {
		msg := "the fault never read it"
		if f != nil {
			msg = f.Err
		}
		r.fail("the room after the kill: %s", msg)
		return
	}
	num := func(k string) int64 {
		v, _ := f.Audit[k].(float64)
		return int64(v)
	}
	// A join after the sell-out adds nobody: the room counts at least
	// everyone it admitted, at most everyone it answered.
	users, admitted := map[int]bool{}, map[int]bool{}
	for _, sh := range j.shots {
		if sh.Seq >= 0 && sh.Room != "" && sh.Room != roomSkipped {
			users[sh.User] = true
		}
		if sh.Room == "admitted" {
			admitted[sh.User] = true
		}
	}
	r.addMeasure("room after the kill", "keys %d of 5; joined %d, admitted %d, purchased %d, lapsed %d, state %v",
		f.Keys, num("joined"), num("admitted"), num("purchased"), num("lapsed"), f.Audit["state"])
	if !f.Hash {
		r.fail("the room's hash is not in Redis after the kill")
	}
	if num("joined") < int64(len(admitted)) || num("joined") > int64(len(users)) {
		r.fail("the room counts %d joined; it admitted %d buyers and answered %d", num("joined"), len(admitted), len(users))
	}
	if f.Audit["state"] != "sold_out" {
		r.fail("the room's state is %v after the load, want sold_out", f.Audit["state"])
	}
	if num("purchased") > int64(r.Orders) {
		r.fail("the room counts %d purchased, the database holds %d orders", num("purchased"), r.Orders)
	}
}
