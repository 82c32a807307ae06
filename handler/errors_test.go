package handler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"seckill/handler"
	"seckill/model"
)

const secretText = "dial tcp 10.1.2.3:3306: access denied for user root password=hunter2"

func TestClassify(t *testing.T) {
	internal := errors.New(secretText)
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{"invalid argument", model.InvalidArgument("stock", "must be ≥ 1"), http.StatusBadRequest, handler.CodeInvalidArgument},
		{"wrapped invalid argument", fmt.Errorf("publish: %w", model.InvalidArgument("stock", "x")), http.StatusBadRequest, handler.CodeInvalidArgument},
		{"unauthorized", model.ErrUnauthorized, http.StatusUnauthorized, handler.CodeUnauthorized},
		{"forbidden", model.ErrForbidden, http.StatusForbidden, handler.CodeForbidden},
		{"voucher not found", model.ErrVoucherNotFound, http.StatusNotFound, handler.CodeVoucherNotFound},
		{"order not found", model.ErrOrderNotFound, http.StatusNotFound, handler.CodeOrderNotFound},
		{"not started", model.ErrSeckillNotStarted, http.StatusConflict, handler.CodeSeckillNotStarted},
		{"ended", model.ErrSeckillEnded, http.StatusConflict, handler.CodeSeckillEnded},
		{"sold out", model.ErrSoldOut, http.StatusConflict, handler.CodeSoldOut},
		{"wrapped sold out", fmt.Errorf("order tx: %w", model.ErrSoldOut), http.StatusConflict, handler.CodeSoldOut},
		{"duplicate", model.ErrDuplicateOrder, http.StatusConflict, handler.CodeDuplicateOrder},
		{"unique key", fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey), http.StatusConflict, handler.CodeDuplicateOrder},
		{"stale fence", model.ErrStaleFence, http.StatusConflict, handler.CodeDuplicateOrder},
		{"not editable", model.ErrVoucherNotEditable, http.StatusConflict, handler.CodeVoucherNotEditable},
		{"order cancelled", model.ErrOrderCancelled, http.StatusConflict, handler.CodeOrderCancelled},
		{"order expired", fmt.Errorf("order 7: %w", model.ErrOrderExpired), http.StatusConflict, handler.CodeOrderExpired},
		{"order paid", model.ErrOrderPaid, http.StatusConflict, handler.CodeOrderPaid},
		{"order pending", model.ErrOrderPending, http.StatusConflict, handler.CodeOrderPending},
		{"not refundable", fmt.Errorf("%w: the order is expired", model.ErrNotRefundable), http.StatusConflict, handler.CodeNotRefundable},
		{"used, refund", fmt.Errorf("%w: redeemed at the shop, it cannot be refunded", model.ErrVoucherUsed), http.StatusConflict, handler.CodeVoucherUsed},
		{"rate limited", model.ErrRateLimited, http.StatusTooManyRequests, handler.CodeRateLimited},
		{"unavailable", model.Unavailable(internal), http.StatusServiceUnavailable, handler.CodeUnavailable},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, handler.CodeUnavailable},
		{"internal", internal, http.StatusInternalServerError, handler.CodeInternal},
		{"wrapped internal", fmt.Errorf("create order: %w", internal), http.StatusInternalServerError, handler.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, code, msg := handler.Classify(tt.err)
			if status != tt.wantStatus || code != tt.wantCode {
				t.Errorf("got %d %s, want %d %s", status, code, tt.wantStatus, tt.wantCode)
			}
			if msg == "" {
				t.Errorf("message: got empty, want one")
			}
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, "10.1.2.3") {
				t.Errorf("message leaks the internal error: %q", msg)
			}
		})
	}
}

func TestClassifyInvalidArgumentNamesField(t *testing.T) {
	_, _, msg := handler.Classify(model.InvalidArgument("endTime", "must be after beginTime"))
	if !strings.Contains(msg, "endTime") {
		t.Errorf("message: got %q, want it to name endTime", msg)
	}
}

// TestErrorTextNeverReachesBody drives the error mapping through a route.
func TestErrorTextNeverReachesBody(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{"internal", errors.New(secretText), http.StatusInternalServerError, handler.CodeInternal},
		{"unavailable", model.Unavailable(errors.New(secretText)), http.StatusServiceUnavailable, handler.CodeUnavailable},
		{"deadline", fmt.Errorf("%s: %w", secretText, context.DeadlineExceeded), http.StatusServiceUnavailable, handler.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.seck.buy = func(context.Context, int64, int64) (int64, error) { return 0, tt.err }
			r := e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok)
			assertError(t, r, tt.wantStatus, tt.wantCode)
			for _, leak := range []string{"hunter2", "10.1.2.3", "3306", "access denied"} {
				if strings.Contains(r.body, leak) {
					t.Errorf("body %s leaks %q", r.body, leak)
				}
			}
			if !strings.Contains(e.log.String(), "hunter2") {
				t.Errorf("log: got %q, want the internal error logged for operators", e.log.String())
			}
		})
	}
}

// TestInvalidArgumentFindsLikeErrorsAs: the allocation-free chain walk
// finds what errors.As finds: direct, wrapped, joined, nested, and nothing
// in chains without one.
func TestInvalidArgumentFindsLikeErrorsAs(t *testing.T) {
	ia := model.InvalidArgument("id", "must be positive")
	for _, err := range []error{
		nil, ia, fmt.Errorf("x: %w", ia), errors.Join(errors.New("a"), fmt.Errorf("b: %w", ia)),
		fmt.Errorf("%w: %w", model.ErrUnavailable, ia), errors.Join(errors.New("a"), errors.New("b")),
		model.ErrSoldOut, fmt.Errorf("y: %w", model.ErrSoldOut),
	} {
		var want *model.InvalidArgumentError
		errors.As(err, &want)
		if got := handler.InvalidArgumentOf(err); got != want {
			t.Errorf("invalidArgument(%v) = %v, want %v (errors.As)", err, got, want)
		}
	}
}

func heima(d *handler.Deps) { d.Style = handler.StyleHeima }

// TestHeimaStyle drives refusals of every kind through the routes in the heima
// style. Business refusals and input errors are 200 with success:false, the
// code and the course's message. 401 and 5xx keep their status.
func TestHeimaStyle(t *testing.T) {
	e := newEnv(t, heima)
	buyErr := map[int64]error{
		1: model.ErrSoldOut, 2: model.ErrDuplicateOrder, 3: model.ErrStaleFence, 4: model.ErrSeckillNotStarted,
		5: model.ErrSeckillEnded, 6: model.ErrVoucherNotFound, 7: model.ErrRateLimited,
		8: model.Unavailable(errors.New("dial tcp: refused")), 9: errors.New("boom"),
		10: fmt.Errorf("order tx: %w", model.ErrSoldOut),
	}
	e.seck.buy = func(_ context.Context, _, voucherID int64) (int64, error) { return 0, buyErr[voucherID] }
	tests := []struct {
		name, method, path, body, token string
		wantStatus                      int
		wantCode, wantMsg               string
	}{
		{"sold out", http.MethodPost, "/voucher-order/seckill/1", "", e.userTok, 200, handler.CodeSoldOut, "库存不足"},
		{"wrapped sold out", http.MethodPost, "/voucher-order/seckill/10", "", e.userTok, 200, handler.CodeSoldOut, "库存不足"},
		{"duplicate", http.MethodPost, "/voucher-order/seckill/2", "", e.userTok, 200, handler.CodeDuplicateOrder, "不允许重复下单"},
		{"stale fence", http.MethodPost, "/voucher-order/seckill/3", "", e.userTok, 200, handler.CodeDuplicateOrder, "不允许重复下单"},
		{"not started", http.MethodPost, "/voucher-order/seckill/4", "", e.userTok, 200, handler.CodeSeckillNotStarted, "秒杀尚未开始"},
		{"ended", http.MethodPost, "/voucher-order/seckill/5", "", e.userTok, 200, handler.CodeSeckillEnded, "秒杀已经结束"},
		{"a missing shop's vouchers", http.MethodGet, "/voucher/list/999", "", "", 200, handler.CodeShopNotFound, "店铺不存在"},
		{"another method", http.MethodGet, "/user/code", "", "", 405, handler.CodeMethodNotAllowed, "method not allowed: GET /user/code"},
		{"unknown voucher", http.MethodPost, "/voucher-order/seckill/6", "", e.userTok, 200, handler.CodeVoucherNotFound, "优惠券不存在"},
		{"rate limited", http.MethodPost, "/voucher-order/seckill/7", "", e.userTok, 200, handler.CodeRateLimited, "请求过于频繁，请稍后再试"},
		{"unavailable stays 503", http.MethodPost, "/voucher-order/seckill/8", "", e.userTok, 503, handler.CodeUnavailable, "服务繁忙，请稍后再试"},
		{"internal stays 500", http.MethodPost, "/voucher-order/seckill/9", "", e.userTok, 500, handler.CodeInternal, "服务器异常"},
		{"bad id", http.MethodPost, "/voucher-order/seckill/abc", "", e.userTok, 200, handler.CodeInvalidArgument, "参数错误：invalid id: must be a number"},
		{"no token stays 401", http.MethodPost, "/voucher-order/seckill/1", "", "", 401, handler.CodeUnauthorized, "请先登录"},
		{"bad token stays 401", http.MethodGet, "/user/me", "", "not-a-jwt", 401, handler.CodeUnauthorized, "请先登录"},
		{"not admin", http.MethodGet, "/admin/vouchers/1/audit", "", e.userTok, 200, handler.CodeForbidden, "无权访问，仅限管理员"},
		{"unknown order", http.MethodGet, "/voucher-order/1", "", e.userTok, 200, handler.CodeOrderNotFound, "订单不存在"},
		{"unknown shop", http.MethodGet, "/shop/999", "", "", 200, handler.CodeShopNotFound, "店铺不存在"},
		{"publish for an unknown shop", http.MethodPost, "/voucher/seckill", publishBody(map[string]any{"shopId": 42}), e.adminTok, 200, handler.CodeInvalidArgument, "店铺不存在"},
		{"publish stock 0", http.MethodPost, "/voucher/seckill", publishBody(map[string]any{"stock": 0}), e.adminTok, 200, handler.CodeInvalidArgument, "参数错误：invalid stock: must be ≥ 1"},
		{"bad phone", http.MethodPost, "/user/code?phone=123", "", "", 200, handler.CodeInvalidArgument, "手机号格式错误"},
		{"wrong code", http.MethodPost, "/user/login", `{"phone":"13800000001","code":"000000"}`, "", 200, handler.CodeInvalidArgument, "验证码错误"},
		{"malformed body", http.MethodPost, "/user/login", `{`, "", 200, handler.CodeInvalidArgument, "参数错误：invalid body: malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.path, tt.body, tt.token)
			assertError(t, r, tt.wantStatus, tt.wantCode)
			if got := r.str("errorMsg"); got != tt.wantMsg {
				t.Errorf("errorMsg: got %q, want %q", got, tt.wantMsg)
			}
		})
	}

	// Success answers are the same in both styles; a route that does not
	// exist stays 404.
	if data := assertOK(t, e.do(http.MethodGet, "/shop/1", "", "")); !strings.Contains(string(data), `"name":"seed"`) {
		t.Errorf("GET /shop/1: got %s, want the shop", data)
	}
	e.seck.buy = nil
	if data := assertOK(t, e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok)); string(data) != `"1"` {
		t.Errorf("buy: got data %s, want the order id as a string", data)
	}
	assertError(t, e.do(http.MethodGet, "/no/such/route", "", ""), http.StatusNotFound, handler.CodeNotFound)
}

// TestHeimaRawToken: the course's frontend sends the token raw in the
// authorization header (no Bearer prefix).
func TestHeimaRawToken(t *testing.T) {
	e := newEnv(t, heima)
	for _, h := range []string{e.userTok, "Bearer " + e.userTok, "bearer " + e.userTok} {
		assertOK(t, e.do(http.MethodGet, "/user/me", "", h))
	}
}

func TestClassifyStyles(t *testing.T) {
	errs := []error{
		model.InvalidArgument("stock", "x"), model.ErrUnauthorized, model.ErrForbidden, model.ErrVoucherNotFound,
		model.ErrOrderNotFound, model.ErrShopNotFound, model.ErrUserNotFound, model.ErrSeckillNotStarted,
		model.ErrSeckillEnded, model.ErrSoldOut, model.ErrDuplicateOrder, model.ErrRateLimited,
		model.Unavailable(errors.New(secretText)), errors.New(secretText),
	}
	for _, err := range errs {
		restStatus, restCode, _ := handler.StyleREST.Classify(err)
		status, code, msg := handler.StyleHeima.Classify(err)
		if code != restCode {
			t.Errorf("%v: code got %s in heima, %s in rest; want the same", err, code, restCode)
		}
		wantStatus := http.StatusOK
		if restStatus == http.StatusUnauthorized || restStatus >= 500 {
			wantStatus = restStatus
		}
		if status != wantStatus {
			t.Errorf("%v: heima status got %d, want %d (rest %d)", err, status, wantStatus, restStatus)
		}
		if !hasHan(msg) {
			t.Errorf("%v: heima message %q is not the course's Chinese", err, msg)
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%v: heima message leaks the internal error: %q", err, msg)
		}
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if r >= 0x4e00 && r <= 0x9fff {
			return true
		}
	}
	return false
}
