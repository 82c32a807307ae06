package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestOneBuyerSpendsNoVoucherCeiling: two instances on the real Redis and
// MariaDB, SECKILL_RATE_LIMIT_VOUCHER=20 and SECKILL_RATE_LIMIT_IP=5, the
// user's limit off. One buyer's token sends purchases of one voucher from
// five addresses, to both instances. After a second, 20 other buyers, each
// on an address of their own, buy once, two every 100 ms. The one buyer's repeats are
// DUPLICATE_ORDER or 429 by their addresses' limits, and spend no permit of
// the voucher's ceiling: every other buyer gets an order. Before, the
// repeats passing five addresses' limits (25 a second) spent the ceiling,
// and other buyers were refused "too many purchases of this voucher".
func TestOneBuyerSpendsNoVoucherCeiling(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			env := map[string]string{"SECKILL_RATE_LIMIT_VOUCHER": "20", "SECKILL_RATE_LIMIT_IP": "5"}
			apps := []http.Handler{apptest.StartMode(t, mode, env).Handler(), apptest.StartMode(t, mode, env).Handler()}
			vid := apptest.PublishVoucher(t, apps[0], 1000)
			tokens := apptest.DevTokens()
			token := func(user int64) string {
				tok, err := tokens.Issue(user, "user")
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			path := fmt.Sprintf("/voucher-order/seckill/%d", vid)
			buy := func(h http.Handler, tok, addr string) (int, string) {
				req := httptest.NewRequest(http.MethodPost, path, nil)
				req.RemoteAddr = addr
				req.Header.Set("authorization", tok)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				var body struct{ Code, ErrorMsg string }
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Errorf("body %q: %v", rec.Body, err)
				}
				return rec.Code, body.Code + " " + body.ErrorMsg
			}

			base := apptest.RandomBase()
			abuser := token(base)
			var mu sync.Mutex
			seen := map[string]int{}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 5 {
				addr := randomAddr()
				for g := range 2 {
					wg.Go(func() {
						for n := 0; ; n++ {
							select {
							case <-stop:
								return
							default:
							}
							status, answer := buy(apps[(g+n)%2], abuser, addr)
							mu.Lock()
							seen[fmt.Sprintf("%d %s", status, answer)]++
							mu.Unlock()
							// Paced: the repeats are many, but leave the two
							// shared cores to the servers.
							time.Sleep(5 * time.Millisecond)
						}
					})
				}
			}
			// A second: the addresses' bursts are spent, and the repeats
			// pass their limits at their rate, 25 a second.
			time.Sleep(time.Second)
			var others sync.WaitGroup
			refused := 0
			for i := range 20 {
				others.Go(func() {
					status, answer := buy(apps[i%2], token(base+1+int64(i)), randomAddr())
					if status != http.StatusOK {
						mu.Lock()
						refused++
						mu.Unlock()
						t.Errorf("buyer %d: got %d %s, want 200", i+1, status, answer)
					}
				})
				if i%2 == 1 {
					time.Sleep(100 * time.Millisecond) // two buyers every 100 ms
				}
			}
			others.Wait()
			close(stop)
			wg.Wait()
			t.Logf("%s: the one buyer's answers: %v; %d of 20 other buyers refused", mode, seen, refused)
			if seen["200  "] != 1 {
				t.Errorf("the one buyer's orders: got %d, want 1", seen["200  "])
			}
		})
	}
}
