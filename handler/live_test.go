package handler_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/handler"
	"seckill/model"
	"seckill/observe/live"
	"seckill/observe/live/livetest"
)

// liveEnv is an env with the live dashboard wired: a Recorder, a Publisher and a
// Board over the fake seckiller's audit. The Publisher publishes every 10 ms
// until the test ends.
type liveEnv struct {
	*env
	store *livetest.Store
	rec   *live.Recorder
	pub   *live.Publisher
}

func newLiveEnv(t *testing.T, opts ...envOption) *liveEnv {
	t.Helper()
	le := &liveEnv{store: livetest.New(), rec: live.NewRecorder()}
	le.pub = live.NewPublisher(le.rec, le.store, live.PublisherConfig{LockMode: "lua", OrderMode: "sync", Interval: 10 * time.Millisecond}, slog.New(slog.DiscardHandler))
	var seck *fakeSale
	opts = append([]envOption{func(d *handler.Deps) {
		seck = d.Seckill.(*fakeSale)
		d.Live = le.rec
		d.Board = live.NewBoard(le.store, seck.Audit, nil)
	}}, opts...)
	le.env = newEnv(t, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.pub.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return le
}

// TestLiveStreamRefusals: the stream is for admins, of a known voucher,
// with a valid id; each refusal is the ordinary envelope.
func TestLiveStreamRefusals(t *testing.T) {
	e := newLiveEnv(t)
	tests := []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"no token", "/admin/vouchers/1/live", "", http.StatusUnauthorized, handler.CodeUnauthorized},
		{"user", "/admin/vouchers/1/live", e.userTok, http.StatusForbidden, handler.CodeForbidden},
		{"bad id", "/admin/vouchers/x/live", e.adminTok, http.StatusBadRequest, handler.CodeInvalidArgument},
		{"zero id", "/admin/vouchers/0/live", e.adminTok, http.StatusBadRequest, handler.CodeInvalidArgument},
		{"overflowing id", "/admin/vouchers/99999999999999999999/live", e.adminTok, http.StatusBadRequest, handler.CodeInvalidArgument},
		{"unknown voucher", "/admin/vouchers/1/live", e.adminTok, http.StatusNotFound, handler.CodeVoucherNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertError(t, e.do(http.MethodGet, tt.path, "", tt.token), tt.status, tt.code)
		})
	}
	e.seck.audit = func(context.Context, int64) (*model.Audit, error) {
		return nil, fmt.Errorf("%w: dial tcp 10.0.0.7:3306", model.ErrUnavailable)
	}
	r := e.do(http.MethodGet, "/admin/vouchers/1/live", "", e.adminTok)
	assertError(t, r, http.StatusServiceUnavailable, handler.CodeUnavailable)
	if strings.Contains(r.body, "10.0.0.7") {
		t.Errorf("the error's text reached the client: %s", r.body)
	}
}

// sseEvent is one event of a stream.
type sseEvent struct {
	name string
	data string
}

// readEvents reads events from an SSE body into a channel until it ends.
func readEvents(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func nextSnapshot(t *testing.T, ch <-chan sseEvent, within time.Duration) live.Snapshot {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		if ev.name != "snapshot" {
			t.Fatalf("event %q, want snapshot", ev.name)
		}
		var s live.Snapshot
		if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
			t.Fatalf("snapshot %s: %v", ev.data, err)
		}
		return s
	case <-time.After(within):
		t.Fatalf("no snapshot within %v", within)
	}
	return live.Snapshot{}
}

// TestLiveStream: a snapshot comes once a second, with the audit and the
// answers counted. The server's timeouts and the request deadline are far
// shorter than the stream. The stream outlives every timeout.
func TestLiveStream(t *testing.T) {
	e := newLiveEnv(t, func(d *handler.Deps) { d.RequestTimeout = 300 * time.Millisecond })
	var orders int64
	var mu sync.Mutex
	e.seck.audit = func(_ context.Context, id int64) (*model.Audit, error) {
		if id != 5 {
			return nil, model.ErrVoucherNotFound
		}
		mu.Lock()
		defer mu.Unlock()
		return &model.Audit{VoucherID: 5, InitialStock: 10, Stock: 10 - int(orders), Orders: orders, DistinctUsers: orders, Consistent: true}, nil
	}
	e.seck.buy = func(_ context.Context, userID, voucherID int64) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if userID == 7 && orders > 0 {
			return 0, fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrLockRefused)
		}
		orders++
		return 100 + orders, nil
	}
	srv := httptest.NewUnstartedServer(e.h)
	srv.Config.ReadTimeout = 500 * time.Millisecond
	srv.Config.WriteTimeout = 700 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := openLive(ctx, srv.URL+"/admin/vouchers/5/live", e.adminTok)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control: got %q, want no-store", cc)
	}
	events := readEvents(res.Body)
	start := time.Now()
	first := nextSnapshot(t, events, 2*time.Second)
	if first.VoucherID != 5 || first.Audit == nil || first.Audit.Stock != 10 || first.Requests != 0 {
		t.Errorf("first snapshot: got %+v, want voucher 5, stock 10, no request", first)
	}
	if len(first.Instances) != 1 || first.Instances[0].LockMode != "lua" || first.Instances[0].OrderMode != "sync" {
		t.Errorf("first snapshot's instances: got %+v, want this one, lua/sync (%+v)", first.Instances, first)
	}

	assertOK(t, e.do(http.MethodPost, "/voucher-order/seckill/5", "", e.userTok))
	for range 3 { // duplicates stopped by the lock
		assertError(t, e.do(http.MethodPost, "/voucher-order/seckill/5", "", e.userTok), http.StatusConflict, handler.CodeDuplicateOrder)
	}
	var s live.Snapshot
	for n := 0; ; n++ {
		s = nextSnapshot(t, events, 2*time.Second)
		if s.Answers["OK"] == 1 && s.Audit.Orders == 1 || n > 5 {
			break
		}
	}
	if s.Answers["OK"] != 1 || s.Answers["DUPLICATE_ORDER"] != 3 || s.Duplicates.Lock != 3 || s.Requests != 4 {
		t.Errorf("answers: got %v, duplicates %+v, requests %d; want 1 OK, 3 DUPLICATE_ORDER by the lock, 4", s.Answers, s.Duplicates, s.Requests)
	}
	if s.Audit.Orders != 1 || s.Audit.Stock != 9 {
		t.Errorf("audit: got %+v, want 1 order, stock 9", s.Audit)
	}
	if s.RequestsPerSecond == nil || s.Latency == nil || s.Latency.Count == 0 {
		t.Errorf("rates: got %v, latency %+v; want both", s.RequestsPerSecond, s.Latency)
	}
	// Past every timeout of the server and the request deadline, the
	// stream still sends, once a second.
	for time.Since(start) < 2500*time.Millisecond {
		nextSnapshot(t, events, 2*time.Second)
	}
	before := time.Now()
	nextSnapshot(t, events, 2*time.Second)
	if gap := time.Since(before); gap > 1500*time.Millisecond {
		t.Errorf("gap between snapshots: got %v, want about a second", gap)
	}
}

// openLive opens the live stream at url with the token tok.
func openLive(ctx context.Context, url, tok string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("authorization", tok)
	return http.DefaultClient.Do(req)
}

// openFirstSnapshot serves e, opens voucher 1's live stream as the admin and
// reads its first snapshot. It returns the stream's further events.
func openFirstSnapshot(t *testing.T, e *liveEnv) <-chan sseEvent {
	t.Helper()
	e.seck.audit = func(context.Context, int64) (*model.Audit, error) { return &model.Audit{VoucherID: 1}, nil }
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	res, err := openLive(context.Background(), srv.URL+"/admin/vouchers/1/live", e.adminTok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	events := readEvents(res.Body)
	nextSnapshot(t, events, 2*time.Second)
	return events
}

// TestLiveStreamLimit: an instance serves at most 32 streams at a time; one
// more is refused with 429, and a place frees when a stream ends.
func TestLiveStreamLimit(t *testing.T) {
	e := newLiveEnv(t)
	e.seck.audit = func(context.Context, int64) (*model.Audit, error) { return &model.Audit{VoucherID: 1}, nil }
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	open := func(ctx context.Context) (*http.Response, error) {
		return openLive(ctx, srv.URL+"/admin/vouchers/1/live", e.adminTok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancels []context.CancelFunc
	for i := range 32 {
		sctx, scancel := context.WithCancel(ctx)
		cancels = append(cancels, scancel)
		res, err := open(sctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: got %d, want 200", i, res.StatusCode)
		}
		defer res.Body.Close()
	}
	res, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), handler.CodeRateLimited) {
		t.Errorf("stream 33: got %d %s, want 429 RATE_LIMITED", res.StatusCode, body)
	}
	cancels[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after one stream ended: got %d, want a place free", res.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSeckillAnswersCounted: every answer that reached a voucher is counted for
// it. It is counted by code and by where a duplicate was stopped. Answers that
// reached no voucher are not counted. An outage's answer counts only for a
// voucher known to exist.
func TestSeckillAnswersCounted(t *testing.T) {
	uniqueKey := fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrUniqueKey)
	lockRefused := fmt.Errorf("%w: %w", model.ErrDuplicateOrder, model.ErrLockRefused)
	answers := map[int64]error{
		1: nil, 2: model.ErrSoldOut, 3: lockRefused, 4: uniqueKey, 5: model.ErrDuplicateOrder,
		6: model.ErrStaleFence, 7: model.ErrSeckillNotStarted, 8: model.ErrVoucherNotFound,
		9: model.Unavailable(errors.New("down")), 10: errors.New("bug"),
	}
	e := newLiveEnv(t)
	e.seck.buy = func(_ context.Context, _, voucherID int64) (int64, error) {
		if err := answers[voucherID]; err != nil {
			return 0, err
		}
		return 1, nil
	}
	for id := range answers {
		e.do(http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", id), "", e.userTok)
	}
	e.do(http.MethodPost, "/voucher-order/seckill/abc", "", e.userTok)
	e.do(http.MethodPost, "/voucher-order/seckill/1", "", "") // no token
	// An outage or a bug does not prove a voucher exists. It counts only for a
	// voucher an earlier answer proved (1 and 2), not for 9 and 10.
	answers[1], answers[2] = model.Unavailable(errors.New("down")), errors.New("bug")
	e.do(http.MethodPost, "/voucher-order/seckill/1", "", e.userTok)
	e.do(http.MethodPost, "/voucher-order/seckill/2", "", e.userTok)

	want := map[int64]model.LiveCounts{
		1: {"code:OK": 1, "code:UNAVAILABLE": 1}, 2: {"code:SOLD_OUT": 1, "code:INTERNAL": 1}, 3: {"code:DUPLICATE_ORDER": 1, "dup:lock": 1},
		4: {"code:DUPLICATE_ORDER": 1, "dup:unique": 1}, 5: {"code:DUPLICATE_ORDER": 1, "dup:check": 1},
		6: {"code:DUPLICATE_ORDER": 1, "dup:fence": 1}, 7: {"code:SECKILL_NOT_STARTED": 1},
		8: nil, 9: nil, 10: nil,
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var bad []string
		for id, w := range want {
			got, _ := e.store.Counts(context.Background(), id)
			for k := range got {
				if strings.HasPrefix(k, "lat:") {
					delete(got, k)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(map[string]int64(w)) && !(len(got) == 0 && len(w) == 0) {
				bad = append(bad, fmt.Sprintf("voucher %d: got %v, want %v", id, got, w))
			}
		}
		if len(bad) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(strings.Join(bad, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRateLimitedAnswersCounted: a request the rate limiter refuses is
// counted for its voucher as RATE_LIMITED.
func TestRateLimitedAnswersCounted(t *testing.T) {
	e := newLiveEnv(t, func(d *handler.Deps) { d.Limits = newFakeLimits(1) })
	for range 3 {
		e.do(http.MethodPost, "/voucher-order/seckill/3", "", e.userTok)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ := e.store.Counts(context.Background(), 3)
		if got["code:OK"] == 1 && got["code:RATE_LIMITED"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v, want 1 OK and 2 RATE_LIMITED", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLiveFloodOfUnknownVouchers: one user with a rate limit of 1 sends 1,100
// purchases of made-up vouchers. The limiter refuses nearly all of them before
// any voucher is read.
func TestLiveFloodOfUnknownVouchers(t *testing.T) {
	e := newLiveEnv(t, func(d *handler.Deps) { d.Limits = newFakeLimits(1) })
	const real = 424242
	e.seck.buy = func(_ context.Context, _, voucherID int64) (int64, error) {
		if voucherID != real {
			return 0, model.ErrVoucherNotFound
		}
		return 1, nil
	}
	limited := 0
	for i := range 1100 {
		r := e.do(http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", 900_000+i), "", e.userTok)
		if r.status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited < 1000 {
		t.Fatalf("got %d of 1100 rate limited, want nearly all (the flood must hit the limiter)", limited)
	}
	other, err := e.tokens.Issue(8, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	assertOK(t, e.do(http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", real), "", other))
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ := e.store.Counts(context.Background(), real)
		if got["code:OK"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("real voucher: got %v, want its purchase counted", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.rec.Dropped(); n != 0 {
		t.Errorf("recorder dropped %d answers, want 0 (no place taken by the flood)", n)
	}
	for i := range 1100 {
		if got, _ := e.store.Counts(context.Background(), int64(900_000+i)); len(got) != 0 {
			t.Fatalf("made-up voucher %d: counted %v, want nothing", 900_000+i, got)
		}
	}
}

// TestLiveStreamEndsWithStreams: when Deps.Streams is done (the server
// shuts down), a stream sends "end" and returns.
func TestLiveStreamEndsWithStreams(t *testing.T) {
	streams, endStreams := context.WithCancel(context.Background())
	e := newLiveEnv(t, func(d *handler.Deps) { d.Streams = streams })
	events := openFirstSnapshot(t, e)
	endStreams()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended without an end event")
			}
			if ev.name == "end" {
				if _, ok := <-events; ok {
					t.Error("events after end")
				}
				return
			}
		case <-timeout:
			t.Fatal("the stream went on after Streams was done")
		}
	}
}

// TestLiveSales: GET /admin/live (admin) lists the live instances and the
// vouchers answered for in the last seconds.
func TestLiveSales(t *testing.T) {
	e := newLiveEnv(t)
	assertError(t, e.do(http.MethodGet, "/admin/live", "", e.userTok), http.StatusForbidden, handler.CodeForbidden)
	assertError(t, e.do(http.MethodGet, "/admin/live", "", ""), http.StatusUnauthorized, handler.CodeUnauthorized)
	e.do(http.MethodPost, "/voucher-order/seckill/42", "", e.userTok)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var s live.Sales
		if err := json.Unmarshal(assertOK(t, e.do(http.MethodGet, "/admin/live", "", e.adminTok)), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Instances) == 1 && fmt.Sprint(s.Vouchers) == "[42]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sales: got %+v, want this instance and voucher 42", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flipAccess is an AdminCheck and a Revocations whose answers a test flips.
type flipAccess struct {
	mu      sync.Mutex
	revoked bool  // Revoked's answer
	check   error // CheckAdmin's answer
	checks  int
}

func (f *flipAccess) Revoked(int64, time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revoked
}

func (f *flipAccess) CheckAdmin(context.Context, int64, time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	return f.check
}

func (f *flipAccess) set(revoked bool, check error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked, f.check = revoked, check
}

// TestLiveStreamEndsWhenAccessLost: an open stream checks its token again
// every few seconds. Revoked (from memory or in the database) or demoted,
// it sends "end" and closes. A check the database cannot answer keeps it.
func TestLiveStreamEndsWhenAccessLost(t *testing.T) {
	tests := []struct {
		name    string
		revoked bool
		check   error
	}{
		{"revoked, from memory", true, nil},
		{"revoked, in the database", false, model.ErrUnauthorized},
		{"demoted", false, model.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			access := &flipAccess{}
			e := newLiveEnv(t, func(d *handler.Deps) { d.Revocations, d.AdminCheck = access, access })
			events := openFirstSnapshot(t, e)
			// The database down: the stream goes on past a check.
			access.set(false, model.Unavailable(errors.New("dial tcp: connection refused")))
			for n := 0; ; n++ {
				if n > 5 {
					t.Fatal("the stream never checked its access again")
				}
				nextSnapshot(t, events, 2*time.Second)
				access.mu.Lock()
				checked := access.checks > 1 // the route's check, then the stream's
				access.mu.Unlock()
				if checked {
					break
				}
			}
			nextSnapshot(t, events, 2*time.Second)
			access.set(tt.revoked, tt.check)
			snapshots := 0
			timeout := time.After(5 * time.Second)
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						t.Fatal("the stream ended without an end event")
					}
					if ev.name == "snapshot" {
						snapshots++
						continue
					}
					if ev.name != "end" || !strings.Contains(ev.data, "access revoked") {
						t.Fatalf("event %s %s, want end: access revoked", ev.name, ev.data)
					}
					if _, ok := <-events; ok {
						t.Error("events after end")
					}
					t.Logf("%d snapshots after the change", snapshots)
					return
				case <-timeout:
					t.Fatalf("the stream went on (%d snapshots) after its access was lost", snapshots)
				}
			}
		})
	}
}

// TestLiveHistoryRoute: GET /admin/vouchers/:id/history is for admins; it
// answers the voucher's answers per second once published, from the first
// to the last, summed over codes; a voucher without answers has none.
func TestLiveHistoryRoute(t *testing.T) {
	e := newLiveEnv(t)
	assertError(t, e.do(http.MethodGet, "/admin/vouchers/42/history", "", e.userTok), http.StatusForbidden, handler.CodeForbidden)
	assertError(t, e.do(http.MethodGet, "/admin/vouchers/42/history", "", ""), http.StatusUnauthorized, handler.CodeUnauthorized)
	assertError(t, e.do(http.MethodGet, "/admin/vouchers/x/history", "", e.adminTok), http.StatusBadRequest, handler.CodeInvalidArgument)
	e.do(http.MethodPost, "/voucher-order/seckill/42", "", e.userTok)
	e.do(http.MethodPost, "/voucher-order/seckill/42", "", e.userTok)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var h live.History
		if err := json.Unmarshal(assertOK(t, e.do(http.MethodGet, "/admin/vouchers/42/history", "", e.adminTok)), &h); err != nil {
			t.Fatal(err)
		}
		if h.Requests == 2 {
			if h.VoucherID != 42 || h.Step != 1 || len(h.Points) == 0 || h.From == 0 {
				t.Errorf("history: %+v, want voucher 42's points, a step of 1 s", h)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history: %+v, want the 2 answers", h)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var none live.History
	if err := json.Unmarshal(assertOK(t, e.do(http.MethodGet, "/admin/vouchers/43/history", "", e.adminTok)), &none); err != nil || len(none.Points) != 0 || none.Requests != 0 {
		t.Errorf("a voucher without answers: %+v (%v), want no point", none, err)
	}
}
