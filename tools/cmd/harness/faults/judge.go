package faults

import (
	"fmt"
	"sort"
	"time"

	"seckill/model"
)

// CaseResult is what one case found: the printed line, a row of
// RESULTS.md and an entry of results.json.
type CaseResult struct {
	Name        string `json:"name"`
	LockMode    string `json:"lockMode"`
	OrderMode   string `json:"orderMode"`
	Fault       string `json:"fault"`
	Expectation string `json:"expectation"`
	VoucherID   int64  `json:"voucherId"`

	Requests int            `json:"requests"`
	Status   map[string]int `json:"status"` // "200", "409", "503", "500", "other"
	Codes    map[string]int `json:"codes"`  // by response code (OK, SOLD_OUT, UNAVAILABLE, TRANSPORT, ...)

	InitialStock int64 `json:"initialStock"`
	StockLeft    int64 `json:"stockLeft"`
	Orders       int64 `json:"orders"`
	Oversold     bool  `json:"oversold"`
	// The 200s: written (in the database), reported failed to their owner
	// (async dead letters), lost (neither).
	Written        int `json:"written"`
	ReportedFailed int `json:"reportedFailed"`
	Lost           int `json:"lost"`
	// Orders no 200 announced. Ambiguous: the buyer's request ended in a
	// transport error, so the client cannot know. NoAnnounce: the buyer
	// was told a failure (an ambiguous commit told as failure).
	Ambiguous  int `json:"ambiguous"`
	NoAnnounce int `json:"noAnnounce"`

	UniqueKey   int64 `json:"uniqueKey"`   // seckill_unique_key_rejections_total, live instances
	LockRefused int64 `json:"lockRefused"` // seckill_lock_not_obtained_total
	StaleFence  int64 `json:"staleFence"`  // seckill_stale_fence_rejections_total
	Claimed     int64 `json:"claimed"`     // seckill_async_claimed_total

	Consistent bool              `json:"consistent"`
	Violations []model.Violation `json:"violations"`
	// Measures are the case's own figures (the unavailable window, the
	// recovery, the late writes...), in print order.
	Measures []measure `json:"measures"`
	Marks    []mark    `json:"marks"` // the fault's moments, seconds since the load's start
	Notes    []string  `json:"notes"`

	// transportOK: the case kills an instance under its requests, so
	// transport errors are expected.
	transportOK bool
	// refusedOK: answers of the "other" column the case expects (the
	// waiting room's NOT_ADMITTED to purchases without a token).
	refusedOK int

	Verdict  string   `json:"verdict"` // pass, FAIL, shown (an expected-weak demonstration), ERROR
	Failures []string `json:"failures"`
	Error    string   `json:"error,omitempty"`
	ElapsedS float64  `json:"elapsedS"`
	LogDir   string   `json:"logDir"`
}

// measure is one named figure of a case.
type measure struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// mark is one moment of a fault.
type mark struct {
	Name string  `json:"name"`
	AtS  float64 `json:"atS"`
}

// addMeasure appends a figure.
func (r *CaseResult) addMeasure(name, format string, a ...any) {
	r.Measures = append(r.Measures, measure{name, fmt.Sprintf(format, a...)})
}

// measureOf is a figure's value ("" when absent).
func (r *CaseResult) measureOf(name string) string {
	for _, m := range r.Measures {
		if m.Name == name {
			return m.Value
		}
	}
	return ""
}

// fail records a failure of the case's expectation.
func (r *CaseResult) fail(format string, a ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, a...))
}

// tallyShots counts the shots by status bucket and by code.
func tallyShots(shots []shot) (status, codes map[string]int) {
	status = map[string]int{"200": 0, "409": 0, "503": 0, "500": 0, "other": 0}
	codes = map[string]int{}
	for _, s := range shots {
		status[s.bucket()]++
		codes[s.Code]++
	}
	return status, codes
}

// orderState is what became of one announced order: "written",
// "failed" (reported failed to its owner), "pending" or "lost".
type orderState string

// classification is the comparison of the answers with the database.
type classification struct {
	Written, Failed, Pending, Lost []int64 // announced order ids
	Ambiguous, NoAnnounce          []int64 // orders no 200 announced
	Announced                      []model.Announced
}

// classify compares the 200s with the orders in the database: each 200's
// order is written, reported failed (states[id] == "failed", async only),
// still pending, or lost. Each order no 200 announced is either ambiguous or
// a failure told for a purchase that happened. Ambiguous means its buyer had
// a transport error: the client cannot know whether it bought. Announced is
// what invariant 4 is judged against. It is the 200s but the ones reported
// failed, plus the ambiguous orders.
func classify(shots []shot, users []faultUser, orders map[int64]int64, states map[int64]string) classification {
	var c classification
	seen := map[int64]bool{}
	transport := map[int64]bool{} // users with a transport error
	for _, s := range shots {
		uid := users[s.User].ID
		if s.Code == "TRANSPORT" {
			transport[uid] = true
		}
		if s.Code != "OK" || seen[s.OrderID] {
			continue
		}
		seen[s.OrderID] = true
		switch _, ok := orders[s.OrderID]; {
		case ok:
			c.Written = append(c.Written, s.OrderID)
		case states[s.OrderID] == "failed":
			c.Failed = append(c.Failed, s.OrderID)
			continue
		case states[s.OrderID] == "pending":
			c.Pending = append(c.Pending, s.OrderID)
		default:
			c.Lost = append(c.Lost, s.OrderID)
		}
		c.Announced = append(c.Announced, model.Announced{OrderID: s.OrderID, UserID: uid})
	}
	ids := make([]int64, 0, len(orders))
	for id := range orders {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if seen[id] {
			continue
		}
		if transport[orders[id]] {
			c.Ambiguous = append(c.Ambiguous, id)
			c.Announced = append(c.Announced, model.Announced{OrderID: id, UserID: orders[id]})
		} else {
			c.NoAnnounce = append(c.NoAnnounce, id)
		}
	}
	return c
}

// firstAt is the earliest Done of the shots satisfying f, and whether
// there is one.
func firstAt(shots []shot, f func(shot) bool) (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, s := range shots {
		if f(s) && (!found || s.Done < best) {
			best, found = s.Done, true
		}
	}
	return best, found
}

// between counts the shots sent at or after from and answered by to, by
// status bucket.
func between(shots []shot, from, to time.Duration) map[string]int {
	m := map[string]int{}
	for _, s := range shots {
		if s.Sent >= from && s.Done <= to && s.Done > 0 {
			m[s.bucket()]++
		}
	}
	return m
}

// judgeCommon applies what every case expects: nothing oversold, no 500,
// no order without its 200 told as a failure, invariants 1-3 (and 5 in
// async mode) holding. Lost 200s fail unless lostReported (a case that
// measures them). Invariant 4 is judged through Lost and NoAnnounce.
func judgeCommon(r *CaseResult, lostReported bool) {
	if r.Oversold {
		r.fail("oversold: %d orders for an initial stock of %d", r.Orders, r.InitialStock)
	}
	if n := r.Status["500"]; n > 0 {
		r.fail("%d answers were 500 (a fault must be 503)", n)
	}
	other := r.Status["other"]
	if r.transportOK {
		other -= r.Codes["TRANSPORT"]
	}
	other -= r.refusedOK
	if other > 0 {
		r.fail("%d answers were neither 200, 409, 503 nor 500 (%s)", other, codesText(otherCodes(r.Codes)))
	}
	if r.NoAnnounce > 0 {
		r.fail("%d order(s) in the database whose buyer was told the purchase failed (orders no 200 announced)", r.NoAnnounce)
	}
	if r.Lost > 0 && !lostReported {
		r.fail("%d order(s) answered 200 are neither written nor reported failed (lost)", r.Lost)
	}
	for _, v := range r.Violations {
		if v.Invariant != 4 {
			r.fail("%s", v)
		}
	}
}

// otherCodes keeps the codes of the "other" column: not OK, a 409 code,
// UNAVAILABLE or INTERNAL.
func otherCodes(codes map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range codes {
		switch k {
		case "OK", "SOLD_OUT", "DUPLICATE_ORDER", "SECKILL_NOT_STARTED", "SECKILL_ENDED", "UNAVAILABLE", "INTERNAL":
		default:
			out[k] = n
		}
	}
	return out
}

// finishVerdict sets Verdict from the failures (weakShown: an expected-weak
// demonstration that showed its weakness).
func finishVerdict(r *CaseResult, weakShown bool) {
	switch {
	case r.Error != "":
		r.Verdict = "ERROR"
	case len(r.Failures) > 0:
		r.Verdict = "FAIL"
	case weakShown:
		r.Verdict = "shown"
	default:
		r.Verdict = "pass"
	}
}
