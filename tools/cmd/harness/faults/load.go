package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"seckill/testkit/proc"
)

// The fault suite's load is generated in process: one goroutine per purchase,
// paced. So every request's answer is known: its HTTP status, its response
// code and, for a 200, the order id it announced.

// faultUser is one line of the tokens file.
type faultUser struct {
	ID    int64
	Token string
}

// shot is one purchase and what it got.
type shot struct {
	Seq     int           // its place in the schedule
	User    int           // index into the users
	Inst    int           // the instance it was sent to
	Sent    time.Duration // since the load's start
	Done    time.Duration
	Status  int    // HTTP status; 0 for a transport error
	Code    string // the envelope's code, OK, TRANSPORT or OTHER
	OrderID int64  // with OK
	// Room is the waiting room's last answer before the purchase
	// (admitted, sold_out, closed; "" without a room). NoToken: the
	// purchase carried no admission token.
	Room    string
	NoToken bool
}

// bucket is the column of the printed line a shot counts in.
func (s shot) bucket() string {
	switch s.Status {
	case 200, 409, 503, 500:
		return strconv.Itoa(s.Status)
	}
	return "other"
}

// schedule lays out users x dups purchases. The users come in a random order,
// seeded, so a case is the same every run. Each user's purchases take
// consecutive slots. So they reach the instances at nearly the same time.
func schedule(users, dups int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	order := r.Perm(users)
	out := make([]int, 0, users*dups)
	for _, u := range order {
		for d := 0; d < dups; d++ {
			out = append(out, u)
		}
	}
	return out
}

// apiClient speaks the seckill API.
type apiClient struct{ http *http.Client }

func newAPIClient(timeout time.Duration) *apiClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
	return &apiClient{http: &http.Client{Transport: tr, Timeout: timeout}}
}

// apiEnvelope is the Heima body.
type apiEnvelope struct {
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Data    json.RawMessage `json:"data"`
}

// call sends one request. Status 0 is a transport error.
func (c *apiClient) call(ctx context.Context, method, url, token string, body any) (int, *apiEnvelope, error) {
	return c.callAdmitted(ctx, method, url, token, "", body)
}

// callAdmitted is call with the header Admission-Token (none when empty).
func (c *apiClient) callAdmitted(ctx context.Context, method, url, token, admission string, body any) (int, *apiEnvelope, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("authorization", token)
	if admission != "" {
		req.Header.Set("Admission-Token", admission)
	}
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var env apiEnvelope
	if json.Unmarshal(raw, &env) != nil {
		return resp.StatusCode, nil, nil
	}
	return resp.StatusCode, &env, nil
}

// buy is one purchase. It fills Status, Code and OrderID of s.
func (c *apiClient) buy(ctx context.Context, base string, voucher int64, token string, s *shot) {
	c.buyAdmitted(ctx, base, voucher, token, "", s)
}

// buyAdmitted is buy with an admission token (none when empty).
func (c *apiClient) buyAdmitted(ctx context.Context, base string, voucher int64, token, admission string, s *shot) {
	status, env, err := c.callAdmitted(ctx, http.MethodPost, fmt.Sprintf("%s/voucher-order/seckill/%d", base, voucher), token, admission, nil)
	s.Status = status
	switch {
	case err != nil && status == 0:
		s.Code = "TRANSPORT"
	case env == nil:
		s.Code = "OTHER"
	case status == http.StatusOK && env.Success:
		var id string
		if json.Unmarshal(env.Data, &id) == nil {
			s.OrderID, _ = strconv.ParseInt(id, 10, 64)
		}
		s.Code = "OK"
		if s.OrderID <= 0 {
			s.Code = "OTHER"
		}
	case env.Code != "":
		s.Code = env.Code
	default:
		s.Code = "OTHER"
	}
}

// pay is POST /voucher-order/:id/pay as its owner. It returns the
// answer's code (OK, ORDER_EXPIRED, TRANSPORT, ...).
func (c *apiClient) pay(ctx context.Context, base, token string, id int64) string {
	status, env, err := c.call(ctx, http.MethodPost, fmt.Sprintf("%s/voucher-order/%d/pay", base, id), token, nil)
	switch {
	case err != nil && status == 0:
		return "TRANSPORT"
	case env == nil:
		return "OTHER"
	case status == http.StatusOK && env.Success:
		return "OK"
	case env.Code != "":
		return env.Code
	}
	return "OTHER"
}

// publish creates a voucher with stock on sale from a minute ago for
// lifetime (with a waiting room when room), and returns its id.
func (c *apiClient) publish(ctx context.Context, base, admin string, shop int64, stock int, lifetime time.Duration, room bool) (int64, error) {
	now := time.Now()
	status, env, err := c.call(ctx, http.MethodPost, base+"/voucher/seckill", admin, map[string]any{
		"shopId": shop, "title": "fault suite " + now.UTC().Format(time.RFC3339), "subTitle": "faults",
		"rules": "one per user", "payValue": 8000, "actualValue": 10000, "type": 1, "stock": stock,
		"beginTime": now.Add(-time.Minute).Format(time.RFC3339), "endTime": now.Add(lifetime).Format(time.RFC3339),
		"waitingRoom": room,
	})
	if err != nil {
		return 0, fmt.Errorf("publish a voucher: %w", err)
	}
	if status != http.StatusOK || env == nil || !env.Success {
		code := ""
		if env != nil {
			code = env.Code
		}
		return 0, fmt.Errorf("publish a voucher: status %d %s", status, code)
	}
	var id int64
	if err := json.Unmarshal(env.Data, &id); err != nil || id <= 0 {
		return 0, fmt.Errorf("publish a voucher: data %s is not an id", env.Data)
	}
	return id, nil
}

// orderStatus is GET /voucher-order/:id as its owner: the order's status
// (created, pending, failed), or the refusal code (ORDER_NOT_FOUND, ...).
func (c *apiClient) orderStatus(ctx context.Context, base, token string, id int64) (string, error) {
	status, env, err := c.call(ctx, http.MethodGet, fmt.Sprintf("%s/voucher-order/%d", base, id), token, nil)
	if err != nil {
		return "", err
	}
	if env == nil {
		return "", fmt.Errorf("status %d without an envelope", status)
	}
	if status != http.StatusOK || !env.Success {
		if env.Code == "" {
			return "", fmt.Errorf("status %d without a code", status)
		}
		return env.Code, nil
	}
	var o struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(env.Data, &o); err != nil {
		return "", err
	}
	return o.Status, nil
}

// loadPlan is one case's load.
type loadPlan struct {
	Voucher  int64
	Users    []faultUser
	Seq      []int         // user index per slot (schedule)
	Interval time.Duration // between two slots
	// FaultAt is the slot at which Fault starts (in its own goroutine).
	// The load goes on meanwhile. HoldAt is the slot before which the
	// load waits until Fault has closed recovered. HoldLimit bounds that
	// wait. So some of the load always runs after the recovery, however
	// slow the machine.
	FaultAt, HoldAt int
	HoldLimit       time.Duration
	Fault           func(l *loadRun)
	MaxInFlight     int
	// Use lists the instances the schedule sends to (nil: all of them).
	Use []int
	// Tag carries the case's options to its fault.
	Tag string
	// PayEvery: the buyers whose index is a multiple of it pay their
	// order at once after its 200 (0: nobody pays).
	PayEvery int
	// Room: the voucher has a waiting room; each slot is a buyer who
	// joins, polls and then buys (roomBuy).
	Room bool
}

// loadRun is a load in progress: the shots, the live instances, the
// marks the fault sets.
type loadRun struct {
	plan   loadPlan
	api    *apiClient
	start  time.Time
	mu     sync.Mutex
	urls   []string // instance base URLs
	down   []bool   // instances taken out of the rotation
	shots  []shot
	marks  map[string]time.Duration
	values []measure // the fault's own figures
	notes  []string
	sent   atomic.Int64
	extra  []shot         // purchases the fault itself made (the fencing probes)
	paid   map[string]int // the payments' answers, by code

	recovered chan struct{}
	recOnce   sync.Once
	faultDone chan struct{}
	faultErr  error
	held      time.Duration // time spent at HoldAt waiting for the recovery
}

// newLoadRun prepares a load on urls.
func newLoadRun(plan loadPlan, api *apiClient, urls []string) *loadRun {
	if plan.MaxInFlight <= 0 {
		plan.MaxInFlight = 400
	}
	return &loadRun{plan: plan, api: api, urls: urls, down: make([]bool, len(urls)),
		shots: make([]shot, len(plan.Seq)), marks: map[string]time.Duration{}, paid: map[string]int{},
		recovered: make(chan struct{}), faultDone: make(chan struct{})}
}

// since is the time since the load's start.
func (l *loadRun) since() time.Duration { return time.Since(l.start) }

// mark records a named moment of the fault (kill, restart, recovered...).
func (l *loadRun) mark(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.marks[name]; !ok {
		l.marks[name] = l.since()
	}
}

// measure records a figure the fault measured.
func (l *loadRun) measure(name, format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.values = append(l.values, measure{name, fmt.Sprintf(format, a...)})
}

// note adds a line to the case's notes.
func (l *loadRun) note(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, fmt.Sprintf(format, a...))
}

// recover says the fault is over (the load may pass HoldAt).
func (l *loadRun) recover() {
	l.recOnce.Do(func() { l.mark("recovered"); close(l.recovered) })
}

// takeDown removes instance i from the rotation (as a load balancer's
// health check would).
func (l *loadRun) takeDown(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down[i] = true
}

// pick is the instance for slot: round robin over the live ones.
func (l *loadRun) pick(slot int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var live []int
	for i, d := range l.down {
		if !d && (l.plan.Use == nil || slices.Contains(l.plan.Use, i)) {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return slot % len(l.urls)
	}
	return live[slot%len(live)]
}

// count counts the shots answered so far that satisfy f (the fault's
// probes included).
func (l *loadRun) count(f func(shot) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range append(l.shots, l.extra...) {
		if s.Done > 0 && f(s) {
			n++
		}
	}
	return n
}

// waitAnswers waits until n answers satisfying f came in after the call
// (bounded by limit) and returns how many came.
func (l *loadRun) waitAnswers(ctx context.Context, n int, limit time.Duration, f func(shot) bool) int {
	from := l.since()
	got := 0
	proc.WaitFor(ctx, "", limit, 10*time.Millisecond, nil, func() bool {
		got = l.count(func(s shot) bool { return s.Done >= from && f(s) })
		return got >= n
	})
	return got
}

// probe sends one purchase outside the schedule (the fault's own) to
// instance inst for user u, records it with the load's shots and returns
// what it got.
func (l *loadRun) probe(ctx context.Context, inst, u int) shot {
	s := shot{Seq: -1, User: u, Inst: inst, Sent: l.since()}
	l.api.buy(ctx, l.urls[inst], l.plan.Voucher, l.plan.Users[u].Token, &s)
	s.Done = l.since()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.extra = append(l.extra, s)
	return s
}

// waitSent waits until n more purchases were sent (bounded by limit).
func (l *loadRun) waitSent(ctx context.Context, n int, limit time.Duration) {
	target := l.sent.Load() + int64(n)
	proc.WaitFor(ctx, "", limit, 10*time.Millisecond, nil, func() bool { return l.sent.Load() >= target })
}

// run sends the load and waits for every answer and for the fault's
// goroutine. It returns the shots.
func (l *loadRun) run(ctx context.Context) []shot {
	l.start = time.Now()
	sem := make(chan struct{}, l.plan.MaxInFlight)
	var wg sync.WaitGroup
	offset := time.Duration(0)
	faultStarted := false
	launched := 0
	for i, u := range l.plan.Seq {
		if ctx.Err() != nil {
			break
		}
		if i == l.plan.FaultAt && l.plan.Fault != nil {
			faultStarted = true
			go func() { defer close(l.faultDone); l.plan.Fault(l) }()
		}
		if i == l.plan.HoldAt && faultStarted {
			t0 := time.Now()
			select {
			case <-l.recovered:
			case <-time.After(l.plan.HoldLimit):
				l.note("the fault did not recover within %s; the rest of the load runs anyway", l.plan.HoldLimit)
			case <-ctx.Done():
			}
			l.held = time.Since(t0)
			offset += l.held
		}
		if wait := time.Until(l.start.Add(offset + time.Duration(i)*l.plan.Interval)); wait > 0 {
			time.Sleep(wait)
		}
		sem <- struct{}{}
		wg.Add(1)
		inst := l.pick(i)
		l.mu.Lock()
		l.shots[i] = shot{Seq: i, User: u, Inst: inst, Sent: l.since()}
		launched = i + 1
		base := l.urls[inst]
		l.mu.Unlock()
		l.sent.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var s shot
			if l.plan.Room {
				s = l.roomBuy(ctx, i, u)
			} else {
				l.api.buy(ctx, base, l.plan.Voucher, l.plan.Users[u].Token, &s)
			}
			l.mu.Lock()
			if l.plan.Room {
				l.shots[i].Inst, l.shots[i].Sent, l.shots[i].Room, l.shots[i].NoToken = s.Inst, s.Sent, s.Room, s.NoToken
			}
			l.shots[i].Status, l.shots[i].Code, l.shots[i].OrderID = s.Status, s.Code, s.OrderID
			l.shots[i].Done = l.since()
			l.mu.Unlock()
			if s.Code == "OK" && l.plan.PayEvery > 0 && u%l.plan.PayEvery == 0 {
				// An async order still pending answers ORDER_PENDING
				// (retryable): the buyer tries again for up to 3 s.
				code := l.api.pay(ctx, base, l.plan.Users[u].Token, s.OrderID)
				for try := 0; code == "ORDER_PENDING" && try < 60 && ctx.Err() == nil; try++ {
					time.Sleep(50 * time.Millisecond)
					code = l.api.pay(ctx, base, l.plan.Users[u].Token, s.OrderID)
				}
				l.mu.Lock()
				l.paid[code]++
				l.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if faultStarted {
		<-l.faultDone
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(append([]shot{}, l.shots[:launched]...), l.extra...)
}
