// Package handler is the HTTP layer: gin routes, request parsing and the one
// place where errors become status codes and error codes.
package handler

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// Error codes of the API (docs/contract.md).
const (
	CodeInvalidArgument   = "INVALID_ARGUMENT"
	CodeUnauthorized      = "UNAUTHORIZED"
	CodeForbidden         = "FORBIDDEN"
	CodeVoucherNotFound   = "VOUCHER_NOT_FOUND"
	CodeOrderNotFound     = "ORDER_NOT_FOUND"
	CodeSeckillNotStarted = "SECKILL_NOT_STARTED"
	CodeSeckillEnded      = "SECKILL_ENDED"
	CodeSoldOut           = "SOLD_OUT"
	CodeDuplicateOrder    = "DUPLICATE_ORDER"
	CodeRateLimited       = "RATE_LIMITED"
	CodeUnavailable       = "UNAVAILABLE"
	CodeInternal          = "INTERNAL"
	CodeNotFound          = "NOT_FOUND" // no such route
)

// Envelope is the Heima response body.
type Envelope struct {
	Success  bool   `json:"success"`
	Code     string `json:"code,omitempty"`
	ErrorMsg string `json:"errorMsg,omitempty"`
	Data     any    `json:"data,omitempty"`
	Total    *int64 `json:"total,omitempty"`
}

// Classify maps an error to its HTTP status, code and client message. It is
// the only such mapping in the service; internal errors get a generic
// message, never their text.
func Classify(err error) (status int, code, msg string) {
	var ia *model.InvalidArgumentError
	switch {
	case errors.As(err, &ia):
		return http.StatusBadRequest, CodeInvalidArgument, ia.Error()
	case errors.Is(err, model.ErrUnauthorized):
		return http.StatusUnauthorized, CodeUnauthorized, "missing, malformed, expired or invalid token"
	case errors.Is(err, model.ErrForbidden):
		return http.StatusForbidden, CodeForbidden, "admin only"
	case errors.Is(err, model.ErrVoucherNotFound):
		return http.StatusNotFound, CodeVoucherNotFound, "voucher not found"
	case errors.Is(err, model.ErrOrderNotFound):
		return http.StatusNotFound, CodeOrderNotFound, "order not found"
	case errors.Is(err, model.ErrUserNotFound):
		return http.StatusUnauthorized, CodeUnauthorized, "user not found"
	case errors.Is(err, model.ErrSeckillNotStarted):
		return http.StatusConflict, CodeSeckillNotStarted, "seckill has not started"
	case errors.Is(err, model.ErrSeckillEnded):
		return http.StatusConflict, CodeSeckillEnded, "seckill has ended"
	case errors.Is(err, model.ErrSoldOut):
		return http.StatusConflict, CodeSoldOut, "sold out"
	case errors.Is(err, model.ErrDuplicateOrder), errors.Is(err, model.ErrStaleFence):
		return http.StatusConflict, CodeDuplicateOrder, "one order per user"
	case errors.Is(err, model.ErrRateLimited):
		return http.StatusTooManyRequests, CodeRateLimited, "too many requests"
	case errors.Is(err, model.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable, retry later"
	}
	return http.StatusInternalServerError, CodeInternal, "internal error"
}

// Fail writes err as an error envelope and aborts the chain. Server-side
// failures (5xx) are logged once, with their text, here.
func Fail(log *slog.Logger) func(c *gin.Context, err error) {
	return func(c *gin.Context, err error) {
		status, code, msg := Classify(err)
		if status >= 500 {
			log.ErrorContext(c.Request.Context(), "request failed", "route", c.FullPath(), "code", code, "err", err)
		}
		c.AbortWithStatusJSON(status, Envelope{Code: code, ErrorMsg: msg})
	}
}

func ok(c *gin.Context, data any) {
	c.JSON(http.StatusOK, Envelope{Success: true, Data: data})
}

func okList(c *gin.Context, data any, total int64) {
	c.JSON(http.StatusOK, Envelope{Success: true, Data: data, Total: &total})
}
