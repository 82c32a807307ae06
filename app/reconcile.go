package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"seckill/config"
	"seckill/model"
	"seckill/observe/metrics"
	"seckill/repository/sqlstore"
	"seckill/service/payment"
)

// Exit statuses of `seckill reconcile-payments` (main exits with an
// ExitError's code, 1 for any other error).
const (
	ReconcileExitError      = 1 // a check could not be made (a provider down, no bill yet, a bad flag)
	ReconcileExitMismatches = 3 // every check made, mismatches found
)

// ExitError is an error that asks main for an exit status of its own.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the status main exits with.
func (e *ExitError) ExitCode() int { return e.Code }

// reconciler is the reconciliation of pays' providers; nil without them.
func (w *wiring) reconciler(pays *payment.Payments) *payment.Reconciler {
	if pays == nil {
		return nil
	}
	return payment.NewReconciler(pays, sqlstore.NewReconciliation(w.d.DB), metrics.Payments{Metrics: w.m},
		payment.ReconcileConfig{Interval: w.cfg.ReconcileInterval})
}

// payReconciler compares the providers with the orders a minute after
// its start, then every SECKILL_RECONCILE_INTERVAL: lost notifications, refunds
// in flight, yesterday's and today's bills. Every instance runs one; each
// mismatch is recorded once by the table's unique key.
type payReconciler struct{ loop }

func newPayReconciler(r *payment.Reconciler) *payReconciler { return &payReconciler{loop{run: r.Run}} }

// Name is "pay reconciler".
func (*payReconciler) Name() string { return "pay reconciler" }

// ReconcilePayments runs one reconciliation with the app's providers,
// store and metrics: the open trades older than openAge, the refunds in
// flight longer than refundBound (0: the defaults, 1 minute and 1 hour; a
// negative duration is none) and the bill of day. It is an error without a real pay provider.
func (a *App) ReconcilePayments(ctx context.Context, day time.Time, openAge, refundBound time.Duration) (payment.Report, error) {
	if a.pays == nil {
		return payment.Report{}, errors.New("reconcile: no real pay provider is enabled (SECKILL_PAY_PROVIDERS)")
	}
	r := payment.NewReconciler(a.pays, sqlstore.NewReconciliation(a.deps.DB), metrics.Payments{Metrics: a.metrics},
		payment.ReconcileConfig{OpenAge: openAge, RefundBound: refundBound})
	return r.Reconcile(ctx, []time.Time{day}), nil
}

// ReconcilePaymentsCommand is `seckill reconcile-payments [--date
// YYYY-MM-DD]`: one reconciliation of the configured providers against
// the orders, the bill of --date (Beijing day; default yesterday). It
// prints each mismatch with what to do and a summary. Its error is an
// ExitError: ReconcileExitMismatches when it found mismatches,
// ReconcileExitError when a check could not be made.
func ReconcilePaymentsCommand(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reconcile-payments", flag.ContinueOnError)
	fs.SetOutput(stdout)
	date := fs.String("date", "", "the bill's day, YYYY-MM-DD in Beijing time (default: yesterday)")
	openAge := fs.Duration("open-age", time.Minute, "open trades older than this are queried for a lost notification")
	refundBound := fs.Duration("refund-bound", time.Hour, "refunds owed or processing longer than this are reported")
	if err := fs.Parse(args); err != nil {
		return &ExitError{ReconcileExitError, err}
	}
	if fs.NArg() > 0 {
		return &ExitError{ReconcileExitError, fmt.Errorf("reconcile-payments: unexpected %q (flags: --date YYYY-MM-DD)", fs.Args())}
	}
	day := time.Now().In(beijing).AddDate(0, 0, -1)
	if *date != "" {
		d, err := time.ParseInLocation(time.DateOnly, *date, beijing)
		if err != nil {
			return &ExitError{ReconcileExitError, fmt.Errorf("reconcile-payments: --date %q: want YYYY-MM-DD", *date)}
		}
		day = d
	}
	providers, err := payProviders(ctx, cfg)
	if err != nil {
		return &ExitError{ReconcileExitError, err}
	}
	if len(providers) == 0 {
		return &ExitError{ReconcileExitError, errors.New("reconcile-payments: no real pay provider is configured (SECKILL_PAY_PROVIDERS=alipay,wechat and their settings)")}
	}
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return &ExitError{ReconcileExitError, err}
	}
	defer db.Close()
	pays := payment.New(payment.Deps{Store: sqlstore.NewTrades(db), Providers: providers, Now: time.Now, Log: log},
		payment.Config{PayTimeout: cfg.PayTimeout, NotifyBaseURL: cfg.PayNotifyBaseURL, Bound: cfg.PayUnreachableGrace})
	// A negative duration is none; the reconciler reads 0 as its default.
	none := func(d time.Duration) time.Duration {
		if d <= 0 {
			return -1
		}
		return d
	}
	r := payment.NewReconciler(pays, sqlstore.NewReconciliation(db), nil,
		payment.ReconcileConfig{OpenAge: none(*openAge), RefundBound: none(*refundBound)})
	rep := r.Reconcile(ctx, []time.Time{day})
	printReport(stdout, payment.BillDate(day), rep)
	switch {
	case len(rep.Errors) > 0:
		return &ExitError{ReconcileExitError, fmt.Errorf("reconcile-payments: %d checks could not be made (first: %w)", len(rep.Errors), rep.Errors[0])}
	case len(rep.Found) > 0:
		return &ExitError{ReconcileExitMismatches, fmt.Errorf("reconcile-payments: %d mismatches found", len(rep.Found))}
	}
	return nil
}

// beijing is the providers' zone: their bills' days are Beijing days.
var beijing = time.FixedZone("Asia/Shanghai", 8*3600)

// printReport writes one block per mismatch, then the checks that failed
// and a summary line.
func printReport(w io.Writer, date string, rep payment.Report) {
	for _, f := range rep.Found {
		order := "-"
		if f.OrderID != nil {
			order = fmt.Sprint(*f.OrderID)
		}
		seen := "new"
		if !f.New {
			seen = "recorded before"
		}
		fmt.Fprintf(w, "%s %s out_trade_no=%s order=%s amount=%s yuan (%d fen) bill_date=%s [%s]\n  %s\n  what to do: %s\n",
			f.Kind, f.Provider, f.OutTradeNo, order, f.Amount.Yuan(), int64(f.Amount), f.BillDate, seen, f.Detail, f.Action)
	}
	for _, err := range rep.Errors {
		fmt.Fprintf(w, "error: %v\n", err)
	}
	kinds := map[string]int{}
	for _, f := range rep.Found {
		kinds[f.Kind]++
	}
	fmt.Fprintf(w, "reconcile-payments %s: %d mismatches (%d new)", date, len(rep.Found), rep.New())
	for _, k := range model.MismatchKinds {
		if kinds[k] > 0 {
			fmt.Fprintf(w, ", %s %d", k, kinds[k])
		}
	}
	fmt.Fprintf(w, "; %d checks failed\n", len(rep.Errors))
}
