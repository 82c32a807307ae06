package auth

import (
	"testing"
	"time"
)

// TestTicketRefusals: a ticket is accepted only as signed, for its user,
// voucher and seed, with four fields.
func TestTicketRefusals(t *testing.T) {
	a := NewAdmissions("secret")
	good := a.SignTicket(7, 42, 250, "seed")
	if pos, ok := a.Ticket(good, 7, 42, "seed"); !ok || pos != 250 {
		t.Fatalf("good ticket: got %d %v, want 250 true", pos, ok)
	}
	if pos, ok := a.Ticket(a.SignTicket(7, 42, -1, "seed"), 7, 42, "seed"); !ok || pos != -1 {
		t.Fatalf("ticket before the draw: got %d %v, want -1 true", pos, ok)
	}
	signed := func(body string) string { return body + "." + string(a.macState().encode(body, "seed", true)) }
	for name, c := range map[string]struct {
		ticket      string
		user, vouch int64
		seed        string
	}{
		"other user":    {good, 8, 42, "seed"},
		"other voucher": {good, 7, 43, "seed"},
		"other seed":    {good, 7, 42, "seed2"},
		"bad mac":       {good[:len(good)-1] + "A", 7, 42, "seed"},
		"short mac":     {good[:len(good)-1], 7, 42, "seed"},
		"no dot":        {"q1", 7, 42, "seed"},
		"admission":     {a.Sign(7, 42, time.Unix(2e9, 0)), 7, 42, "seed"},
		"five fields":   {signed("q1.42.7.250.1"), 7, 42, "seed"},
		"three fields":  {signed("q1.42.7"), 7, 42, "seed"},
		"prefix v1":     {signed("v1.42.7.250"), 7, 42, "seed"},
		"leading zero":  {signed("q1.042.7.250"), 7, 42, "seed"},
		"below -1":      {signed("q1.42.7.-2"), 7, 42, "seed"},
		"not a number":  {signed("q1.42.7.x"), 7, 42, "seed"},
		"empty user":    {signed("q1.42..250"), 7, 42, "seed"},
	} {
		if pos, ok := a.Ticket(c.ticket, c.user, c.vouch, c.seed); ok {
			t.Errorf("%s: %q accepted (position %d)", name, c.ticket, pos)
		}
	}
}

// TestTicketAllocatesNothing: the check of every waiting buyer's poll
// allocates nothing.
func TestTicketAllocatesNothing(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	a := NewAdmissions("secret")
	tk := a.SignTicket(7, 123456789, 250, "seed")
	if n := testing.AllocsPerRun(100, func() { a.Ticket(tk, 7, 123456789, "seed") }); n != 0 {
		t.Errorf("Ticket allocates %v times, want 0", n)
	}
}
