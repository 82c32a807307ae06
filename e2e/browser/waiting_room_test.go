package browser

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/sqlstore"
	"seckill/testkit/browsertest"
)

// TestWebWaitingRoom: a buyer joins a voucher's waiting room before the
// start and is told the queue is drawn then; at the start the page shows
// the place, then Buy now, and the purchase's outcome. A later joiner is
// told sold out. The live dashboard shows the room's counters.
func TestWebWaitingRoom(t *testing.T) {
	a, srv := webTestApp(t, nil)
	h := a.Handler()
	admin := apptest.AdminToken(t, h)
	shop := apptest.DataID(t, "create shop", apptest.Call(t, h, http.MethodPost, "/shop", admin, map[string]any{
		"name": "Queue shop", "typeId": 1, "address": "Test street 2", "x": 120.15, "y": 30.28,
	}))
	title := fmt.Sprintf("Queued tea %d", rand.IntN(1_000_000))
	// The browser first: on a loaded machine its start takes seconds, and
	// the buyer must join before the sale's start.
	b := browsertest.New(t, browsertest.Options{Width: 390, Height: 900})
	begin := time.Now().Add(6 * time.Second)
	vid := apptest.DataID(t, "publish", apptest.Call(t, h, http.MethodPost, "/voucher/seckill", admin, map[string]any{
		"shopId": shop, "title": title, "payValue": 100, "actualValue": 200, "type": 1, "stock": 1,
		"beginTime": begin.Format(time.RFC3339Nano), "endTime": begin.Add(time.Hour).Format(time.RFC3339),
		"waitingRoom": true,
	}))
	// The page reads /user/me: the buyer is a user of the database.
	us, err := sqlstore.NewUsers(a.DB()).EnsureUsers(context.Background(), []string{fmt.Sprintf("136%08d", rand.IntN(100_000_000))},
		model.RoleUser, func(int) string { return "queued" })
	if err != nil {
		t.Fatal(err)
	}
	user := us[0].ID
	token, err := apptest.DevTokens().Issue(user, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}

	b.Navigate(srv.URL + "/")
	browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.setItem("seckill.token", %q), localStorage.setItem("seckill.shop", "%d"), true)`, token, shop))
	b.Navigate(srv.URL + "/")
	card := fmt.Sprintf(`[data-voucher="%d"]`, vid)
	b.WaitText(card+" h3", title)
	b.Click(card + " .room-join")
	b.WaitText(card+" .room-place", "drawn at the start")
	b.WaitText(card+" .room-place", "place 1")
	b.WaitText(card+" .room-note", "Your turn")
	b.Click(card + " .room-buy")
	b.WaitText("#buy-result", "you bought “"+title+"”")

	late, err := apptest.DevTokens().Issue(user+1<<40, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d/queue", vid), late, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body.Data), `"status":"sold_out"`) {
		t.Errorf("a later joiner: got %d %s, want sold_out", r.Status, r.Body.Data)
	}

	browsertest.Eval[bool](b, fmt.Sprintf(`(sessionStorage.setItem("seckill.admin", %q), true)`, admin))
	b.Navigate(fmt.Sprintf("%s/#/admin/live/%d", srv.URL, vid))
	b.WaitText(`[data-field="room.joined"]`, "1")
	b.WaitText(`[data-field="room.purchased"]`, "1")
	b.WaitText(`[data-field="room.state"]`, "sold_out")
	noPageErrors(t, b)
}
