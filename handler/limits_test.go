package handler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/handler"
	"seckill/middleware"
	"seckill/model"
	"seckill/service/sale"
)

// TestOversizedUploadLeavesNoFile: a large multipart upload leaves no temporary
// file behind. It is larger than gin's in-memory form limit (32 MiB), sent to
// routes that take no form. With a declared length it is refused before it is
// read. Sent chunked, it is cut at the limit.
func TestOversizedUploadLeavesNoFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where mime/multipart spills large parts
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	const size = 40 << 20
	for _, path := range []string{"/user/code", "/user/code?phone=13800000007", "/user/login", "/voucher/seckill", "/no/such/route"} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s chunked=%v", path, chunked), func(t *testing.T) {
				body, ctype := multipartOf(t, size)
				var rd io.Reader = body
				if chunked {
					rd = io.MultiReader(body) // hides the length: sent chunked
				}
				req, err := http.NewRequest(http.MethodPost, srv.URL+path, rd)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("content-type", ctype)
				req.Header.Set("authorization", e.adminTok)
				resp, err := srv.Client().Do(req)
				if err != nil {
					// The server may close the connection before the
					// client has written the whole body.
					t.Logf("upload ended by the server: %v", err)
					return
				}
				defer resp.Body.Close()
				switch {
				case !chunked && resp.StatusCode != http.StatusBadRequest:
					t.Errorf("status: got %d, want 400 (the declared length is over the limit)", resp.StatusCode)
				case resp.StatusCode >= 500:
					t.Errorf("status: got %d, want no 5xx", resp.StatusCode)
				}
			})
		}
	}
	srv.Close() // the server has removed what it would remove
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		info, _ := de.Info()
		t.Errorf("left on disk: %s (%d bytes)", de.Name(), info.Size())
	}
}

// multipartOf returns a multipart body with one file part of size bytes.
func multipartOf(t *testing.T, size int) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, err := w.CreateFormFile("f", "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteField("phone", "13800000007"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &b, w.FormDataContentType()
}

// TestBodyOverLimitRefused: a JSON body over 64 KiB is INVALID_ARGUMENT,
// declared or not.
func TestBodyOverLimitRefused(t *testing.T) {
	e := newEnv(t)
	big := `{"phone":"13800000007","code":"` + strings.Repeat("1", 70<<10) + `"}`
	r := e.do(http.MethodPost, "/user/login", big, "")
	assertError(t, r, http.StatusBadRequest, handler.CodeInvalidArgument)
	if got, want := r.str("errorMsg"), "invalid body: larger than 64 KiB"; got != want {
		t.Errorf("errorMsg: got %q, want %q", got, want)
	}
}

// TestLongAuthorizationRefused: a signed token made longer than MaxAuthorization
// by an extra claim is refused without being decoded. The same token without
// the padding is accepted.
func TestLongAuthorizationRefused(t *testing.T) {
	e := newEnv(t)
	sign := func(pad int) string {
		claims := jwt.MapClaims{
			"uid": 7, "role": "user", "iss": "seckill", "sub": "7",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
		}
		if pad > 0 {
			claims["pad"] = strings.Repeat("a", pad)
		}
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testSecret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	assertOK(t, e.do(http.MethodGet, "/user/me", "", sign(0)))
	long := sign(middleware.MaxAuthorization)
	if len(long) <= middleware.MaxAuthorization {
		t.Fatalf("token of %d bytes, want over %d", len(long), middleware.MaxAuthorization)
	}
	assertError(t, e.do(http.MethodGet, "/user/me", "", long), http.StatusUnauthorized, handler.CodeUnauthorized)
	assertError(t, e.do(http.MethodGet, "/user/me", "", "Bearer "+strings.Repeat("x", 900<<10)), http.StatusUnauthorized, handler.CodeUnauthorized)
}

// TestPurchaseLimited: a purchase over a limit is 429 RATE_LIMITED with
// Retry-After in seconds. The limit sees the peer's address, or the
// X-Forwarded-For client behind a trusted proxy. A malformed id passes the
// limits and is refused by the route.
func TestPurchaseLimited(t *testing.T) {
	limits := newFakeLimits(1)
	e := newEnv(t, func(d *handler.Deps) {
		d.Limits = limits
		d.TrustedProxies = []string{"10.0.0.0/8"}
	})
	send := func(path, peer, xff string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req.RemoteAddr = peer + ":4000"
		req.Header.Set("X-Forwarded-For", xff)
		req.Header.Set("authorization", e.userTok)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	if rec := send("/voucher-order/seckill/3", "10.1.2.3", "203.0.113.9"); rec.Code != http.StatusOK {
		t.Fatalf("first purchase: got %d %s, want 200", rec.Code, rec.Body)
	}
	rec := send("/voucher-order/seckill/3", "198.51.100.7", "203.0.113.9")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"RATE_LIMITED"`) {
		t.Errorf("second purchase: got %d %s, want 429 RATE_LIMITED", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After: got %q, want \"2\" (1.5s rounded up)", got)
	}
	if rec := send("/voucher-order/seckill/x", "198.51.100.7", ""); rec.Code != http.StatusBadRequest {
		t.Errorf("malformed id: got %d, want 400", rec.Code)
	}
	want := "[203.0.113.9 198.51.100.7]"
	if got := fmt.Sprint(limits.addrs); got != want {
		t.Errorf("addresses counted: got %s, want %s (the trusted proxy's client, then the untrusted peer)", got, want)
	}
}

// downLimiter is a limits store whose Redis cannot be reached.
type downLimiter struct{}

func (downLimiter) AllowAddr(context.Context, string, model.Limit) (bool, time.Duration, error) {
	return false, 0, model.Unavailable(errors.New("dial tcp 127.0.0.1:6379: connect: connection refused"))
}
func (d downLimiter) AllowUser(ctx context.Context, _ int64, l model.Limit) (bool, time.Duration, error) {
	return d.AllowAddr(ctx, "", l)
}
func (d downLimiter) AllowVoucher(ctx context.Context, _ int64, l model.Limit) (bool, time.Duration, error) {
	return d.AllowAddr(ctx, "", l)
}

// TestPurchaseLimitsRedisDown: with every limit on and their Redis
// unreachable, purchases of three vouchers go through (the limits fail
// open), never a 500, and each unchecked limit is counted.
func TestPurchaseLimitsRedisDown(t *testing.T) {
	var unchecked []string
	limits := sale.NewPurchaseLimits(downLimiter{}, sale.PurchaseLimitConfig{
		PerUser: 1, PerVoucher: 1, PerAddr: 1,
		Failed: func(l string) { unchecked = append(unchecked, l) },
	}, slog.New(slog.DiscardHandler))
	e := newEnv(t, func(d *handler.Deps) { d.Limits = limits })
	for i := range 3 {
		if r := e.do(http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", 3+i), "", e.userTok); r.status != http.StatusOK {
			t.Fatalf("purchase %d with the limits' Redis down: got %d %s, want 200", i+1, r.status, r.body)
		}
	}
	if got := fmt.Sprint(unchecked); got != "[addr user voucher addr user voucher addr user voucher]" {
		t.Errorf("unchecked: got %s, want each limit of each purchase", got)
	}
}

// localRefuser is a Sale that refuses voucher 4 from memory, sold out.
type localRefuser struct{ *fakeSale }

func (localRefuser) Refusal(voucherID int64) error {
	if voucherID == 4 {
		return model.ErrSoldOut
	}
	return nil
}

// TestPurchaseLimitsSkipLocalRefusals: a purchase the route refuses from
// memory (a sold-out voucher) is not counted against the limits: a user
// over their limit still learns SOLD_OUT, and the limits are asked only for
// the voucher on sale.
func TestPurchaseLimitsSkipLocalRefusals(t *testing.T) {
	limits := newFakeLimits(1)
	seck := &fakeSale{buy: func(_ context.Context, _, voucherID int64) (int64, error) {
		if voucherID == 4 {
			return 0, model.ErrSoldOut
		}
		return 1, nil
	}}
	e := newEnv(t, func(d *handler.Deps) {
		d.Limits = limits
		d.Seckill = localRefuser{seck}
	})
	for i := range 3 {
		assertError(t, e.do(http.MethodPost, "/voucher-order/seckill/4", "", e.userTok), http.StatusConflict, handler.CodeSoldOut)
		if i == 0 {
			assertOK(t, e.do(http.MethodPost, "/voucher-order/seckill/3", "", e.userTok))
		}
	}
	if got := len(limits.addrs); got != 1 {
		t.Errorf("purchases counted: got %d, want 1 (only the voucher on sale)", got)
	}
}

// countingLimiter is a limits store that lets everything through and counts
// the voucher's checks.
type countingLimiter struct {
	mu       sync.Mutex
	vouchers int
}

func (*countingLimiter) AllowAddr(context.Context, string, model.Limit) (bool, time.Duration, error) {
	return true, 0, nil
}
func (*countingLimiter) AllowUser(context.Context, int64, model.Limit) (bool, time.Duration, error) {
	return true, 0, nil
}
func (c *countingLimiter) AllowVoucher(context.Context, int64, model.Limit) (bool, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vouchers++
	return true, 0, nil
}

// TestPurchaseRepeatsSpendNoCeiling: the route tells the limits each
// purchase's outcome. After an order, the buyer's repeats are
// DUPLICATE_ORDER without a check of the voucher's ceiling. A duplicate that
// only the lock stopped decides nothing: the next attempt is checked.
func TestPurchaseRepeatsSpendNoCeiling(t *testing.T) {
	store := &countingLimiter{}
	limits := sale.NewPurchaseLimits(store, sale.PurchaseLimitConfig{PerVoucher: 20, PerAddr: 5}, slog.New(slog.DiscardHandler))
	seck := &fakeSale{buy: func(_ context.Context, _, voucherID int64) (int64, error) {
		if voucherID == 4 {
			return 0, fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrLockRefused)
		}
		return 1, nil
	}}
	e := newEnv(t, func(d *handler.Deps) {
		d.Limits = limits
		d.Seckill = seck
	})
	assertOK(t, e.do(http.MethodPost, "/voucher-order/seckill/3", "", e.userTok))
	for range 3 {
		assertError(t, e.do(http.MethodPost, "/voucher-order/seckill/3", "", e.userTok), http.StatusConflict, handler.CodeDuplicateOrder)
	}
	if store.vouchers != 1 {
		t.Errorf("voucher 3's ceiling checked %d times, want 1 (the order only)", store.vouchers)
	}
	for range 2 {
		assertError(t, e.do(http.MethodPost, "/voucher-order/seckill/4", "", e.userTok), http.StatusConflict, handler.CodeDuplicateOrder)
	}
	if store.vouchers != 3 {
		t.Errorf("ceiling checked %d times in all, want 3 (the lock's refusals decide nothing)", store.vouchers)
	}
}
