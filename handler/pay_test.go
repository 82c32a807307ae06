package handler_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"seckill/handler"
	"seckill/model"
	"seckill/service/payment"
)

// fakePayments answers Notify with err and counts the calls.
type fakePayments struct {
	err   error
	calls int
	body  string
}

func (f *fakePayments) Has(p string) bool {
	return p == model.ProviderAlipay || p == model.ProviderWechat
}
func (f *fakePayments) Start(context.Context, int64, int64, string) (*payment.Checkout, error) {
	return nil, model.Unavailable(errors.New("provider down"))
}
func (f *fakePayments) Notify(_ context.Context, _ string, _ http.Header, body []byte) error {
	f.calls++
	f.body = string(body)
	return f.err
}
func (f *fakePayments) Summary(context.Context, int64) (model.PaySummary, error) {
	return model.PaySummary{}, nil
}

func (f *fakePayments) Refunds(context.Context, int64) ([]model.RefundView, error) { return nil, nil }

// TestPayNotifyAnswers: a notification applied is answered as each
// provider wants success (Alipay the text "success", WeChat Pay 204); a
// rejected one, and one the database could not take (the provider must
// send it again), never look like success.
func TestPayNotifyAnswers(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		alipay    string
		wechat    int
		wechatMsg string
	}{
		{"applied", nil, "success", http.StatusNoContent, ""},
		{"rejected", model.RejectNotice("signature", "bad"), "fail", http.StatusBadRequest, "FAIL"},
		{"database down", model.Unavailable(errors.New("connection refused")), "fail", http.StatusInternalServerError, "FAIL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pays := &fakePayments{err: tc.err}
			e := newEnv(t, func(d *handler.Deps) { d.Payments = pays })
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/pay/notify/alipay", strings.NewReader("a=1&sign=x")))
			if rec.Code != http.StatusOK || rec.Body.String() != tc.alipay || pays.body != "a=1&sign=x" {
				t.Errorf("alipay: %d %q (body passed %q), want 200 %q", rec.Code, rec.Body.String(), pays.body, tc.alipay)
			}
			rec = httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/pay/notify/wechat", strings.NewReader(`{"id":"1"}`)))
			if rec.Code != tc.wechat || !strings.Contains(rec.Body.String(), tc.wechatMsg) {
				t.Errorf("wechat: %d %q, want %d", rec.Code, rec.Body.String(), tc.wechat)
			}
		})
	}
}

// TestPayRouteProviders: a provider not enabled is 400 on provider; no
// provider is the simulated payment only where it is enabled; a provider
// that cannot be reached is 503 UNAVAILABLE.
func TestPayRouteProviders(t *testing.T) {
	for _, simulated := range []bool{false, true} {
		life := &fakeLifecycle{}
		e := newEnv(t, func(d *handler.Deps) {
			d.Payments, d.Lifecycle, d.SimulatedPay = &fakePayments{}, life, simulated
		})
		auth := "Bearer " + e.userTok
		assertInvalid(t, e.do(http.MethodPost, "/voucher-order/5/pay", `{"provider":"paypal"}`, auth), "provider")
		assertError(t, e.do(http.MethodPost, "/voucher-order/5/pay", `{"provider":"alipay"}`, auth), http.StatusServiceUnavailable, handler.CodeUnavailable)
		r := e.do(http.MethodPost, "/voucher-order/5/pay", "", auth)
		if simulated {
			assertOK(t, r)
		} else {
			assertInvalid(t, r, "provider")
		}
		if want := map[bool]int{false: 0, true: 1}[simulated]; len(life.calls()) != want {
			t.Errorf("simulated %v: the simulated payment ran %d times, want %d", simulated, len(life.calls()), want)
		}
	}
}
