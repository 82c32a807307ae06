package handler_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/auth/sms"
	"seckill/handler"
	"seckill/service/account"
	"seckill/service/account/accounttest"
)

// senderFunc is a account.CodeSender.
type senderFunc func(ctx context.Context, phone, code string, ttl time.Duration) error

func (f senderFunc) SendCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	return f(ctx, phone, code, ttl)
}

// TestSendCodeSentTo: the answer names where the code went, the phone
// masked; data is the code in development only.
func TestSendCodeSentTo(t *testing.T) {
	for _, dev := range []bool{true, false} {
		codes := accounttest.NewCodes()
		var sent string
		send := senderFunc(func(_ context.Context, phone, code string, _ time.Duration) error { sent = code; return nil })
		e := newEnv(t, func(d *handler.Deps) { d.Development = dev },
			withCodeLimits(accounttest.NewUsers(0), codes, accounttest.NewCodeLimits(), account.CodeConfig{Sender: send}))
		r := e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
		if r.status != http.StatusOK || r.str("sentTo") != "138****5678" {
			t.Fatalf("development %v: got %d %s, want 200 with sentTo 138****5678", dev, r.status, r.body)
		}
		if sent == "" || codes.Codes["13812345678"] != sent {
			t.Errorf("development %v: sent %q, stored %q, want the same code", dev, sent, codes.Codes["13812345678"])
		}
		if _, has := r.fields["data"]; has != dev || (dev && r.str("data") != sent) {
			t.Errorf("development %v: data %s, want the code only in development", dev, r.fields["data"])
		}
	}
}

// TestSendCodeNotSent: a sender that fails is 503 UNAVAILABLE saying in
// words what failed and that no code was stored; nothing is stored.
func TestSendCodeNotSent(t *testing.T) {
	codes := accounttest.NewCodes()
	send := senderFunc(func(context.Context, string, string, time.Duration) error {
		return &sms.Error{Reason: "the SMS service did not answer in time", Temporary: true, Err: errors.New("dial tcp: i/o timeout")}
	})
	e := newEnv(t, withCodeLimits(accounttest.NewUsers(0), codes, accounttest.NewCodeLimits(), account.CodeConfig{Sender: send, Cooldown: time.Minute}))
	r := e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
	want := "the login code could not be sent to 138****5678: the SMS service did not answer in time; no code was stored, ask for a new one in 60s"
	if r.status != http.StatusServiceUnavailable || r.str("code") != handler.CodeUnavailable || r.str("errorMsg") != want {
		t.Errorf("got %d %s, want 503 UNAVAILABLE %q", r.status, r.body, want)
	}
	if len(codes.Codes) != 0 || strings.Contains(r.body, "i/o timeout") {
		t.Errorf("stored %v, body %s: want nothing stored and no internal cause", codes.Codes, r.body)
	}
}
