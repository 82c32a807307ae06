package handler

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"seckill/model"
	"seckill/service/room"
)

// The queue routes' answer is written by hand: every waiting buyer polls,
// and the poll must cost no more than the no-op. The bytes are those
// ok(c, roomResponse{...}) writes (TestRoomAnswerAsJSON).

// jsonContentTypes is the Content-Type header's value, shared read-only.
var jsonContentTypes = []string{jsonContentType}

// retryAfterValues are the Retry-After header's values of 0 to 120
// seconds, shared read-only.
var retryAfterValues = func() [121][]string {
	var v [121][]string
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// answerBufs are the buffers of the answers (*[]byte).
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeRoom writes the queue routes' answer of v, its Retry-After header
// included.
func writeRoom(c *gin.Context, v *room.View) {
	h := c.Writer.Header()
	if v.RetryAfter > 0 {
		if s := model.RetryAfterSeconds(v.RetryAfter); s < int64(len(retryAfterValues)) {
			h["Retry-After"] = retryAfterValues[s]
		} else {
			h.Set("Retry-After", strconv.FormatInt(s, 10))
		}
	}
	h["Content-Type"] = jsonContentTypes
	bp := answerBufs.Get().(*[]byte)
	b := appendRoom((*bp)[:0], v)
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(b)
	*bp = b
	answerBufs.Put(bp)
}

// writeOrderID writes the purchase's answer, ok(c, "<orderID>"), by hand:
// the order id as a JSON string (TestOrderAnswerAsJSON).
func writeOrderID(c *gin.Context, orderID int64) {
	bp := answerBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"success":true,"data":"`...)
	b = strconv.AppendInt(b, orderID, 10)
	b = append(b, `"}`...)
	writeJSONBytes(c, http.StatusOK, b)
	*bp = b
	answerBufs.Put(bp)
}

// writeJSONBytes writes status and the JSON body b as c.Data(status,
// jsonContentType, b) does, without allocating the header's value: a
// Content-Type set already stays.
func writeJSONBytes(c *gin.Context, status int, b []byte) {
	if h := c.Writer.Header(); len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentTypes
	}
	c.Status(status)
	if _, err := c.Writer.Write(b); err != nil {
		// As gin's c.Data does: the request span and the log see it.
		_ = c.Error(err)
		c.Abort()
	}
}

// appendRoom appends the envelope of v as encoding/json writes it.
func appendRoom(b []byte, v *room.View) []byte {
	b = append(b, `{"success":true,"data":{"status":`...)
	b = appendJSONString(b, v.Status)
	b = append(b, `,"position":`...)
	b = appendOptInt(b, v.Position)
	b = append(b, `,"ahead":`...)
	b = appendOptInt(b, v.Ahead)
	b = append(b, `,"retryAfterMs":`...)
	b = strconv.AppendInt(b, v.RetryAfter.Milliseconds(), 10)
	if v.Token != "" {
		b = append(b, `,"token":`...)
		b = appendJSONString(b, v.Token)
	}
	if v.Ticket != "" {
		b = append(b, `,"ticket":`...)
		b = appendJSONString(b, v.Ticket)
	}
	return append(b, "}}"...)
}

func appendOptInt(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

// appendJSONString appends s quoted; a string with a byte encoding/json
// would escape goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
