package handler

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// TestCannedEnvelopesAsGinWritesThem: a canned envelope equals what gin writes
// for it. The bytes and the Content-Type match gin's AbortWithStatusJSON. A
// message of its own, not canned, still goes through gin.
func TestCannedEnvelopesAsGinWritesThem(t *testing.T) {
	gin.SetMode(gin.TestMode)
	render := func(f func(c *gin.Context)) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		f(c)
		return w
	}
	if len(cannedEnvelopes) == 0 {
		t.Fatal("no canned envelopes")
	}
	for k, b := range cannedEnvelopes {
		want := render(func(c *gin.Context) { c.AbortWithStatusJSON(409, Envelope{Code: k.code, ErrorMsg: k.msg}) })
		got := render(func(c *gin.Context) { c.Abort(); c.Data(409, jsonContentType, b) })
		if got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s %q: canned %q (%s), gin %q (%s)", k.code, k.msg, got.Body, got.Header().Get("Content-Type"),
				want.Body, want.Header().Get("Content-Type"))
		}
	}
	fail := Fail(slog.New(slog.DiscardHandler), StyleREST)
	for _, err := range []error{model.ErrSoldOut, model.InvalidArgument("id", "must be a positive number")} {
		w := render(func(c *gin.Context) { fail(c, err) })
		status, code, msg := StyleREST.Classify(err)
		want := render(func(c *gin.Context) { c.AbortWithStatusJSON(status, Envelope{Code: code, ErrorMsg: msg}) })
		if w.Code != status || w.Body.String() != want.Body.String() {
			t.Errorf("Fail(%v): got %d %s, want %d %s", err, w.Code, w.Body, status, want.Body)
		}
	}
}
