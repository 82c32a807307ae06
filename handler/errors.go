// Package handler is the HTTP layer: gin routes, request parsing and the one
// place where errors become status codes and error codes.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// Error codes of the API (docs/contract.md).
const (
	CodeInvalidArgument    = "INVALID_ARGUMENT"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodeForbidden          = "FORBIDDEN"
	CodeVoucherNotFound    = "VOUCHER_NOT_FOUND"
	CodeOrderNotFound      = "ORDER_NOT_FOUND"
	CodeShopNotFound       = "SHOP_NOT_FOUND"
	CodeSeckillNotStarted  = "SECKILL_NOT_STARTED"
	CodeSeckillEnded       = "SECKILL_ENDED"
	CodeSoldOut            = "SOLD_OUT"
	CodeDuplicateOrder     = "DUPLICATE_ORDER"
	CodeOrderCancelled     = "ORDER_CANCELLED"
	CodeOrderExpired       = "ORDER_EXPIRED"
	CodeOrderPaid          = "ORDER_PAID"
	CodeOrderPending       = "ORDER_PENDING"
	CodeRateLimited        = "RATE_LIMITED"
	CodeIdempotencyReused  = "IDEMPOTENCY_KEY_REUSED"
	CodeIdempotencyFlight  = "IDEMPOTENCY_KEY_IN_FLIGHT"
	CodeUnavailable        = "UNAVAILABLE"
	CodeInternal           = "INTERNAL"
	CodeNotFound           = "NOT_FOUND"          // no such route
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED" // the route has no such method
	CodeVoucherNotEditable = "VOUCHER_NOT_EDITABLE"
	CodeNotAdmitted        = "NOT_ADMITTED"
	// The redemption at the shop (docs/redemption.md).
	CodeVoucherUsed       = "VOUCHER_USED"
	CodeRedeemCodeInvalid = "REDEEM_CODE_INVALID"
	CodeNotStaff          = "NOT_STAFF"
	CodeVoucherNotUsable  = "VOUCHER_NOT_USABLE"
	// The refund on request (docs/payments.md).
	CodeNotRefundable = "NOT_REFUNDABLE"
	// CodeClientClosed: the client went away before its answer. No client
	// reads it; it names the request in the log and the metrics (499).
	CodeClientClosed = "CLIENT_CLOSED_REQUEST"
)

// StatusClientClosed is the status of CodeClientClosed: nginx's 499
// "client closed request", a label rather than an answer.
const StatusClientClosed = 499

// Envelope is the Heima response body.
type Envelope struct {
	Success  bool   `json:"success"`
	Code     string `json:"code,omitempty"`
	ErrorMsg string `json:"errorMsg,omitempty"`
	Data     any    `json:"data,omitempty"`
	Total    *int64 `json:"total,omitempty"`
}

// Style is how a refusal reaches the client (SECKILL_API_STYLE).
type Style string

// API styles.
const (
	// StyleREST: every refusal carries its own HTTP status (400, 404, 409,
	// ...) and an English message. The default.
	StyleREST Style = "rest"
	// StyleHeima: the course's frontend style. Business refusals and input
	// errors (every 4xx but 401) are HTTP 200 with success:false. They keep the
	// code and carry the course's Chinese message in errorMsg. 401 stays 401,
	// since the frontend then sends the user to its login page. Infrastructure
	// failures stay 5xx.
	StyleHeima Style = "heima"
)

// codeInfo is what one code means on the wire: its HTTP status in the REST
// style and its message in each style.
type codeInfo struct {
	status int
	rest   string // English message (a more precise one may replace it)
	heima  string // the course's wording
}

// codes is the code -> status and messages table, the one place that says
// how each refusal looks in either style.
var codes = map[string]codeInfo{
	CodeInvalidArgument:    {http.StatusBadRequest, "invalid argument", "参数错误"},
	CodeUnauthorized:       {http.StatusUnauthorized, "missing, malformed, expired or invalid token", "请先登录"},
	CodeForbidden:          {http.StatusForbidden, "admin only", "无权访问，仅限管理员"},
	CodeVoucherNotFound:    {http.StatusNotFound, "voucher not found", "优惠券不存在"},
	CodeOrderNotFound:      {http.StatusNotFound, "order not found", "订单不存在"},
	CodeShopNotFound:       {http.StatusNotFound, "shop not found", "店铺不存在"},
	CodeSeckillNotStarted:  {http.StatusConflict, "seckill has not started", "秒杀尚未开始"},
	CodeSeckillEnded:       {http.StatusConflict, "seckill has ended", "秒杀已经结束"},
	CodeSoldOut:            {http.StatusConflict, "sold out", "库存不足"},
	CodeDuplicateOrder:     {http.StatusConflict, "one order per user", "不允许重复下单"},
	CodeOrderCancelled:     {http.StatusConflict, "order cancelled", "订单已取消"},
	CodeOrderExpired:       {http.StatusConflict, "order expired: not paid in time", "订单已超时取消"},
	CodeOrderPaid:          {http.StatusConflict, "order paid: it cannot be cancelled", "订单已支付，无法取消"},
	CodeOrderPending:       {http.StatusConflict, "order not written yet, retry shortly", "订单处理中，请稍后再试"},
	CodeNotAdmitted:        {http.StatusForbidden, "not admitted: join the waiting room and buy with its Admission-Token", "请先排队，轮到您后再抢购"},
	CodeVoucherNotEditable: {http.StatusConflict, "the sale has started or the voucher is closed: it can only be closed now", "秒杀已开始或已下架，不能修改"},
	CodeVoucherUsed:        {http.StatusConflict, "voucher used: it was redeemed before", "该券已核销，不能重复使用"},
	CodeRedeemCodeInvalid:  {http.StatusNotFound, "no such code at this shop", "核销码无效"},
	CodeNotStaff:           {http.StatusForbidden, "staff of this shop only", "无权核销，仅限本店店员"},
	CodeVoucherNotUsable:   {http.StatusConflict, "the voucher cannot be used today", "该券今日不可使用"},
	CodeNotRefundable:      {http.StatusConflict, "no payment to refund: the order is unpaid, cancelled or refunded", "该订单无可退款项"},
	CodeRateLimited:        {http.StatusTooManyRequests, "too many requests", "请求过于频繁，请稍后再试"},
	CodeIdempotencyReused:  {http.StatusUnprocessableEntity, "idempotency key already used for another request", "幂等键已用于其他请求"},
	CodeIdempotencyFlight:  {http.StatusConflict, "a request with this idempotency key is in progress, retry later", "请求处理中，请稍后再试"},
	CodeUnavailable:        {http.StatusServiceUnavailable, "service temporarily unavailable, retry later", "服务繁忙，请稍后再试"},
	CodeInternal:           {http.StatusInternalServerError, "internal error", "服务器异常"},
	CodeClientClosed:       {StatusClientClosed, "client closed request", "客户端已断开"},
}

// heimaFieldMessages are the course's messages for input errors of
// particular fields; other fields get "参数错误：" and the English detail.
var heimaFieldMessages = map[string]string{
	"phone": "手机号格式错误",
	"code":  "验证码错误",
}

// invalidArgument finds an *model.InvalidArgumentError in err's chain, as
// errors.As would. It avoids the heap allocation of errors.As, whose target
// escapes. classify calls it on every refusal of the hot path.
func invalidArgument(err error) *model.InvalidArgumentError {
	for err != nil {
		switch e := err.(type) {
		case *model.InvalidArgumentError:
			return e
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if ia := invalidArgument(inner); ia != nil {
					return ia
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

// rateLimited finds a *model.RateLimitedError in err's chain.
func rateLimited(err error) *model.RateLimitedError {
	var rl *model.RateLimitedError
	if errors.As(err, &rl) {
		return rl
	}
	return nil
}

// RetryAfter is the wait a refusal names (a *model.RateLimitedError or a
// *model.OverloadedError), 0 when none.
func RetryAfter(err error) time.Duration {
	if rl := rateLimited(err); rl != nil {
		return rl.RetryAfter
	}
	if ol := overloaded(err); ol != nil {
		return ol.RetryAfter
	}
	return 0
}

// overloaded finds a *model.OverloadedError in err's chain.
func overloaded(err error) *model.OverloadedError {
	var ol *model.OverloadedError
	if errors.As(err, &ol) {
		return ol
	}
	return nil
}

// classify names the code of err, and an English detail where the error says
// more. The detail is never an internal error's text.
func classify(err error) (code, detail string) {
	switch ia := invalidArgument(err); {
	case ia != nil:
		return CodeInvalidArgument, ia.Error()
	case errors.Is(err, model.ErrUnauthorized):
		return CodeUnauthorized, ""
	case errors.Is(err, model.ErrForbidden):
		return CodeForbidden, ""
	case errors.Is(err, model.ErrNotAdmitted):
		// The service's texts only: "not admitted: <why>".
		return CodeNotAdmitted, err.Error()
	case errors.Is(err, model.ErrVoucherNotFound):
		return CodeVoucherNotFound, ""
	case errors.Is(err, model.ErrVoucherUsed):
		return CodeVoucherUsed, ownText(err, model.ErrVoucherUsed)
	case errors.Is(err, model.ErrRedeemCodeInvalid):
		return CodeRedeemCodeInvalid, ownText(err, model.ErrRedeemCodeInvalid)
	case errors.Is(err, model.ErrNotStaff):
		return CodeNotStaff, ""
	case errors.Is(err, model.ErrVoucherNotUsable):
		return CodeVoucherNotUsable, ownText(err, model.ErrVoucherNotUsable)
	case errors.Is(err, model.ErrNotRefundable):
		return CodeNotRefundable, ownText(err, model.ErrNotRefundable)
	case errors.Is(err, model.ErrOrderNotFound):
		return CodeOrderNotFound, ""
	case errors.Is(err, model.ErrShopNotFound):
		return CodeShopNotFound, ""
	case errors.Is(err, model.ErrUserNotFound):
		return CodeUnauthorized, "user not found"
	case errors.Is(err, model.ErrVoucherNotEditable):
		return CodeVoucherNotEditable, ""
	case errors.Is(err, model.ErrSeckillNotStarted):
		return CodeSeckillNotStarted, ""
	case errors.Is(err, model.ErrSeckillEnded):
		return CodeSeckillEnded, ""
	case errors.Is(err, model.ErrSoldOut):
		return CodeSoldOut, ""
	case errors.Is(err, model.ErrDuplicateOrder), errors.Is(err, model.ErrStaleFence):
		return CodeDuplicateOrder, ""
	case errors.Is(err, model.ErrOrderCancelled):
		return CodeOrderCancelled, ""
	case errors.Is(err, model.ErrOrderExpired):
		return CodeOrderExpired, ""
	case errors.Is(err, model.ErrOrderPaid):
		return CodeOrderPaid, ""
	case errors.Is(err, model.ErrOrderPending):
		return CodeOrderPending, ""
	case errors.Is(err, model.ErrRateLimited):
		if rl := rateLimited(err); rl != nil {
			return CodeRateLimited, rl.Error()
		}
		return CodeRateLimited, ""
	case errors.Is(err, model.ErrIdempotencyKeyReused):
		return CodeIdempotencyReused, ""
	case errors.Is(err, model.ErrIdempotencyKeyInFlight):
		return CodeIdempotencyFlight, ""
	case errors.Is(err, context.Canceled):
		// The request's context is cancelled when its client goes away: a
		// client's cancel, not a dependency down.
		return CodeClientClosed, ""
	case errors.Is(err, model.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		var ns *model.CodeNotSentError
		if errors.As(err, &ns) {
			return CodeUnavailable, ns.Error()
		}
		return CodeUnavailable, ""
	}
	return CodeInternal, ""
}

// ownText is the text of err, a refusal the service worded ("voucher used:
// redeemed at ..."); "" when err is the bare sentinel (the code's own
// message).
func ownText(err, sentinel error) string {
	if err == sentinel {
		return ""
	}
	return err.Error()
}

// Classify maps an error to its HTTP status, code and client message in the
// REST style. It is Style.Classify of StyleREST.
func Classify(err error) (status int, code, msg string) { return StyleREST.Classify(err) }

// Classify maps an error to the HTTP status, code and client message of
// style s. It is the only such mapping in the service; internal errors get
// a generic message, never their text.
func (s Style) Classify(err error) (status int, code, msg string) {
	code, detail := classify(err)
	info := codes[code]
	status, msg = info.status, info.rest
	if detail != "" {
		msg = detail
	}
	if s != StyleHeima {
		return status, code, msg
	}
	msg = info.heima
	var ia *model.InvalidArgumentError
	if errors.As(err, &ia) {
		switch m, ok := heimaFieldMessages[ia.Field]; {
		case errors.Is(err, model.ErrShopNotFound):
			msg = codes[CodeShopNotFound].heima
		case ok:
			msg = m
		default:
			msg = info.heima + "：" + ia.Error()
		}
	}
	if status != http.StatusUnauthorized && status != StatusClientClosed && status < 500 {
		status = http.StatusOK
	}
	return status, code, msg
}

// Fail writes err as an error envelope in style and aborts the chain.
// Server-side failures (5xx) are logged once, with their text, here. A refusal
// that names its wait carries it in Retry-After, in whole seconds rounded up. A
// code's own message is written from bytes encoded once (cannedEnvelopes).
// Those are the refusals a sale answers most, such as SOLD_OUT. A more precise
// message is encoded for the request.
func Fail(log *slog.Logger, style Style) func(c *gin.Context, err error) {
	return func(c *gin.Context, err error) {
		status, code, msg := style.Classify(err)
		writeFailure(c, log, err, status, code, msg)
	}
}

// writeFailure is Fail's answer to err, classified already as status, code
// and msg (Style.Classify).
func writeFailure(c *gin.Context, log *slog.Logger, err error, status int, code, msg string) {
	if w, ok := c.Writer.(*capturingWriter); ok {
		w.code = code // an idempotent request keeps only final answers
	}
	shed := code == CodeUnavailable && overloaded(err) != nil
	switch {
	case code == CodeClientClosed:
		log.DebugContext(c.Request.Context(), "request abandoned by its client", "route", c.FullPath(), "code", code, "err", err)
	case shed:
		// Counted (seckill_purchases_shed_total), not logged: a stampede
		// sheds thousands a second.
	case status >= 500:
		log.ErrorContext(c.Request.Context(), "request failed", "route", c.FullPath(), "code", code, "err", err)
	}
	if code == CodeRateLimited || shed {
		if d := RetryAfter(err); d > 0 {
			c.Header("Retry-After", strconv.FormatInt(model.RetryAfterSeconds(d), 10))
		}
	}
	if b, ok := cannedEnvelopes[cannedKey{code, msg}]; ok {
		c.Abort()
		writeJSONBytes(c, status, b)
		return
	}
	c.AbortWithStatusJSON(status, Envelope{Code: code, ErrorMsg: msg})
}

// jsonContentType is the Content-Type gin's JSON render writes.
const jsonContentType = "application/json; charset=utf-8"

// cannedKey is a code with one of its own messages.
type cannedKey struct{ code, msg string }

// cannedEnvelopes are the error envelopes of every code with each of its
// own messages (both styles), encoded as AbortWithStatusJSON would encode
// them.
var cannedEnvelopes = func() map[cannedKey][]byte {
	out := make(map[cannedKey][]byte, 2*len(codes))
	for code, info := range codes {
		for _, msg := range []string{info.rest, info.heima} {
			b, err := json.Marshal(Envelope{Code: code, ErrorMsg: msg})
			if err != nil {
				panic(err)
			}
			out[cannedKey{code, msg}] = b
		}
	}
	return out
}()

func ok(c *gin.Context, data any) {
	c.JSON(http.StatusOK, Envelope{Success: true, Data: data})
}

func okList(c *gin.Context, data any, total int64) {
	c.JSON(http.StatusOK, Envelope{Success: true, Data: data, Total: &total})
}
