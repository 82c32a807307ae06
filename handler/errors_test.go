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
