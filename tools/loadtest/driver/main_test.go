package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeShop is an in-memory seckill API: one voucher, a conditional stock, one
// order per user. oversell makes it answer the audit as if it had oversold.
type fakeShop struct {
	mu       sync.Mutex
	stock    int
	initial  int
	orders   map[string]int64 // user token -> order id
	nextID   int64
	oversell bool
	requests int
}

func (f *fakeShop) handler() http.Handler {
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, status int, body any) {
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(status)
		if err := json.NewEncoder(w).Encode(body); err != nil {
			panic(err)
		}
	}
	refuse := func(w http.ResponseWriter, status int, code string) {
		write(w, status, map[string]any{"success": false, "code": code, "errorMsg": code})
	}
	// asAdmin refuses a request without the admin's token (403).
	asAdmin := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("authorization") != "admin-token" {
				refuse(w, http.StatusForbidden, "FORBIDDEN")
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("POST /shop", asAdmin(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name string `json:"name"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" {
			refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT")
			return
		}
		write(w, http.StatusOK, map[string]any{"success": true, "data": 3})
	}))
	mux.HandleFunc("POST /voucher/seckill", asAdmin(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ShopID    int64  `json:"shopId"`
			Stock     int    `json:"stock"`
			BeginTime string `json:"beginTime"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Stock < 1 || body.ShopID != 3 {
			refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT")
			return
		}
		if _, err := time.Parse(time.RFC3339, body.BeginTime); err != nil {
			refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT")
			return
		}
		f.mu.Lock()
		f.stock, f.initial = body.Stock, body.Stock
		f.mu.Unlock()
		write(w, http.StatusOK, map[string]any{"success": true, "data": 7})
	}))
	mux.HandleFunc("POST /voucher-order/seckill/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "7" {
			refuse(w, http.StatusNotFound, "VOUCHER_NOT_FOUND")
			return
		}
		tok := r.Header.Get("authorization")
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests++
		switch {
		case f.orders[tok] != 0:
			refuse(w, http.StatusConflict, "DUPLICATE_ORDER")
		case f.stock == 0:
			refuse(w, http.StatusConflict, "SOLD_OUT")
		default:
			f.stock--
			f.nextID++
			f.orders[tok] = 1000 + f.nextID
			write(w, http.StatusOK, map[string]any{"success": true, "data": strconv.FormatInt(f.orders[tok], 10)})
		}
	})
	mux.HandleFunc("GET /admin/vouchers/{id}/audit", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		orders := len(f.orders)
		write(w, http.StatusOK, map[string]any{"success": true, "data": map[string]any{
			"voucherId": 7, "initialStock": f.initial, "stock": f.stock, "orders": orders,
			"distinctUsers": orders, "duplicateRejections": 0, "oversold": f.oversell, "consistent": !f.oversell,
		}})
	})
	return mux
}

func writeTokens(t *testing.T, dir string, n int) (users, admin string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,token-%d\n", i, i)
	}
	users = filepath.Join(dir, "tokens.csv")
	admin = filepath.Join(dir, "admin.csv")
	if err := os.WriteFile(users, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(admin, []byte("99,admin-token\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return users, admin
}

func readSummary(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("summary line %q is not KEY=VALUE", line)
		}
		m[k] = v
	}
	return m
}

func TestRunCountsOutcomesAndWritesFiles(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		extra    []string
		requests int
	}{
		{"burst over two instances", "burst", []string{"-spacing", "1ms"}, 20 * 3},
		{"random", "random", []string{"-iterations", "45"}, 45},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shop := &fakeShop{orders: map[string]int64{}}
			a := httptest.NewServer(shop.handler())
			defer a.Close()
			b := httptest.NewServer(shop.handler())
			defer b.Close()
			dir := t.TempDir()
			users, admin := writeTokens(t, dir, 20)
			args := append([]string{
				"-base-urls", a.URL + "," + b.URL + "/", "-tokens", users, "-admin-tokens", admin,
				"-stock", "10", "-dups", "3", "-vus", "4", "-scenario", tt.scenario,
				"-summary-file", filepath.Join(dir, "summary.env"),
				"-orders-file", filepath.Join(dir, "orders"),
				"-voucher-file", filepath.Join(dir, "voucher"),
			}, tt.extra...)
			if err := run(context.Background(), args, io.Discard); err != nil {
				t.Fatalf("run: %v", err)
			}
			s := readSummary(t, filepath.Join(dir, "summary.env"))
			if got, want := s["purchases"], strconv.Itoa(tt.requests); got != want {
				t.Errorf("purchases = %s, want %s", got, want)
			}
			if shop.requests != tt.requests {
				t.Errorf("server saw %d purchases, want %d", shop.requests, tt.requests)
			}
			ok, _ := strconv.Atoi(s["code_OK"])
			sold, _ := strconv.Atoi(s["code_SOLD_OUT"])
			dup, _ := strconv.Atoi(s["code_DUPLICATE_ORDER"])
			if ok+sold+dup != tt.requests || s["code_OTHER"] != "0" || s["code_TRANSPORT"] != "0" {
				t.Errorf("codes OK %d + SOLD_OUT %d + DUPLICATE_ORDER %d (OTHER %s, TRANSPORT %s), want %d in all",
					ok, sold, dup, s["code_OTHER"], s["code_TRANSPORT"], tt.requests)
			}
			if ok != len(shop.orders) {
				t.Errorf("code_OK = %d, server holds %d orders", ok, len(shop.orders))
			}
			if s["driver_violations"] != "0" {
				t.Errorf("driver_violations = %s, want 0", s["driver_violations"])
			}
			raw, err := os.ReadFile(filepath.Join(dir, "orders"))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Fields(string(raw))
			var want []string
			for _, id := range shop.orders {
				want = append(want, strconv.FormatInt(id, 10))
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("orders file %v, want the server's %v", got, want)
			}
			if v, err := os.ReadFile(filepath.Join(dir, "voucher")); err != nil || strings.TrimSpace(string(v)) != "7" {
				t.Errorf("voucher file %q (%v), want 7", v, err)
			}
		})
	}
}

func TestRunBurstSpreadsDuplicatesOverInstances(t *testing.T) {
	shop := &fakeShop{orders: map[string]int64{}}
	var mu sync.Mutex
	hits := map[string]int{}
	count := func(name string) http.Handler {
		h := shop.handler()
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/voucher-order/") {
				mu.Lock()
				hits[name]++
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	}
	a := httptest.NewServer(count("a"))
	defer a.Close()
	b := httptest.NewServer(count("b"))
	defer b.Close()
	dir := t.TempDir()
	users, admin := writeTokens(t, dir, 5)
	args := []string{"-base-urls", a.URL + "," + b.URL, "-tokens", users, "-admin-tokens", admin,
		"-stock", "100", "-dups", "4", "-vus", "2"}
	if err := run(context.Background(), args, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	if hits["a"] != 10 || hits["b"] != 10 {
		t.Errorf("instance a got %d purchases and b %d, want 10 each", hits["a"], hits["b"])
	}
	if len(shop.orders) != 5 {
		t.Errorf("server holds %d orders, want one per user (5)", len(shop.orders))
	}
}

func TestRunReportsAuditViolations(t *testing.T) {
	shop := &fakeShop{orders: map[string]int64{}, oversell: true}
	srv := httptest.NewServer(shop.handler())
	defer srv.Close()
	dir := t.TempDir()
	users, admin := writeTokens(t, dir, 3)
	err := run(context.Background(), []string{"-base-urls", srv.URL, "-tokens", users, "-admin-tokens", admin,
		"-summary-file", filepath.Join(dir, "summary.env")}, io.Discard)
	var v violationsError
	if !errors.As(err, &v) || len(v) != 2 {
		t.Fatalf("run = %v, want the oversold and consistent violations", err)
	}
	if got := readSummary(t, filepath.Join(dir, "summary.env"))["driver_violations"]; got != "2" {
		t.Errorf("driver_violations = %s, want 2", got)
	}
}

func TestAuditViolations(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	tests := []struct {
		name string
		a    audit
		want []string
	}{
		{"sound", audit{InitialStock: 5, Stock: 2, Orders: 3, DistinctUsers: 3, Consistent: true}, nil},
		{"oversold", audit{InitialStock: 5, Stock: 0, Orders: 6, DistinctUsers: 6, Oversold: true}, []string{"1:", "2:", "oversold", "consistent"}},
		{"two orders one user", audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 1, Consistent: true}, []string{"3:"}},
		{"async drift", audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 2, Consistent: true, RedisStock: i(2), Pending: i(0)}, []string{"5:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.a.violations()
			if len(got) != len(tt.want) {
				t.Fatalf("violations = %q, want %d starting %q", got, len(tt.want), tt.want)
			}
			for k := range got {
				if !strings.HasPrefix(got[k], tt.want[k]) {
					t.Errorf("violation %d = %q, want prefix %q", k, got[k], tt.want[k])
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {95, 95 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}}
	for _, tt := range tests {
		if got := percentile(d, tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

func TestReadTokensRejectsMalformedLines(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, wantErr string
	}{
		{"no comma", "1,a\nbroken\n", ":2: not userId,token"},
		{"empty", "\n\n", "holds no user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readTokens(p)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("readTokens = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseConfigRejectsBadScenario(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown scenario", []string{"-admin-tokens", "a", "-scenario", "storm"}},
		{"no admin and no voucher", []string{}},
		{"zero dups", []string{"-admin-tokens", "a", "-dups", "0"}},
		{"no urls", []string{"-admin-tokens", "a", "-base-urls", " , "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseConfig(tt.args, io.Discard); err == nil {
				t.Errorf("parseConfig(%q) = nil error, want one", tt.args)
			}
		})
	}
}
