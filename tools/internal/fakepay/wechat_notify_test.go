package fakepay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wechatpay-apiv3/wechatpay-go/core/auth/verifiers"
	"github.com/wechatpay-apiv3/wechatpay-go/core/notify"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments/native"
)

// parsed is what the SDK's notify handler makes of a notification.
type parsed struct {
	event string
	res   map[string]any
	err   error
}

// sdkParse runs the SDK's notify handler (the platform public key under
// its ID, the APIv3 key) over a notification.
func sdkParse(t *testing.T, k *Keys, h http.Header, body []byte) parsed {
	t.Helper()
	handler, err := notify.NewRSANotifyHandler(string(k.WechatAPIv3Key),
		verifiers.NewSHA256WithRSAPubkeyVerifier(k.WechatPublicKeyID, k.WechatPlatform.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/notify", bytes.NewReader(body))
	req.Header = h.Clone()
	res := map[string]any{}
	n, err := handler.ParseNotifyRequest(context.Background(), req, &res)
	if err != nil {
		return parsed{err: err}
	}
	return parsed{event: n.EventType, res: res}
}

// paidTrade creates and pays a trade in the fake's store.
func paidTrade(t *testing.T, s *Server, no string, amount int64) Trade {
	t.Helper()
	st := s.Core().Store
	if _, err := st.Create(Trade{Provider: wechatName, OutTradeNo: no, Subject: "v", NotifyURL: "http://127.0.0.1:1/n", Amount: amount}, time.Now()); err != nil {
		t.Fatal(err)
	}
	tr, err := st.Pay(wechatName, no, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestWechatNotification: a paid trade's notification passes the SDK's
// handler and says TRANSACTION.SUCCESS with the trade's fields; each
// tamper shows: signed properly with another amount, app, time or trade
// number; refused by the SDK when signed by another key or altered after
// signing. Refunds: done is REFUND.SUCCESS, failed REFUND.ABNORMAL, a
// processing one has none, nor has an unpaid trade.
func TestWechatNotification(t *testing.T) {
	s := startWechat(t)
	k := s.Core().Keys
	w := s.providers[wechatName]
	tr := paidTrade(t, s, "N1", 1234)

	h, body, err := w.Notification(&tr, nil, Tamper{})
	if err != nil {
		t.Fatal(err)
	}
	p := sdkParse(t, k, h, body)
	if p.err != nil || p.event != "TRANSACTION.SUCCESS" || p.res["out_trade_no"] != "N1" || p.res["appid"] != WechatAppID ||
		p.res["mchid"] != WechatMchID || p.res["trade_state"] != "SUCCESS" || p.res["transaction_id"] != tr.TradeNo {
		t.Fatalf("the true notification: %+v", p)
	}
	if amount := p.res["amount"].(map[string]any); amount["total"] != 1234.0 || amount["currency"] != "CNY" {
		t.Errorf("amount %v, want 1234 CNY", amount)
	}
	if ts := h.Get("Wechatpay-Timestamp"); ts != strconv.FormatInt(time.Now().Unix(), 10) && ts != strconv.FormatInt(time.Now().Unix()-1, 10) {
		t.Errorf("Wechatpay-Timestamp %s, want now", ts)
	}

	at := time.Now().Add(-2 * time.Minute)
	for name, c := range map[string]struct {
		tm    Tamper
		field string
		want  any
	}{
		"amount":       {Tamper{Amount: 1}, "amount.total", 1.0},
		"app":          {Tamper{AppID: "wx_other"}, "appid", "wx_other"},
		"trade number": {Tamper{OutTradeNo: "N2"}, "out_trade_no", "N2"},
		"time":         {Tamper{Time: at}, "timestamp", strconv.FormatInt(at.Unix(), 10)},
	} {
		h, body, err := w.Notification(&tr, nil, c.tm)
		if err != nil {
			t.Fatal(err)
		}
		p := sdkParse(t, k, h, body)
		if p.err != nil {
			t.Errorf("%s: the SDK refused it: %v; want it signed properly", name, p.err)
			continue
		}
		got := map[string]any{"amount.total": nil, "appid": p.res["appid"], "out_trade_no": p.res["out_trade_no"], "timestamp": h.Get("Wechatpay-Timestamp")}
		if a, ok := p.res["amount"].(map[string]any); ok {
			got["amount.total"] = a["total"]
		}
		if got[c.field] != c.want {
			t.Errorf("%s: %s = %v, want %v", name, c.field, got[c.field], c.want)
		}
	}
	for name, tm := range map[string]Tamper{"wrong key": {WrongKey: true}, "altered": {Alter: true}} {
		h, body, err := w.Notification(&tr, nil, tm)
		if err != nil {
			t.Fatal(err)
		}
		if p := sdkParse(t, k, h, body); p.err == nil {
			t.Errorf("%s: the SDK accepted %+v", name, p)
		}
	}

	st := s.Core().Store
	for mode, event := range map[string]string{ModeOK: "REFUND.SUCCESS", ModeFail: "REFUND.ABNORMAL"} {
		if err := st.SetRefundMode(wechatName, mode); err != nil {
			t.Fatal(err)
		}
		tr, ref, err := st.Refund(wechatName, "N1", Refund{OutRefundNo: "NR-" + mode, Amount: 100}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		h, body, err := w.Notification(&tr, &ref, Tamper{})
		if err != nil {
			t.Fatal(err)
		}
		p := sdkParse(t, k, h, body)
		if p.err != nil || p.event != event || p.res["out_refund_no"] != "NR-"+mode || p.res["out_trade_no"] != "N1" {
			t.Errorf("refund %s: %+v; want %s", mode, p, event)
		}
	}
	_ = st.SetRefundMode(wechatName, ModeProcessing)
	tr, ref, _ := st.Refund(wechatName, "N1", Refund{OutRefundNo: "NR-p", Amount: 100}, time.Now())
	if _, _, err := w.Notification(&tr, &ref, Tamper{}); err == nil {
		t.Error("a processing refund has a notification")
	}
	open, _ := st.Create(Trade{Provider: wechatName, OutTradeNo: "N3", Amount: 5, NotifyURL: "http://127.0.0.1:1/n"}, time.Now())
	if _, _, err := w.Notification(&open, nil, Tamper{}); err == nil {
		t.Error("an unpaid trade has a notification")
	}
}

// TestWechatDelivery: the control API pays a trade and posts its
// notification to its loopback notify_url, twice at once when asked; the
// receiver verifies it with the SDK. The API answers 503 while down.
func TestWechatDelivery(t *testing.T) {
	s := startWechat(t)
	k := s.Core().Keys
	var got atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if p := sdkParse(t, k, r.Header, body); p.err != nil || p.res["out_trade_no"] != "D1" {
			t.Errorf("delivered: %+v", p)
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		got.Add(1)
		rw.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	c := merchantClient(t, s)
	if _, _, err := (&nativeAPI{Client: c}).Prepay(context.Background(), prepay("D1", 700, recv.URL+"/pay/notify/wechat")); err != nil {
		t.Fatal(err)
	}
	out := wxControl(t, s, http.MethodPost, "/control/wechat/pay?out_trade_no=D1&notify=twice")
	ds, _ := json.Marshal(out["deliveries"])
	if got.Load() != 2 {
		t.Errorf("received %d notifications, want 2; deliveries %s", got.Load(), ds)
	}

	wxControl(t, s, http.MethodPost, "/control/wechat/down?on=1")
	_, err := queryTrade(t, nativeAPI{Client: c}, "D1")
	wantAPIError(t, "query while down", err, http.StatusServiceUnavailable, "")
	wxControl(t, s, http.MethodPost, "/control/wechat/down?on=0")
	if tx, err := queryTrade(t, nativeAPI{Client: c}, "D1"); err != nil || *tx.TradeState != "SUCCESS" {
		t.Errorf("query when up again: %+v, %v", tx, err)
	}
}

// nativeAPI is the SDK's Native pay service.
type nativeAPI = native.NativeApiService
