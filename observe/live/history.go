package live

import (
	"context"

	"seckill/model"
)

// MaxHistoryPoints bounds the points of a History: a sale whose answers
// span more seconds is summed in steps of several seconds.
const MaxHistoryPoints = 600

// History is a voucher's answers over its whole sale, the dashboard's
// curve: from its first second with answers to its last, in steps of Step
// seconds (1 unless the span is longer than MaxHistoryPoints seconds). A
// step without answers has no point. It is kept after the sale (Redis,
// LiveHistoryTTL after the last answer), so a dashboard opened later
// draws it.
type History struct {
	VoucherID int64 `json:"voucherId"`
	// Step is the seconds each point sums.
	Step int64 `json:"step"`
	// From and To are the first and the last point's start (Unix seconds;
	// 0 without points).
	From   int64          `json:"from"`
	To     int64          `json:"to"`
	Points []HistoryPoint `json:"points"`
	// Requests sums every point's answers.
	Requests int64 `json:"requests"`
	// Dropped counts the answers of seconds past the history's bound
	// (six hours of seconds with answers): not in any point.
	Dropped int64 `json:"dropped"`
}

// HistoryPoint is the answers of one step.
type HistoryPoint struct {
	// At is the step's start, Unix seconds.
	At int64 `json:"t"`
	// Requests is the step's answers; Answers splits them by code (the
	// codes of Codes with answers only). Per second: divide by Step.
	Requests int64            `json:"requests"`
	Answers  map[string]int64 `json:"answers"`
}

// History reads the voucher's answers per second and sums them in steps.
func (b *Board) History(ctx context.Context, voucherID int64) (History, error) {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	raw, err := b.store.History(rctx, voucherID)
	if err != nil {
		return History{}, err
	}
	return historyOf(voucherID, raw), nil
}

// historyOf sums the seconds of raw (in time order) in steps.
func historyOf(voucherID int64, raw model.LiveHistory) History {
	h := History{VoucherID: voucherID, Step: 1, Points: []HistoryPoint{}, Dropped: raw.Dropped}
	if len(raw.Seconds) == 0 {
		return h
	}
	first, last := raw.Seconds[0].At, raw.Seconds[len(raw.Seconds)-1].At
	h.Step = max(1, (last-first+MaxHistoryPoints)/MaxHistoryPoints)
	for _, s := range raw.Seconds {
		at := first + (s.At-first)/h.Step*h.Step
		if len(h.Points) == 0 || h.Points[len(h.Points)-1].At != at {
			h.Points = append(h.Points, HistoryPoint{At: at, Answers: map[string]int64{}})
		}
		p := &h.Points[len(h.Points)-1]
		for i, n := range s.Answers {
			if i >= len(Codes) || n == 0 {
				continue
			}
			p.Answers[Codes[i]] += n
			p.Requests += n
			h.Requests += n
		}
	}
	h.From, h.To = h.Points[0].At, h.Points[len(h.Points)-1].At
	return h
}
