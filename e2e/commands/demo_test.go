package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/app"
	"seckill/e2e/apptest"
	"seckill/testkit/testenv"
)

// serveForTest runs `seckill serve` with vars on a free loopback port until
// the test ends, and returns its base URL and its log.
func serveForTest(t *testing.T, vars map[string]string) (base string, logs *testenv.SyncBuffer, stop func()) {
	t.Helper()
	addr := apptest.FreeAddr(t)
	vars["SECKILL_HTTP_ADDR"] = addr
	logs = &testenv.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, nil, apptest.EnvOf(vars), io.Discard, logs) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop within 15s")
		}
	}
	t.Cleanup(stop)
	base = "http://" + addr
	for i := 0; i < 200; i++ {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, logs, stop
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	t.Fatalf("serve never became ready; log:\n%s", logs.Bytes())
	return "", nil, nil
}

// logLines returns the log records with the message msg.
func logLines(t *testing.T, logs *testenv.SyncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// getJSON sends a request and decodes the envelope.
func getJSON(t *testing.T, method, url, token, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, url, err)
	}
	return resp.StatusCode, env
}

// TestDemoSeededOnceInDevelopment: `go run .` (embedded backends,
// development) seeds one shop with one voucher on sale that a new user can
// buy at once. A restart on the same data seeds nothing more.
func TestDemoSeededOnceInDevelopment(t *testing.T) {
	vars := map[string]string{"SECKILL_DATA_DIR": t.TempDir()}
	base, logs, stop := serveForTest(t, vars)
	seeded := logLines(t, logs, "demo data seeded")
	if len(seeded) != 1 {
		t.Fatalf("demo data seeded: got %d log records, want 1; log:\n%s", len(seeded), logs.Bytes())
	}
	shop := int64(seeded[0]["shop_id"].(float64))
	voucher := int64(seeded[0]["voucher_id"].(float64))

	status, env := getJSON(t, http.MethodGet, fmt.Sprintf("%s/shop/%d", base, shop), "", "")
	if status != http.StatusOK || !strings.Contains(string(env["data"]), `"name":"秒杀示范店"`) {
		t.Fatalf("GET /shop/%d: got %d %s, want the demo shop", shop, status, env["data"])
	}
	status, env = getJSON(t, http.MethodGet, fmt.Sprintf("%s/voucher/list/%d", base, shop), "", "")
	var list []struct {
		ID        int64     `json:"id"`
		Stock     int       `json:"stock"`
		BeginTime time.Time `json:"beginTime"`
		EndTime   time.Time `json:"endTime"`
	}
	if err := json.Unmarshal(env["data"], &list); status != http.StatusOK || err != nil || len(list) != 1 || list[0].ID != voucher {
		t.Fatalf("vouchers of the demo shop: got %d %s, want the one demo voucher %d", status, env["data"], voucher)
	}
	if now := time.Now(); list[0].BeginTime.After(now) || list[0].EndTime.Before(now.Add(24*time.Hour)) || list[0].Stock < 1 {
		t.Errorf("demo voucher: got %+v, want it on sale now with stock", list[0])
	}

	// A newcomer logs in by code and buys it.
	_, env = getJSON(t, http.MethodPost, base+"/user/code?phone=13912345678", "", "")
	var code, token, orderID string
	if err := json.Unmarshal(env["data"], &code); err != nil {
		t.Fatalf("code: %s", env["data"])
	}
	_, env = getJSON(t, http.MethodPost, base+"/user/login", "", `{"phone":"13912345678","code":"`+code+`"}`)
	if err := json.Unmarshal(env["data"], &token); err != nil {
		t.Fatalf("token: %s", env["data"])
	}
	status, env = getJSON(t, http.MethodPost, fmt.Sprintf("%s/voucher-order/seckill/%d", base, voucher), token, "")
	if err := json.Unmarshal(env["data"], &orderID); status != http.StatusOK || err != nil || orderID == "" {
		t.Fatalf("buy the demo voucher: got %d %v", status, env)
	}
	stop()

	// Restart on the same data: nothing seeded again.
	base, logs, _ = serveForTest(t, vars)
	if n := len(logLines(t, logs, "demo data seeded")); n != 0 {
		t.Errorf("restart: got %d demo seeds, want 0", n)
	}
	if status, _ := getJSON(t, http.MethodGet, fmt.Sprintf("%s/shop/%d", base, shop+1), "", ""); status != http.StatusNotFound {
		t.Errorf("a second shop after the restart: GET /shop/%d got %d, want 404", shop+1, status)
	}
	if _, env := getJSON(t, http.MethodGet, fmt.Sprintf("%s/voucher/list/%d", base, shop), "", ""); string(env["total"]) != "1" {
		t.Errorf("vouchers of the demo shop after the restart: got total %s, want 1", env["total"])
	}
}

// TestDemoNotSeededInProduction: production (real backends, which it
// requires) never seeds demo data.
func TestDemoNotSeededInProduction(t *testing.T) {
	vars := apptest.RealEnv(t, apptest.NewReceiver(t).Env())
	vars["SECKILL_JWT_SECRET"] = "demo-test-secret-0123456789abcdef"
	maps.Copy(vars, apptest.ProductionPay(t))
	delete(vars, "SECKILL_LOG_LEVEL") // the seed's line is at info level
	base, logs, _ := serveForTest(t, vars)
	if status, _ := getJSON(t, http.MethodGet, base+"/healthz", "", ""); status != http.StatusOK {
		t.Fatalf("production: GET /healthz got %d, want 200", status)
	}
	if n := len(logLines(t, logs, "serving")); n != 1 {
		t.Fatalf("production: got %d serving lines, want 1", n)
	}
	if n := len(logLines(t, logs, "demo data seeded")); n != 0 {
		t.Errorf("production: got %d demo seeds, want 0", n)
	}
}
