package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"seckill/handler"
)

// TestAccessLog: one JSON info line per request with its route, status and
// code. The phone is masked and the token never written. Beyond the per-second
// cap, lines are dropped and the next line counts them.
func TestAccessLog(t *testing.T) {
	e := newEnv(t, func(d *handler.Deps) { d.AccessLog = 3 })
	e.do(http.MethodPost, "/user/code?phone=13812345678", "", "")
	e.do(http.MethodGet, "/user/me", "", e.userTok)
	e.do(http.MethodPost, "/voucher/seckill", `{"stok":1}`, e.adminTok)
	for range 20 {
		e.do(http.MethodGet, "/healthz", "", "")
	}
	logged := e.log.String()
	if strings.Contains(logged, "13812345678") || strings.Contains(logged, e.userTok) || strings.Contains(logged, e.adminTok) {
		t.Fatalf("the access log holds a phone or a token:\n%s", logged)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logged), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) < 3 || len(lines) > 3+20 {
		t.Fatalf("request lines: got %d, want between 3 and 23", len(lines))
	}
	first := lines[0]
	if first["level"] != "INFO" || first["route"] != "/user/code" || first["query"] != "phone=138****5678" {
		t.Errorf("first line: got %v, want INFO /user/code with the phone masked", first)
	}
	if lines[2]["code"] != "INVALID_ARGUMENT" || lines[2]["status"] != float64(400) {
		t.Errorf("third line: got %v, want status 400 code INVALID_ARGUMENT", lines[2])
	}
	// 23 requests at 3 a second: unless the test spanned many seconds,
	// some were dropped, and a later line says so.
	if len(lines) < 23 {
		found := false
		for _, l := range lines[3:] {
			if _, ok := l["dropped_before"]; ok {
				found = true
			}
		}
		if !found && len(lines) > 3 {
			t.Errorf("lines after a drop: none counts the dropped lines")
		}
	}
}
