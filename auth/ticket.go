package auth

import (
	"crypto/hmac"
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
	return body + "." + a.mac(body+"|"+seed)
}

// Ticket returns the position a place ticket states, and whether it is
// well formed and signed for this user, voucher and room seed.
func (a *Admissions) Ticket(ticket string, userID, voucherID int64, seed string) (int64, bool) {
	i := strings.LastIndexByte(ticket, '.')
	if i < 0 || len(ticket) > 256 {
		return 0, false
	}
	body, mac := ticket[:i], ticket[i+1:]
	if !hmac.Equal([]byte(mac), []byte(a.mac(body+"|"+seed))) {
		return 0, false
	}
	f := strings.Split(body, ".")
	if len(f) != 4 || f[0] != "q1" || f[1] != strconv.FormatInt(voucherID, 10) || f[2] != strconv.FormatInt(userID, 10) {
		return 0, false
	}
	pos, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || pos < -1 {
		return 0, false
	}
	return pos, true
}
