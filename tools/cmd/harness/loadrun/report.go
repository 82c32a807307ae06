package loadrun

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"seckill/tools/cmd/harness/testbed"
)

// lifeText renders the life answers as action_code=n, sorted.
func lifeText(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// renderTable is the printed report.
func renderTable(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nseckill load test: mode=%s instances=%d setting=%s (lease %s, critical delay %s) driver=%s scenario=%s\n",
		r.Mode, r.Instances, r.Setting, r.LockTTL, r.CriticalDelay, r.Driver, r.Scenario)
	if r.OrderMode == "async" {
		fmt.Fprintf(&b, "  async admission on %s, %d bucket(s)\n", redisName(r.Redis), max(r.Buckets, 1))
	}
	other := r.OtherCodes
	if other == "" {
		other = "none"
	}
	rows := [][2]string{
		{"voucher", fmt.Sprintf("%d (initial stock %d)", r.VoucherID, r.InitialStock)},
		{"users x purchases each", fmt.Sprintf("%d x %d (spacing %d ms)", r.Users, r.Dups, r.SpacingMS)},
		{"requests", fmt.Sprint(r.Requests)},
		{"200 OK", fmt.Sprint(r.Codes["OK"])},
		{"409 SOLD_OUT", fmt.Sprint(r.Codes["SOLD_OUT"])},
		{"409 DUPLICATE_ORDER", fmt.Sprint(r.Codes["DUPLICATE_ORDER"])},
	}
	if r.OrderMode == "async" {
		rows = append(rows, [2]string{"  refused by the admission script", fmt.Sprint(r.ScriptRefused)},
			[2]string{"consumer lock refused / unique key", fmt.Sprintf("%d / %d (audit counter: %d)", r.LockRefused, r.UniqueKey, r.DupRejAudit)})
	} else {
		rows = append(rows, [2]string{"  of which lock refused", fmt.Sprint(r.LockRefused)},
			[2]string{"  of which past lock, tx check", fmt.Sprint(r.PastLock)},
			[2]string{"  of which unique key (DB)", fmt.Sprintf("%d (audit counter: %d)", r.UniqueKey, r.DupRejAudit)})
	}
	rows = append(rows, [][2]string{
		{"other codes", other},
		{"orders in DB / distinct users", fmt.Sprintf("%d / %d", r.Orders, r.DistinctUsers)},
		{"stock left", fmt.Sprint(r.StockLeft)},
		{"oversold", testbed.YesNo(r.Oversold)},
		{"consistent (invariants 1-5)", testbed.YesNo(r.Consistent)},
		{"invariant 5 (async)", r.Invariant5},
		{"req/s", string(r.RPS)},
		{"latency p50 / p95 / p99 (ms)", fmt.Sprintf("%s / %s / %s", r.P50ms, r.P95ms, r.P99ms)},
		{"lock breaches", fmt.Sprint(r.Breaches)},
		{"server OK count / driver 200s", fmt.Sprintf("%d / %d", r.ServerOK, r.Codes["OK"])},
	}...)
	if r.PayShare+r.CancelShare > 0 {
		rows = append(rows, [][2]string{
			{"life: pay / cancel shares, timeout", fmt.Sprintf("%g / %g, SECKILL_PAY_TIMEOUT=%s", r.PayShare, r.CancelShare, r.PayTimeout)},
			{"life: answers", lifeText(r.Life)},
			{"unpaid / paid / expired / cancelled", fmt.Sprintf("%d / %d / %d / %d", r.Unpaid, r.Paid, r.Expired, r.Cancelled)},
			{"stock + unpaid + paid", fmt.Sprintf("%d + %d + %d = %d (initial %d)", r.StockLeft, r.Unpaid, r.Paid, r.StockLeft+r.Unpaid+r.Paid, r.InitialStock)},
			{"give-backs due", fmt.Sprint(r.GivebackDue)},
			{"units sold again / sold twice", fmt.Sprintf("%d / %d", r.SoldAgain, r.SoldTwice)},
			{"settled after the load", fmt.Sprintf("%.1f s", r.SettledS)},
		}...)
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "  %-34s %s\n", row[0], row[1])
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  VIOLATION %s\n", v)
	}
	fmt.Fprintf(&b, "  output: %s\n", r.Out)
	return b.String()
}

// resultEnv is OUT/result.env (KEY=VALUE lines).
func resultEnv(r Result) string {
	kv := [][2]string{
		{"mode", r.Mode}, {"instances", fmt.Sprint(r.Instances)}, {"setting", r.Setting}, {"driver", r.Driver},
		{"requests", fmt.Sprint(r.Requests)}, {"ok", fmt.Sprint(r.Codes["OK"])}, {"sold_out", fmt.Sprint(r.Codes["SOLD_OUT"])},
		{"duplicate", fmt.Sprint(r.Codes["DUPLICATE_ORDER"])}, {"lock_refused", fmt.Sprint(r.LockRefused)},
		{"past_lock", fmt.Sprint(r.PastLock)}, {"unique_key", fmt.Sprint(r.UniqueKey)}, {"other_codes", r.OtherCodes},
		{"orders", fmt.Sprint(r.Orders)}, {"initial", fmt.Sprint(r.InitialStock)}, {"oversold", testbed.YesNo(r.Oversold)},
		{"consistent", testbed.YesNo(r.Consistent)}, {"violations", fmt.Sprint(len(r.Violations))},
		{"breaches", fmt.Sprint(r.Breaches)}, {"unexpected", fmt.Sprint(r.Unexpected)}, {"rps", string(r.RPS)},
		{"p50_ms", string(r.P50ms)}, {"p95_ms", string(r.P95ms)}, {"p99_ms", string(r.P99ms)},
		{"elapsed_s", fmt.Sprintf("%.1f", r.ElapsedS)},
	}
	var b strings.Builder
	for _, p := range kv {
		fmt.Fprintf(&b, "%s=%s\n", p[0], p[1])
	}
	return b.String()
}
