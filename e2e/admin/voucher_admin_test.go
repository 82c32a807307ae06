package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/e2e/apptest"
)

// TestVoucherEditAndClose runs on the real MariaDB and Redis, in both order
// modes. An admin edits a voucher's stock and window before its sale. The
// audit follows, and Redis too in async mode. Once the sale has started,
// the admin cannot edit it. The stock cannot go below what is sold. Then
// the admin closes it. Its orders stay, buying is refused as ended, and
// every invariant holds.
func TestVoucherEditAndClose(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			a := apptest.StartMode(t, mode, map[string]string{"SECKILL_LOCK_MODE": "lua"})
			h, admin, db := a.Handler(), apptest.AdminToken(t, a.Handler()), apptest.OpenDB(t)
			vid := apptest.PublishVoucherWith(t, h, 5, map[string]any{
				"beginTime": time.Now().Add(time.Hour).Format(time.RFC3339),
				"endTime":   time.Now().Add(2 * time.Hour).Format(time.RFC3339),
			})
			path := fmt.Sprintf("/voucher/seckill/%d", vid)
			edit := func(stock int, begin time.Time, more map[string]any) apptest.Result {
				body := map[string]any{
					"title": "edited", "subTitle": "s", "rules": "r", "payValue": 50, "actualValue": 200, "stock": stock,
					"beginTime": begin.Format(time.RFC3339), "endTime": begin.Add(2 * time.Hour).Format(time.RFC3339),
				}
				for k, v := range more {
					body[k] = v
				}
				return apptest.Call(t, h, http.MethodPut, path, admin, body)
			}
			want := func(what string, r apptest.Result, status int, code string) {
				t.Helper()
				if r.Status != status || r.Body.Code != code {
					t.Fatalf("%s: got %d %s %s, want %d %s", what, r.Status, r.Body.Code, r.Body.ErrorMsg, status, code)
				}
			}

			want("an unknown field", edit(8, time.Now().Add(-time.Minute), map[string]any{"stok": 1}), 400, "INVALID_ARGUMENT")
			want("pay above worth", edit(8, time.Now().Add(-time.Minute), map[string]any{"payValue": 201}), 400, "INVALID_ARGUMENT")
			want("a user's token", apptest.Call(t, h, http.MethodPut, path, mustUserToken(t), map[string]any{}), 403, "FORBIDDEN")
			want("an unknown voucher", apptest.Call(t, h, http.MethodPut, "/voucher/seckill/999999999999", admin, map[string]any{
				"title": "x", "subTitle": "", "rules": "", "payValue": 1, "actualValue": 2, "stock": 1,
				"beginTime": time.Now().Add(time.Hour).Format(time.RFC3339), "endTime": time.Now().Add(2 * time.Hour).Format(time.RFC3339),
			}), 404, "VOUCHER_NOT_FOUND")

			// Before the sale: stock 5 -> 8, and the sale starts now.
			want("the edit before the sale", edit(8, time.Now().Add(-time.Minute), nil), 200, "")
			var got struct {
				Title        string `json:"title"`
				Stock        int    `json:"stock"`
				InitialStock int    `json:"initialStock"`
				Status       int    `json:"status"`
			}
			if err := json.Unmarshal(apptest.Call(t, h, http.MethodGet, path, "", nil).Body.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got.Title != "edited" || got.Stock != 8 || got.InitialStock != 8 || got.Status != 1 {
				t.Fatalf("after the edit: got %+v, want edited, stock 8 / 8, status 1", got)
			}
			seen := buyInTurn(t, h, vid, apptest.RandomBase(), 12)
			if seen.ByCode["OK"] != 8 {
				t.Fatalf("after the edit: %v, want 8 orders (the edited stock)", seen.ByCode)
			}
			if mode == "async" {
				au, _ := apptest.WaitDrained(t, h, vid, 8)
				apptest.CheckInvariant5(t, apptest.SharedRedis(t), vid, au)
			}
			apptest.CheckInvariants(t, db, vid, seen)

			// The sale has started: no edit.
			want("an edit during the sale", edit(9, time.Now().Add(time.Hour), nil), 409, "VOUCHER_NOT_EDITABLE")

			// Stock below what is sold: the store's own rule refuses it.
			// The window moved back into the future behind the API's back.
			if _, err := db.Exec("UPDATE tb_seckill_voucher SET begin_time = ? WHERE voucher_id = ?", time.Now().Add(time.Hour), vid); err != nil {
				t.Fatal(err)
			}
			want("stock below the sold units", edit(7, time.Now().Add(30*time.Minute), nil), 400, "INVALID_ARGUMENT")
			want("stock above the sold units", edit(10, time.Now().Add(-time.Minute), nil), 200, "")
			if mode == "async" {
				au, _ := apptest.WaitDrained(t, h, vid, 8)
				if au.InitialStock != 10 || au.Stock != 2 || *au.RedisStock != 2 || !au.Consistent {
					t.Fatalf("after the stock went up to 10 with 8 sold: %+v, redis %d, want 10, 2, redis 2, consistent", au, *au.RedisStock)
				}
				apptest.CheckInvariant5(t, apptest.SharedRedis(t), vid, au)
			}

			// Close: the orders stay. The sale has ended at once here.
			want("close", apptest.Call(t, h, http.MethodPost, path+"/close", admin, nil), 200, "")
			want("close again", apptest.Call(t, h, http.MethodPost, path+"/close", admin, nil), 200, "")
			want("close an unknown voucher", apptest.Call(t, h, http.MethodPost, "/voucher/seckill/999999999999/close", admin, nil), 404, "VOUCHER_NOT_FOUND")
			late, err := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
			if err != nil {
				t.Fatal(err)
			}
			want("buying a closed voucher", apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), late, nil), 409, "SECKILL_ENDED")
			want("an edit after the close", edit(10, time.Now().Add(time.Hour), nil), 409, "VOUCHER_NOT_EDITABLE")
			if err := json.Unmarshal(apptest.Call(t, h, http.MethodGet, path, "", nil).Body.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got.Status != 2 || got.Stock != 2 || got.InitialStock != 10 {
				t.Fatalf("after the close: got %+v, want status 2, stock 2 / 10", got)
			}
			apptest.CheckInvariants(t, db, vid, seen)
		})
	}
}

// mustUserToken is an ordinary user's token.
func mustUserToken(t *testing.T) string {
	t.Helper()
	s, err := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// buyInTurn has users buyers (ids from base+1) buy the voucher one after
// another. That is a few requests, with no deadline pressure on a loaded
// machine.
func buyInTurn(t *testing.T, h http.Handler, vid, base int64, users int) apptest.StormResult {
	t.Helper()
	res := apptest.StormResult{ByCode: map[string]int{}, OrderIDs: map[int64]int64{}}
	for u := base + 1; u <= base+int64(users); u++ {
		tok, err := apptest.DevTokens().Issue(u, "user")
		if err != nil {
			t.Fatal(err)
		}
		r := apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil)
		if r.Status != http.StatusOK {
			res.ByCode[r.Body.Code]++
			continue
		}
		id, err := apptest.OrderIDOf(r)
		if err != nil {
			t.Fatal(err)
		}
		res.ByCode["OK"]++
		res.OrderIDs[id] = u
	}
	return res
}
