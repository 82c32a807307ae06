// Package room is the waiting room of the vouchers published with one: a
// queue, a draw at the start and a serving number sized to the stock
// (docs/waiting-room.md). It declares the stores it needs; repository
// implements them.
package room

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"seckill/model"
	"seckill/service/internal/vouchercache"
)

// Store keeps the vouchers' waiting rooms (Redis, docs/waiting-room.md).
type Store interface {
	// Step runs op ("join" or "poll") for the user and answers the user's
	// state; model.ErrRoomNeedsBase when the draw needs c.Base.
	Step(ctx context.Context, voucherID, userID int64, op string, c model.RoomCall) (model.RoomAnswer, error)
	// Notify runs "bought" or "soldout".
	Notify(ctx context.Context, voucherID, userID int64, op string, c model.RoomCall) error
	// Audit reads the room; nil when there is none.
	Audit(ctx context.Context, voucherID int64, c model.RoomCall) (*model.RoomAudit, error)
	// Drop deletes the voucher's room, if any.
	Drop(ctx context.Context, voucherID int64) error
}

// AdmissionSigner signs and checks admission tokens (*auth.Admissions).
type AdmissionSigner interface {
	Sign(userID, voucherID int64, expires time.Time) string
	Valid(token string, userID, voucherID int64, now time.Time) bool
	// Signed reports whether the token was signed for the user and
	// voucher, expired or not.
	Signed(token string, userID, voucherID int64) bool
}

// Config configures the waiting rooms.
type Config struct {
	// TokenTTL is how long an admission lasts (SECKILL_WAITING_ROOM_TOKEN_TTL).
	TokenTTL time.Duration
	// Overbook is the most admitted-not-bought per remaining unit
	// (SECKILL_WAITING_ROOM_OVERBOOK, at least 1).
	Overbook float64
}

// Deps are the collaborators of the waiting room.
type Deps struct {
	Store    Store
	Vouchers vouchercache.Store
	Tokens   AdmissionSigner
	// Tickets signs the place tickets; nil answers every poll by the
	// script.
	Tickets TicketSigner
	// Limits hold the joins and the polls that reach Redis to their rate
	// per user and per address (NewQueueLimits); nil limits nothing.
	Limits QueueLimits
	Now    func() time.Time
	Log    *slog.Logger
}

// QueueLimits count a user's requests from a client address against limits
// shared by every instance (*PurchaseLimits of NewQueueLimits): nil or a
// *model.RateLimitedError.
type QueueLimits interface {
	// Check counts the request against the address's and the user's limits.
	Check(ctx context.Context, userID int64, addr string) error
	// CheckAddr counts it against the address's limit alone.
	CheckAddr(ctx context.Context, addr string) error
	// CheckUser counts it against the user's limit alone.
	CheckUser(ctx context.Context, userID int64) error
}

// WaitingRoom admits the buyers of vouchers published with a room: a
// queue, a draw at the start and a serving number sized to the stock.
// Its check of the admission token runs before the purchase, in both
// order modes. It is three parts over one shared core: the Queue answers
// the buyers' joins and polls, the Gate is the purchase's side (the
// admission's check, the outcome), the Admin the side of the voucher's
// changes and audit.
type WaitingRoom struct {
	*Queue
	*Gate
	*Admin
}

// core is what the room's parts share: the store, the vouchers, the
// admission tokens, the clock and the draw.
type core struct {
	store  Store
	stock  vouchercache.Store
	cache  *vouchercache.Cache
	tokens AdmissionSigner
	cfg    Config
	now    func() time.Time
	log    *slog.Logger
	// drawMu lets one request at a time read the stock for a draw: the
	// others then find the room drawn, and the start costs one database
	// read per instance, not one per buyer.
	drawMu sync.Mutex
}

// Queue answers the buyers' joins and polls: the user's place, the pause
// before the next poll, the admission token once admitted, and the place
// ticket that answers most polls without Redis.
type Queue struct {
	*core
	// tickets and states answer most polls without Redis.
	tickets TicketSigner
	limits  QueueLimits
	states  roomStates
	checked checkedTickets
}

// Gate is the room as the purchase sees it: the check of the admission
// token before the sale, the sale's outcome after it.
type Gate struct{ *core }

// Admin is the room's side of the voucher's life: published, changed,
// forgotten, units given back, and its audit.
type Admin struct {
	*core
	states *roomStates // the Queue's copies of the rooms' states
}

// roomKeysGrace is how long after the sale's end the room's keys stay.
const roomKeysGrace = 24 * time.Hour

// NewWaitingRoom returns the waiting room service.
func NewWaitingRoom(d Deps, cfg Config) *WaitingRoom {
	if d.Now == nil {
		d.Now = time.Now
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = time.Minute
	}
	cfg.Overbook = max(cfg.Overbook, 1)
	c := &core{store: d.Store, stock: d.Vouchers, cache: vouchercache.New(d.Vouchers, time.Minute, d.Now),
		tokens: d.Tokens, cfg: cfg, now: d.Now, log: d.Log}
	q := &Queue{core: c, tickets: d.Tickets, limits: d.Limits}
	return &WaitingRoom{Queue: q, Gate: &Gate{core: c}, Admin: &Admin{core: c, states: &q.states}}
}

// View is one user's answer from the room.
type View struct {
	Status string
	// Position is the user's place (1 first); nil before the draw.
	Position *int64
	// Ahead is how many are still to be served before the user; nil
	// before the draw.
	Ahead *int64
	// RetryAfter is when to ask again; 0 once the answer is final.
	RetryAfter time.Duration
	// Token is the admission token, when admitted.
	Token string
	// Ticket is the place ticket to send back on the next poll.
	Ticket string
}

// Join puts the user in the voucher's room (once: a second join answers
// the same place) and answers the user's state. addr is the client's
// address, for the limits.
func (r *Queue) Join(ctx context.Context, userID, voucherID int64, addr string) (*View, error) {
	return r.step(ctx, userID, voucherID, "join", "", addr)
}

// Poll answers the user's state in the voucher's room.
// model.ErrNotAdmitted when the user has not joined. With a valid place
// ticket from an earlier answer, a buyer whose turn has not come is
// answered from this instance's copy of the room, without Redis and
// without the limits; every other poll counts against them.
func (r *Queue) Poll(ctx context.Context, userID, voucherID int64, ticket, addr string) (*View, error) {
	return r.step(ctx, userID, voucherID, "poll", ticket, addr)
}

// room returns the cached voucher, which must have a waiting room.
func (r *core) room(ctx context.Context, voucherID int64) (*vouchercache.Entry, error) {
	if voucherID <= 0 {
		return nil, model.InvalidArgument("id", "must be a positive number")
	}
	v, err := r.cache.Get(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	if !v.Voucher.WaitingRoom {
		return nil, model.InvalidArgument("id", "the voucher has no waiting room: buy it directly")
	}
	return v, nil
}

// call is what the store needs for the voucher. A slot lasts the token's
// TTL plus the longest pause between a waiting buyer's polls: a buyer who
// polls when told learns of the admission with at least the TTL left.
func (r *core) call(v *vouchercache.Entry) model.RoomCall { return r.callFor(&v.Voucher, -1) }

// callFor is what the store needs for the voucher sv, with base as the
// database's stock (-1: not read).
func (r *core) callFor(sv *model.SeckillVoucher, base int) model.RoomCall {
	return model.RoomCall{Begin: sv.BeginTime, ExpireAt: sv.EndTime.Add(roomKeysGrace),
		TokenTTL: r.cfg.TokenTTL + r.maxRetry(), Overbook: r.cfg.Overbook, Base: base}
}

// maxRetry is the longest pause a waiting buyer is told to keep: maxRetry,
// or the token's TTL when shorter.
func (r *core) maxRetry() time.Duration { return min(maxRetry, r.cfg.TokenTTL) }

func (r *Queue) step(ctx context.Context, userID, voucherID int64, op, ticket, addr string) (*View, error) {
	v, err := r.room(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	now := r.now()
	if !now.Before(v.Voucher.EndTime) {
		// Ended, or closed by the admin (its end became the close).
		return &View{Status: model.RoomClosed}, nil
	}
	if out := r.fromTicket(ctx, userID, voucherID, v, ticket); out != nil {
		return out, nil
	}
	if err := r.limitBefore(ctx, userID, op, addr); err != nil {
		return nil, err
	}
	var a model.RoomAnswer
	err = r.withBase(ctx, voucherID, r.call(v), func(c model.RoomCall) (err error) {
		a, err = r.store.Step(ctx, voucherID, userID, op, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := r.limitAfter(ctx, userID, op, a); err != nil {
		return nil, err
	}
	out, err := r.view(a, userID, voucherID, v.Voucher.BeginTime)
	if err != nil {
		return nil, err
	}
	out.Ticket = r.ticket(ctx, userID, voucherID, v, a)
	return out, nil
}

// limitBefore counts a request that runs the room's script against the
// limits. A poll counts against both. A join counts against the address's
// limit here and against the user's after the script (limitAfter): a
// user's first join of a room changes the room once and is not counted,
// so the sale's first request of each buyer costs one Redis call, not two
// (docs/waiting-room.md, "The join's cost").
func (r *Queue) limitBefore(ctx context.Context, userID int64, op, addr string) error {
	switch {
	case r.limits == nil:
		return nil
	case op == "join":
		return r.limits.CheckAddr(ctx, addr)
	}
	return r.limits.Check(ctx, userID, addr)
}

// limitAfter counts a join that did not put the user in the room (a repeat:
// it changed nothing) against the user's limit; refused, it answers the
// refusal instead of the place.
func (r *Queue) limitAfter(ctx context.Context, userID int64, op string, a model.RoomAnswer) error {
	if r.limits == nil || op != "join" || a.New {
		return nil
	}
	return r.limits.CheckUser(ctx, userID)
}

// withBase runs try with c; when the room must be drawn first
// (model.ErrRoomNeedsBase), it runs it again under drawMu, with the stock
// the database holds, unless another request drew the room meanwhile.
func (r *core) withBase(ctx context.Context, voucherID int64, c model.RoomCall, try func(model.RoomCall) error) error {
	if err := try(c); !errors.Is(err, model.ErrRoomNeedsBase) {
		return err
	}
	r.drawMu.Lock()
	defer r.drawMu.Unlock()
	if err := try(c); !errors.Is(err, model.ErrRoomNeedsBase) {
		return err
	}
	base, err := r.base(ctx, voucherID)
	if err != nil {
		return err
	}
	c.Base = base
	return try(c)
}

// base reads the stock the database holds now: the room is sized to it
// at the draw, and again when Redis lost the room.
func (r *core) base(ctx context.Context, voucherID int64) (int, error) {
	sv, err := r.stock.GetSeckill(ctx, voucherID)
	if err != nil {
		return 0, err
	}
	return max(sv.Stock, 0), nil
}

// The pauses a waiting buyer is told to keep between polls.
const (
	minRetry = 250 * time.Millisecond
	maxRetry = 5 * time.Second
)

// view turns the store's answer into the user's.
func (r *Queue) view(a model.RoomAnswer, userID, voucherID int64, begin time.Time) (*View, error) {
	out := &View{Status: a.Status}
	switch a.Status {
	case model.RoomNotJoined:
		return nil, fmt.Errorf("%w: join the waiting room first (POST)", model.ErrNotAdmitted)
	case model.RoomClosed:
		return out, nil
	case model.RoomSoldOut:
		// Not final while the sale lasts: a unit given back reopens the room.
		out.RetryAfter = r.maxRetry()
		if a.Position > 0 {
			pos := a.Position
			out.Position = &pos
		}
		return out, nil
	case model.RoomAdmitted:
		out.Token = r.tokens.Sign(userID, voucherID, a.Expires)
		out.RetryAfter = time.Second
	case model.RoomWaiting:
		if a.Position < 0 {
			out.RetryAfter = r.retryBeforeDraw(begin, a.Now)
			return out, nil
		}
		out.RetryAfter = r.retryWaiting(a.Ahead)
	default:
		return nil, fmt.Errorf("waiting room: unknown status %q", a.Status)
	}
	pos, ahead := a.Position, a.Ahead
	out.Position, out.Ahead = &pos, &ahead
	return out, nil
}

// retryBeforeDraw is the pause before the draw: until the start, or
// within maxRetry.
func (r *Queue) retryBeforeDraw(begin, now time.Time) time.Duration {
	return min(max(begin.Sub(now), minRetry), r.maxRetry())
}

// retryWaiting is the pause of a buyer with ahead before: one second,
// plus a little per buyer ahead, at most maxRetry.
func (r *Queue) retryWaiting(ahead int64) time.Duration {
	return min(time.Second+time.Duration(ahead)*2*time.Millisecond, r.maxRetry())
}

// Admit is the purchase's check: a voucher with a room sells only with a
// valid admission token for this user and voucher
// (model.ErrNotAdmitted; model.ErrAdmissionLapsed, which is one, for a
// token of this user and voucher past its expiry). It reads the cached voucher and the token only:
// no lock, no Redis stock. A voucher without a room passes.
func (r *Gate) Admit(ctx context.Context, userID, voucherID int64, token string) error {
	v, err := r.cache.Get(ctx, voucherID)
	if err != nil {
		return err
	}
	if !v.Voucher.WaitingRoom {
		return nil
	}
	if !r.tokens.Valid(token, userID, voucherID, r.now()) {
		if r.tokens.Signed(token, userID, voucherID) {
			return fmt.Errorf("%w: the Admission-Token lapsed", model.ErrAdmissionLapsed)
		}
		return fmt.Errorf("%w: no valid Admission-Token for this voucher", model.ErrNotAdmitted)
	}
	return nil
}

// Outcome tells the voucher's room how a purchase ended: bought (the
// admission is used) or sold out (the room closes). Other outcomes and
// vouchers without a room change nothing. A failure is logged: the
// order stands either way.
//
// took is how long the purchase ran: a sell-out it met is not applied when
// a unit came back meanwhile (docs/waiting-room.md).
func (r *Gate) Outcome(ctx context.Context, userID, voucherID int64, buyErr error, took time.Duration) {
	op := "bought"
	switch {
	case buyErr == nil:
	case errors.Is(buyErr, model.ErrSoldOut):
		op = "soldout"
	default:
		return
	}
	v, err := r.cache.Get(ctx, voucherID)
	if err != nil || !v.Voucher.WaitingRoom {
		return
	}
	c := r.call(v)
	c.Took = took
	if err := r.store.Notify(ctx, voucherID, userID, op, c); err != nil && !errors.Is(err, model.ErrRoomNeedsBase) {
		r.log.WarnContext(ctx, "waiting room not told of a purchase", "voucher_id", voucherID, "user_id", userID, "outcome", op, "err", err)
	}
}

// UnitsBack tells the voucher's room that n units are back on sale (orders
// cancelled or expired, given back to the stock the purchase reads): the
// next n in line are admitted, and a sold-out room opens again. A room
// not drawn yet reads the stock at its draw; a closed one stays closed. A
// failure is logged: the units are on sale either way, and the room
// admits them again when its admissions lapse.
func (r *Admin) UnitsBack(ctx context.Context, voucherID int64, n int) {
	if n <= 0 {
		return
	}
	v, err := r.cache.Get(ctx, voucherID)
	if err != nil || !v.Voucher.WaitingRoom {
		return
	}
	c := r.call(v)
	c.Units = n
	if err := r.store.Notify(ctx, voucherID, 0, "returned", c); err != nil && !errors.Is(err, model.ErrRoomNeedsBase) {
		r.log.WarnContext(ctx, "waiting room not told of units given back", "voucher_id", voucherID, "units", n, "err", err)
	}
}

// Audit reads the voucher's room for its audit: nil for a voucher
// without one. The seed is shown once the room is drawn.
func (r *Admin) Audit(ctx context.Context, voucherID int64) (*model.RoomAudit, error) {
	v, err := r.cache.Get(ctx, voucherID)
	if err != nil {
		return nil, err
	}
	if !v.Voucher.WaitingRoom {
		return nil, nil
	}
	var a *model.RoomAudit
	err = r.withBase(ctx, voucherID, r.call(v), func(c model.RoomCall) (err error) {
		a, err = r.store.Audit(ctx, voucherID, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if a == nil {
		a = &model.RoomAudit{State: "waiting"}
	}
	if a.State == "waiting" {
		a.Seed = ""
	}
	return a, nil
}

// Published drops any room Redis holds under a voucher just published. A
// new voucher has none; one there is another sale's, left under a reused
// id by a database reset while Redis kept its data (closed, sold out, its
// buyers queued), and would answer for the new sale. Wire it with
// Vouchers.OnPublished, in both order modes.
func (r *Admin) Published(ctx context.Context, sv *model.SeckillVoucher) error {
	r.cache.Forget(sv.VoucherID)
	return r.store.Drop(ctx, sv.VoucherID)
}

// Forget drops the cached copy of a voucher another instance changed, and
// the copy of its room's state; voucherID 0 drops every copy.
func (r *Admin) Forget(voucherID int64) {
	r.cache.Forget(voucherID)
	r.states.forget(voucherID)
}

// VoucherChanged drops this process's cached copy of the voucher (an
// admin edited or closed it). A closed voucher's room is closed in Redis
// too, so every instance answers closed at once.
func (r *Admin) VoucherChanged(ctx context.Context, voucherID int64) error {
	r.Forget(voucherID)
	sv, err := r.stock.GetSeckill(ctx, voucherID)
	if err != nil || !sv.WaitingRoom || r.now().Before(sv.EndTime) {
		return err
	}
	return r.store.Notify(ctx, voucherID, 0, "close", r.callFor(sv, max(sv.Stock, 0)))
}
