// Command seckill serves flash-sale vouchers (the Heima Dianping seckill)
// with a configurable per-user distributed lock. See README.md.
//
//	seckill [serve]                               run the HTTP server
//	seckill migrate                               apply sql/schema.sql and exit
//	seckill tokens --count N [--admin] [--out F]  print userId,token lines
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"seckill/auth"
	"seckill/config"
	"seckill/handler"
	"seckill/lock"
	"seckill/lua"
	"seckill/metrics"
	"seckill/model"
	"seckill/repository"
	"seckill/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], config.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		stop()
		os.Exit(1)
	}
}

// run executes one command of the binary and returns when it is done (serve:
// when ctx ends and the server has stopped).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(stderr, getenv("SECKILL_LOG_LEVEL"))
	switch cmd {
	case "serve":
		return serve(ctx, cfg, log)
	case "migrate":
		return migrate(ctx, cfg, log)
	case "tokens":
		return tokens(ctx, cfg, log, args, stdout)
	default:
		return fmt.Errorf("unknown command %q (serve, migrate, tokens)", cmd)
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

func migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	log.InfoContext(ctx, "schema applied", "embedded", db.Embedded)
	return nil
}

func tokens(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	count := fs.Int("count", 0, "number of users (required, ≥ 1)")
	admin := fs.Bool("admin", false, "admin users instead of ordinary ones")
	out := fs.String("out", "", "output file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count < 1 || *count > 1_000_000 {
		return errors.New("tokens: --count must be between 1 and 1000000")
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	secret, _ := cfg.Secret()
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("tokens: %w", err)
		}
		defer f.Close()
		w = f
	}
	role := model.RoleUser
	if *admin {
		role = model.RoleAdmin
	}
	n, err := service.WriteTokens(ctx, repository.NewUsers(db), auth.NewTokens(secret, cfg.JWTTTL), role, *count, w)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "tokens written", "count", n, "role", role, "out", *out)
	return nil
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	log.InfoContext(ctx, "starting", "config", cfg)
	secret, devSecret := cfg.Secret()
	if devSecret {
		log.WarnContext(ctx, "SECKILL_JWT_SECRET is empty: using the public development secret")
	}

	deps, err := openDeps(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer deps.Close(log)
	if err := deps.DB.Migrate(ctx); err != nil {
		return err
	}

	lockDeps := lock.Deps{Redis: deps.Redis, Nodes: deps.Nodes, ZKServers: cfg.ZKAddrs, Scripts: lua.LockScripts()}
	if !deps.DB.Embedded {
		sqlDB, err := deps.DB.Gorm.DB()
		if err != nil {
			return err
		}
		lockDeps.DB = sqlDB
	}
	lockOpts := []lock.Option{lock.WithTTL(cfg.LockTTL)}
	locker, err := lock.New(cfg.LockMode, lockDeps, lockOpts...)
	if err != nil {
		return fmt.Errorf("SECKILL_LOCK_MODE=%s: %w", cfg.LockMode, err)
	}
	if c, ok := locker.(io.Closer); ok {
		defer c.Close()
	}

	m := metrics.New()
	tok := auth.NewTokens(secret, cfg.JWTTTL)
	users := repository.NewUsers(deps.DB)
	vouchers := repository.NewVouchers(deps.DB)
	orders := repository.NewOrders(deps.DB)
	seckill := service.NewSeckill(service.SeckillDeps{
		Vouchers: vouchers, Orders: orders,
		IDs:    repository.NewIDWorker(deps.Redis, 1, time.Now),
		Locker: locker, Rejects: repository.NewRejections(deps.Redis),
		Observer: m, Now: time.Now, Log: log,
	}, service.SeckillConfig{Fencing: cfg.Fencing, CriticalDelay: cfg.CriticalDelay})

	h := handler.New(handler.Deps{
		Users:          service.NewUsers(users, repository.NewCodes(deps.Redis), tok, log),
		Vouchers:       service.NewVouchers(vouchers, time.Now),
		Seckill:        seckill,
		Tokens:         tok,
		Metrics:        m,
		Log:            log,
		Ready:          deps.Ready,
		Development:    cfg.Env == "development",
		RequestTimeout: cfg.RequestTimeout,
	})
	srv := &http.Server{
		Addr:              cfg.HTTPAddr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.InfoContext(ctx, "serving", "addr", cfg.HTTPAddr, "lock_mode", locker.Name(), "order_mode", cfg.OrderMode,
		"embedded_db", deps.DB.Embedded, "embedded_redis", deps.EmbeddedRedis)

	select {
	case err := <-errc:
		return fmt.Errorf("SECKILL_HTTP_ADDR: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
