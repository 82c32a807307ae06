package waitingroom

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/model"
)

// pollTicket polls on app i with the place ticket tk.
func (r *room) pollTicket(i int, user int64, tk string) (int, answer, string) {
	r.t.Helper()
	code, res, _ := r.do(i, http.MethodGet, fmt.Sprintf("/voucher-order/seckill/%d/queue", r.vid), user, map[string]string{"Queue-Ticket": tk})
	var a answer
	if code == http.StatusOK {
		if err := json.Unmarshal(res.Body.Data, &a); err != nil {
			r.t.Fatal(err)
		}
	}
	return code, a, res.Body.Code
}

// TestTicketPollsAndLapse: a waiting buyer polling with its place ticket
// is told its place and keeps the ticket; when the admission ahead lapses
// while every waiting buyer is answered from the instances' copies, the
// copy's read passes the slot on and the ticketed poll is admitted.
func TestTicketPollsAndLapse(t *testing.T) {
	r := newRoom(t, twoApps(t, map[string]string{"SECKILL_WAITING_ROOM_TOKEN_TTL": "1s"}), 1, -time.Minute)
	us := users(3)
	if a := r.join(0, us[0]); a.Status != model.RoomAdmitted {
		t.Fatalf("first joiner: got %+v, want admitted", a)
	}
	second := r.join(1, us[1])
	if second.Status != model.RoomWaiting || second.Ticket == "" {
		t.Fatalf("second joiner: got %+v, want waiting with a ticket", second)
	}
	for i := range 4 {
		code, a, c := r.pollTicket(i, us[1], second.Ticket)
		if code != http.StatusOK || a.Status != model.RoomWaiting || a.Position == nil || *a.Position != 2 || a.Ticket != second.Ticket {
			t.Fatalf("ticketed poll %d: got %d %s %+v, want waiting at 2 with the same ticket", i, code, c, a)
		}
	}
	// Another user's ticket is not trusted: the script answers.
	if code, _, c := r.pollTicket(0, us[2], second.Ticket); code != http.StatusForbidden || c != "NOT_ADMITTED" {
		t.Errorf("poll of a user who did not join, with another's ticket: got %d %s, want 403 NOT_ADMITTED", code, c)
	}
	time.Sleep(2100 * time.Millisecond)
	for i := range 2 {
		if code, a, c := r.pollTicket(i, us[1], second.Ticket); code != http.StatusOK || a.Status != model.RoomAdmitted || a.Token == "" {
			t.Fatalf("ticketed poll on instance %d after the first lapsed: got %d %s %+v, want admitted", i, code, c, a)
		}
	}
	if _, w := r.audit(); w.Lapsed != 1 || w.Admitted != 2 {
		t.Errorf("audit: got %+v, want 1 lapsed, 2 admitted", w)
	}
}
