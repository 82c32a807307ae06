// Command driver is a load-test driver that needs nothing but Go. It runs
// the scenario of tools/loadtest/k6/seckill.js: publish a voucher, buy it with
// many users' tokens and duplicates per user, across several instances,
// then read the audit. The harness uses it with DRIVER=go. CI uses it when
// k6 is not installed, since building k6 takes minutes on a cold two-core
// machine.
//
// It leaves the files the harness reads. -voucher-file holds the voucher
// id. -orders-file holds the order id of every 200, one per line.
// -summary-file holds KEY=VALUE lines: purchases, seconds, rps, p50_ms,
// p95_ms, p99_ms, driver_violations, code_<CODE>. It exits 1 when the audit
// shows a broken invariant, and 2 when it cannot run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var v violationsError
	switch {
	case err == nil:
	case errors.As(err, &v):
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(2)
	}
}

// violationsError reports invariants the audit found broken.
type violationsError []string

func (v violationsError) Error() string {
	return fmt.Sprintf("%d invariant violation(s): %s", len(v), strings.Join(v, "; "))
}

// config is the scenario, from the command line.
type config struct {
	baseURLs       []string
	tokensFile     string
	adminFile      string
	voucherID      string
	users          int
	stock          int
	dups           int
	scenario       string
	iterations     int
	vus            int
	spacing        time.Duration
	requestTimeout time.Duration
	summaryFile    string
	ordersFile     string
	voucherFile    string
	// life: after a purchase, buyers pay, cancel or walk away; settle
	// bounds the wait for every unpaid order to expire before the audit.
	life   *life
	settle time.Duration
}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	urls := fs.String("base-urls", "http://127.0.0.1:8080", "comma list of instance URLs")
	fs.StringVar(&c.tokensFile, "tokens", "tokens.csv", "`seckill tokens` output: userId,token lines")
	fs.StringVar(&c.adminFile, "admin-tokens", "", "`seckill tokens --admin` output (its first line is used)")
	fs.StringVar(&c.voucherID, "voucher-id", "", "buy this existing voucher instead of publishing one")
	fs.IntVar(&c.users, "users", 0, "how many users of the tokens file take part (0: all)")
	fs.IntVar(&c.stock, "stock", 100, "stock of the published voucher")
	fs.IntVar(&c.dups, "dups", 3, "purchases per user")
	fs.StringVar(&c.scenario, "scenario", "burst", "burst (each user fires -dups purchases -spacing apart, round-robin over the instances) or random (random users on random instances)")
	fs.IntVar(&c.iterations, "iterations", 0, "random: total purchases (0: users*dups)")
	fs.IntVar(&c.vus, "vus", 40, "concurrent virtual users")
	fs.DurationVar(&c.spacing, "spacing", 0, "burst: gap between one user's purchases")
	fs.DurationVar(&c.requestTimeout, "request-timeout", 60*time.Second, "client timeout of one request")
	fs.StringVar(&c.summaryFile, "summary-file", "", "write KEY=VALUE summary lines here")
	fs.StringVar(&c.ordersFile, "orders-file", "", "write the order id of every 200 here")
	fs.StringVar(&c.voucherFile, "voucher-file", "", "write the voucher id here")
	pay := fs.Float64("pay-share", 0, "share of buyers who pay after a purchase (0 to 1)")
	cancel := fs.Float64("cancel-share", 0, "share of buyers who cancel after a purchase; the rest walk away and their orders expire")
	fs.DurationVar(&c.settle, "settle", 0, "before the audit, wait up to this long for unpaid orders to expire (SECKILL_PAY_TIMEOUT and more)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *pay < 0 || *cancel < 0 || *pay+*cancel > 1 {
		return c, errors.New("-pay-share and -cancel-share must be at least 0 and add up to at most 1")
	}
	if *pay+*cancel > 0 {
		c.life = newLife(*pay, *cancel)
	}
	for _, u := range strings.Split(*urls, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			c.baseURLs = append(c.baseURLs, u)
		}
	}
	switch {
	case len(c.baseURLs) == 0:
		return c, errors.New("-base-urls is empty")
	case c.scenario != "burst" && c.scenario != "random":
		return c, fmt.Errorf("-scenario %q: burst or random", c.scenario)
	case c.dups < 1 || c.vus < 1 || c.stock < 1 || c.users < 0 || c.iterations < 0:
		return c, errors.New("-dups, -vus and -stock must be at least 1; -users and -iterations not negative")
	case c.voucherID == "" && c.adminFile == "":
		return c, errors.New("-admin-tokens is required to publish a voucher (or give -voucher-id)")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseConfig(args, os.Stderr)
	if err != nil {
		return err
	}
	users, err := readTokens(cfg.tokensFile)
	if err != nil {
		return err
	}
	if cfg.users > 0 {
		if cfg.users > len(users) {
			return fmt.Errorf("-users %d: %s holds %d users", cfg.users, cfg.tokensFile, len(users))
		}
		users = users[:cfg.users]
	}
	var admin string
	if cfg.adminFile != "" {
		admins, err := readTokens(cfg.adminFile)
		if err != nil {
			return err
		}
		admin = admins[0].token
	}
	cl := newClient(cfg.vus*cfg.dups, cfg.requestTimeout)

	vid := cfg.voucherID
	if vid == "" {
		if vid, err = cl.publish(ctx, cfg.baseURLs[0], admin, cfg.stock, time.Now()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "VOUCHER %s stock=%d\n", vid, cfg.stock)
	if err := writeFile(cfg.voucherFile, vid+"\n"); err != nil {
		return err
	}

	start := time.Now()
	res := newResults()
	if cfg.scenario == "burst" {
		runBurst(ctx, cl, cfg, users, vid, res)
	} else {
		runRandom(ctx, cl, cfg, users, vid, res)
	}
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}

	var violations violationsError
	if admin != "" {
		var a *audit
		var err error
		if cfg.settle > 0 {
			a, err = settle(ctx, cl, cfg.baseURLs[0], admin, vid, cfg.settle)
		} else {
			a, err = cl.audit(ctx, cfg.baseURLs[0], admin, vid)
		}
		if err != nil {
			violations = append(violations, "audit: "+err.Error())
		} else {
			fmt.Fprintf(stdout, "AUDIT %+v\n", *a)
			violations = append(violations, a.violations()...)
		}
	}

	if err := writeFile(cfg.ordersFile, res.orderLines()); err != nil {
		return err
	}
	sum := res.summary(elapsed, len(violations)) + cfg.life.lines()
	fmt.Fprintf(stdout, "\ngo driver summary (%s, %d base URL(s))\n  %s", cfg.scenario, len(cfg.baseURLs),
		strings.ReplaceAll(strings.TrimSuffix(sum, "\n"), "\n", "\n  ")+"\n")
	if err := writeFile(cfg.summaryFile, sum); err != nil {
		return err
	}
	if len(violations) > 0 {
		return violations
	}
	return nil
}

// writeFile writes s to path. An empty path writes nothing.
func writeFile(path, s string) error {
	if path == "" {
		return nil
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
