package observability

// The live sale dashboard across instances. Two wired apps run on the real
// MariaDB and Redis. A storm of buyers spreads over both. Each instance's
// stream shows the whole sale: the sum of both instances' answers, and the
// audit's numbers.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/observe/live"
)

// openLive sends GET /admin/vouchers/:id/live on url with the admin token,
// under ctx, and returns the answer.
func openLive(ctx context.Context, t *testing.T, url, admin string, voucherID int64) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/admin/vouchers/%d/live", url, voucherID), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("authorization", admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// liveStream opens GET /admin/vouchers/:id/live on srv as an admin and
// returns its snapshots as they come. The stream closes with the test.
func liveStream(t *testing.T, url string, voucherID int64) <-chan live.Snapshot {
	t.Helper()
	admin := apptest.AdminToken(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	res := openLive(ctx, t, url, admin, voucherID)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("live stream: got %d %q %s, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	out := make(chan live.Snapshot, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "snapshot":
				var s live.Snapshot
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
					t.Errorf("snapshot %s: %v", line, err)
					return
				}
				select {
				case out <- s:
				default: // the test reads the latest. Drop when it lags
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		res.Body.Close()
		<-done
	})
	return out
}

// TestLiveDashboardAcrossInstances: a storm over two instances. The stream
// of either instance shows the sum of both instances' answers by code. That
// sum equals what the clients received. It shows the duplicates by where
// they were stopped, and both instances with their modes. It shows the
// audit's numbers, equal to the database's. With lua the lock stops the
// duplicates. With none the transaction's check and the unique key do. Then
// the unique-key count equals the audit's.
func TestLiveDashboardAcrossInstances(t *testing.T) {
	for _, mode := range []string{"lua", "none", "async"} {
		t.Run(mode, func(t *testing.T) {
			env := map[string]string{"SECKILL_LOCK_MODE": mode}
			start := apptest.Start
			if mode == "async" {
				env = map[string]string{}
				start = apptest.StartAsync
			}
			a, b := start(t, env), start(t, env)
			srvA, srvB := httptest.NewServer(a.Handler()), httptest.NewServer(b.Handler())
			t.Cleanup(srvA.Close)
			t.Cleanup(srvB.Close)
			const users, dup, stock = 120, 3, 80
			vid := apptest.PublishVoucher(t, a.Handler(), stock)
			fromA, fromB := liveStream(t, srvA.URL, vid), liveStream(t, srvB.URL, vid)

			seen := apptest.Storm(t, []http.Handler{a.Handler(), b.Handler()}, vid, apptest.RandomBase(), users, dup)
			sent := users * dup
			if mode == "async" {
				apptest.WaitDrained(t, a.Handler(), vid, int64(seen.ByCode["OK"]))
			}
			for name, ch := range map[string]<-chan live.Snapshot{"instance a": fromA, "instance b": fromB} {
				s := apptest.Settle(t, name, ch, func(s live.Snapshot) bool {
					return s.Requests == int64(sent) && s.Audit != nil && s.Audit.Orders == int64(seen.ByCode["OK"])
				})
				for _, code := range []string{"OK", "SOLD_OUT", "DUPLICATE_ORDER"} {
					if got, want := s.Answers[code], int64(seen.ByCode[code]); got != want {
						t.Errorf("%s: %s answers: got %d, want %d (what the clients received)", name, code, got, want)
					}
				}
				d := s.Duplicates
				if total := d.Lock + d.Fence + d.Check + d.UniqueKey; total != s.Answers["DUPLICATE_ORDER"] {
					t.Errorf("%s: duplicates by where stopped %+v sum to %d, want the %d DUPLICATE_ORDER answers", name, d, total, s.Answers["DUPLICATE_ORDER"])
				}
				if d.UniqueKey != s.Audit.DuplicateRejections {
					t.Errorf("%s: duplicates only the unique key stopped: got %d, want the audit's %d", name, d.UniqueKey, s.Audit.DuplicateRejections)
				}
				switch mode {
				case "lua":
					if d.UniqueKey != 0 {
						t.Errorf("%s: lua: got %+v, want none stopped by the unique key", name, d)
					}
				case "none":
					if d.Lock != 0 {
						t.Errorf("%s: none: got %d stopped by a lock, want 0", name, d.Lock)
					}
				case "async":
					if d.Check != s.Answers["DUPLICATE_ORDER"] {
						t.Errorf("%s: async: got %+v, want every duplicate stopped by the admission script", name, d)
					}
					if s.Audit.Pending == nil || *s.Audit.Pending != 0 || s.Audit.RedisStock == nil {
						t.Errorf("%s: async audit: got %+v, want redisStock and pending 0 after the drain", name, s.Audit)
					}
				}
				if !s.Audit.Consistent || s.Audit.Oversold || s.Audit.Stock != stock-int(s.Audit.Orders) {
					t.Errorf("%s: audit %+v, want consistent, stock = %d - orders", name, s.Audit, stock)
				}
				var ids []string
				for _, in := range s.Instances {
					ids = append(ids, in.ID)
				}
				if !slices.Contains(ids, a.LiveInstance()) || !slices.Contains(ids, b.LiveInstance()) {
					t.Errorf("%s: instances %v, want both %s and %s", name, ids, a.LiveInstance(), b.LiveInstance())
				}
				wantOrder := "sync"
				if mode == "async" {
					wantOrder = "async"
				}
				if fmt.Sprint(s.OrderModes) != "["+wantOrder+"]" {
					t.Errorf("%s: order modes of the instances serving the voucher: got %v, want [%s]", name, s.OrderModes, wantOrder)
				}
			}
			apptest.CheckInvariants(t, apptest.OpenDB(t), vid, seen)
		})
	}
}

// TestServeEndsLiveStreamsAtShutdown: a stopping server ends its live
// streams with an "end" event. It does not wait for them until its shutdown
// deadline. It stops gracefully.
func TestServeEndsLiveStreamsAtShutdown(t *testing.T) {
	addr := apptest.FreeAddr(t)
	vars := map[string]string{"SECKILL_DATA_DIR": t.TempDir(), "SECKILL_HTTP_ADDR": addr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, nil, apptest.EnvOf(vars), io.Discard, io.Discard) }()
	base := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if i == 200 {
			cancel()
			t.Fatalf("server never became ready: %v", <-done)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var out bytes.Buffer
	if err := app.Run(ctx, []string{"tokens", "--count", "1", "--admin"}, apptest.EnvOf(vars), &out, io.Discard); err != nil {
		t.Fatalf("tokens --admin: %v", err)
	}
	_, adminTok, _ := strings.Cut(strings.TrimSpace(out.String()), ",")
	h := &forwarder{func(w http.ResponseWriter, r *http.Request) {
		// apptest.Call serves in process. This handler forwards to the server.
		req, err := http.NewRequest(r.Method, base+r.URL.RequestURI(), r.Body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}}
	apptest.UseAdminToken(t, h, adminTok)
	vid := apptest.PublishVoucher(t, h, 5)

	res := openLive(context.Background(), t, base, apptest.AdminToken(t, h), vid)
	defer res.Body.Close()
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- name
			}
		}
	}()
	if ev := <-events; ev != "snapshot" {
		t.Fatalf("first event: got %q, want snapshot", ev)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v, want nil after a graceful stop", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("stop took %v with a stream open, want well within the shutdown deadline", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s with a live stream open")
	}
	var last string
	for ev := range events {
		last = ev
	}
	if last != "end" {
		t.Errorf("last event of the stream: got %q, want end", last)
	}
}

// forwarder is an http.Handler of its own function. Unlike a HandlerFunc
// it can be a map key (apptest.UseAdminToken).
type forwarder struct{ f http.HandlerFunc }

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.f(w, r) }
