package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/handler"
	"seckill/model"
	"seckill/service/catalog/catalogtest"
)

// catalogtest.Shops is a ShopStore over a map; shop 1 exists from the start (the
// publish tests name it).
func newMemShops() *catalogtest.Shops {
	s := catalogtest.NewShops(1)
	s.Shops[1] = model.Shop{ID: 1, Name: "seed", TypeID: 1, Address: "a", CreateTime: testNow, UpdateTime: testNow}
	return s
}

// shopBody returns a valid shop body with edits applied: a nil value
// deletes the field, a json.RawMessage is written as is.
func shopBody(edits map[string]any) string {
	body := map[string]any{
		"name": "103茶餐厅", "typeId": 1, "images": "/imgs/shop/1.jpg,/imgs/shop/2.jpg", "area": "大关",
		"address": "金华路锦昌文华苑29号", "x": 120.149192, "y": 30.316078, "avgPrice": 80,
		"sold": 4215, "comments": 3035, "score": 37, "openHours": "10:00-22:00",
	}
	return withEdits(body, edits)
}

func TestShopCreateGetUpdate(t *testing.T) {
	e := newEnv(t)
	var id int64
	if err := json.Unmarshal(assertOK(t, e.do(http.MethodPost, "/shop", shopBody(nil), e.adminTok)), &id); err != nil || id <= 1 {
		t.Fatalf("POST /shop: data is not a new id: %v", err)
	}

	// GET is public and answers in the course's field names, images as the
	// stored comma-separated string.
	r := e.do(http.MethodGet, fmt.Sprintf("/shop/%d", id), "", "")
	var got map[string]any
	if err := json.Unmarshal(assertOK(t, r), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": float64(id), "name": "103茶餐厅", "typeId": float64(1), "images": "/imgs/shop/1.jpg,/imgs/shop/2.jpg",
		"area": "大关", "address": "金华路锦昌文华苑29号", "x": 120.149192, "y": 30.316078, "avgPrice": float64(80),
		"sold": float64(4215), "comments": float64(3035), "score": float64(37), "openHours": "10:00-22:00",
		"createTime": testNow.Format(time.RFC3339), "updateTime": testNow.Format(time.RFC3339),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields: got %d (%v), want %d", len(got), got, len(want))
	}

	// PUT sets the fields present and keeps the others.
	assertOK(t, e.do(http.MethodPut, "/shop", fmt.Sprintf(`{"id":%d,"score":45,"openHours":"09:00-21:00","createTime":"ignored"}`, id), e.adminTok))
	s, _ := e.shops.GetShop(context.Background(), id)
	if s.Score != 45 || s.OpenHours != "09:00-21:00" || s.Name != "103茶餐厅" {
		t.Errorf("after PUT: got %+v, want score 45, new hours, name kept", s)
	}

	assertError(t, e.do(http.MethodGet, "/shop/999", "", ""), http.StatusNotFound, handler.CodeShopNotFound)
	assertError(t, e.do(http.MethodPut, "/shop", `{"id":999,"score":10}`, e.adminTok), http.StatusNotFound, handler.CodeShopNotFound)
	assertError(t, e.do(http.MethodGet, "/shop/abc", "", ""), http.StatusBadRequest, handler.CodeInvalidArgument)
}

func TestShopAdminOnly(t *testing.T) {
	e := newEnv(t)
	for _, m := range []string{http.MethodPost, http.MethodPut} {
		assertError(t, e.do(m, "/shop", shopBody(map[string]any{"id": 1}), ""), http.StatusUnauthorized, handler.CodeUnauthorized)
		assertError(t, e.do(m, "/shop", shopBody(map[string]any{"id": 1}), e.userTok), http.StatusForbidden, handler.CodeForbidden)
	}
	if n := e.shops.Count(); n != 1 {
		t.Errorf("shops: got %d, want the seeded one only", n)
	}
}

func TestShopBadBody(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name, method, body, wantField string
	}{
		{"empty body", http.MethodPost, "", "body"},
		{"malformed", http.MethodPost, `{"name":`, "body"},
		{"array", http.MethodPost, `[]`, "body"},
		{"id on create", http.MethodPost, shopBody(map[string]any{"id": 5}), "id"},
		{"missing name", http.MethodPost, shopBody(map[string]any{"name": nil}), "name"},
		{"null name", http.MethodPost, shopBody(map[string]any{"name": raw("null")}), "name"},
		{"missing typeId", http.MethodPost, shopBody(map[string]any{"typeId": nil}), "typeId"},
		{"missing address", http.MethodPost, shopBody(map[string]any{"address": nil}), "address"},
		{"missing x", http.MethodPost, shopBody(map[string]any{"x": nil}), "x"},
		{"missing y", http.MethodPost, shopBody(map[string]any{"y": nil}), "y"},
		{"name a number", http.MethodPost, shopBody(map[string]any{"name": 5}), "name"},
		{"typeId a string", http.MethodPost, shopBody(map[string]any{"typeId": "1"}), "typeId"},
		{"typeId overflowing", http.MethodPost, shopBody(map[string]any{"typeId": raw("9223372036854775808")}), "typeId"},
		{"sold a fraction", http.MethodPost, shopBody(map[string]any{"sold": 1.5}), "sold"},
		{"sold overflowing", http.MethodPost, shopBody(map[string]any{"sold": raw("1e30")}), "sold"},
		{"x huge", http.MethodPost, shopBody(map[string]any{"x": raw("1e308")}), "x"},
		{"x overflowing float", http.MethodPost, shopBody(map[string]any{"x": raw("1e999")}), "x"},
		{"images an array", http.MethodPost, shopBody(map[string]any{"images": []string{"/a.jpg"}}), "images"},
		{"images with an empty path", http.MethodPost, shopBody(map[string]any{"images": "/a.jpg,"}), "images"},
		{"name too long", http.MethodPost, shopBody(map[string]any{"name": strings.Repeat("店", 129)}), "name"},
		{"score 51", http.MethodPost, shopBody(map[string]any{"score": 51}), "score"},
		{"too large", http.MethodPost, shopBody(map[string]any{"area": strings.Repeat("x", 70<<10)}), "body"},
		{"update without id", http.MethodPut, `{"score":10}`, "id"},
		{"update id 0", http.MethodPut, `{"id":0,"score":10}`, "id"},
		{"update nothing", http.MethodPut, `{"id":1}`, "body"},
		{"update blank name", http.MethodPut, `{"id":1,"name":" "}`, "name"},
		{"update bad y", http.MethodPut, `{"id":1,"y":91}`, "y"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, "/shop", tt.body, e.adminTok)
			assertInvalid(t, r, tt.wantField)
		})
	}
	if n := e.shops.Count(); n != 1 {
		t.Errorf("shops after bad bodies: got %d, want the seeded one only", n)
	}
	if s, _ := e.shops.GetShop(context.Background(), 1); s.Name != "seed" || !s.UpdateTime.Equal(testNow) {
		t.Errorf("seeded shop changed by refused updates: %+v", s)
	}
}

func TestPublishUnknownShop(t *testing.T) {
	e := newEnv(t)
	r := e.do(http.MethodPost, "/voucher/seckill", publishBody(map[string]any{"shopId": 42}), e.adminTok)
	assertInvalid(t, r, "shopId")
	if n := e.vouchers.Count(); n != 0 {
		t.Errorf("vouchers: got %d, want none for an unknown shop", n)
	}
	assertOK(t, e.do(http.MethodPost, "/voucher/seckill", publishBody(nil), e.adminTok))
}

// FuzzShop: any body of POST /shop and PUT /shop is 200 or 400, never a 5xx. An
// unknown id is 404. A shop created is read back as sent.
func FuzzShop(f *testing.F) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, b := range []string{
		shopBody(nil), shopBody(map[string]any{"id": 1}), shopBody(map[string]any{"x": raw("1e999")}),
		shopBody(map[string]any{"name": "\x00"}), shopBody(map[string]any{"name": strings.Repeat("é", 128)}),
		shopBody(map[string]any{"images": ",,,"}), shopBody(map[string]any{"sold": raw("-0")}),
		`{"id":1,"score":50}`, `{"id":1}`, `{"id":-1,"name":"x"}`, "", "{", "null", "[]",
	} {
		f.Add(true, b)
		f.Add(false, b)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, create bool, body string) {
		method := http.MethodPut
		if create {
			method = http.MethodPost
		}
		req := rawRequest(t, method, "/shop", body)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", e.adminTok)
		rec := serveFuzz(t, e, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest:
		case http.StatusNotFound:
			if create {
				t.Fatalf("POST /shop: got 404 %s", rec.Body.String())
			}
		default:
			t.Fatalf("%s /shop %q: got %d %s, want 200, 400 or 404", method, body, rec.Code, rec.Body.String())
		}
		if !create || rec.Code != http.StatusOK {
			return
		}
		var env struct{ Data int64 }
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Data <= 0 {
			t.Fatalf("POST /shop: got %s, want a new id", rec.Body.String())
		}
		get := serveFuzz(t, e, rawRequest(t, http.MethodGet, fmt.Sprintf("/shop/%d", env.Data), ""))
		if get.Code != http.StatusOK {
			t.Fatalf("GET the created shop: got %d %s", get.Code, get.Body.String())
		}
	})
}
