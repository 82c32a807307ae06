package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/testkit/fakepayenv"
)

// situations are the three mismatches the test makes at each provider:
// a trade paid with its notification dropped, a bill line of no order,
// and (alipay) a refund the provider keeps processing.
type situations struct {
	lost   map[string]*buyer // provider → the buyer whose notification was dropped
	trades map[string]string // provider → that buyer's out_trade_no
	stray  map[string]string // provider → the out_trade_no of a bill line of no order
	refund string            // the alipay trade whose refund stays processing
}

const strayAmount = 777

// makeLost pays a new order at each provider with no notification, before
// its deadline, and adds a bill payment of no order.
func makeLost(t *testing.T, a *payApp, vid, user int64, s *situations) {
	t.Helper()
	for i, provider := range providers {
		b := buy(t, a.h, vid, user+int64(i))
		c := mustPay(t, a.h, b, provider)
		fakePay(t, provider, c.OutTradeNo, "none", false)
		s.lost[provider], s.trades[provider] = b, c.OutTradeNo
		s.stray[provider] = fmt.Sprintf("stray%d%d", user, i)
		fakepayenv.BillLine(t, fakepayenv.Load(t), provider, strayAmount, url.Values{"out_trade_no": {s.stray[provider]}})
	}
}

// makeRefundInFlight: a buyer pays at wechat, then at alipay too; the
// second payment is refunded, and the fake keeps that refund processing
// (that trade's mode only: other tests share the fake).
func makeRefundInFlight(t *testing.T, a *payApp, vid, user int64) string {
	t.Helper()
	b := buy(t, a.h, vid, user)
	ca, cw := mustPay(t, a.h, b, "alipay"), mustPay(t, a.h, b, "wechat")
	fakepayenv.TradeRefundMode(t, fakepayenv.Load(t), "alipay", ca.OutTradeNo, "processing")
	fakePay(t, "wechat", cw.OutTradeNo, "once", false)
	fakePay(t, "alipay", ca.OutTradeNo, "once", false)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if tr := fakeTrades(t, "alipay", ca.OutTradeNo); len(tr) == 1 && len(tr[0].Refunds) == 1 && tr[0].Refunds[0].State == "processing" {
			return ca.OutTradeNo
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second payment %s was not refunded (processing) within 15 s: %+v", ca.OutTradeNo, fakeTrades(t, "alipay", ca.OutTradeNo))
		}
	}
}

// mismatchRows counts tb_pay_mismatch rows of provider, kind and trade.
func mismatchRows(t *testing.T, a *payApp, provider, kind, outTradeNo string) int64 {
	t.Helper()
	var n int64
	if err := a.DB().Gorm.Raw("SELECT COUNT(*) FROM tb_pay_mismatch WHERE provider = ? AND kind = ? AND out_trade_no = ?",
		provider, kind, outTradeNo).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func mismatchMetric(t *testing.T, a *payApp, provider, kind string) float64 {
	t.Helper()
	return apptest.LabeledCounterValue(t, a.App, "seckill_reconcile_mismatches_total", map[string]string{"provider": provider, "kind": kind})
}

// expected lists the mismatches the situations must produce.
func (s *situations) expected() [][3]string {
	var out [][3]string
	for _, p := range providers {
		out = append(out, [3]string{p, "lost_notification", s.trades[p]}, [3]string{p, "bill_no_order", s.stray[p]})
	}
	return append(out, [3]string{"alipay", "refund_in_flight", s.refund})
}

// TestReconcileFindsMismatches: a lost notification (the fake paid, its
// notification dropped, before the deadline), a refund the provider keeps
// processing and a bill payment of no order are each found by the
// reconciliation, at both providers: the lost payment is applied (the
// order paid), each mismatch is a table row once, counted once in the
// metric, logged, and printed by `seckill reconcile-payments` with what
// to do and exit status 3.
func TestReconcileFindsMismatches(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			be := newBackends(t, mode)
			a := startPayApp(t, mode, be, time.Minute, nil)
			vid := publish(t, a.h, 8)
			base := apptest.RandomBase()
			ctx := context.Background()
			today := time.Now()

			// Round 1: the app's reconciliation (the background job's).
			s := &situations{lost: map[string]*buyer{}, trades: map[string]string{}, stray: map[string]string{}}
			makeLost(t, a, vid, base, s)
			s.refund = makeRefundInFlight(t, a, vid, base+10)
			before := map[[2]string]float64{}
			for _, e := range s.expected() {
				before[[2]string{e[0], e[1]}] = mismatchMetric(t, a, e[0], e[1])
			}
			rep, err := a.ReconcilePayments(ctx, today, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range rep.Errors {
				t.Errorf("a check failed: %v", err)
			}
			newOf := map[[2]string]float64{}
			got := map[[3]string]bool{}
			for _, f := range rep.Found {
				got[[3]string{f.Provider, f.Kind, f.OutTradeNo}] = f.New
				if f.New {
					newOf[[2]string{f.Provider, f.Kind}]++
				}
			}
			for _, e := range s.expected() {
				if isNew, ok := got[e]; !ok || !isNew {
					t.Errorf("%s %s %s: found %v, new %v; want found and new", e[0], e[1], e[2], ok, isNew)
				}
				if n := mismatchRows(t, a, e[0], e[1], e[2]); n != 1 {
					t.Errorf("%s %s %s: %d rows, want 1", e[0], e[1], e[2], n)
				}
			}
			for k, b := range before {
				if d := mismatchMetric(t, a, k[0], k[1]) - b; d != newOf[k] || d < 1 {
					t.Errorf("metric %s %s rose by %v, want %v (once per new mismatch, ours among them)", k[0], k[1], d, newOf[k])
				}
			}
			for _, p := range providers {
				if o := get(t, a.h, s.lost[p]); o.Status != "paid" || o.PayType != p {
					t.Errorf("%s: the lost notification's order is %+v, want paid by query", p, o)
				}
			}
			if o := fakeTrades(t, "alipay", s.refund); len(o) != 1 || o[0].Refunds[0].State != "processing" {
				t.Errorf("the refund in flight changed at the provider: %+v", o)
			}
			// Again: the same mismatches, recorded and counted before.
			again, _ := a.ReconcilePayments(ctx, today, -1, -1)
			for _, f := range again.Found {
				if f.Provider == "alipay" && f.Kind == "refund_in_flight" && f.OutTradeNo == s.refund && f.New {
					t.Errorf("the refund in flight recorded twice")
				}
			}
			if n := mismatchRows(t, a, "alipay", "refund_in_flight", s.refund); n != 1 {
				t.Errorf("refund in flight: %d rows after a second run, want 1", n)
			}

			// The admin route lists them by voucher.
			r := apptest.Call(t, a.h, http.MethodGet, fmt.Sprintf("/admin/payments/mismatches?voucherId=%d", vid), apptest.AdminToken(t, a.h), nil)
			var listed []struct {
				Kind       string `json:"kind"`
				OutTradeNo string `json:"outTradeNo"`
				Action     string `json:"action"`
			}
			if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &listed) != nil || len(listed) != 3 {
				t.Errorf("GET /admin/payments/mismatches?voucherId: %d %s, want the voucher's 3 (2 lost notifications, 1 refund in flight)", r.Status, r.Body.Data)
			}
			for _, m := range listed {
				if m.Action == "" || (m.OutTradeNo != s.refund && m.OutTradeNo != s.trades["alipay"] && m.OutTradeNo != s.trades["wechat"]) {
					t.Errorf("listed %+v: not one of the voucher's, or no action", m)
				}
			}

			// Round 2: the command, on new situations.
			s2 := &situations{lost: map[string]*buyer{}, trades: map[string]string{}, stray: map[string]string{}, refund: s.refund}
			makeLost(t, a, vid, base+20, s2)
			env := fakepayenv.Load(t)
			vars := map[string]string{
				"SECKILL_PAY_PROVIDERS": "alipay,wechat", "SECKILL_PAY_NOTIFY_BASE_URL": a.url, "SECKILL_ENV": "development",
			}
			maps.Copy(vars, be)
			if vars["SECKILL_REDIS_ADDR"] == "" {
				_, vars["SECKILL_REDIS_ADDR"] = apptest.IntegrationEnv(t)
			}
			for k, v := range env {
				if strings.HasPrefix(k, "SECKILL_ALIPAY_") || strings.HasPrefix(k, "SECKILL_WECHATPAY_") {
					vars[k] = v
				}
			}
			var out, logs bytes.Buffer
			err = app.Run(ctx, []string{"reconcile-payments", "--date", today.In(time.FixedZone("CST", 8*3600)).Format(time.DateOnly),
				"--open-age", "0s", "--refund-bound", "0s"}, func(k string) string { return vars[k] }, &out, &logs)
			var exit *app.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != app.ReconcileExitMismatches {
				t.Errorf("reconcile-payments: %v, want exit status %d (mismatches); output:\n%s\n%s", err, app.ReconcileExitMismatches, out.String(), logs.String())
			}
			for _, e := range s2.expected() {
				line := fmt.Sprintf("%s %s out_trade_no=%s ", e[1], e[0], e[2])
				i := strings.Index(out.String(), line)
				if i < 0 {
					t.Errorf("the output has no line %q:\n%s", line, out.String())
					continue
				}
				block := out.String()[i:]
				if !strings.Contains(strings.SplitN(block, "\n", 4)[2], "what to do: ") {
					t.Errorf("%s: no 'what to do' line: %q", line, block)
				}
				if e[1] != "refund_in_flight" {
					if !strings.Contains(strings.SplitN(block, "\n", 2)[0], "[new]") {
						t.Errorf("%s: not new: %q", line, strings.SplitN(block, "\n", 2)[0])
					}
					if !strings.Contains(logs.String(), `"out_trade_no":"`+e[2]+`"`) {
						t.Errorf("no log line of the mismatch %s %s", e[1], e[2])
					}
				}
				if n := mismatchRows(t, a, e[0], e[1], e[2]); n != 1 {
					t.Errorf("%s %s %s: %d rows, want 1", e[0], e[1], e[2], n)
				}
			}
			if !strings.Contains(out.String(), "[recorded before]") || !strings.Contains(out.String(), "reconcile-payments "+today.In(time.FixedZone("CST", 8*3600)).Format(time.DateOnly)+": ") {
				t.Errorf("the output lacks the refund recorded before or the summary:\n%s", out.String())
			}
			for _, p := range providers {
				if o := get(t, a.h, s2.lost[p]); o.Status != "paid" {
					t.Errorf("%s: the command left the lost notification's order %+v, want paid", p, o)
				}
			}
		})
	}
}
