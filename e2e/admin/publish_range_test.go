package admin

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestPublishTimesOutOfRange: some voucher times the database cannot store.
// A DATETIME holds years 1000 to 9999, and the driver converts to its zone
// first. Such times are a 400 INVALID_ARGUMENT naming the field. They are
// never a 500 from the driver. It runs over the real MariaDB.
func TestPublishTimesOutOfRange(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	admin := apptest.AdminToken(t, a.Handler())
	shop := apptest.CreateShop(t, a.Handler())
	soon := time.Now().Add(time.Hour).Format(time.RFC3339)
	tests := []struct {
		name, begin, end, wantField string
	}{
		{"end past year 9999 in UTC", "2030-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", "endTime"},
		{"begin before year 1", "0001-01-01T00:00:00+01:00", soon, "beginTime"},
		{"begin in year 999", "0999-06-01T00:00:00Z", soon, "beginTime"},
		{"begin in year 1999", "1999-12-31T00:00:00Z", soon, "beginTime"},
		{"end in year 10000 by its zone", "2030-01-01T00:00:00Z", "9999-12-31T23:00:00-23:59", "endTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
				"shopId": shop, "title": "range", "payValue": 100, "actualValue": 200, "type": 1, "stock": 1,
				"beginTime": tt.begin, "endTime": tt.end,
			})
			if r.Status != http.StatusBadRequest || r.Body.Code != "INVALID_ARGUMENT" {
				t.Fatalf("got %d %s, want 400 INVALID_ARGUMENT", r.Status, r.Body.Code)
			}
			if msg := r.Body.ErrorMsg; !strings.Contains(msg, tt.wantField) {
				t.Errorf("errorMsg %q: want it to name %s", msg, tt.wantField)
			}
		})
	}
	// The far end of the range is stored and listed back.
	r := apptest.Call(t, a.Handler(), http.MethodPost, "/voucher/seckill", admin, map[string]any{
		"shopId": shop, "title": "range", "payValue": 100, "actualValue": 200, "type": 1, "stock": 1,
		"beginTime": "2000-01-01T14:00:00Z", "endTime": "9999-12-30T00:00:00Z",
	})
	if r.Status != http.StatusOK {
		t.Errorf("times at the ends of the range: got %d %s, want 200", r.Status, r.Body.Code)
	}
}
