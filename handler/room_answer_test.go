package handler

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
	"seckill/service/room"
)

// roomResponse is the queue routes' answer as encoding/json would write
// it: the reference of writeRoom.
type roomResponse struct {
	Status       string `json:"status"`
	Position     *int64 `json:"position"`
	Ahead        *int64 `json:"ahead"`
	RetryAfterMs int64  `json:"retryAfterMs"`
	Token        string `json:"token,omitempty"`
	Ticket       string `json:"ticket,omitempty"`
}

// TestRoomAnswerAsJSON: writeRoom writes the bytes, status and headers
// that ok(c, roomResponse{...}) and the Retry-After header wrote.
func TestRoomAnswerAsJSON(t *testing.T) {
	gin.SetMode(gin.TestMode)
	pos, ahead, neg := int64(250), int64(239), int64(-1)
	for _, v := range []room.View{
		{Status: "waiting", Position: &pos, Ahead: &ahead, RetryAfter: 1478 * time.Millisecond, Ticket: "q1.1.7.250.abc-_"},
		{Status: "waiting", RetryAfter: 3 * time.Second, Ticket: "q1.1.7.-1.x"},
		{Status: "admitted", Position: &neg, Ahead: &neg, Token: "v1.1.7.99.mac"},
		{Status: "sold_out"},
		{Status: "closed", RetryAfter: 500 * time.Hour},
		{Status: "w<a>i&t\"\\\u2028\x01é", Ticket: "<&>", Token: "\xff"},
	} {
		want := httptest.NewRecorder()
		wc, _ := gin.CreateTestContext(want)
		if v.RetryAfter > 0 {
			wc.Header("Retry-After", strconv.FormatInt(model.RetryAfterSeconds(v.RetryAfter), 10))
		}
		ok(wc, roomResponse{Status: v.Status, Position: v.Position, Ahead: v.Ahead,
			RetryAfterMs: v.RetryAfter.Milliseconds(), Token: v.Token, Ticket: v.Ticket})
		got := httptest.NewRecorder()
		gc, _ := gin.CreateTestContext(got)
		writeRoom(gc, &v)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Errorf("%+v: got %d %s, want %d %s", v, got.Code, got.Body, want.Code, want.Body)
		}
		for _, k := range []string{"Content-Type", "Retry-After"} {
			if g, w := got.Header().Values(k), want.Header().Values(k); len(g) != len(w) || (len(w) > 0 && g[0] != w[0]) {
				t.Errorf("%+v: %s got %q, want %q", v, k, g, w)
			}
		}
		if !json.Valid(got.Body.Bytes()) {
			t.Errorf("%+v: invalid JSON %s", v, got.Body)
		}
	}
}

// TestOrderAnswerAsJSON: writeOrderID writes the bytes, status and
// Content-Type of ok(c, "<orderID>").
func TestOrderAnswerAsJSON(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, id := range []int64{1, 42, 1 << 40, 1<<63 - 1} {
		want := httptest.NewRecorder()
		wc, _ := gin.CreateTestContext(want)
		ok(wc, strconv.FormatInt(id, 10))
		got := httptest.NewRecorder()
		gc, _ := gin.CreateTestContext(got)
		writeOrderID(gc, id)
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%d: got %d %q %s, want %d %q %s", id, got.Code, got.Header().Get("Content-Type"), got.Body,
				want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	}
}

// TestCannedFailureAsData: a canned refusal is written with the bytes,
// status and Content-Type that c.Data wrote, in both styles.
func TestCannedFailureAsData(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, style := range []Style{StyleREST, StyleHeima} {
		for _, err := range []error{model.ErrSoldOut, model.ErrSeckillEnded, model.ErrDuplicateOrder} {
			status, code, msg := style.Classify(err)
			b, found := cannedEnvelopes[cannedKey{code, msg}]
			if !found {
				t.Fatalf("%s %v: not canned", style, err)
			}
			want := httptest.NewRecorder()
			wc, _ := gin.CreateTestContext(want)
			wc.Data(status, jsonContentType, b)
			got := httptest.NewRecorder()
			gc, _ := gin.CreateTestContext(got)
			Fail(nil, style)(gc, err)
			if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || !gc.IsAborted() {
				t.Errorf("%s %v: got %d %q %s (aborted %v), want %d %q %s", style, err, got.Code, got.Header().Get("Content-Type"),
					got.Body, gc.IsAborted(), want.Code, want.Header().Get("Content-Type"), want.Body)
			}
		}
	}
}
