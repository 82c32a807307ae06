package waitingroom

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/testkit/redisproc"
)

// TestQueueFloodLimited: on two instances of one private Redis, one
// account's flood of joins and polls without a ticket is refused beyond
// SECKILL_WAITING_ROOM_RATE_LIMIT a second with 429 RATE_LIMITED and
// Retry-After, across the instances; the same account's polls with its
// place ticket are still answered, from memory: Redis sees at most the
// copies' reads, not one call a poll. Many accounts from one address are
// held to SECKILL_WAITING_ROOM_RATE_LIMIT_IP.
func TestQueueFloodLimited(t *testing.T) {
	srv := apptest.PrivateRedis(t, redisproc.Options{})
	env := map[string]string{"SECKILL_REDIS_ADDR": srv.Addr(),
		"SECKILL_WAITING_ROOM_RATE_LIMIT": "5", "SECKILL_WAITING_ROOM_RATE_LIMIT_IP": "40"}
	apps := []http.Handler{apptest.Start(t, env).Handler(), apptest.Start(t, env).Handler()}
	r := newRoom(t, apps, 1, -time.Minute)
	us := users(2)
	if a := r.join(0, us[0]); a.Status != model.RoomAdmitted {
		t.Fatalf("first joiner: got %+v, want admitted", a)
	}
	w := r.join(1, us[1])
	if w.Status != model.RoomWaiting || w.Ticket == "" {
		t.Fatalf("second joiner: got %+v, want waiting with a ticket", w)
	}

	path := fmt.Sprintf("/voucher-order/seckill/%d/queue", r.vid)
	start, ok, limited := time.Now(), 0, 0
	for i := range 60 {
		method := http.MethodGet
		if i%2 == 0 {
			method = http.MethodPost
		}
		code, res, h := r.do(i, method, path, us[1], nil)
		switch {
		case code == http.StatusOK:
			ok++
		case code == http.StatusTooManyRequests && res.Body.Code == "RATE_LIMITED" && h.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("request %d: got %d %s (Retry-After %q), want 200 or 429 RATE_LIMITED with Retry-After", i, code, res.Body.Code, h.Get("Retry-After"))
		}
	}
	// 5 at once, then 5 a second (the two joins above were of others).
	if most := 5 + int(time.Since(start).Seconds()*5) + 1; ok > most || limited == 0 {
		t.Errorf("flood of 60 from one account: %d answered, %d limited; want at most %d answered", ok, limited, most)
	}

	before := calls(t, srv.Addr())
	for i := range 200 {
		code, a, c := r.pollTicket(i, us[1], w.Ticket)
		if code != http.StatusOK || a.Status != model.RoomWaiting {
			t.Fatalf("ticket poll %d of the limited account: got %d %s %+v, want 200 waiting", i, code, c, a)
		}
	}
	// Each instance reads its copy of the room at most every 200 ms, and
	// publishes its live counters 4 times a second.
	if d := calls(t, srv.Addr()) - before; d > 40 {
		t.Errorf("200 ticket polls cost %d Redis commands, want only the copies' reads and the live counters (at most 40)", d)
	}

	// Many accounts, one address (every request here comes from
	// httptest's 192.0.2.1): 40 a second.
	ok, limited = 0, 0
	for i, u := range users(80) {
		code, _, _ := r.do(i, http.MethodPost, path, u, nil)
		switch code {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	if ok+limited != 80 || ok > 50 || limited == 0 {
		t.Errorf("80 accounts from one address: %d answered, %d limited, want at most 50 answered, the rest limited", ok, limited)
	}
}

// calls is the number of commands the Redis at addr has run (INFO
// commandstats), less the INFO itself.
func calls(t *testing.T, addr string) int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info:") {
			continue
		}
		f := strings.TrimPrefix(line[strings.Index(line, "calls="):], "calls=")
		v, _ := strconv.Atoi(f[:strings.IndexByte(f, ',')])
		n += v
	}
	return n
}
