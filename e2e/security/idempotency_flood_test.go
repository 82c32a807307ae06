package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/handler"
	"seckill/testkit/redisproc"
)

// floodRequests is how many keyed requests the flood sends on each keyed
// route, each with a fresh key.
const floodRequests = 10_000

// floodBytesPerUser is the bound this test holds one user's
// Idempotency-Key records to, in Redis's own count (MEMORY USAGE of the
// records and the user's index): the default cap of 100 live keys at
// 1.5 KiB each, a stored body of at most 1 KiB included.
const floodBytesPerUser = 100 * 1536

// TestIdempotencyFloodBounded: one buyer token sends 10,000 keyed requests,
// each with a fresh 64-character key, on every keyed route: the purchase,
// the pay and the cancel. Redis is a private one with a small maxmemory
// and noeviction. The buyer's records stay within floodBytesPerUser. Redis
// stays below its limit, and another user still logs in (POST /user/code,
// /user/login) and buys.
func TestIdempotencyFloodBounded(t *testing.T) {
	apptest.IntegrationEnv(t)
	srv := apptest.PrivateRedis(t, redisproc.Options{
		Args: []string{"--maxmemory", "6mb", "--maxmemory-policy", "noeviction"}})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })

	a := apptest.Start(t, map[string]string{"SECKILL_REDIS_ADDR": srv.Addr(), "SECKILL_LOCK_MODE": "lua"})
	h := a.Handler()
	vid := apptest.PublishVoucher(t, h, 10)
	tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	first := keyedPost(h, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, "first-purchase")
	var orderID string
	if first.Code != http.StatusOK || json.Unmarshal(dataOf(t, first), &orderID) != nil {
		t.Fatalf("the buyer's purchase: got %d %s", first.Code, first.Body.String())
	}
	before := usedMemory(t, rdb)

	routes := map[string]string{
		"purchase": fmt.Sprintf("/voucher-order/seckill/%d", vid),
		"pay":      "/voucher-order/" + orderID + "/pay",
		"cancel":   "/voucher-order/" + orderID + "/cancel",
	}
	for _, name := range []string{"purchase", "pay", "cancel"} {
		statuses := flood(h, routes[name], tok, name)
		t.Logf("%s: %d keyed requests answered %v", name, floodRequests, statuses)
	}

	records, bytes := idempotencyBytes(t, rdb)
	after := usedMemory(t, rdb)
	t.Logf("the buyer's records: %d Redis keys, %d bytes (MEMORY USAGE); used_memory %d -> %d (+%d)",
		records, bytes, before, after, after-before)
	if bytes > floodBytesPerUser {
		t.Errorf("the buyer's records take %d bytes, want at most %d", bytes, floodBytesPerUser)
	}

	phone := randomPhone()
	code := dataCode(t, apptest.SendCode(t, h, phone, randomAddr()))
	login := apptest.Login(t, h, phone, code, randomAddr())
	var other string
	if login.Status != http.StatusOK || json.Unmarshal(login.Body.Data, &other) != nil {
		t.Fatalf("another user's login: got %d %s", login.Status, login.Body.Code)
	}
	if r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), other, nil); r.Status != http.StatusOK {
		t.Errorf("another user's purchase: got %d %s, want 200", r.Status, r.Body.Code)
	}
}

// keyedPost sends POST path with token and the Idempotency-Key key.
func keyedPost(h http.Handler, path, token, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, nil)
	req.Header.Set("authorization", "Bearer "+token)
	req.Header.Set(handler.IdempotencyHeader, key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// flood sends floodRequests keyed POSTs of path, each with a fresh
// 64-character key, from 4 workers, and counts the answers by status.
func flood(h http.Handler, path, token, tag string) map[int]int {
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			for i := w; i < floodRequests; i += workers {
				key := tag + "-" + strings.Repeat("0", 63-len(tag)-len(strconv.Itoa(i))) + strconv.Itoa(i)
				rec := keyedPost(h, path, token, key)
				mu.Lock()
				statuses[rec.Code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return statuses
}

// dataOf is the data of a success envelope.
func dataOf(t *testing.T, rec *httptest.ResponseRecorder) json.RawMessage {
	t.Helper()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	return env.Data
}

// usedMemory is Redis's used_memory.
func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no used_memory in %q", info)
	return 0
}

// idempotencyBytes counts the Idempotency-Key keys of this test's private
// Redis and their bytes (MEMORY USAGE).
func idempotencyBytes(t *testing.T, rdb *redis.Client) (keys int, bytes int64) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "seckill:idem:*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		keys++
		bytes += n
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys, bytes
}
