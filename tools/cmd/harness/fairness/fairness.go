// Package fairness is `harness fairness`: the waiting room's fairness run
// (testkit/fairness) over two app instances in this process, on loopback,
// on the MariaDB and Redis of SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR. It
// writes tools/loadtest/fairness/RESULTS.md and results.json. With
// FAIR_CLUSTER=1 the instances use the Redis Cluster of
// SECKILL_TEST_CLUSTER_ADDRS and the results go to the cluster folder.
// With FAIR_SYBIL_ACCOUNTS=N one person holds N of the joiners' accounts,
// and the results go to the sybil folder under it.
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
	"seckill/model"
	"seckill/repository/sqlstore"
	"seckill/service/account"
	"seckill/testkit/fairness"
	"seckill/tools/cmd/harness/testbed"
)

// settings are the run's knobs (environment, with defaults).
type settings struct {
	buyers, units, conns int
	botShare             float64
	deadline, ttl        time.Duration
	// cluster runs on the Redis Cluster (FAIR_CLUSTER=1); mode is the
	// order mode (FAIR_MODE, sync or async); buckets the voucher's stock
	// buckets in async mode (FAIR_BUCKETS).
	cluster bool
	mode    string
	buckets int
	// sybil is how many of the joiners' accounts one person holds
	// (FAIR_SYBIL_ACCOUNTS; 0, the default, none).
	sybil int
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
	s.cluster, s.mode, s.buckets = os.Getenv("FAIR_CLUSTER") == "1", "sync", 1
	if os.Getenv("FAIR_MODE") == "async" {
		s.mode = "async"
	}
	if v, err := strconv.Atoi(os.Getenv("FAIR_BUCKETS")); err == nil && v >= 1 && v <= 16 {
		s.buckets = v
	}
	if v, err := strconv.Atoi(os.Getenv("FAIR_SYBIL_ACCOUNTS")); err == nil && v > 0 {
		s.sybil = v
	}
	return s
}

// redisEnv sets the Redis of the run: the cluster of
// SECKILL_TEST_CLUSTER_ADDRS, or the Redis of SECKILL_REDIS_ADDR.
func (s settings) redisEnv(env map[string]string) error {
	if !s.cluster {
		env["SECKILL_REDIS_ADDR"] = os.Getenv("SECKILL_REDIS_ADDR")
		if env["SECKILL_REDIS_ADDR"] == "" {
			return fmt.Errorf("set SECKILL_REDIS_ADDR (source .ci/env.sh)")
		}
		return nil
	}
	env["SECKILL_REDIS_ADDR"], env["SECKILL_REDIS_CLUSTER_ADDRS"] = "", os.Getenv("SECKILL_TEST_CLUSTER_ADDRS")
	if env["SECKILL_REDIS_CLUSTER_ADDRS"] == "" {
		return fmt.Errorf("FAIR_CLUSTER=1: set SECKILL_TEST_CLUSTER_ADDRS (source .ci/env.sh)")
	}
	return nil
}

// command is the run's command line, for the results.
func (s settings) command() string {
	cmd := fmt.Sprintf("FAIR_BUYERS=%d FAIR_UNITS=%d FAIR_CONNS=%d", s.buyers, s.units, s.conns)
	if s.cluster {
		cmd += " FAIR_CLUSTER=1"
	}
	if s.mode == "async" {
		cmd += fmt.Sprintf(" FAIR_MODE=async FAIR_BUCKETS=%d", s.buckets)
	}
	if s.sybil > 0 {
		cmd += fmt.Sprintf(" FAIR_SYBIL_ACCOUNTS=%d", s.sybil)
	}
	return cmd + " go -C tools run ./cmd/harness fairness"
}

// where is the run's Redis and mode, for the results.
func (s settings) where() string {
	w := "two instances in one process, one Redis, " + s.mode + " mode, lock lua"
	if s.cluster {
		w = "two instances in one process, the Redis Cluster of SECKILL_TEST_CLUSTER_ADDRS, " + s.mode + " mode, lock lua"
	}
	if s.mode == "async" {
		w += fmt.Sprintf(", the voucher's stock in %d buckets", s.buckets)
	}
	return w
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
		"SECKILL_MYSQL_DSN": os.Getenv("SECKILL_MYSQL_DSN"), "SECKILL_ORDER_MODE": s.mode, "SECKILL_LOCK_MODE": "lua",
		"SECKILL_STOCK_BUCKETS": strconv.Itoa(s.buckets), "SECKILL_ENV": "development", "SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_ACCESS_LOG": "0",
		"SECKILL_WAITING_ROOM_TOKEN_TTL": s.ttl.String(), "SECKILL_PAY_TIMEOUT": "262800h",
	}
	if env["SECKILL_MYSQL_DSN"] == "" {
		return fmt.Errorf("set SECKILL_MYSQL_DSN (source .ci/env.sh)")
	}
	if err := s.redisEnv(env); err != nil {
		return err
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
			us, err := sqlstore.NewUsers(a.DB()).EnsureUsers(ctx, []string{account.LoadTestPhone(model.RoleAdmin, 1)}, model.RoleAdmin, func(int) string { return "admin_1" })
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
		Token:         func(id int64) (string, error) { return tokens().Issue(id, model.RoleUser) },
		SybilAccounts: s.sybil,
	}
	res, err := fairness.Run(ctx, fc)
	if err != nil {
		return err
	}
	settings := []string{
		s.where(), "SECKILL_WAITING_ROOM_TOKEN_TTL=" + s.ttl.String(),
		"SECKILL_WAITING_ROOM_OVERBOOK=1.2", "bots join 5 times, poll and buy without a token every 20 ms",
		"10 % of admitted people never buy", fmt.Sprintf("%d connections per instance", s.conns),
	}
	if s.sybil > 0 {
		settings = append(settings, fmt.Sprintf("one person holds %d of the people's accounts (each joins once, polls when told and buys whenever admitted)", s.sybil))
	}
	info := testbed.NewRunInfo(started, s.command(), settings)
	return write(info, res, s.cluster)
}

var devTokens = auth.NewTokens(config.DevJWTSecret, 24*time.Hour)

func tokens() *auth.Tokens { return devTokens }

// write writes results.json and RESULTS.md to tools/loadtest/fairness, or
// to its cluster folder for a run on the Redis Cluster; a run with one
// person holding many accounts to the sybil folder under either.
func write(info testbed.RunInfo, res *fairness.Result, cluster bool) error {
	root, err := testbed.ProjectRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "tools", "loadtest", "fairness")
	title := "The waiting room's fairness run"
	if cluster {
		dir, title = filepath.Join(dir, "cluster"), "The waiting room's fairness run on the Redis Cluster"
	}
	if res.Sybil != nil {
		dir = filepath.Join(dir, "sybil")
		title += fmt.Sprintf(", one person holding %d accounts", res.Sybil.Accounts)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
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
	fmt.Fprintf(&md, "# %s\n\nWritten by `%s` (tools/cmd/harness/fairness) on %s.\n\nMachine: %s. Elapsed: %.0f s.\n\nSettings: %s.\n\n",
		title, info.Command, info.Date, info.Machine, info.ElapsedS, strings.Join(info.Settings, "; "))
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
	}
	if sy := res.Sybil; sy != nil {
		rows = append(rows, [][2]string{
			{"one person's accounts (ordinary accounts, one phone each)", fmt.Sprintf("%d (%.2f %% of the joiners)", sy.Accounts, 100*float64(sy.Accounts)/float64(res.Buyers))},
			{"the person's accounts admitted", strconv.Itoa(sy.Admitted)},
			{"units the person won", strconv.Itoa(sy.Won)},
			{"fair share of one account (units / joiners)", fmt.Sprintf("%.4g units", sy.FairOne)},
			{fmt.Sprintf("fair share of %d accounts (%d × units / joiners)", sy.Accounts, sy.Accounts), fmt.Sprintf("%.4g units", sy.FairN)},
			{"units won / that share", fmt.Sprintf("%.2f", sy.Ratio)},
			{fmt.Sprintf("exact two-sided binomial test, the person's units vs %d accounts' share of joiners", sy.Accounts), fmt.Sprintf("p = %.3g (accepts %d to %d units at 5 %%)", sy.PValue, sy.AcceptLo, sy.AcceptHi)},
			{"the person's expected units if every joiner who buys when admitted has the same chance (the person never walks away, 10 % of the other people do)", fmt.Sprintf("%.4g units", sy.FairNBuying)},
		}...)
	}
	rows = append(rows, [][2]string{
		{"joiners who learned the outcome / never did", fmt.Sprintf("%d / %d", res.Learned, res.Unlearned)},
		{"learned after the last sale: p99 / max", fmt.Sprintf("%.1f s / %.1f s", res.LearnedP99.Seconds(), res.LearnedMax.Seconds())},
		{"admitted people who walked away (no-shows)", strconv.Itoa(res.WalkedAway)},
		{"join phase / sale phase", fmt.Sprintf("%.1f s / %.1f s", res.JoinPhase.Seconds(), res.SalePhase.Seconds())},
		{"requests", fmt.Sprint(res.Requests)},
		{"room (audit)", "`" + string(res.Room) + "`"},
		{"errors", fmt.Sprint(len(res.Errors))},
	}...)
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %s |\n", r[0], r[1])
	}
	return os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(md.String()), 0o644)
}
