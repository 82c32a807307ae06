package apptest

// Requests through an app's handler. They cover the API envelope, tokens,
// the audit and the login codes. Admin calls publish shops and vouchers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/app"
	"seckill/auth"
	"seckill/config"
	"seckill/model"
	"seckill/observe/live"
	"seckill/repository/sqlstore"
	"seckill/service/account"
	"seckill/testkit/fakepayenv"
)

type Result struct {
	Status int
	Body   struct {
		Success  bool            `json:"success"`
		Code     string          `json:"code"`
		ErrorMsg string          `json:"errorMsg"`
		Data     json.RawMessage `json:"data"`
	}
}

func Call(t testing.TB, h http.Handler, method, path, token string, body any) Result {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var r Result
	r.Status = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &r.Body); err != nil {
		t.Errorf("%s %s: body %q is not an envelope: %v", method, path, rec.Body.String(), err)
	}
	return r
}

func DevTokens() *auth.Tokens { return auth.NewTokens(config.DevJWTSecret, time.Hour) }

// appDBs maps the handler of a test app to its own database, the embedded
// one (RegisterDB).
var appDBs sync.Map

// RegisterDB makes AdminToken find a's database from a.Handler() until the
// test ends.
func RegisterDB(t testing.TB, a *app.App) {
	appDBs.Store(a.Handler(), a.DB())
	t.Cleanup(func() { appDBs.Delete(a.Handler()) })
}

// appAdmins maps a handler that fronts a server of the test's own to an
// admin token. That server is not an app of this process. The token is from
// that server's database.
var appAdmins sync.Map

var sharedAdmin struct {
	once sync.Once
	tok  string
	err  error
}

// AdminToken returns a token of the admin test user. `seckill tokens
// --count 1 --admin` makes that user. Admin routes check its role in the
// database. The user is in the database of h's app when registered
// (RegisterDB). Otherwise it is in the shared MariaDB.
func AdminToken(t testing.TB, h http.Handler) string {
	t.Helper()
	ensure := func(db *sqlstore.DB) (string, error) {
		us, err := sqlstore.NewUsers(db).EnsureUsers(context.Background(),
			[]string{account.LoadTestPhone(model.RoleAdmin, 1)}, model.RoleAdmin, func(int) string { return "admin_1" })
		if err != nil {
			return "", err
		}
		return DevTokens().Issue(us[0].ID, model.RoleAdmin)
	}
	if h != nil && reflect.TypeOf(h).Comparable() {
		if tok, ok := appAdmins.Load(h); ok {
			return tok.(string)
		}
		if db, ok := appDBs.Load(h); ok {
			tok, err := ensure(db.(*sqlstore.DB))
			if err != nil {
				t.Fatalf("admin token: %v", err)
			}
			return tok
		}
	}
	dsn, _ := IntegrationEnv(t)
	sharedAdmin.once.Do(func() {
		db, err := sqlstore.OpenMySQL(context.Background(), dsn)
		if err != nil {
			sharedAdmin.err = err
			return
		}
		defer db.Close()
		if err := db.Migrate(context.Background()); err != nil {
			sharedAdmin.err = err
			return
		}
		sharedAdmin.tok, sharedAdmin.err = ensure(db)
	})
	if sharedAdmin.err != nil {
		t.Fatalf("admin token: %v", sharedAdmin.err)
	}
	return sharedAdmin.tok
}

func PublishVoucher(t testing.TB, h http.Handler, stock int) int64 {
	t.Helper()
	return PublishVoucherWith(t, h, stock, nil)
}

// PublishVoucherWith is PublishVoucher with more fields of the request
// (e.g. stockBuckets).
func PublishVoucherWith(t testing.TB, h http.Handler, stock int, more map[string]any) int64 {
	t.Helper()
	admin := AdminToken(t, h)
	body := map[string]any{
		"shopId": CreateShop(t, h), "title": "e2e", "payValue": 100, "actualValue": 200, "type": 1, "stock": stock,
		"beginTime": time.Now().Add(-time.Minute).Format(time.RFC3339),
		"endTime":   time.Now().Add(time.Hour).Format(time.RFC3339),
	}
	maps.Copy(body, more)
	return DataID(t, "publish", Call(t, h, http.MethodPost, "/voucher/seckill", admin, body))
}

// CreateShop creates a shop through POST /shop (a voucher must name one)
// and returns its id.
func CreateShop(t testing.TB, h http.Handler) int64 {
	t.Helper()
	admin := AdminToken(t, h)
	r := Call(t, h, http.MethodPost, "/shop", admin, map[string]any{
		"name": "test shop", "typeId": 1, "address": "test street 1", "x": 120.15, "y": 30.28,
	})
	return DataID(t, "create shop", r)
}

// DataID reads a positive id from a success answer's data, a JSON number
// or a string of digits. what names the call when it fails the test.
func DataID(t testing.TB, what string, r Result) int64 {
	t.Helper()
	if r.Status != http.StatusOK || !r.Body.Success {
		t.Fatalf("%s: got %d %s %s", what, r.Status, r.Body.Code, r.Body.ErrorMsg)
	}
	id, err := strconv.ParseInt(strings.Trim(string(r.Body.Data), `"`), 10, 64)
	if err != nil || id <= 0 {
		t.Fatalf("%s: data %s is not an id", what, r.Body.Data)
	}
	return id
}

// AuditResult is the audit endpoint's data.
type AuditResult struct {
	InitialStock int    `json:"initialStock"`
	Stock        int    `json:"stock"`
	Orders       int64  `json:"orders"`
	Unpaid       int64  `json:"unpaid"`
	Paid         int64  `json:"paid"`
	Used         int64  `json:"used"`
	Refunding    int64  `json:"refunding"`
	Refunded     int64  `json:"refunded"`
	Cancelled    int64  `json:"cancelled"`
	Expired      int64  `json:"expired"`
	GivebacksDue *int64 `json:"givebacksDue"`
	// Payments is the sale's money at the providers (fen), when one is on.
	Payments *struct {
		Taken       int64 `json:"taken"`
		Refunded    int64 `json:"refunded"`
		Late        int64 `json:"late"`
		RefundsOwed int64 `json:"refundsOwed"`
	} `json:"payments"`
	Distinct   int64  `json:"distinctUsers"`
	DupRejs    int64  `json:"duplicateRejections"`
	Oversold   bool   `json:"oversold"`
	Consistent bool   `json:"consistent"`
	RedisStock *int64 `json:"redisStock"`
	Pending    *int64 `json:"pending"`
}

func Audit(t testing.TB, h http.Handler, vid int64) AuditResult {
	t.Helper()
	admin := AdminToken(t, h)
	r := Call(t, h, http.MethodGet, fmt.Sprintf("/admin/vouchers/%d/audit", vid), admin, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("audit: got %d %s, want 200", r.Status, r.Body.Code)
	}
	var a AuditResult
	if err := json.Unmarshal(r.Body.Data, &a); err != nil {
		t.Fatalf("audit: %v (%s)", err, r.Body.Data)
	}
	if a.RedisStock == nil || a.Pending == nil {
		t.Fatalf("audit in async mode: got %s, want redisStock and pending", r.Body.Data)
	}
	return a
}

// CounterValue reads a counter from the app's /metrics.
func CounterValue(t *testing.T, a *app.App, name string) float64 {
	t.Helper()
	mfs, err := a.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// LabeledCounterValue reads the counter of name with labels from the app's
// registry; 0 when no such series was counted yet.
func LabeledCounterValue(t *testing.T, a *app.App, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := a.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// UseAdminToken makes AdminToken answer tok for h until the test ends. h
// fronts a server of the test's own, not an app of this process. h must be
// comparable (a pointer).
func UseAdminToken(t testing.TB, h http.Handler, tok string) {
	appAdmins.Store(h, tok)
	t.Cleanup(func() { appAdmins.Delete(h) })
}

// CodeAnswer is an answer of the code flow with its Retry-After header.
type CodeAnswer struct {
	Result
	RetryAfter string
}

// Post sends POST path with body from the peer remote (host:port) with the
// X-Forwarded-For header xff ("" = none).
func Post(t testing.TB, h http.Handler, path, remote, xff string, body any) CodeAnswer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, JSONBody(t, body))
	req.RemoteAddr = remote
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := CodeAnswer{RetryAfter: rec.Header().Get("Retry-After")}
	a.Status = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &a.Body); err != nil {
		t.Errorf("POST %s: body %q is not an envelope: %v", path, rec.Body.String(), err)
	}
	return a
}

// JSONBody is body in JSON to send, an empty body for nil.
func JSONBody(t testing.TB, body any) *strings.Reader {
	t.Helper()
	if body == nil {
		return strings.NewReader("")
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReader(string(b))
}

// SendCode asks for a login code for phone from the peer remote.
func SendCode(t testing.TB, h http.Handler, phone, remote string) CodeAnswer {
	t.Helper()
	return Post(t, h, "/user/code?phone="+phone, remote, "", nil)
}

// Login logs phone in with code from the peer remote.
func Login(t testing.TB, h http.Handler, phone, code, remote string) CodeAnswer {
	t.Helper()
	return Post(t, h, "/user/login", remote, "", map[string]string{"phone": phone, "code": code})
}

// Settle waits for a snapshot for which ok holds and returns it. Within 15
// s it fails and returns the last one seen.
func Settle(t *testing.T, name string, ch <-chan live.Snapshot, ok func(live.Snapshot) bool) live.Snapshot {
	t.Helper()
	deadline := time.After(15 * time.Second)
	var last live.Snapshot
	for {
		select {
		case s, open := <-ch:
			if !open {
				t.Fatalf("%s: the stream ended", name)
			}
			last = s
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("%s: no snapshot settled within 15s; last: answers %v, requests %d, audit %+v", name, last.Answers, last.Requests, last.Audit)
			return last
		}
	}
}

// ProductionPay is the pay settings a production app needs to start (it
// refuses the simulated payment): Alipay with the keys of the fake
// providers of SECKILL_TEST_FAKEPAY, at Alipay's own https gateway, which
// the production tests never call (they pay nothing).
func ProductionPay(t testing.TB) map[string]string {
	t.Helper()
	fake := fakepayenv.Load(t)
	return map[string]string{
		"SECKILL_PAY_PROVIDERS": "alipay", "SECKILL_PAY_NOTIFY_BASE_URL": "https://shop.example.test",
		"SECKILL_ALIPAY_APP_ID":           fake["SECKILL_ALIPAY_APP_ID"],
		"SECKILL_ALIPAY_PRIVATE_KEY_FILE": fake["SECKILL_ALIPAY_PRIVATE_KEY_FILE"],
		"SECKILL_ALIPAY_PUBLIC_KEY_FILE":  fake["SECKILL_ALIPAY_PUBLIC_KEY_FILE"],
	}
}
