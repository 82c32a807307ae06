package handler

import (
	"context"
	"io/fs"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"seckill/auth"
	"seckill/middleware"
	"seckill/observe/live"
	"seckill/observe/metrics"
)

// Deps are what the routes need, in four groups. Their fields are promoted,
// so d.Seckill is d.Services.Seckill.
type Deps struct {
	Services
	Access
	Observability
	Settings
	Dashboard
}

// Services are the services behind the routes.
type Services struct {
	Users    Users
	Vouchers Vouchers
	// Shops serves the course's shop routes; nil leaves them out.
	Shops Shops
	// ShopSearch lists shops by name (GET /shop/list); nil leaves it out.
	ShopSearch ShopSearch
	// VoucherAdmin reads, edits and closes one voucher; nil leaves its
	// routes out.
	VoucherAdmin VoucherAdmin
	Seckill      Sale
	// Limits holds purchases to the limits shared by every instance; nil
	// or none enabled keeps them off the route.
	Limits PurchaseLimits
	// Lifecycle pays and cancels orders (POST /voucher-order/:orderId/pay
	// and /cancel); nil leaves those routes out.
	Lifecycle Lifecycle
	// Payments opens trades at the pay providers and applies their
	// notifications (POST /pay/notify/<provider>); nil: none enabled.
	Payments Payments
	// SimulatedPay lets the pay call without a provider pay at once
	// (development only: no money moves).
	SimulatedPay bool
	// History lists a user's orders (GET /user/orders); nil leaves the
	// route out.
	History History
	// Idempotency keeps the Idempotency-Key answers of the purchase, the
	// pay and the cancel; nil ignores the header.
	Idempotency Idempotency
	// Redemption redeems paid orders' codes at the shops and manages their
	// staff; nil leaves its routes, and the orders' codes, out.
	Redemption Redemption
	// Room is the waiting room (join, poll, and the purchase's admission
	// check); nil leaves its routes and check out.
	Room Room
	// Mismatches lists the reconciliation's mismatches (GET
	// /admin/payments/mismatches); nil leaves the route out.
	Mismatches Mismatches
}

// Access decides who a request comes from and what it may do.
type Access struct {
	Tokens *auth.Tokens
	// Revocations refuses revoked tokens on every authenticated route, from
	// memory; nil refuses none.
	Revocations middleware.Revocations
	// AdminCheck reads an admin's current role and revocation on the admin
	// routes; nil trusts the token's role.
	AdminCheck middleware.AdminCheck
	// TrustedProxies are the proxies (IPs or CIDRs) whose X-Forwarded-For
	// names the client address; none by default, the client is then the
	// connection's peer. Config validates them; New panics on a bad one.
	TrustedProxies []string
}

// Observability is what the routes tell operators.
type Observability struct {
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Ready checks the database and Redis for /readyz.
	Ready func(ctx context.Context) error
	// AccessLog is the most request lines logged per second
	// (SECKILL_ACCESS_LOG); 0 logs none.
	AccessLog int
	// Tracer traces every request (serverSpan), W3C trace context
	// in; nil (tracing off) adds nothing to the routes.
	Tracer trace.TracerProvider
	// TrustParent lets a request's traceparent be its span's parent
	// and decide its sampling (telemetry.EdgePropagator); off, the
	// request's trace is its own, linked to the caller's span.
	TrustParent bool
}

// Settings shape the answers.
type Settings struct {
	// Development exposes the login code in /user/code responses, pprof and
	// the /debug/noop benchmark endpoint.
	Development    bool
	RequestTimeout time.Duration
	// Location reads zone-less times of the voucher body (time.Local).
	Location *time.Location
	// Style is how refusals reach the client (SECKILL_API_STYLE); empty
	// is StyleREST.
	Style Style
	// ShedTarget bounds the purchases in flight to what the instance
	// clears in this time (SECKILL_SHED_TARGET); the excess is answered at
	// once with 503 and Retry-After. 0: no bound.
	ShedTarget time.Duration
}

// Dashboard is the live dashboard and the web app.
type Dashboard struct {
	// Live counts the seckill answers per voucher for the live dashboard
	// (in memory); nil counts nothing.
	Live *live.Recorder
	// Board reads the live dashboard (GET /admin/vouchers/:id/live); nil
	// leaves the route out.
	Board *live.Board
	// Web is the web app's files (index.html, assets/), served at / and
	// /assets/; nil leaves them out.
	Web fs.FS
	// Streams ends every live stream when it is done; cancel it at shutdown.
	// http.Server.Shutdown waits for requests, and a stream ends only with its
	// client or lifetime. Nil: a stream ends with its client or its lifetime
	// only.
	Streams context.Context
}
