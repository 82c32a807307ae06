package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/config"
	"seckill/lock"
	"seckill/model"
	"seckill/repository/sqlstore"
	"seckill/service/account"
)

// Usage is what --help prints.
const Usage = `Usage:
  seckill [serve]                               run the HTTP server (SECKILL_HTTP_ADDR, default 127.0.0.1:8080 in development, :8080 in production)
  seckill migrate                               apply sql/schema.sql and exit
  seckill tokens --count N [--admin] [--out F]  make sure N users exist; print userId,token lines
  seckill rebuild --voucher N                   async mode: rebuild a voucher's Redis state from the database
  seckill revoke --user N                       refuse user N's tokens issued until now (docs/operations.md)
  seckill staff add --shop N --phone P          make the user of phone P staff of shop N (docs/redemption.md)
  seckill staff remove --shop N --user U        take user U off shop N's staff
  seckill reconcile-payments [--date YYYY-MM-DD]  compare the pay providers' bill of the day (default yesterday) with the orders;
                                                exit 0 none, 1 a check failed, 3 mismatches found (docs/payments.md)
  seckill help | --help | -h                    print this

Configuration comes from SECKILL_* environment variables (see README.md).
With no SECKILL_MYSQL_DSN and no real Redis (SECKILL_REDIS_ADDR, the Sentinel or
the Cluster settings) the server runs on embedded backends under ./data in
development mode, on 127.0.0.1 only. With either one set it runs in production
unless SECKILL_ENV=development: production needs both a real database and a
real Redis, and a SECKILL_JWT_SECRET of at least 32 bytes (openssl rand -hex 32).
`

// Run executes one command of the binary, args without the program name. It
// returns when the command is done. serve returns once ctx ends and the server
// has stopped. getenv reads the SECKILL_* settings.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || slices.ContainsFunc(args, isHelpFlag) {
		_, err := io.WriteString(stdout, Usage+"\n"+config.Help())
		return err
	}
	if cmd == "serve" && len(args) > 0 {
		return fmt.Errorf("serve takes no arguments, got %q (see seckill --help)", args)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := NewLogger(stderr, cfg.LogLevel)
	quietLibraries(log)
	for _, name := range config.Undeclared(os.Environ()) {
		log.Warn("config.undeclared", "variable", name,
			"meaning", "no setting of this version reads it (misspelt or retired?); seckill --help lists them")
	}
	switch cmd {
	case "serve":
		return Serve(ctx, cfg, log)
	case "migrate":
		return Migrate(ctx, cfg, log)
	case "tokens":
		return Tokens(ctx, cfg, log, args, stdout)
	case "rebuild":
		return Rebuild(ctx, cfg, log, args, stdout)
	case "revoke":
		return Revoke(ctx, cfg, log, args, stdout)
	case "staff":
		return Staff(ctx, cfg, log, args, stdout)
	case "reconcile-payments":
		return ReconcilePaymentsCommand(ctx, cfg, log, args, stdout)
	default:
		return fmt.Errorf("unknown command %q (serve, migrate, tokens, rebuild, revoke, staff, reconcile-payments)", cmd)
	}
}

// NewLogger returns the binary's JSON logger at level. Levels are debug, info,
// warn and error. Empty or unknown means info.
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// quietLibraries sends the go-redis and MySQL drivers' own loggers to slog at
// debug level. They log one line per failed dial during an outage. The service
// reports outages itself, once per request, as 503.
func quietLibraries(log *slog.Logger) {
	redis.SetLogger(redisLogger{log})
	if err := mysql.SetLogger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)); err != nil {
		log.Warn("mysql logger", "err", err)
	}
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "source", "go-redis")
}

// openMigrated opens the database and applies the schema: what the offline
// commands need.
func openMigrated(ctx context.Context, cfg config.Config) (*sqlstore.DB, error) {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func isHelpFlag(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// Migrate is `seckill migrate`: it applies the schema and returns.
func Migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	log.InfoContext(ctx, "schema applied", "embedded", db.Embedded)
	return nil
}

// Tokens is `seckill tokens`. It makes sure --count users exist. It writes a
// userId,token line for each to stdout or --out.
func Tokens(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
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
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	secret, _ := cfg.Secret()
	w := stdout
	if *out != "" {
		// Tokens are credentials: readable by their owner only, also when
		// the file was there before.
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("tokens: %w", err)
		}
		defer f.Close()
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("tokens: %w", err)
		}
		w = f
	}
	role := model.RoleUser
	if *admin {
		role = model.RoleAdmin
	}
	n, err := account.WriteTokens(ctx, sqlstore.NewUsers(db), auth.NewTokens(secret, cfg.JWTTTL), role, *count, w)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "tokens written", "count", n, "role", role, "out", *out)
	return nil
}

// Rebuild is `seckill rebuild --voucher N`. It rebuilds the voucher's async
// Redis state from the database's facts and sets it ok. It is the only way to
// clear an unsafe voucher.
func Rebuild(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	voucher := fs.Int64("voucher", 0, "voucher id (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *voucher <= 0 {
		return errors.New("rebuild: --voucher must be a positive voucher id")
	}
	if !cfg.RealRedis() {
		return errors.New("rebuild: SECKILL_REDIS_ADDR and SECKILL_REDIS_SENTINEL_ADDRS are empty: the embedded Redis lives inside `serve`, which rebuilds every voucher at start")
	}
	d, err := openDeps(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close(log)
	if err := d.DB.Migrate(ctx); err != nil {
		return err
	}
	as, _, err := newAsync(d, cfg, log, lock.NewNone(), nil, nil, nil)
	if err != nil {
		return err
	}
	rv, err := as.Reconciler.Rebuild(ctx, *voucher)
	if err != nil {
		return fmt.Errorf("rebuild voucher %d: %w", *voucher, err)
	}
	fmt.Fprintf(stdout, "voucher %d rebuilt from the database and the stream: state %s, redis stock %d, buyers %d\n",
		*voucher, rv.State, rv.Stock, rv.Buyers)
	fmt.Fprintln(stdout, "WARNING: admissions that Redis lost are not honoured: orders announced (200) whose stream entries were lost will never be written; their buyers may buy again.")
	return nil
}

// Revoke is `seckill revoke --user N`. Every token of user N issued until now
// is refused on every instance. Admin routes refuse it at once, the others
// within RevocationReload.
func Revoke(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	user := fs.Int64("user", 0, "user id (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user <= 0 || fs.NArg() > 0 {
		return errors.New("revoke: --user must be a positive user id (and nothing else)")
	}
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := account.RevokeTokens(ctx, sqlstore.NewUsers(db), sqlstore.NewRevocations(db), *user, time.Now())
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	nb := r.NotBefore.UTC().Format(time.RFC3339)
	fmt.Fprintf(stdout, "user %d (role %s): tokens issued before %s are refused, on admin routes at once, on the others within %s on every instance; tokens issued from then on work\n",
		r.User.ID, r.User.Role, nb, RevocationReload)
	if r.User.Role == model.RoleAdmin {
		fmt.Fprintf(stdout, "user %d is still an admin: to take admin away, demote it: UPDATE tb_user SET role = 'user' WHERE id = %d;\n", r.User.ID, r.User.ID)
	}
	log.InfoContext(ctx, "tokens revoked", "user", r.User.ID, "role", r.User.Role, "not_before", nb)
	return nil
}
