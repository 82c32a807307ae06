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

// TestSendCodeResendAfter: a sent code's answer carries the phone's
// cooldown in whole seconds (resendAfter), so a client counts it down from
// the first send; 0 without a cooldown. A second code within it is 429
// RATE_LIMITED with Retry-After, its words fit one resend.
func TestSendCodeResendAfter(t *testing.T) {
	for _, tc := range []struct {
		cooldown time.Duration
		want     string
	}{{time.Minute, "60"}, {1500 * time.Millisecond, "2"}, {0, "0"}} {
		e := newEnv(t, withCodeLimits(accounttest.NewUsers(0), accounttest.NewCodes(), accounttest.NewCodeLimits(), account.CodeConfig{Cooldown: tc.cooldown}))
		r := e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
		if r.status != http.StatusOK || string(r.fields["resendAfter"]) != tc.want {
			t.Errorf("cooldown %v: got %d %s, want 200 with resendAfter %s", tc.cooldown, r.status, r.body, tc.want)
		}
		if tc.cooldown == time.Minute {
			r := e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
			if r.status != http.StatusTooManyRequests || r.str("code") != handler.CodeRateLimited ||
				!strings.HasPrefix(r.str("errorMsg"), "a code was just sent to this phone: try again in ") {
				t.Errorf("a second code at once: got %d %s, want 429 RATE_LIMITED saying a code was just sent", r.status, r.body)
			}
		}
	}
}
