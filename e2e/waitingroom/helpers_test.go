package waitingroom

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"seckill/auth"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/model"
)

// answer is the queue routes' data.
type answer struct {
	Status       string `json:"status"`
	Position     *int64 `json:"position"`
	Ahead        *int64 `json:"ahead"`
	RetryAfterMs int64  `json:"retryAfterMs"`
	Token        string `json:"token"`
	Ticket       string `json:"ticket"`
}

// room is one test's voucher with a room, over one or more app instances.
type room struct {
	t    *testing.T
	apps []http.Handler
	vid  int64
	// begin is the sale's start.
	begin time.Time
	toks  map[int64]string
}

// newRoom publishes a voucher of stock units with a waiting room on
// apps[0], its sale starting after begin.
func newRoom(t *testing.T, apps []http.Handler, stock int, begin time.Duration) *room {
	t.Helper()
	at := time.Now().Add(begin)
	vid := apptest.PublishVoucherWith(t, apps[0], stock, map[string]any{
		"waitingRoom": true,
		"beginTime":   at.Format(time.RFC3339Nano),
	})
	return &room{t: t, apps: apps, vid: vid, begin: at, toks: map[int64]string{}}
}

// users returns n fresh user ids.
func users(n int) []int64 {
	base := rand.Int64N(1<<40) + 1<<41
	out := make([]int64, n)
	for i := range out {
		out[i] = base + int64(i)
	}
	return out
}

func (r *room) token(user int64) string {
	if tok, ok := r.toks[user]; ok {
		return tok
	}
	tok, err := apptest.DevTokens().Issue(user, model.RoleUser)
	if err != nil {
		r.t.Fatal(err)
	}
	r.toks[user] = tok
	return tok
}

// do sends a request to app i and decodes the envelope.
func (r *room) do(i int, method, path string, user int64, header map[string]string) (int, apptest.Result, http.Header) {
	r.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("authorization", r.token(user))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	r.apps[i%len(r.apps)].ServeHTTP(rec, req)
	var res apptest.Result
	res.Status = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &res.Body); err != nil {
		r.t.Fatalf("%s %s: body %q: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, res, rec.Header()
}

// queue joins (POST) or polls (GET) on app i; it fails the test on
// anything but 200.
func (r *room) queue(i int, method string, user int64) answer {
	r.t.Helper()
	code, res, h := r.do(i, method, fmt.Sprintf("/voucher-order/seckill/%d/queue", r.vid), user, nil)
	if code != http.StatusOK {
		r.t.Fatalf("%s queue of user %d: got %d %s %s, want 200", method, user, code, res.Body.Code, res.Body.ErrorMsg)
	}
	var a answer
	if err := json.Unmarshal(res.Body.Data, &a); err != nil {
		r.t.Fatal(err)
	}
	if a.Status == model.RoomWaiting && h.Get("Retry-After") == "" {
		r.t.Errorf("waiting answer without Retry-After")
	}
	return a
}

func (r *room) join(i int, user int64) answer { return r.queue(i, http.MethodPost, user) }
func (r *room) poll(i int, user int64) answer { return r.queue(i, http.MethodGet, user) }

// joinAll has every user of us join, the i-th on app i (round the apps).
func (r *room) joinAll(us []int64) {
	for i, u := range us {
		r.join(i, u)
	}
}

// buy purchases on app i with the admission token tok (none when empty).
func (r *room) buy(i int, user int64, tok string) (int, string) {
	r.t.Helper()
	h := map[string]string{}
	if tok != "" {
		h["Admission-Token"] = tok
	}
	code, res, _ := r.do(i, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", r.vid), user, h)
	return code, res.Body.Code
}

// audit reads the voucher's audit and its waitingRoom.
func (r *room) audit() (apptest.AuditResult, *model.RoomAudit) {
	r.t.Helper()
	admin := apptest.AdminToken(r.t, r.apps[0])
	res := apptest.Call(r.t, r.apps[0], http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", r.vid), admin, nil)
	if res.Status != http.StatusOK {
		r.t.Fatalf("audit: got %d %s", res.Status, res.Body.Code)
	}
	var a apptest.AuditResult
	var w struct {
		WaitingRoom *model.RoomAudit `json:"waitingRoom"`
	}
	if err := json.Unmarshal(res.Body.Data, &a); err != nil {
		r.t.Fatal(err)
	}
	if err := json.Unmarshal(res.Body.Data, &w); err != nil {
		r.t.Fatal(err)
	}
	return a, w.WaitingRoom
}

// admissions signs tokens as the apps do (the development secret).
func admissions() *auth.Admissions { return auth.NewAdmissions(config.DevJWTSecret) }

// waitUntil sleeps until the time t has passed.
func waitUntil(t time.Time) { time.Sleep(time.Until(t) + 20*time.Millisecond) }
