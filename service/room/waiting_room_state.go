package room

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seckill/model"
	"seckill/service/internal/vouchercache"
)

// TicketSigner signs and checks place tickets (*auth.Admissions): a
// ticket states a user's place in a voucher's room, bound to the room's
// seed so that a room Redis lost and made again refuses the old tickets.
type TicketSigner interface {
	// SignTicket returns the ticket of the user's position (-1 before the
	// draw).
	SignTicket(userID, voucherID, position int64, seed string) string
	// Ticket returns the position the ticket states, and false unless it
	// is well formed and signed for this user, voucher and seed.
	Ticket(ticket string, userID, voucherID int64, seed string) (int64, bool)
}

// roomStateTTL is how long an instance answers polls from its copy of a
// room's public state before it reads the room again.
const roomStateTTL = 200 * time.Millisecond

// roomState is a room's public state, as one instance last read it.
type roomState struct {
	at      time.Time
	seed    string // "" when Redis holds no room
	drawn   bool
	serving int64
	state   string // "" (open or not drawn), sold_out or closed
}

// roomEntry is the copy of one voucher's room; mu lets one request at a
// time read it again.
type roomEntry struct {
	mu sync.Mutex
	st atomic.Pointer[roomState]
}

// roomStates are the copies of the rooms' public states of this
// instance. The map is copied on write (a room is added rarely), so that
// a poll reads it without a lock.
type roomStates struct {
	mu sync.Mutex
	m  atomic.Pointer[map[int64]*roomEntry]
}

func (s *roomStates) entry(voucherID int64) *roomEntry {
	if m := s.m.Load(); m != nil {
		if e := (*m)[voucherID]; e != nil {
			return e
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old != nil && (*old)[voucherID] != nil {
		return (*old)[voucherID]
	}
	m := make(map[int64]*roomEntry, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	e := &roomEntry{}
	m[voucherID] = e
	s.m.Store(&m)
	return e
}

// forget drops the copy of the voucher's room (0: of every room): the next
// poll reads it again.
func (s *roomStates) forget(voucherID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	if old == nil {
		return
	}
	m := make(map[int64]*roomEntry, len(*old))
	for k, v := range *old {
		if voucherID != 0 && k != voucherID {
			m[k] = v
		}
	}
	s.m.Store(&m)
}

// state returns the room's public state, read again when older than
// roomStateTTL: by one request, the others wait for its answer. The read
// runs the room's script (its audit), which also lapses the expired
// admissions and passes their slots on, so the serving number advances
// even when every waiting buyer is answered from the copy.
func (r *Queue) state(ctx context.Context, voucherID int64, v *vouchercache.Entry) (*roomState, error) {
	e := r.states.entry(voucherID)
	if s := e.st.Load(); s != nil && r.now().Sub(s.at) < roomStateTTL {
		return s, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.st.Load(); s != nil && r.now().Sub(s.at) < roomStateTTL {
		return s, nil
	}
	var a *model.RoomAudit
	err := r.withBase(ctx, voucherID, r.call(v), func(c model.RoomCall) (err error) {
		a, err = r.store.Audit(ctx, voucherID, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	s := &roomState{at: r.now()}
	if a != nil {
		s.seed, s.drawn, s.serving = a.Seed, a.State != "waiting", a.Serving
		if a.State == model.RoomSoldOut || a.State == model.RoomClosed {
			s.state = a.State
		}
	}
	e.st.Store(s)
	return s, nil
}

// fromTicket answers a poll from the instance's copy of the room, without
// Redis: a buyer whose ticket is valid and whose turn has not come, or
// any buyer once the room is sold out or closed. nil when the poll must
// run the script: no ticket, a ticket refused, the turn come (the script
// alone admits), or the room's state unreadable.
func (r *Queue) fromTicket(ctx context.Context, userID, voucherID int64, v *vouchercache.Entry, ticket string) *View {
	if ticket == "" || r.tickets == nil {
		return nil
	}
	s, err := r.state(ctx, voucherID, v)
	if err != nil || s.seed == "" {
		return nil
	}
	switch s.state {
	case model.RoomClosed:
		return &View{Status: s.state}
	case model.RoomSoldOut:
		// A unit given back reopens the room: keep polling, from memory.
		return &View{Status: s.state, RetryAfter: r.maxRetry(), Ticket: ticket}
	}
	pos, ok := r.checkTicket(ticket, userID, voucherID, s.seed)
	switch {
	case !ok:
		return nil
	case pos < 0 && !s.drawn:
		return &View{Status: model.RoomWaiting, RetryAfter: r.retryBeforeDraw(v.Voucher.BeginTime, r.now()), Ticket: ticket}
	case pos < 0 || !s.drawn || pos <= s.serving:
		return nil
	}
	// One allocation for the view and the numbers it points to.
	out := &ticketView{pos: pos, ahead: pos - s.serving - 1}
	out.v = View{Status: model.RoomWaiting, Position: &out.pos, Ahead: &out.ahead, RetryAfter: r.retryWaiting(out.ahead), Ticket: ticket}
	return &out.v
}

// ticketView is a poll's answer from a ticket with its numbers.
type ticketView struct {
	v          View
	pos, ahead int64
}

// ticket signs the user's ticket for an answer of the script: waiting or
// admitted, when the instance knows the room's seed.
func (r *Queue) ticket(ctx context.Context, userID, voucherID int64, v *vouchercache.Entry, a model.RoomAnswer) string {
	if r.tickets == nil || (a.Status != model.RoomWaiting && a.Status != model.RoomAdmitted && (a.Status != model.RoomSoldOut || a.Position <= 0)) {
		return ""
	}
	s, err := r.state(ctx, voucherID, v)
	if err != nil || s.seed == "" {
		return ""
	}
	return r.tickets.SignTicket(userID, voucherID, a.Position, s.seed)
}

// checkedSlots is how many checked tickets a room service remembers.
const checkedSlots = 4096

// checkedTicket is a ticket found signed for its user, voucher and seed.
type checkedTicket struct {
	ticket, seed      string
	userID, voucherID int64
	pos               int64
}

// checkedTickets remember the last ticket found signed per slot (by user
// and voucher). A waiting buyer polls with the same ticket again and
// again: seen signed for the same user, voucher and seed, it is signed
// still, without its HMAC.
type checkedTickets [checkedSlots]atomic.Pointer[checkedTicket]

// checkTicket is r.tickets.Ticket, remembering the tickets found signed.
func (r *Queue) checkTicket(ticket string, userID, voucherID int64, seed string) (int64, bool) {
	slot := &r.checked[uint64(userID*31+voucherID)%checkedSlots]
	if c := slot.Load(); c != nil && c.userID == userID && c.voucherID == voucherID && c.seed == seed && c.ticket == ticket {
		return c.pos, true
	}
	pos, ok := r.tickets.Ticket(ticket, userID, voucherID, seed)
	if ok {
		slot.Store(&checkedTicket{ticket: strings.Clone(ticket), seed: seed, userID: userID, voucherID: voucherID, pos: pos})
	}
	return pos, ok
}
