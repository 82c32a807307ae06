package security

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"seckill/e2e/apptest"
)

// TestShopSearchFloodSparesPurchases: on the real MariaDB, 64 clients with
// no token search shops by a name nothing starts with, in a loop, while 60
// buyers buy a voucher of 60 twice each. Every search is 200 or 429
// RATE_LIMITED (at most 4 run at once per instance), and the sale is
// untouched by it: 60 orders, one per buyer, the invariants hold.
func TestShopSearchFloodSparesPurchases(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	h := a.Handler()
	vid := apptest.PublishVoucher(t, h, 60)
	path := "/shop/list?name=" + url.QueryEscape("no shop starts so "+strconv.FormatInt(apptest.RandomBase(), 10))
	stop := make(chan struct{})
	var mu sync.Mutex
	searches := map[string]int{}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := apptest.Call(t, h, http.MethodGet, path, "", nil)
				mu.Lock()
				searches[strconv.Itoa(r.Status)+" "+r.Body.Code]++
				mu.Unlock()
			}
		})
	}
	seen := apptest.Storm(t, []http.Handler{h}, vid, apptest.RandomBase(), 60, 2)
	close(stop)
	wg.Wait()
	t.Logf("searches: %v; purchases: %v", searches, seen.ByCode)
	for answer := range searches {
		if answer != "200 " && answer != "429 RATE_LIMITED" {
			t.Errorf("search answered %q, want 200 or 429 RATE_LIMITED", answer)
		}
	}
	if searches["200 "] == 0 {
		t.Error("no search served")
	}
	if orders := apptest.CheckInvariants(t, apptest.OpenDB(t), vid, seen); orders != 60 || seen.ByCode["OK"] != 60 {
		t.Errorf("got %d orders, %d OK answers, want 60 and 60 (one per buyer)", orders, seen.ByCode["OK"])
	}
}
