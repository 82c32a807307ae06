package fakepay

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Bill line kinds.
const (
	BillPayment = "payment"
	BillRefund  = "refund"
)

// BillLine is a line of a provider's daily bill: a payment or a refund.
type BillLine struct {
	Kind        string    `json:"kind"` // payment | refund
	OutTradeNo  string    `json:"outTradeNo"`
	OutRefundNo string    `json:"outRefundNo,omitempty"`
	TradeNo     string    `json:"tradeNo"`
	Amount      int64     `json:"amount"` // fen
	At          time.Time `json:"at"`
	Subject     string    `json:"subject"`
}

// AddBillLine adds a line to the provider's bills that no trade of the
// store has (a payment the service never opened, a refund it never
// asked), so that tests can make the bill disagree with the orders.
func (s *Store) AddBillLine(provider string, l BillLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extra == nil {
		s.extra = map[string][]BillLine{}
	}
	s.extra[provider] = append(s.extra[provider], l)
}

// Bill is the provider's bill of the Beijing day that holds day: a line
// per trade paid that day and per refund done that day, and the lines
// added, in time order.
func (s *Store) Bill(provider string, day time.Time) []BillLine {
	y, m, d := day.In(Shanghai).Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, Shanghai)
	to := from.AddDate(0, 0, 1)
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []BillLine
	for k, t := range s.trades {
		if k.provider != provider {
			continue
		}
		if t.State == StatePaid && in(t.PaidAt) {
			out = append(out, BillLine{Kind: BillPayment, OutTradeNo: t.OutTradeNo, TradeNo: t.TradeNo, Amount: t.Amount, At: t.PaidAt, Subject: t.Subject})
		}
		for _, r := range t.Refunds {
			if r.State == RefundDone && in(r.At) {
				out = append(out, BillLine{Kind: BillRefund, OutTradeNo: t.OutTradeNo, OutRefundNo: r.OutRefundNo, TradeNo: t.TradeNo,
					Amount: r.Amount, At: r.At, Subject: t.Subject})
			}
		}
	}
	for _, l := range s.extra[provider] {
		if in(l.At) {
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// handleBillLine adds a bill line of no trade (control API).
func (s *Server) handleBillLine(w http.ResponseWriter, r *http.Request, p Provider) {
	q := r.URL.Query()
	amount, err := strconv.ParseInt(q.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "amount: want fen > 0"})
		return
	}
	l := BillLine{Kind: q.Get("kind"), OutTradeNo: q.Get("out_trade_no"), OutRefundNo: q.Get("out_refund_no"), Amount: amount,
		At: s.core.Now(), Subject: "bill line (control API)"}
	if l.Kind == "" {
		l.Kind = BillPayment
	}
	if l.Kind != BillPayment && l.Kind != BillRefund {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "kind: want payment or refund"})
		return
	}
	if l.OutTradeNo == "" {
		l.OutTradeNo = "stray_" + randomHex(6)
	}
	if l.Kind == BillRefund && l.OutRefundNo == "" {
		l.OutRefundNo = l.OutTradeNo + "_r"
	}
	if v := q.Get("at"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "at: want unix seconds"})
			return
		}
		l.At = time.Unix(sec, 0)
	}
	l.TradeNo = fmt.Sprintf("%s%010d", l.At.In(Shanghai).Format("20060102"), s.core.Store.Seq())
	s.core.Store.AddBillLine(p.Name(), l)
	writeJSON(w, http.StatusOK, map[string]any{"line": l})
}

// billFiles keeps the bill files announced for download, by token, so that
// the file downloaded is the one whose hash was announced.
type billFiles struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (b *billFiles) put(file []byte) string {
	var t [12]byte
	_, _ = rand.Read(t[:])
	token := hex.EncodeToString(t[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files[token] = file
	return token
}

func (b *billFiles) take(token string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.files[token]
	delete(b.files, token)
	return f, ok
}

// billDay reads a bill_date (yyyy-MM-dd, Beijing).
func billDay(s string) (time.Time, error) {
	return time.ParseInLocation("2006-01-02", s, Shanghai)
}
