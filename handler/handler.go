package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/middleware"
	"seckill/model"
	"seckill/observe/telemetry"
	"seckill/service/catalog"
	"seckill/service/sale"
)

// Users is the login flow as the routes see it (*account.Users).
type Users interface {
	// SendCode returns the code sent to phone at the request of the
	// client address addr.
	SendCode(ctx context.Context, phone, addr string) (string, error)
	// Cooldown is the least time between two codes to one phone (0: no
	// cooldown): the answer of a sent code says when another may follow.
	Cooldown() time.Duration
	Login(ctx context.Context, phone, code string) (token string, err error)
	Me(ctx context.Context, userID int64) (*model.User, error)
}

// PurchaseLimits are the purchase limits as the route sees them
// (*sale.PurchaseLimits).
type PurchaseLimits interface {
	Enabled() bool
	// Admit counts a purchase of userID for voucherID from the client
	// address addr: nil, a *model.RateLimitedError, or a duplicate order
	// known from memory.
	Admit(ctx context.Context, userID, voucherID int64, addr string) error
	// Settle tells the outcome of a purchase that Admit let through: nil
	// for an order, else its error.
	Settle(userID, voucherID int64, outcome error)
}

// Vouchers is the voucher service as the routes see it (*catalog.Vouchers).
type Vouchers interface {
	Publish(ctx context.Context, in catalog.PublishInput) (int64, error)
	List(ctx context.Context, shopID int64) ([]model.SeckillVoucherInfo, error)
}

// Sale is the flash sale as the routes see it: a sale.SyncSeckill or a
// async.AsyncSeckill. The purchase (sale.Purchase) buys from it.
type Sale interface {
	sale.PurchaseSale
	Order(ctx context.Context, userID, orderID int64) (*model.VoucherOrder, error)
	Audit(ctx context.Context, voucherID int64) (*model.Audit, error)
}

type api struct {
	Deps
	fail func(c *gin.Context, err error)
	// failAs is fail with err classified already (Style.Classify).
	failAs func(c *gin.Context, err error, status int, code, msg string)
	// purchase is the purchase's sequence: the room, the limits, the sale.
	purchase *sale.Purchase
	// limited: the purchase limits are on (the client address is read).
	limited bool
}

// userAPI serves the code, login and own-account routes.
type userAPI struct{ *api }

// voucherAPI serves the voucher routes and the voucher audit.
type voucherAPI struct{ *api }

// orderAPI serves the purchase, its waiting room and the order routes.
type orderAPI struct{ *api }

// New returns the HTTP handler with every route.
func New(d Deps) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	if d.Location == nil {
		d.Location = time.Local
	}
	if d.Style == "" {
		d.Style = StyleREST
	}
	a := &api{Deps: d, limited: d.Limits != nil && d.Limits.Enabled()}
	steps := sale.PurchaseDeps{Sale: d.Seckill}
	if d.Room != nil {
		steps.Room = d.Room
	}
	if a.limited {
		steps.Limits = d.Limits
	}
	a.purchase = sale.NewPurchase(steps)
	a.failAs = func(c *gin.Context, err error, status int, code, msg string) {
		if d.AccessLog > 0 {
			// The access log names the refusal's code (of a request it logs).
			if _, logged := c.Get(accessLogged); logged {
				c.Set(codeKey, code)
			}
		}
		writeFailure(c, d.Log, err, status, code, msg)
	}
	a.fail = func(c *gin.Context, err error) {
		status, code, msg := d.Style.Classify(err)
		a.failAs(c, err, status, code, msg)
	}
	r := gin.New()
	if err := r.SetTrustedProxies(d.TrustedProxies); err != nil {
		panic(fmt.Sprintf("SECKILL_TRUSTED_PROXIES: %v", err))
	}
	r.HandleMethodNotAllowed = true
	// A path that is not a route is the JSON 404, never a redirect to a
	// near one: a client that followed it would send its POST again.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	if d.Tracer != nil {
		r.Use(serverSpan(d.Tracer, telemetry.EdgePropagator(d.TrustParent)))
	}
	if d.AccessLog > 0 {
		r.Use(accessLog(d.Log, d.AccessLog))
	}
	r.Use(middleware.Metrics(d.Metrics), middleware.Recover(d.Log, a.fail), middleware.BodyLimit(maxBody, d.Log, a.fail),
		middleware.Debug(d.Log), middleware.Deadline(d.RequestTimeout, LiveRoute))
	r.NoRoute(func(c *gin.Context) {
		c.Set(codeKey, CodeNotFound)
		c.AbortWithStatusJSON(http.StatusNotFound, Envelope{Code: CodeNotFound, ErrorMsg: "no such route"})
	})
	r.NoMethod(func(c *gin.Context) {
		c.Set(codeKey, CodeMethodNotAllowed)
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, Envelope{Code: CodeMethodNotAllowed, ErrorMsg: "method not allowed: " + c.Request.Method + " " + c.Request.URL.Path})
	})

	authed := middleware.Auth(d.Tokens, d.Revocations, a.fail)
	admin := middleware.Admin(d.AdminCheck, a.fail)

	r.GET("/healthz", func(c *gin.Context) { ok(c, "ok") })
	r.GET("/readyz", a.readyz)
	r.GET("/metrics", gin.WrapH(d.Metrics.Handler()))

	users := userAPI{a}
	r.POST("/user/code", users.sendCode)
	r.POST("/user/login", users.login)
	r.GET("/user/me", authed, users.me)
	if d.History != nil {
		r.GET("/user/orders", authed, users.myOrders)
	}

	shops := shopAPI{a}
	if d.ShopSearch != nil {
		r.GET("/shop/list", shops.listShops)
	}
	if d.Shops != nil {
		r.GET("/shop/:id", shops.getShop)
		r.POST("/shop", authed, admin, shops.createShop)
		r.PUT("/shop", authed, admin, shops.updateShop)
	}

	vouchers := voucherAPI{a}
	r.POST("/voucher/seckill", authed, admin, vouchers.publish)
	if d.VoucherAdmin != nil {
		r.GET("/voucher/seckill/:id", vouchers.getVoucher)
		r.PUT("/voucher/seckill/:id", authed, admin, vouchers.editVoucher)
		r.POST("/voucher/seckill/:id/close", authed, admin, vouchers.closeVoucher)
	}
	r.GET("/voucher/list/:shopId", vouchers.listVouchers)

	orders := orderAPI{a}
	if d.Room != nil {
		roomRoutes(orders, r, authed)
	}
	// The shedder comes first: a purchase it sheds costs no token check.
	var shedder *middleware.Shedder
	if d.ShedTarget > 0 {
		shedder = middleware.NewShedder(d.ShedTarget, nil)
	}
	shed := middleware.Shed(shedder, d.Metrics.PurchaseShed, a.fail)
	r.POST("/voucher-order/seckill/:id", shed, authed, orders.seckill)
	r.GET("/voucher-order/:orderId", authed, orders.order)
	if d.Lifecycle != nil {
		// Pay, cancel and refund are idempotent by order; a key replays the first
		// answer too, as for the purchase.
		change := []gin.HandlerFunc{authed}
		if d.Idempotency != nil {
			change = append(change, a.idempotent)
		}
		r.POST("/voucher-order/:orderId/pay", append(slices.Clone(change), orders.payOrder)...)
		r.POST("/voucher-order/:orderId/cancel", append(slices.Clone(change), orders.cancelOrder)...)
		r.POST("/voucher-order/:orderId/refund", append(slices.Clone(change), orders.refundOrder)...)
	}

	r.GET("/pay/providers", orders.payProviders)
	if d.Payments != nil {
		for _, p := range []string{model.ProviderAlipay, model.ProviderWechat} {
			if d.Payments.Has(p) {
				r.POST("/pay/notify/"+p, a.payNotify(p))
			}
		}
	}

	if d.Redemption != nil {
		redeemRoutes(a, r, authed, admin)
	}
	r.GET("/admin/vouchers/:id/audit", authed, admin, vouchers.audit)
	if d.Payments != nil {
		r.GET("/admin/vouchers/:id/refunds", authed, admin, vouchers.refunds)
	}
	if d.Mismatches != nil {
		mismatchRoutes(a, r, authed, admin)
	}
	liveRoutes(a, r, authed, admin)
	a.webRoutes(r)

	if d.Development {
		r.GET("/debug/noop", authed, func(c *gin.Context) { ok(c, nil) })
		r.GET("/debug/pprof/*name", gin.WrapF(func(w http.ResponseWriter, req *http.Request) {
			name := strings.TrimPrefix(req.URL.Path, "/debug/pprof/")
			switch name {
			case "cmdline":
				pprof.Cmdline(w, req)
			case "profile":
				pprof.Profile(w, req)
			case "symbol":
				pprof.Symbol(w, req)
			case "trace":
				pprof.Trace(w, req)
			case "":
				pprof.Index(w, req)
			default:
				pprof.Handler(name).ServeHTTP(w, req)
			}
		}))
	}
	return r
}

func (a *api) readyz(c *gin.Context) {
	if err := a.Ready(c.Request.Context()); err != nil {
		a.Log.WarnContext(c.Request.Context(), "not ready", "err", err)
		a.fail(c, model.Unavailable(err))
		return
	}
	ok(c, "ready")
}

type loginRequest struct {
	Phone string `json:"phone"`
	Code  string `json:"code"`
	// Password is a field of the course's login form; it is not read.
	Password *string `json:"password"`
}

func (a userAPI) login(c *gin.Context) {
	var req loginRequest
	if err := decodeJSON(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	token, err := a.Users.Login(c.Request.Context(), req.Phone, req.Code)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, token)
}

type userResponse struct {
	ID       int64  `json:"id"`
	NickName string `json:"nickName"`
	Icon     string `json:"icon"`
}

func (a userAPI) me(c *gin.Context) {
	u, _ := middleware.UserFrom(c.Request.Context())
	user, err := a.Users.Me(c.Request.Context(), u.ID)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, userResponse{ID: user.ID, NickName: user.NickName, Icon: user.Icon})
}

// publishRequest is the body of POST /voucher/seckill. Pointers tell a
// missing field from a zero one.
type publishRequest struct {
	ShopID      *int64  `json:"shopId"`
	Title       *string `json:"title"`
	SubTitle    string  `json:"subTitle"`
	Rules       string  `json:"rules"`
	PayValue    *int64  `json:"payValue"`
	ActualValue *int64  `json:"actualValue"`
	Type        *int    `json:"type"`
	Stock       *int    `json:"stock"`
	BeginTime   *string `json:"beginTime"`
	EndTime     *string `json:"endTime"`
	// StockBuckets is optional (async mode: the Redis stock split in that
	// many buckets; absent: SECKILL_STOCK_BUCKETS).
	StockBuckets *int `json:"stockBuckets"`
	// WaitingRoom is optional (absent: SECKILL_WAITING_ROOM).
	WaitingRoom *bool `json:"waitingRoom"`
	// UseDays and UseUntil are optional: the ISO weekdays and the last
	// day (YYYY-MM-DD) the voucher may be redeemed at the shop.
	UseDays  []int  `json:"useDays"`
	UseUntil string `json:"useUntil"`
}

func (a voucherAPI) publish(c *gin.Context) {
	var req publishRequest
	if err := decodeJSON(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	in, err := req.input(a.Location)
	if err != nil {
		a.fail(c, err)
		return
	}
	id, err := a.Vouchers.Publish(c.Request.Context(), in)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, id)
}

func (r *publishRequest) input(loc *time.Location) (catalog.PublishInput, error) {
	required := []struct {
		name    string
		missing bool
	}{
		{"shopId", r.ShopID == nil}, {"title", r.Title == nil}, {"payValue", r.PayValue == nil},
		{"actualValue", r.ActualValue == nil}, {"type", r.Type == nil}, {"stock", r.Stock == nil},
		{"beginTime", r.BeginTime == nil}, {"endTime", r.EndTime == nil},
	}
	for _, f := range required {
		if f.missing {
			return catalog.PublishInput{}, model.InvalidArgument(f.name, "required")
		}
	}
	begin, err := parseTime(*r.BeginTime, loc)
	if err != nil {
		return catalog.PublishInput{}, model.InvalidArgument("beginTime", err.Error())
	}
	end, err := parseTime(*r.EndTime, loc)
	if err != nil {
		return catalog.PublishInput{}, model.InvalidArgument("endTime", err.Error())
	}
	buckets := 0
	if r.StockBuckets != nil {
		if buckets = *r.StockBuckets; buckets < 1 {
			return catalog.PublishInput{}, model.InvalidArgument("stockBuckets", fmt.Sprintf("must be from 1 to %d", model.MaxStockBuckets))
		}
	}
	return catalog.PublishInput{
		ShopID: *r.ShopID, Title: *r.Title, SubTitle: r.SubTitle, Rules: r.Rules,
		PayValue: *r.PayValue, ActualValue: *r.ActualValue, Type: *r.Type, Stock: *r.Stock,
		BeginTime: begin, EndTime: end, StockBuckets: buckets, WaitingRoom: r.WaitingRoom,
		UseDays: r.UseDays, UseUntil: r.UseUntil,
	}, nil
}

// parseTime reads the two documented forms: RFC 3339, or the zone-less
// "2006-01-02T15:04:05" in loc.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("must be RFC 3339 (2006-01-02T15:04:05Z07:00) or 2006-01-02T15:04:05")
}

type voucherResponse struct {
	ID           int64     `json:"id"`
	ShopID       int64     `json:"shopId"`
	Title        string    `json:"title"`
	SubTitle     string    `json:"subTitle"`
	Rules        string    `json:"rules"`
	PayValue     int64     `json:"payValue"`
	ActualValue  int64     `json:"actualValue"`
	Type         int       `json:"type"`
	Status       int       `json:"status"`
	Stock        int       `json:"stock"`
	InitialStock int       `json:"initialStock"`
	BeginTime    time.Time `json:"beginTime"`
	EndTime      time.Time `json:"endTime"`
	WaitingRoom  bool      `json:"waitingRoom"`
	UseDays      []int     `json:"useDays,omitempty"`
	UseUntil     string    `json:"useUntil,omitempty"`
}

func (a voucherAPI) listVouchers(c *gin.Context) {
	shopID, err := pathID(c, "shopId")
	if err != nil {
		a.fail(c, err)
		return
	}
	list, err := a.Vouchers.List(c.Request.Context(), shopID)
	if err != nil {
		a.fail(c, err)
		return
	}
	out := make([]voucherResponse, len(list))
	for i := range list {
		out[i] = newVoucherResponse(&list[i])
	}
	okList(c, out, int64(len(out)))
}

func newVoucherResponse(v *model.SeckillVoucherInfo) voucherResponse {
	return voucherResponse{
		ID: v.ID, ShopID: v.ShopID, Title: v.Title, SubTitle: v.SubTitle, Rules: v.Rules,
		PayValue: v.PayValue, ActualValue: v.ActualValue, Type: v.Type, Status: v.Status,
		Stock: v.Stock, InitialStock: v.InitialStock, BeginTime: v.BeginTime, EndTime: v.EndTime,
		WaitingRoom: v.WaitingRoom, UseDays: model.UseDayList(v.UseDays), UseUntil: v.UseUntil,
	}
}

// seckill is the purchase: parse, buy (sale.Purchase), write. With an
// Idempotency-Key, the room's check runs first: a buyer it refuses touches
// no Redis key, the key's record included.
func (a orderAPI) seckill(c *gin.Context) {
	start := time.Now()
	voucherID, err := pathID(c, "id")
	if err != nil {
		a.outcome(CodeInvalidArgument)
		a.fail(c, err)
		return
	}
	u, _ := middleware.UserFrom(c.Request.Context())
	req := sale.PurchaseRequest{UserID: u.ID, VoucherID: voucherID, Admission: c.GetHeader(AdmissionHeader)}
	if a.limited {
		req.Addr = c.ClientIP()
	}
	if a.Idempotency == nil || c.GetHeader(IdempotencyHeader) == "" {
		a.buy(c, req, start)
		return
	}
	if err := a.purchase.Admit(c.Request.Context(), req); err != nil {
		// Retried after its admission lapsed, a keyed purchase gets its
		// stored answer: only a buyer admitted once reads the record.
		if errors.Is(err, model.ErrAdmissionLapsed) && a.replayOnly(c) {
			return
		}
		a.purchaseFailed(c, voucherID, err, start)
		return
	}
	a.keyed(c, func(c *gin.Context) { a.buy(c, req, start) })
}

// buy runs the purchase and writes its answer.
func (a orderAPI) buy(c *gin.Context, req sale.PurchaseRequest, start time.Time) {
	orderID, err := a.purchase.Buy(c.Request.Context(), req)
	if err != nil {
		a.purchaseFailed(c, req.VoucherID, err, start)
		return
	}
	a.outcome("OK")
	a.observe(req.VoucherID, "OK", nil, start)
	writeOrderID(c, orderID)
}

// purchaseFailed writes a purchase's refusal, counted as an outcome and
// for the voucher.
func (a orderAPI) purchaseFailed(c *gin.Context, voucherID int64, err error, start time.Time) {
	status, code, msg := a.Style.Classify(err)
	a.outcome(code)
	a.observe(voucherID, code, err, start)
	a.failAs(c, err, status, code, msg)
}

func (a *api) outcome(code string) { a.Metrics.Outcome(code) }

func (a orderAPI) order(c *gin.Context) {
	orderID, err := pathID(c, "orderId")
	if err != nil {
		a.fail(c, err)
		return
	}
	u, _ := middleware.UserFrom(c.Request.Context())
	o, err := a.Seckill.Order(c.Request.Context(), u.ID, orderID)
	if err != nil {
		a.fail(c, err)
		return
	}
	v, err := a.ownerView(c.Request.Context(), u.ID, o)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, v)
}

func (a voucherAPI) audit(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	res, err := a.Seckill.Audit(c.Request.Context(), id)
	if err == nil && a.Room != nil {
		res.WaitingRoom, err = a.Room.Audit(c.Request.Context(), id)
	}
	if err == nil && a.Payments != nil {
		var sum model.PaySummary
		if sum, err = a.Payments.Summary(c.Request.Context(), id); err == nil {
			res.Payments = &sum
		}
	}
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, res)
}

// refunds is GET /admin/vouchers/:id/refunds: the sale's refunds at the
// providers, those owed or processing first (tries, next try, why the
// last did not finish).
func (a voucherAPI) refunds(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	list, err := a.Payments.Refunds(c.Request.Context(), id)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, list)
}

// pathID parses a positive 64-bit id from the path parameter name.
func pathID(c *gin.Context, name string) (int64, error) {
	s := c.Param(name)
	id, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, model.InvalidArgument(name, "overflows a 64-bit id")
	case err != nil:
		return 0, model.InvalidArgument(name, "must be a number")
	case id <= 0:
		return 0, model.InvalidArgument(name, "must be positive")
	}
	return id, nil
}

// maxBody bounds request bodies.
const maxBody = 64 << 10

// decodeJSON reads one JSON object into dst and refuses a field dst does
// not have; errors name the field at fault.
func decodeJSON(c *gin.Context, dst any) error { return decodeBody(c, dst, true) }

// decodeJSONLenient is decodeJSON that ignores unknown fields: the course's
// frontend sends a shop's server-owned fields back (createTime, distance).
func decodeJSONLenient(c *gin.Context, dst any) error { return decodeBody(c, dst, false) }

func decodeBody(c *gin.Context, dst any, strict bool) error {
	dec := json.NewDecoder(c.Request.Body) // bounded by middleware.BodyLimit
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field := strings.Trim(name, `"`)
			if len(field) > 64 {
				field = field[:64] + "…"
			}
			return model.InvalidArgument(field, "unknown field (see docs/api.md for the body's fields)")
		}
		var te *json.UnmarshalTypeError
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return model.InvalidArgument(te.Field, "wrong type, want "+te.Type.String())
		case errors.As(err, &mbe):
			return model.InvalidArgument("body", "larger than 64 KiB")
		case errors.Is(err, io.EOF):
			return model.InvalidArgument("body", "required: a JSON object")
		}
		return model.InvalidArgument("body", "malformed JSON")
	}
	if dec.More() {
		return model.InvalidArgument("body", "one JSON object expected")
	}
	return nil
}
