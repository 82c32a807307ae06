package model

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// ErrNotAdmitted refuses a purchase of a voucher with a waiting room that
// carries no valid admission token, and a poll of a room one has not
// joined.
var ErrNotAdmitted = errors.New("not admitted")

// ErrAdmissionLapsed is ErrNotAdmitted for a genuine admission token of
// the user and voucher past its expiry: the user was admitted once, so a
// keyed purchase may still be answered from its stored answer.
var ErrAdmissionLapsed = fmt.Errorf("%w: admission lapsed", ErrNotAdmitted)

// The statuses of a waiting room's answer.
const (
	RoomWaiting  = "waiting"
	RoomAdmitted = "admitted"
	RoomSoldOut  = "sold_out"
	RoomClosed   = "closed"
	// RoomNotJoined is the store's answer for a user not in the room.
	RoomNotJoined = "notjoined"
)

// RoomAnswer is the room's state for one user, as the store reads it.
type RoomAnswer struct {
	Status string
	// Position is the user's place, 1 first; -1 before the draw.
	Position int64
	// Ahead is how many positions are still to be served before the
	// user's; -1 before the draw.
	Ahead int64
	// Expires is when the user's admission lapses (admitted only).
	Expires time.Time
	// Now is the room's clock (Redis time).
	Now time.Time
	// New: this join put the user in the room (a user joins a room once).
	New bool
}

// RoomAudit is the waiting room of a voucher in its audit.
type RoomAudit struct {
	Joined    int64 `json:"joined"`
	Admitted  int64 `json:"admitted"`
	Purchased int64 `json:"purchased"`
	Lapsed    int64 `json:"lapsed"`
	// Returned are the units given back (cancelled or expired orders)
	// since the draw; each one reopened a place.
	Returned int64 `json:"returned"`
	// Seed is the draw's seed; empty before the start.
	Seed string `json:"seed"`
	// Serving is the last position admitted.
	Serving int64 `json:"serving"`
	// Pool is how many joined before the start (drawn in random order).
	Pool int64 `json:"pool"`
	// Base is the stock the room was sized to at the draw; a sell-out sets
	// it so that base - purchased + returned is 0.
	Base int64 `json:"base"`
	// Outstanding are the admitted who have neither bought nor lapsed.
	Outstanding int64 `json:"outstanding"`
	// State is "open", "sold_out", "closed" or "waiting" (not drawn yet).
	State string `json:"state"`
}

// DrawKey is the pool's sort key of userID under seed: the first 13 hex
// digits (52 bits) of SHA-1("<seed>:<userId>"), as waiting_room.lua
// computes it.
func DrawKey(seed string, userID int64) int64 {
	sum := sha1.Sum([]byte(seed + ":" + strconv.FormatInt(userID, 10)))
	n, _ := strconv.ParseInt(hex.EncodeToString(sum[:])[:13], 16, 64) // 13 hex digits always parse
	return n
}

// DrawOrder replays the draw: the users of the pool in the order the room
// served them, by DrawKey and, on a tie, by the id as text.
func DrawOrder(seed string, users []int64) []int64 {
	out := slices.Clone(users)
	slices.SortFunc(out, func(a, b int64) int {
		ka, kb := DrawKey(seed, a), DrawKey(seed, b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		sa, sb := strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	return out
}

// ErrRoomNeedsBase says the room is to be drawn now and needs the stock
// the database holds (the store asks its caller once).
var ErrRoomNeedsBase = errors.New("waiting room: the draw needs the stock")

// RoomCall is what every waiting room operation tells the store.
type RoomCall struct {
	Begin    time.Time     // the sale's start: the draw happens then
	ExpireAt time.Time     // when the room's keys expire
	TokenTTL time.Duration // how long an admission lasts
	Overbook float64       // the most admitted-not-bought per remaining unit
	// Base is the database's stock now, read after the store answered
	// ErrRoomNeedsBase; negative when not read.
	Base int
	// Units are the units given back (op returned).
	Units int
	// Took is how long the purchase that met SOLD_OUT ran (op soldout).
	Took time.Duration
}
