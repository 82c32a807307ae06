package fakepay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Delivery is one POST of a notification to a notify_url.
type Delivery struct {
	URL    string `json:"url"`
	Status int    `json:"status"`          // the receiver's HTTP status; 0 when it was not reached
	Body   string `json:"body"`            // what it answered
	Error  string `json:"error,omitempty"` // why it was not sent or not reached
}

// The control API (JSON answers; errors are {"error": "..."}):
//
//	POST /control/{provider}/pay?out_trade_no=X&notify=once|twice|none&late=0|1  -> {"trade":{...},"deliveries":[...]}
//	POST /control/{provider}/notify?out_trade_no=X[&out_refund_no=R]            -> {"trade":{...},"deliveries":[...]}
//	GET  /control/{provider}/notification?out_trade_no=X[&out_refund_no=R][&amount=N&app_id=A&time=UNIX&as=Y&wrong_key=1&alter=1]
//	                                                                             -> {"headers":{...},"body":"..."}
//	POST /control/{provider}/down?on=1|0                                         -> {"provider":"...","down":true}
//	POST /control/{provider}/refund-mode?mode=ok|processing|fail[&out_trade_no=X] -> {"provider":"...","mode":"..."} (X: that trade's refunds only)
//	GET  /control/{provider}/trades[?out_trade_no=X]                             -> {"trades":[...]}
//	POST /control/{provider}/bill-line?amount=N[&out_trade_no=X&kind=payment|refund&out_refund_no=R&at=UNIX]
//	                                                                             -> {"line":{...}} (bill.go)
//	GET  /scan/{provider}/{out_trade_no}   the trade's page (its QR code's content), with a Pay button
//	POST /scan/{provider}/{out_trade_no}   pays it (not late) and notifies once
func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /control/{provider}/pay", s.withProvider(s.handlePay))
	mux.HandleFunc("POST /control/{provider}/notify", s.withProvider(s.handleNotify))
	mux.HandleFunc("GET /control/{provider}/notification", s.withProvider(s.handleNotification))
	mux.HandleFunc("POST /control/{provider}/down", s.withProvider(s.handleDown))
	mux.HandleFunc("POST /control/{provider}/refund-mode", s.withProvider(s.handleRefundMode))
	mux.HandleFunc("GET /control/{provider}/trades", s.withProvider(s.handleTrades))
	mux.HandleFunc("POST /control/{provider}/bill-line", s.withProvider(s.handleBillLine))
	mux.HandleFunc("GET /scan/{provider}/{out_trade_no}", s.withProvider(s.handleScan))
	mux.HandleFunc("POST /scan/{provider}/{out_trade_no}", s.withProvider(s.handleScanPay))
}

func (s *Server) withProvider(h func(w http.ResponseWriter, r *http.Request, p Provider)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.providers[r.PathValue("provider")]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no provider " + strconv.Quote(r.PathValue("provider"))})
			return
		}
		h(w, r, p)
	}
}

func (s *Server) handlePay(w http.ResponseWriter, r *http.Request, p Provider) {
	q := r.URL.Query()
	notify := q.Get("notify")
	if notify == "" {
		notify = "once"
	}
	times := map[string]int{"none": 0, "once": 1, "twice": 2}
	n, ok := times[notify]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "notify: want once, twice or none"})
		return
	}
	t, err := s.core.Store.Pay(p.Name(), q.Get("out_trade_no"), q.Get("late") == "1", s.core.Now())
	if err != nil {
		writeJSON(w, storeStatus(err), map[string]any{"error": err.Error(), "trade": nilIfEmpty(t)})
		return
	}
	ds, err := s.send(r.Context(), p, t, nil, n)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trade": t, "deliveries": ds})
}

func (s *Server) handleNotify(w http.ResponseWriter, r *http.Request, p Provider) {
	t, ref, err := s.current(p, r.URL.Query(), true)
	if err != nil {
		writeJSON(w, storeStatus(err), map[string]string{"error": err.Error()})
		return
	}
	ds, err := s.send(r.Context(), p, t, ref, 1)
	if err != nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trade": t, "deliveries": ds})
}

func (s *Server) handleNotification(w http.ResponseWriter, r *http.Request, p Provider) {
	q := r.URL.Query()
	t, ref, err := s.current(p, q, false)
	if err != nil {
		writeJSON(w, storeStatus(err), map[string]string{"error": err.Error()})
		return
	}
	var tm Tamper
	if v := q.Get("amount"); v != "" {
		if tm.Amount, err = strconv.ParseInt(v, 10, 64); err != nil || tm.Amount <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "amount: want fen > 0"})
			return
		}
	}
	if v := q.Get("time"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "time: want unix seconds"})
			return
		}
		tm.Time = time.Unix(sec, 0)
	}
	tm.AppID, tm.OutTradeNo = q.Get("app_id"), q.Get("as")
	tm.WrongKey, tm.Alter = q.Get("wrong_key") == "1", q.Get("alter") == "1"
	h, body, err := p.Notification(&t, ref, tm)
	if err != nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	headers := map[string]string{}
	for k := range h {
		headers[k] = h.Get(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"headers": headers, "body": string(body)})
}

// current is the trade of out_trade_no and, with out_refund_no, its
// refund; complete finishes a processing refund first (its notification
// comes when it is done).
func (s *Server) current(p Provider, q url.Values, complete bool) (Trade, *Refund, error) {
	now := s.core.Now()
	no, rno := q.Get("out_trade_no"), q.Get("out_refund_no")
	if rno == "" {
		t, err := s.core.Store.Get(p.Name(), no, now)
		return t, nil, err
	}
	var (
		t   Trade
		ref Refund
		err error
	)
	if complete {
		t, ref, err = s.core.Store.CompleteRefund(p.Name(), no, rno, now)
	} else if t, err = s.core.Store.Get(p.Name(), no, now); err == nil {
		if r := t.Refund(rno); r != nil {
			ref = *r
		} else {
			err = ErrNoRefund
		}
	}
	return t, &ref, err
}

func (s *Server) handleDown(w http.ResponseWriter, r *http.Request, p Provider) {
	on := r.URL.Query().Get("on") == "1"
	s.core.Store.SetDown(p.Name(), on)
	writeJSON(w, http.StatusOK, map[string]any{"provider": p.Name(), "down": on})
}

func (s *Server) handleRefundMode(w http.ResponseWriter, r *http.Request, p Provider) {
	mode := r.URL.Query().Get("mode")
	if err := s.core.Store.SetTradeRefundMode(p.Name(), r.URL.Query().Get("out_trade_no"), mode); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"provider": p.Name(), "mode": mode})
}

func (s *Server) handleTrades(w http.ResponseWriter, r *http.Request, p Provider) {
	trades := s.core.Store.List(p.Name(), s.core.Now())
	if no := r.URL.Query().Get("out_trade_no"); no != "" {
		var only []Trade
		for _, t := range trades {
			if t.OutTradeNo == no {
				only = append(only, t)
			}
		}
		trades = only
	}
	if trades == nil {
		trades = []Trade{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"trades": trades})
}

var scanPage = template.Must(template.New("scan").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>fakepay {{.Provider}}</title></head>
<body>
<h1>{{.Provider}} (fake)</h1>
<p>Trade <code>{{.Trade.OutTradeNo}}</code>: {{.Trade.Subject}}</p>
<p>Amount: <strong>¥{{.Yuan}}</strong> &middot; state: <span id="state">{{.Trade.State}}</span></p>
{{if .Message}}<p id="message">{{.Message}}</p>{{end}}
{{if eq .Trade.State "open"}}<form method="post"><button type="submit">Pay</button></form>{{end}}
</body></html>
`))

func (s *Server) handleScan(w http.ResponseWriter, r *http.Request, p Provider) {
	t, err := s.core.Store.Get(p.Name(), r.PathValue("out_trade_no"), s.core.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	s.renderScan(w, p, t, "")
}

func (s *Server) handleScanPay(w http.ResponseWriter, r *http.Request, p Provider) {
	t, err := s.core.Store.Pay(p.Name(), r.PathValue("out_trade_no"), false, s.core.Now())
	if errors.Is(err, ErrNoTrade) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	msg := "Paid."
	if err != nil {
		msg = "Refused: " + err.Error()
	} else if ds, err := s.send(r.Context(), p, t, nil, 1); err != nil {
		msg = "Paid; the notification failed: " + err.Error()
	} else if ds[0].Error != "" {
		msg = "Paid; the notification was not delivered: " + ds[0].Error
	} else {
		msg = fmt.Sprintf("Paid; the notification got HTTP %d %q.", ds[0].Status, ds[0].Body)
	}
	s.renderScan(w, p, t, msg)
}

func (s *Server) renderScan(w http.ResponseWriter, p Provider, t Trade, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = scanPage.Execute(w, map[string]any{
		"Provider": p.Name(), "Trade": t, "Message": msg,
		"Yuan": fmt.Sprintf("%d.%02d", t.Amount/100, t.Amount%100),
	})
}

// send builds the notification of t (or of its refund) and POSTs it n
// times at once.
func (s *Server) send(ctx context.Context, p Provider, t Trade, r *Refund, n int) ([]Delivery, error) {
	h, body, err := p.Notification(&t, r, Tamper{})
	if err != nil {
		return nil, err
	}
	target := t.NotifyURL
	if r != nil && r.NotifyURL != "" {
		target = r.NotifyURL
	}
	ds := make([]Delivery, n)
	var wg sync.WaitGroup
	for i := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds[i] = s.deliver(ctx, target, h, body)
		}()
	}
	wg.Wait()
	for _, d := range ds {
		s.logMu.Lock()
		fmt.Fprintf(s.log, "fakepay: %s notification of %s to %s: %d %q %s\n", p.Name(), t.OutTradeNo, d.URL, d.Status, d.Body, d.Error)
		s.logMu.Unlock()
	}
	return ds, nil
}

// deliver POSTs one notification, to a loopback notify_url only.
func (s *Server) deliver(ctx context.Context, target string, h http.Header, body []byte) Delivery {
	d := Delivery{URL: target}
	if err := CheckLoopbackURL(target); err != nil {
		d.Error = err.Error()
		return d
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		d.Error = err.Error()
		return d
	}
	req.Header = h.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	d.Status, d.Body = resp.StatusCode, string(b)
	return d
}

// CheckLoopbackURL refuses a notify_url whose host is no loopback
// address (localhost or an IP of 127.0.0.0/8 or ::1), or not http(s).
func CheckLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("notify_url %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("notify_url %q: want http or https", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("notify_url %q: refused, the fake sends to loopback only", raw)
}

// loopbackClient connects to loopback addresses only (whatever a name
// resolves to), ignores proxies and follows no redirect.
func loopbackClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("fakepay: %s is no loopback address", address)
		}
		return nil
	}}
	return &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{DialContext: dialer.DialContext, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func storeStatus(err error) int {
	switch {
	case errors.Is(err, ErrNoTrade), errors.Is(err, ErrNoRefund):
		return http.StatusNotFound
	case err != nil:
		return http.StatusConflict
	}
	return http.StatusOK
}

func nilIfEmpty(t Trade) any {
	if t.OutTradeNo == "" {
		return nil
	}
	return t
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
