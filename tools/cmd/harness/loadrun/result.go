package loadrun

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"seckill/model"
)

// number is a decimal as a driver printed it ("1234.5"): the table shows
// it as is, results.json as a JSON number.
type number string

// toNumber keeps v when it is a plain decimal, "0" otherwise.
func toNumber(v string) number {
	if regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`).MatchString(v) {
		return number(v)
	}
	return "0"
}

// MarshalJSON writes the number bare, 0 when it is not one.
func (n number) MarshalJSON() ([]byte, error) { return []byte(toNumber(string(n))), nil }

// UnmarshalJSON reads a number, bare or quoted. Anything else is 0.
func (n *number) UnmarshalJSON(b []byte) error {
	*n = toNumber(strings.Trim(string(b), `"`))
	return nil
}

// Result is what one experiment found: the table, result.env and
// results.json.
type Result struct {
	Mode          string           `json:"mode"`
	Instances     int              `json:"instances"`
	Setting       string           `json:"setting"`
	LockTTL       string           `json:"lockTtl"`
	CriticalDelay string           `json:"criticalDelay"`
	Driver        string           `json:"driver"`
	Scenario      string           `json:"scenario"`
	OrderMode     string           `json:"orderMode"`
	Redis         string           `json:"redis"`   // single or cluster (REDIS)
	Buckets       int              `json:"buckets"` // SECKILL_STOCK_BUCKETS (BUCKETS)
	Fencing       string           `json:"fencing"`
	Users         int              `json:"users"`
	Dups          int              `json:"dups"`
	SpacingMS     int              `json:"spacingMs"`
	VUs           int              `json:"vus"`
	VoucherID     int64            `json:"voucherId"`
	InitialStock  int64            `json:"initialStock"`
	StockLeft     int64            `json:"stockLeft"`
	Requests      int64            `json:"requests"`
	Codes         map[string]int64 `json:"codes"`
	LockRefused   int64            `json:"lockRefused"`
	PastLock      int64            `json:"pastLock"`
	// ScriptRefused: async mode, the DUPLICATE_ORDER answers of the
	// admission script (the user's buyer mark in Redis). The lock is the
	// consumer's there, never on the request path.
	ScriptRefused int64             `json:"scriptRefused"`
	UniqueKey     int64             `json:"uniqueKey"`
	DupRejAudit   int64             `json:"duplicateRejectionsAudit"`
	ServerOK      int64             `json:"serverOk"`
	ServerDup     int64             `json:"serverDuplicate"`
	OtherCodes    string            `json:"otherCodes"`
	Orders        int64             `json:"orders"`
	DistinctUsers int64             `json:"distinctUsers"`
	Oversold      bool              `json:"oversold"`
	Consistent    bool              `json:"consistent"`
	Invariant5    string            `json:"invariant5"`
	Violations    []model.Violation `json:"violations"`
	Breaches      int64             `json:"breaches"`
	Unexpected    int64             `json:"unexpected"`
	RPS           number            `json:"rps"`
	P50ms         number            `json:"p50Ms"`
	P95ms         number            `json:"p95Ms"`
	P99ms         number            `json:"p99Ms"`
	ElapsedS      float64           `json:"elapsedS"`
	DriverExit    int               `json:"driverExit"`
	Failures      []string          `json:"failures"` // why the exit status is 1 (empty: passed)
	Status        int               `json:"status"`   // the exit status
	Out           string            `json:"out"`
	// The order's life (PAY_SHARE, CANCEL_SHARE). It holds what buyers
	// did and got (the driver's life_<action>_<code>). Then the orders by
	// status after the settle, and units sold again after a cancel or an
	// expiry. Last, the units sold twice (must be 0).
	PayShare    float64          `json:"payShare,omitempty"`
	CancelShare float64          `json:"cancelShare,omitempty"`
	PayTimeout  string           `json:"payTimeout,omitempty"`
	Life        map[string]int64 `json:"life,omitempty"`
	Unpaid      int64            `json:"unpaid"`
	Paid        int64            `json:"paid"`
	Expired     int64            `json:"expired"`
	Cancelled   int64            `json:"cancelled"`
	GivebackDue int64            `json:"givebackDue"`
	SoldAgain   int64            `json:"soldAgain"`
	SoldTwice   int64            `json:"soldTwice"`
	SettledS    float64          `json:"settledS,omitempty"`
}

// lifeExpected are the answers to a pay or a cancel that the business
// gives: anything else fails the run.
var lifeExpected = map[string]bool{"OK": true, "ORDER_EXPIRED": true, "ORDER_CANCELLED": true, "ORDER_PAID": true}

// judge fills the derived figures (past lock, breaches, oversold,
// consistent, unexpected answers), the failures and the exit status. It
// returns the log lines to print after the table.
func judge(r *Result, slow, allowBreach, matrix bool) (notes []string) {
	// Duplicates that obtained the lock and were stopped by the
	// transaction's "already bought" check. Normally that is a later
	// duplicate. Under the slow-business schedule it is a broken lock. In
	// async mode every DUPLICATE_ORDER answer is the admission script's.
	// The lock and the unique key are the consumer's, after the answer. A
	// duplicate the script let through is an order the consumer could not
	// write. So it shows as a unique-key rejection and a lost announced
	// order.
	if r.OrderMode == "async" {
		r.ScriptRefused, r.PastLock = r.ServerDup, 0
	} else {
		r.ScriptRefused, r.PastLock = 0, r.ServerDup-r.LockRefused-r.UniqueKey
	}
	r.Breaches = r.UniqueKey
	if slow {
		r.Breaches += r.PastLock
	}
	r.Oversold = r.Orders > r.InitialStock || r.StockLeft < 0
	r.Consistent = len(r.Violations) == 0
	var other []string
	r.Unexpected = 0
	for _, c := range allCodes {
		if c == "OK" || c == "SOLD_OUT" || c == "DUPLICATE_ORDER" {
			continue
		}
		if n := r.Codes[c]; n > 0 {
			r.Unexpected += n
			other = append(other, fmt.Sprintf("%s=%d", c, n))
		}
	}
	r.OtherCodes = strings.Join(other, " ")
	r.Failures = nil
	if len(r.Violations) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d invariant violation(s)", len(r.Violations)))
	}
	if r.Breaches > 0 {
		if allowBreach {
			notes = append(notes, fmt.Sprintf("note: the %s lock let %d duplicate(s) through (reported, not failed)", r.Mode, r.Breaches))
		} else {
			r.Failures = append(r.Failures, fmt.Sprintf("the %s lock let %d duplicate(s) through", r.Mode, r.Breaches))
		}
	}
	if r.Unexpected > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d responses were neither 200 nor an expected 409 (%s)", r.Unexpected, r.OtherCodes))
	}
	if r.PayShare+r.CancelShare > 0 {
		var bad []string
		for k, n := range r.Life {
			_, code, _ := strings.Cut(k, "_")
			if k != "walk_away" && !lifeExpected[code] && n > 0 {
				bad = append(bad, fmt.Sprintf("%s=%d", k, n))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			r.Failures = append(r.Failures, "unexpected answers to pay or cancel: "+strings.Join(bad, " "))
		}
		if r.Unpaid > 0 || r.GivebackDue > 0 {
			r.Failures = append(r.Failures, fmt.Sprintf("%d order(s) still unpaid and %d give-back(s) due after the settle", r.Unpaid, r.GivebackDue))
		}
		if r.Life["walk_away"] > 0 && r.Expired == 0 {
			r.Failures = append(r.Failures, "no order expired: the expiry was not exercised")
		}
	}
	if r.SoldTwice > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d unit(s) sold twice", r.SoldTwice))
	}
	if r.DriverExit != 0 && len(r.Failures) == 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("the driver exited %d (see %s/%s.log)", r.DriverExit, r.Out, r.Driver))
	}
	for _, f := range r.Failures {
		notes = append(notes, "FAIL: "+f)
	}
	r.Status = 0
	if len(r.Failures) > 0 {
		r.Status = 1
		if matrix {
			notes = append(notes, "matrix mode: reported, not failed")
			r.Status = 0
		}
	}
	return notes
}
