// Package payments proves the real-money path end to end against the fake
// providers (tools/cmd/fakepay, started by `make test` through
// SECKILL_TEST_FAKEPAY): only a verified notification, or the sweeper's
// query, pays an order; a late payment is refunded once and never takes
// its unit back; a provider that cannot be reached keeps the order.
package payments

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/testkit/fakepayenv"
)

// modes are the order modes every test runs in.
var modes = []string{"sync", "async"}

// payApp is an app serving HTTP on loopback (the providers post their
// notifications to it) with both real providers enabled, against the fake.
type payApp struct {
	*app.App
	h   http.Handler
	url string
}

// backends are one test's private database (and, async, Redis): the
// sweepers expire only this test's orders.
type backends map[string]string

func newBackends(t *testing.T, mode string) backends {
	t.Helper()
	env := backends{}
	if mode == "async" {
		m, _, dsn, _ := apptest.PrivateBackends(t)
		env["SECKILL_REDIS_ADDR"], env["SECKILL_MYSQL_DSN"] = m.Addr(), dsn
	} else {
		env["SECKILL_MYSQL_DSN"], _ = apptest.FreshDatabase(t)
	}
	return env
}

// startPayApp starts an app of mode on the backends with a pay timeout.
func startPayApp(t *testing.T, mode string, b backends, payTimeout time.Duration, extra map[string]string) *payApp {
	t.Helper()
	fake := fakepayenv.Load(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for k, v := range fake {
		if k != "SECKILL_TEST_FAKEPAY_URL" {
			env[k] = v
		}
	}
	maps.Copy(env, b)
	env["SECKILL_PAY_PROVIDERS"] = "alipay,wechat"
	env["SECKILL_PAY_NOTIFY_BASE_URL"] = "http://" + ln.Addr().String()
	env["SECKILL_PAY_TIMEOUT"] = payTimeout.String()
	maps.Copy(env, extra)
	a := apptest.StartMode(t, mode, env)
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &payApp{App: a, h: a.Handler(), url: env["SECKILL_PAY_NOTIFY_BASE_URL"]}
}

// buyer is one user with an order.
type buyer = apptest.Buyer

// order is the order's JSON as the buyer reads it.
type order struct {
	ID           string     `json:"id"`
	Status       string     `json:"status"`
	PayType      string     `json:"payType"`
	PayAmount    *int64     `json:"payAmount"`
	PayTime      *time.Time `json:"payTime"`
	RefundReason string     `json:"refundReason"`
	RefundTime   *time.Time `json:"refundTime"`
}

// checkout is the pay call's answer.
type checkout struct {
	Provider    string    `json:"provider"`
	OutTradeNo  string    `json:"outTradeNo"`
	QRCode      string    `json:"qrCode"`
	PayURL      string    `json:"payUrl"`
	PayDeadline time.Time `json:"payDeadline"`
}

// buy buys one unit of the voucher for a new user and waits until the
// order is written.
func buy(t *testing.T, h http.Handler, vid, user int64) *buyer {
	t.Helper()
	return apptest.Buy(t, h, vid, user, 0)
}

// buyAgain buys a unit given back: in async mode Redis takes an expired
// order's unit back a moment after the database, so SOLD_OUT is retried
// for up to 15 s.
func buyAgain(t *testing.T, h http.Handler, vid, user int64) *buyer {
	t.Helper()
	return apptest.Buy(t, h, vid, user, 15*time.Second)
}

// get reads the buyer's order.
func get(t *testing.T, h http.Handler, b *buyer) order {
	t.Helper()
	var o order
	b.Read(t, h, &o)
	return o
}

// waitOrder polls the order until ok holds (at most 30 s).
func waitOrder(t *testing.T, h http.Handler, b *buyer, ok func(order) bool, what string) order {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		o := get(t, h, b)
		if ok(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s not %s after 30 s: %+v", b.Order, what, o)
		}
	}
}

// pay asks for the order's trade at provider.
func pay(t *testing.T, h http.Handler, b *buyer, provider string) (checkout, apptest.Result) {
	t.Helper()
	r := apptest.Call(t, h, http.MethodPost, "/voucher-order/"+b.Order+"/pay", b.Token, map[string]string{"provider": provider})
	var c checkout
	if r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body.Data, &c); err != nil {
			t.Fatal(err)
		}
	}
	return c, r
}

// mustPay is pay that must answer a QR code.
func mustPay(t *testing.T, h http.Handler, b *buyer, provider string) checkout {
	t.Helper()
	c, r := pay(t, h, b, provider)
	if r.Status != http.StatusOK || c.QRCode == "" || c.OutTradeNo == "" || c.Provider != provider {
		t.Fatalf("pay with %s: %d %s %s", provider, r.Status, r.Body.Code, r.Body.Data)
	}
	return c
}

// price is the vouchers' pay value in fen: ¥12.34, so that a yuan string
// off by a cent or a float rounding would show.
const price = 1234

// publish publishes a voucher of stock units at price and returns its id.
func publish(t *testing.T, h http.Handler, stock int) int64 {
	t.Helper()
	return apptest.PublishVoucherWith(t, h, stock, map[string]any{"payValue": price, "actualValue": 2000})
}

// The fake's control API, typed for these tests (fakepayenv answers the
// decoded JSON).

// fakeTrade is a trade as the fake keeps it.
type fakeTrade struct {
	OutTradeNo string `json:"outTradeNo"`
	State      string `json:"state"`
	Amount     int64  `json:"amount"`
	Refunds    []struct {
		OutRefundNo string `json:"outRefundNo"`
		State       string `json:"state"`
		Amount      int64  `json:"amount"`
		Calls       int    `json:"calls"`
	} `json:"refunds"`
}

// delivery is one POST of a notification by the fake.
type delivery struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// message is a notification the test holds and sends itself.
type message struct {
	header http.Header
	body   []byte
}

// recast decodes a control answer's JSON value into out.
func recast(t testing.TB, v any, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fakeTrades are the fake's trades of one number.
func fakeTrades(t testing.TB, provider, outTradeNo string) []fakeTrade {
	t.Helper()
	var out []fakeTrade
	recast(t, fakepayenv.Trades(t, fakepayenv.Load(t), provider, outTradeNo), &out)
	return out
}

// fakePay pays the trade at the fake and answers its deliveries.
func fakePay(t testing.TB, provider, outTradeNo, notify string, late bool) []delivery {
	t.Helper()
	var out []delivery
	recast(t, fakepayenv.Pay(t, fakepayenv.Load(t), provider, outTradeNo, notify, late)["deliveries"], &out)
	return out
}

// fakeTryPay pays the trade as a buyer would, notifying twice: false
// when the provider refuses (the trade is closed or past its expiry).
func fakeTryPay(t testing.TB, provider, outTradeNo string) bool {
	t.Helper()
	code, out := fakepayenv.Control(t, fakepayenv.Load(t), http.MethodPost, "/control/"+provider+"/pay",
		url.Values{"out_trade_no": {outTradeNo}, "notify": {"twice"}})
	if code != http.StatusOK && code != http.StatusConflict {
		t.Errorf("pay %s at %s: %d %v", outTradeNo, provider, code, out)
	}
	return code == http.StatusOK
}

// fakeNotify sends the trade's current notification again.
func fakeNotify(t testing.TB, provider, outTradeNo string) []delivery {
	t.Helper()
	var out []delivery
	recast(t, fakepayenv.Notify(t, fakepayenv.Load(t), provider, outTradeNo, "")["deliveries"], &out)
	return out
}

// fakeNotification builds the trade's notification, tampered by q.
func fakeNotification(t testing.TB, provider, outTradeNo string, q url.Values) message {
	t.Helper()
	h, b := fakepayenv.Notification(t, fakepayenv.Load(t), provider, outTradeNo, q)
	return message{header: h, body: b}
}

// fakeDown takes the provider down or up.
func fakeDown(t testing.TB, provider string, on bool) {
	t.Helper()
	fakepayenv.Down(t, fakepayenv.Load(t), provider, on)
}

// audit reads the voucher's audit in either mode (apptest.Audit wants
// async mode's Redis figures).
func audit(t *testing.T, h http.Handler, vid int64) apptest.AuditResult {
	t.Helper()
	r := apptest.Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), apptest.AdminToken(t, h), nil)
	var a apptest.AuditResult
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &a) != nil {
		t.Fatalf("audit: %d %s", r.Status, r.Body.Data)
	}
	return a
}

// paidTrade names a trade at a provider.
type paidTrade struct{ provider, outTradeNo string }

// providerMoney is what the providers' own books (the fake's) say of the
// trades: the money taken by those paid and given back by refunds done.
func providerMoney(t *testing.T, trades []paidTrade) (taken, refunded int64) {
	t.Helper()
	for _, tr := range trades {
		ft := fakeTrades(t, tr.provider, tr.outTradeNo)[0]
		if ft.State == "paid" {
			taken += ft.Amount
		}
		for _, r := range ft.Refunds {
			if r.State == "done" {
				refunded += r.Amount
			}
		}
	}
	return taken, refunded
}
