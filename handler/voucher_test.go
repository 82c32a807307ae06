package handler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/handler"
	"seckill/model"
)

// withEdits returns body as JSON with edits applied: a nil value deletes the
// field, a json.RawMessage is written as is.
func withEdits(body, edits map[string]any) string {
	for k, v := range edits {
		if v == nil {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// publishBody returns a valid publish body with edits applied: a nil value
// deletes the field, a json.RawMessage is written as is.
func publishBody(edits map[string]any) string {
	body := map[string]any{
		"shopId": 1, "title": "100 for 80", "subTitle": "weekdays", "rules": "one per user",
		"payValue": 8000, "actualValue": 10000, "type": 1, "stock": 100,
		"beginTime": "2030-01-01T10:00:00+08:00", "endTime": "2030-01-01T12:00:00+08:00",
	}
	return withEdits(body, edits)
}

func TestPublishBadBody(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name      string
		body      string
		wantField string
	}{
		{"empty body", "", "body"},
		{"malformed JSON", `{"shopId":1,`, "body"},
		{"not an object", `[1,2]`, "body"},
		{"two objects", publishBody(nil) + publishBody(nil), "body"},
		{"too large", publishBody(map[string]any{"rules": strings.Repeat("x", 70<<10)}), "body"},
		{"stock a string", publishBody(map[string]any{"stock": "x"}), "stock"},
		{"stock a fraction", publishBody(map[string]any{"stock": 1.5}), "stock"},
		{"stock overflowing", publishBody(map[string]any{"stock": raw("1e30")}), "stock"},
		{"shopId a string", publishBody(map[string]any{"shopId": "1"}), "shopId"},
		{"title a number", publishBody(map[string]any{"title": 5}), "title"},
		{"beginTime a number", publishBody(map[string]any{"beginTime": 1735689600}), "beginTime"},
		{"missing shopId", publishBody(map[string]any{"shopId": nil}), "shopId"},
		{"missing title", publishBody(map[string]any{"title": nil}), "title"},
		{"missing payValue", publishBody(map[string]any{"payValue": nil}), "payValue"},
		{"missing actualValue", publishBody(map[string]any{"actualValue": nil}), "actualValue"},
		{"missing type", publishBody(map[string]any{"type": nil}), "type"},
		{"missing stock", publishBody(map[string]any{"stock": nil}), "stock"},
		{"missing beginTime", publishBody(map[string]any{"beginTime": nil}), "beginTime"},
		{"missing endTime", publishBody(map[string]any{"endTime": nil}), "endTime"},
		{"null stock", publishBody(map[string]any{"stock": raw("null")}), "stock"},
		{"empty object", `{}`, "shopId"},
		{"bad beginTime", publishBody(map[string]any{"beginTime": "tomorrow"}), "beginTime"},
		{"bad endTime month", publishBody(map[string]any{"endTime": "2030-13-01T00:00:00"}), "endTime"},
		{"date only", publishBody(map[string]any{"endTime": "2030-01-02"}), "endTime"},
		{"end before begin", publishBody(map[string]any{"endTime": "2030-01-01T09:00:00+08:00"}), "endTime"},
		{"end equals begin", publishBody(map[string]any{"endTime": "2030-01-01T10:00:00+08:00"}), "endTime"},
		{"end in the past", publishBody(map[string]any{"beginTime": "2029-01-01T10:00:00Z", "endTime": "2029-01-01T12:00:00Z"}), "endTime"},
		{"stock 0", publishBody(map[string]any{"stock": 0}), "stock"},
		{"stock negative", publishBody(map[string]any{"stock": -5}), "stock"},
		{"type 2", publishBody(map[string]any{"type": 2}), "type"},
		{"blank title", publishBody(map[string]any{"title": "  "}), "title"},
		{"shopId 0", publishBody(map[string]any{"shopId": 0}), "shopId"},
		{"actualValue 0", publishBody(map[string]any{"actualValue": 0}), "actualValue"},
		{"endTime past year 9999 in UTC", publishBody(map[string]any{"endTime": "9999-12-31T23:59:59-01:00"}), "endTime"},
		{"beginTime before year 1 in UTC", publishBody(map[string]any{"beginTime": "0001-01-01T00:00:00+01:00"}), "beginTime"},
		{"beginTime before 2000", publishBody(map[string]any{"beginTime": "1999-06-01T00:00:00Z"}), "beginTime"},
		{"a time with a space", publishBody(map[string]any{"endTime": "2030-01-01 12:30:00"}), "endTime"},
		{"an unknown field", publishBody(map[string]any{"stok": 5}), "stok"},
		{"payValue above actualValue", publishBody(map[string]any{"payValue": 10001, "actualValue": 10000}), "payValue"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/voucher/seckill", tt.body, e.adminTok)
			assertInvalid(t, r, tt.wantField)
		})
	}
	if n := e.vouchers.Count(); n != 0 {
		t.Errorf("vouchers stored from bad bodies: got %d, want 0", n)
	}
}

func TestPublishSuccess(t *testing.T) {
	tests := []struct {
		name      string
		begin     string
		end       string
		wantBegin time.Time
		wantEnd   time.Time
	}{
		{"RFC 3339", "2030-01-01T10:00:00+08:00", "2030-01-01T12:00:00Z",
			time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC), time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)},
		{"zone-less in the server zone", "2030-01-01T10:00:00", "2030-01-01T12:30:00",
			time.Date(2030, 1, 1, 10, 0, 0, 0, testZone), time.Date(2030, 1, 1, 12, 30, 0, 0, testZone)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(http.MethodPost, "/voucher/seckill", publishBody(map[string]any{"beginTime": tt.begin, "endTime": tt.end, "stock": 3}), "Bearer "+e.adminTok)
			data := assertOK(t, r)
			if got := string(data); got != "101" {
				t.Errorf("data: got %s, want the voucher id as a number, 101", got)
			}
			sv, err := e.vouchers.GetSeckill(context.Background(), 101)
			if err != nil {
				t.Fatalf("stored voucher: %v", err)
			}
			if !sv.BeginTime.Equal(tt.wantBegin) || !sv.EndTime.Equal(tt.wantEnd) {
				t.Errorf("window: got %v..%v, want %v..%v", sv.BeginTime, sv.EndTime, tt.wantBegin, tt.wantEnd)
			}
			if sv.Stock != 3 || sv.InitialStock != 3 {
				t.Errorf("stock: got %d/%d, want 3/3", sv.Stock, sv.InitialStock)
			}
		})
	}
}

func TestListVouchers(t *testing.T) {
	e := newEnv(t)
	for range 2 {
		assertOK(t, e.do(http.MethodPost, "/voucher/seckill", publishBody(nil), e.adminTok))
	}
	r := e.do(http.MethodGet, "/voucher/list/1", "", "")
	data := assertOK(t, r)
	if got := string(r.fields["total"]); got != "2" {
		t.Errorf("total: got %s, want 2", got)
	}
	var list []map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	if len(list) != 2 {
		t.Fatalf("vouchers: got %d, want 2", len(list))
	}
	for _, k := range []string{"id", "shopId", "title", "stock", "initialStock", "beginTime", "endTime", "payValue", "actualValue", "type"} {
		if _, ok := list[0][k]; !ok {
			t.Errorf("voucher field %q missing from %v", k, list[0])
		}
	}
	e.shops.Shops[2] = model.Shop{ID: 2, Name: "empty", TypeID: 1, Address: "b", CreateTime: testNow, UpdateTime: testNow}
	assertError(t, e.do(http.MethodGet, "/voucher/list/999", "", ""), http.StatusNotFound, handler.CodeShopNotFound)
	empty := e.do(http.MethodGet, "/voucher/list/2", "", "")
	if got := string(assertOK(t, empty)); got != "[]" {
		t.Errorf("empty shop data: got %s, want []", got)
	}
	if got := string(empty.fields["total"]); got != "0" {
		t.Errorf("empty shop total: got %s, want 0", got)
	}
}
