package wechat

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"seckill/model"
)

func with(res map[string]any, key string, v any) map[string]any {
	res[key] = v
	return res
}

// TestVerifyAccepts: a trade's paid notification and each refund event,
// signed by WeChat Pay's key, parse into the notice they say.
func TestVerifyAccepts(t *testing.T) {
	p := newTestProvider(t, testConfig(t))
	h, body := note{event: "TRANSACTION.SUCCESS", resource: trade()}.build(t)
	got, err := p.Verify(context.Background(), h, body)
	if err != nil {
		t.Fatal(err)
	}
	want := model.PayNotice{
		Kind: model.NoticeTrade, OutTradeNo: testOrder, ProviderTradeNo: "4200000000000000000000000001",
		Trade: model.TradePaid, Amount: 1234, Currency: "CNY",
		At: time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC),
	}
	if !got.At.Equal(want.At) {
		t.Errorf("At = %v, want %v", got.At, want.At)
	}
	got.At = want.At
	if got != want {
		t.Errorf("notice = %+v, want %+v", got, want)
	}

	for event, state := range map[string]model.RefundState{
		"REFUND.SUCCESS": model.RefundDone, "REFUND.ABNORMAL": model.RefundFailed, "REFUND.CLOSED": model.RefundFailed,
	} {
		status := map[string]string{"REFUND.SUCCESS": "SUCCESS", "REFUND.ABNORMAL": "ABNORMAL", "REFUND.CLOSED": "CLOSED"}[event]
		h, body := note{event: event, resource: refund(status)}.build(t)
		got, err := p.Verify(context.Background(), h, body)
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		if got.Kind != model.NoticeRefund || got.Refund != state || got.OutRefundNo != "R1" ||
			got.OutTradeNo != testOrder || got.Amount != 1234 || got.Currency != "CNY" {
			t.Errorf("%s: notice = %+v, want a refund R1 of %s, %s", event, got, testOrder, state)
		}
	}
}

// TestVerifyRejects: every notification that fails a check is rejected
// with that check's reason, whatever else it carries.
func TestVerifyRejects(t *testing.T) {
	k := keys(t)
	otherAPIv3 := bytes.Repeat([]byte("k"), 32)
	now := time.Now()
	cases := []struct {
		name, reason string
		n            note
	}{
		{"signed by another key", "signature", note{event: "TRANSACTION.SUCCESS", resource: trade(), key: k.other}},
		{"another key's serial", "signature", note{event: "TRANSACTION.SUCCESS", resource: trade(), serial: "PUB_KEY_ID_OTHER"}},
		{"altered after signing", "signature", note{event: "TRANSACTION.SUCCESS", resource: trade(),
			alter: func(b []byte) []byte {
				return bytes.Replace(b, []byte("payment succeeded"), []byte("payment succeedeD"), 1)
			}}},
		{"signed 6 minutes ago", "stale", note{event: "TRANSACTION.SUCCESS", resource: trade(), at: now.Add(-6 * time.Minute)}},
		{"signed 6 minutes ahead", "stale", note{event: "TRANSACTION.SUCCESS", resource: trade(), at: now.Add(6 * time.Minute)}},
		{"another merchant", "app", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "mchid", "1900000002")}},
		{"another app", "app", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "appid", "wx0000000000000002")}},
		{"a refund of another merchant", "app", note{event: "REFUND.SUCCESS", resource: with(refund("SUCCESS"), "mchid", "1900000002")}},
		{"in USD", "currency", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "amount",
			map[string]any{"total": 1234, "currency": "USD"})}},
		{"no currency", "currency", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "amount", map[string]any{"total": 1234})}},
		{"not JSON", "malformed", note{body: []byte("total=1234")}},
		{"encrypted under another APIv3 key", "malformed", note{event: "TRANSACTION.SUCCESS", resource: trade(), apiV3: otherAPIv3}},
		{"an unknown event", "malformed", note{event: "TRANSACTION.REFUSED", resource: trade()}},
		{"no out_trade_no", "malformed", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "out_trade_no", "")}},
		{"no amount", "malformed", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "amount", nil)}},
		{"a paid event of an unpaid trade", "malformed", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "trade_state", "NOTPAY")}},
		{"a refund event with another status", "malformed", note{event: "REFUND.SUCCESS", resource: refund("ABNORMAL")}},
		{"a refund without its number", "malformed", note{event: "REFUND.SUCCESS", resource: with(refund("SUCCESS"), "out_refund_no", "")}},
		{"a bad success_time", "malformed", note{event: "TRANSACTION.SUCCESS", resource: with(trade(), "success_time", "yesterday")}},
	}
	p := newTestProvider(t, testConfig(t))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, body := c.n.build(t)
			expectRejected(t, p, h, body, c.reason)
		})
	}
	t.Run("no timestamp", func(t *testing.T) {
		h, body := note{event: "TRANSACTION.SUCCESS", resource: trade()}.build(t)
		h.Del("Wechatpay-Timestamp")
		expectRejected(t, p, h, body, "malformed")
	})
	t.Run("no signature", func(t *testing.T) {
		h, body := note{event: "TRANSACTION.SUCCESS", resource: trade()}.build(t)
		h.Del("Wechatpay-Signature")
		expectRejected(t, p, h, body, "signature")
	})
}

// TestVerifyStaleByNow: the timestamp is checked against the provider's
// clock, not only the SDK's time.Now: a notification signed now is stale
// for a clock 6 minutes ahead.
func TestVerifyStaleByNow(t *testing.T) {
	cfg := testConfig(t)
	cfg.Now = func() time.Time { return time.Now().Add(6 * time.Minute) }
	p := newTestProvider(t, cfg)
	h, body := note{event: "TRANSACTION.SUCCESS", resource: trade()}.build(t)
	expectRejected(t, p, h, body, "stale")

	cfg.Now = func() time.Time { return time.Now().Add(4 * time.Minute) }
	if _, err := newTestProvider(t, cfg).Verify(context.Background(), h, body); err != nil {
		t.Errorf("4 minutes after signing: %v, want it accepted", err)
	}
}

func expectRejected(t *testing.T, p *Provider, h map[string][]string, body []byte, reason string) {
	t.Helper()
	got, err := p.Verify(context.Background(), h, body)
	var re *model.NoticeRejectedError
	if !errors.As(err, &re) || !errors.Is(err, model.ErrNoticeRejected) {
		t.Fatalf("Verify = %+v, %v; want rejected for %s", got, err, reason)
	}
	if re.Reason != reason {
		t.Fatalf("rejected for %s (%s), want %s", re.Reason, re.Detail, reason)
	}
}
