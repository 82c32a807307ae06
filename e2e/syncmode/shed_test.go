package syncmode

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"seckill/e2e/apptest"
	"seckill/handler"
)

// TestShedStampede: 300 buyers at once on an app whose critical section
// takes 1.5 s (a slow store; the request timeout is 3 s) and whose shedder
// is on. The buyers past the shedder's floor are answered at once with 503
// UNAVAILABLE and Retry-After while the admitted ones complete; a shed
// purchase wrote nothing (every order in the database was announced by a
// 200, stock and orders agree), and a shed buyer who comes back buys.
func TestShedStampede(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua", "SECKILL_SHED_TARGET": "250ms", "SECKILL_DEV_CRITICAL_DELAY": "1500ms"})
	h := a.Handler()
	db := apptest.OpenDB(t)
	vid := apptest.PublishVoucher(t, h, 1000)
	const users = 300
	base := apptest.RandomBase()
	tokens := apptest.UserTokens(t, base, users)
	path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
	buy := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req.Header.Set("authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	seen := apptest.StormResult{ByCode: map[string]int{}, OrderIDs: map[int64]int64{}}
	var shedUsers []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rec := buy(tokens[u])
			r := apptest.Result{Status: rec.Code}
			if err := jsonBody(rec, &r); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch rec.Code {
			case http.StatusOK:
				id, err := apptest.OrderIDOf(r)
				if err != nil {
					t.Error(err)
					return
				}
				seen.ByCode["OK"]++
				seen.OrderIDs[id] = base + int64(u) + 1
			case http.StatusServiceUnavailable:
				seen.ByCode[r.Body.Code]++
				if ra := rec.Header().Get("Retry-After"); ra != "1" && ra != "2" && ra != "3" {
					t.Errorf("shed purchase's Retry-After: got %q, want 1, 2 or 3", ra)
				}
				shedUsers = append(shedUsers, u)
			default:
				t.Errorf("got %d %s, want 200 or 503", rec.Code, rec.Body)
			}
		}()
	}
	close(start)
	wg.Wait()

	shed := seen.ByCode[handler.CodeUnavailable]
	t.Logf("answers: %v", seen.ByCode)
	if seen.ByCode["OK"]+shed != users {
		t.Fatalf("answers %v: want %d, each 200 or 503 UNAVAILABLE", seen.ByCode, users)
	}
	if shed == 0 {
		t.Fatalf("no purchase shed of %d at once with a 1.5 s critical section, want those past the floor shed", users)
	}
	if got := apptest.CounterValue(t, a, "seckill_purchases_shed_total"); got != float64(shed) {
		t.Errorf("seckill_purchases_shed_total: got %v, want %d", got, shed)
	}
	if orders := apptest.CheckInvariants(t, db, vid, seen); orders != seen.ByCode["OK"] {
		t.Errorf("orders: got %d, want one per 200 (%d): a shed purchase writes nothing", orders, seen.ByCode["OK"])
	}
	// A shed buyer who comes back once the queue cleared buys.
	u := shedUsers[0]
	rec := buy(tokens[u])
	if rec.Code != http.StatusOK {
		t.Fatalf("shed buyer's second try: got %d %s, want 200", rec.Code, rec.Body)
	}
	r := apptest.Result{Status: rec.Code}
	if err := jsonBody(rec, &r); err != nil {
		t.Fatal(err)
	}
	id, err := apptest.OrderIDOf(r)
	if err != nil {
		t.Fatal(err)
	}
	seen.OrderIDs[id] = base + int64(u) + 1
	apptest.CheckInvariants(t, db, vid, seen)
}

// jsonBody decodes the envelope of rec into r.Body.
func jsonBody(rec *httptest.ResponseRecorder, r *apptest.Result) error {
	if err := json.Unmarshal(rec.Body.Bytes(), &r.Body); err != nil {
		return fmt.Errorf("body %q: %w", rec.Body, err)
	}
	return nil
}
