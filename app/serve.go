package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"seckill/config"
)

// Serve is `seckill serve`. It binds SECKILL_HTTP_ADDR, starts the app and
// serves it until ctx ends. Then it stops within the contract's ten seconds.
func Serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	log.InfoContext(ctx, "starting", "config", cfg)
	// Bind first, so a taken port is one error line. It comes before any
	// migration, reconciliation or consumer. And "serving" is logged only once
	// the port is ours.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
	}
	defer ln.Close()
	a, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if cfg.Development() {
		a.SeedDemo(ctx)
	}
	srv := newHTTPServer(cfg, a.handler, log)
	srv.RegisterOnShutdown(a.streams.end)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.InfoContext(ctx, "serving", "url", BrowseURL(ln.Addr()), "addr", ln.Addr().String(), "lock_mode", a.locker.Name(), "order_mode", cfg.OrderMode,
		"embedded_db", a.deps.DB.Embedded, "embedded_redis", a.deps.EmbeddedRedis)

	select {
	case err := <-errc:
		return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Everything stops within the contract's 10 seconds. The HTTP server stops
	// first, then the consumers finish their batch.
	deadline := time.Now().Add(9500 * time.Millisecond)
	sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	a.StopWorkers(deadline)
	log.Info("stopped")
	return nil
}

// BrowseURL is the address a browser on this machine opens the web app at,
// http://127.0.0.1:8080/ for a listener on 127.0.0.1:8080 (a terminal makes
// it a link). A listener on every interface (":8080") is reached at
// 127.0.0.1.
func BrowseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // Go's listener on every interface takes IPv4 too
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// MaxHeaderBytes bounds a request's header block. A purchase's headers
// are a bearer token and a few short lines; net/http's default bound is a
// megabyte per request. A larger block is refused with 431 before any
// handler runs.
const MaxHeaderBytes = 64 << 10

// newHTTPServer is the server Serve runs: its timeouts and bounds.
func newHTTPServer(cfg config.Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              cfg.HTTPAddr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
