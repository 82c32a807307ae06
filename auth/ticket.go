package auth

import (
	"strconv"
	"strings"
)

// SignTicket returns the waiting room's place ticket of userID for
// voucherID: q1.<voucherId>.<userId>.<position>.<mac>, position -1 before
// the draw. The MAC covers the room's seed too, which the ticket does
// not show: a room made again (a new seed) refuses the old tickets. The
// "q1" prefix keeps a ticket from ever passing for an admission token.
func (a *Admissions) SignTicket(userID, voucherID, position int64, seed string) string {
	body := "q1." + strconv.FormatInt(voucherID, 10) + "." + strconv.FormatInt(userID, 10) + "." +
		strconv.FormatInt(position, 10)
	m := a.macState()
	defer a.macs.Put(m)
	return body + "." + string(m.encode(body, seed, true))
}

// Ticket returns the position a place ticket states, and whether it is
// well formed and signed for this user, voucher and room seed. It
// allocates nothing: every waiting buyer's poll runs it.
func (a *Admissions) Ticket(ticket string, userID, voucherID int64, seed string) (int64, bool) {
	i := strings.LastIndexByte(ticket, '.')
	if i < 0 || len(ticket) > 256 {
		return 0, false
	}
	body, mac := ticket[:i], ticket[i+1:]
	m := a.macState()
	signed := equalMAC(m.encode(body, seed, true), mac)
	a.macs.Put(m)
	if !signed {
		return 0, false
	}
	rest, ok := strings.CutPrefix(body, "q1.")
	if !ok {
		return 0, false
	}
	if rest, ok = cutID(rest, voucherID); !ok {
		return 0, false
	}
	if rest, ok = cutID(rest, userID); !ok || strings.IndexByte(rest, '.') >= 0 {
		return 0, false
	}
	pos, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || pos < -1 {
		return 0, false
	}
	return pos, true
}

// cutID cuts "<id>." off s, id written as strconv writes it.
func cutID(s string, id int64) (string, bool) {
	var b [20]byte
	n := strconv.AppendInt(b[:0], id, 10)
	if len(s) <= len(n) || s[:len(n)] != string(n) || s[len(n)] != '.' {
		return "", false
	}
	return s[len(n)+1:], true
}
