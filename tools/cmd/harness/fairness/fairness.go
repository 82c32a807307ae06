// Package fairness is `harness fairness`: the waiting room's fairness run
// (internal/fairness) over two app instances in this process, on loopback,
// on the MariaDB and Redis of SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR. It
// writes tools/loadtest/fairness/RESULTS.md and results.json.
package fairness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"seckill/app"
	"seckill/auth"
	"seckill/config"
	"seckill/internal/fairness"
	"seckill/model"
	"seckill/repository/sqlstore"
	"seckill/service"
	"seckill/tools/cmd/harness/testbed"
)

// settings are the run's knobs (environment, with defaults).
type settings struct {
	buyers, units, conns int
	botShare             float64
	deadline, ttl        time.Duration
}

func read() settings {
	s := settings{buyers: 20000, units: 500, conns: 32, botShare: 0.02, deadline: 3 * time.Minute, ttl: 5 * time.Second}
	if v, err := strconv.Atoi(os.Getenv("FAIR_BUYERS")); err == nil && v > 0 {
		s.buyers = v
	}
	if v, err := strconv.Atoi(os.Getenv("FAIR_UNITS")); err == nil && v > 0 {
		s.units = v
	}
	if v, err := strconv.Atoi(os.Getenv("FAIR_CONNS")); err == nil && v > 0 {
		s.conns = v
	}
	return s
}

// Run is the subcommand; it returns the exit status.
func Run(_ []string) int {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fairness:", err)
		return 1
	}
	return 0
}

func run() error {
	s := read()
	started := time.Now()
	ctx := context.Background()
	env := map[string]string{
		"SECKILL_MYSQL_DSN": os.Getenv("SECKILL_MYSQL_DSN"), "SECKILL_REDIS_ADDR": os.Getenv("SECKILL_REDIS_ADDR"),
		"SECKILL_ENV": "development", "SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_ACCESS_LOG": "0",
		"SECKILL_WAITING_ROOM_TOKEN_TTL": s.ttl.String(), "SECKILL_PAY_TIMEOUT": "262800h",
	}
	if env["SECKILL_MYSQL_DSN"] == "" || env["SECKILL_REDIS_ADDR"] == "" {
		return fmt.Errorf("set SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR (source .ci/env.sh)")
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var bases []string
	var admin string
	for i := range 2 {
		a, err := app.New(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer a.Close()
		if i == 0 {
			us, err := sqlstore.NewUsers(a.DB()).EnsureUsers(ctx, []string{service.LoadTestPhone(model.RoleAdmin, 1)}, model.RoleAdmin, func(int) string { return "admin_1" })
			if err != nil {
				return err
			}
			if admin, err = tokens().Issue(us[0].ID, model.RoleAdmin); err != nil {
				return err
			}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln) //nolint:errcheck // ends with Close
		defer srv.Close()
		bases = append(bases, "http://"+ln.Addr().String())
	}
	fc := fairness.Config{
		Bases: bases, Buyers: s.buyers, Units: s.units, BotShare: s.botShare, BotJoins: 5,
		BotEvery: 20 * time.Millisecond, NoShow: 0.1, StartAfter: time.Duration(s.buyers/400+5) * time.Second,
		Deadline: s.deadline, Conns: s.conns, AdminToken: admin, FirstUser: 1<<42 + rand.Int64N(1<<40), Seed: 35,
		Token: func(id int64) (string, error) { return tokens().Issue(id, model.RoleUser) },
	}
	res, err := fairness.Run(ctx, fc)
	if err != nil {
		return err
	}
	cmd := fmt.Sprintf("FAIR_BUYERS=%d FAIR_UNITS=%d FAIR_CONNS=%d go -C tools run ./cmd/harness fairness", s.buyers, s.units, s.conns)
	info := testbed.NewRunInfo(started, cmd, []string{
		"two instances in one process, sync mode, lock lua", "SECKILL_WAITING_ROOM_TOKEN_TTL=" + s.ttl.String(),
		"SECKILL_WAITING_ROOM_OVERBOOK=1.2", "bots join 5 times, poll and buy without a token every 20 ms",
		"10 % of admitted people never buy", fmt.Sprintf("%d connections per instance", s.conns),
	})
	return write(info, res)
}

var devTokens = auth.NewTokens(config.DevJWTSecret, 24*time.Hour)

func tokens() *auth.Tokens { return devTokens }

// write writes results.json and RESULTS.md to tools/loadtest/fairness.
func write(info testbed.RunInfo, res *fairness.Result) error {
	root, err := testbed.ProjectRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "tools", "loadtest", "fairness")
	b, err := json.MarshalIndent(struct {
		testbed.RunInfo
		Result *fairness.Result `json:"result"`
	}{info, res}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# The waiting room's fairness run\n\nWritten by `%s` (tools/cmd/harness/fairness) on %s.\n\nMachine: %s. Elapsed: %.0f s.\n\nSettings: %s.\n\n",
		info.Command, info.Date, info.Machine, info.ElapsedS, strings.Join(info.Settings, "; "))
	fmt.Fprintf(&md, "| figure | value |\n|---|---|\n")
	rows := [][2]string{
		{"buyers (joined before the start)", strconv.Itoa(res.Buyers)},
		{"bots", fmt.Sprintf("%d (%.1f %% of the joiners)", res.Bots, 100*res.BotShareJoiners)},
		{"units", strconv.Itoa(res.Units)},
		{"sold (200 answers) / orders in the database", fmt.Sprintf("%d / %d", res.Sold, res.Orders)},
		{"sold without a token", strconv.Itoa(res.TokenlessSold)},
		{"purchases without a token refused (403 NOT_ADMITTED)", strconv.Itoa(res.TokenlessRefused)},
		{"units bought by bots", fmt.Sprintf("%d (%.1f %% of the units)", res.SoldByBots, 100*res.BotShareUnits)},
		{"exact two-sided binomial test, bots' units vs their share of joiners", fmt.Sprintf("p = %.3g", res.PValue)},
		{"joiners who learned the outcome / never did", fmt.Sprintf("%d / %d", res.Learned, res.Unlearned)},
		{"learned after the last sale: p99 / max", fmt.Sprintf("%.1f s / %.1f s", res.LearnedP99.Seconds(), res.LearnedMax.Seconds())},
		{"admitted people who walked away (no-shows)", strconv.Itoa(res.WalkedAway)},
		{"join phase / sale phase", fmt.Sprintf("%.1f s / %.1f s", res.JoinPhase.Seconds(), res.SalePhase.Seconds())},
		{"requests", fmt.Sprint(res.Requests)},
		{"room (audit)", "`" + string(res.Room) + "`"},
		{"errors", fmt.Sprint(len(res.Errors))},
	}
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %s |\n", r[0], r[1])
	}
	return os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(md.String()), 0o644)
}
