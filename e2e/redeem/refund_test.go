package redeem

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestRedeemRacesRefund: a paid voucher scanned at two counters while its
// buyer asks for the money back on both instances, all at once, ends in
// exactly one of the two: used (every refund refused VOUCHER_USED) or
// refunded (every scan refused, the code dead), the unit back only with
// the refund. A used voucher is never refunded afterwards.
func TestRedeemRacesRefund(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			hs := twoApps(t, mode, roomy)
			const n = 8
			shop, vid := shopVoucher(t, hs[0], n, nil)
			_, tokA := addStaff(t, hs[0], shop)
			_, tokB := addStaff(t, hs[1], shop)
			base := apptest.RandomBase()
			used, refunded := 0, 0
			for i := range n {
				b, code := paidBuyer(t, hs[i%2], vid, base+int64(i))
				scans := make([]apptest.Result, 4)
				refunds := make([]apptest.Result, 4)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for j := range 4 {
					wg.Go(func() {
						<-start
						scans[j] = redeem(t, hs[j%2], shop, []string{tokA, tokB}[j/2], code)
					})
					wg.Go(func() {
						<-start
						// The scans' path is longer (staff, limits):
						// the refunds start up to 6 ms late on some
						// orders, so that either side wins some races.
						time.Sleep(time.Duration(i%4) * 2 * time.Millisecond)
						refunds[j] = apptest.Call(t, hs[(j+1)%2], http.MethodPost, "/voucher-order/"+b.Order+"/refund", b.Token, nil)
					})
				}
				close(start)
				wg.Wait()
				scanned, asked := 0, 0
				for j := range 4 {
					if scans[j].Status == http.StatusOK {
						scanned++
					}
					if refunds[j].Status == http.StatusOK {
						asked++
					}
				}
				o := get(t, hs[0], b)
				switch {
				case scanned == 1 && asked == 0 && o.Status == "used":
					used++
					for _, r := range refunds {
						if r.Status != http.StatusConflict || r.Body.Code != "VOUCHER_USED" {
							t.Errorf("order %d used: a refund answered %d %s, want 409 VOUCHER_USED", i, r.Status, r.Body.Code)
						}
					}
				case scanned == 0 && asked == 4 && o.Status == "refunded":
					refunded++
					for _, r := range scans {
						if r.Status != http.StatusNotFound || r.Body.Code != "REDEEM_CODE_INVALID" {
							t.Errorf("order %d refunded: a scan answered %d %s, want 404 REDEEM_CODE_INVALID", i, r.Status, r.Body.Code)
						}
					}
				default:
					t.Fatalf("order %d: %d scans and %d refunds succeeded, the order is %s; want exactly one of used or refunded", i, scanned, asked, o.Status)
				}
				if o.Status == "used" {
					if r := apptest.Call(t, hs[1], http.MethodPost, "/voucher-order/"+b.Order+"/refund", b.Token, nil); r.Body.Code != "VOUCHER_USED" {
						t.Errorf("order %d: refund after its use: %d %s, want VOUCHER_USED", i, r.Status, r.Body.Code)
					}
				}
			}
			t.Logf("%d used, %d refunded", used, refunded)
			a := audit(t, hs[0], vid)
			if !a.Consistent || a.Used != int64(used) || a.Refunded != int64(refunded) || a.Orders != int64(used) || a.Cancelled != int64(refunded) {
				t.Errorf("audit %+v: want consistent, %d used holding their units, %d refunded with their units back", a, used, refunded)
			}
		})
	}
}
