package handler_test

// Fuzz tests of every route's parsing over the real handler and services. They
// cover path ids, the phone query, the bodies, the authorization header, any
// method and target. The stores are in memory (fakes_test.go). No input may
// give a 5xx or a panic, and every answer must be a JSON body. Each also
// asserts a property of its route. `make fuzz` runs each for FUZZTIME; `go
// test` runs the seeds only.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seckill/handler"
	"seckill/model"
)

// rawRequest parses "METHOD TARGET HTTP/1.1" with body, as the server would.
// A request line the server itself would refuse skips the input.
func rawRequest(t *testing.T, method, target, body string) *http.Request {
	t.Helper()
	line := method + " " + target + " HTTP/1.1\r\nHost: seckill\r\n\r\n"
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(line)))
	if err != nil {
		t.Skip("the server refuses the request line itself")
	}
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	return req
}

// serveFuzz answers req and fails on a 5xx or a body that is not JSON.
func serveFuzz(t *testing.T, e *env, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %q: got %d %s, want no 5xx", req.Method, req.URL.String(), rec.Code, rec.Body.String())
	}
	// Every answer is a JSON envelope but the Prometheus page and gin's
	// trailing-slash redirects.
	redirect := rec.Code >= 300 && rec.Code < 400
	if req.URL.Path != "/metrics" && !redirect && !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("%s %q: got %d with body %q, want JSON", req.Method, req.URL.String(), rec.Code, rec.Body.String())
	}
	return rec
}

// pathIDRoutes are the routes with an id in the path: method, the path
// before and after the id, and who calls.
var pathIDRoutes = []struct {
	method, before, after string
	admin, anonymous      bool
}{
	{http.MethodPost, "/voucher-order/seckill/", "", false, false},
	{http.MethodGet, "/voucher-order/", "", false, false},
	{http.MethodGet, "/admin/vouchers/", "/audit", true, false},
	{http.MethodGet, "/voucher/list/", "", false, true},
	{http.MethodGet, "/shop/", "", false, true},
}

// FuzzPathID: any id in the path is a 2xx or 4xx, never a 5xx.
// The ids are voucher, order, audit and shop ids.
// An id the route accepts reaches the service as the positive number it spells.
func FuzzPathID(f *testing.F) {
	for r := range pathIDRoutes {
		for _, id := range []string{"1", "abc", "0", "-1", "99999999999999999999", "9223372036854775807",
			"9223372036854775808", "1.5", "1e3", "0x10", "%20", "%2F", "+1", "01", " 1", "1/x", "%00", "１"} {
			f.Add(uint8(r), id)
		}
	}
	e := newEnv(f)
	e.seck.buy = func(_ context.Context, _, voucherID int64) (int64, error) {
		if voucherID <= 0 {
			return 0, fmt.Errorf("voucher id %d reached the service", voucherID)
		}
		return 1, nil
	}
	f.Fuzz(func(t *testing.T, route uint8, id string) {
		rt := pathIDRoutes[int(route)%len(pathIDRoutes)]
		req := rawRequest(t, rt.method, rt.before+id+rt.after, "")
		switch {
		case rt.admin:
			req.Header.Set("authorization", e.adminTok)
		case !rt.anonymous:
			req.Header.Set("authorization", e.userTok)
		}
		rec := serveFuzz(t, e, req)
		// An id that parses as a positive number must not be refused as
		// malformed.
		p := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, rt.before), rt.after)
		if n, err := strconv.ParseInt(p, 10, 64); err == nil && n > 0 && !strings.Contains(p, "/") && rec.Code == http.StatusBadRequest {
			t.Errorf("id %q: got 400 %s, want it accepted", p, rec.Body.String())
		}
	})
}

// FuzzUserCode: any phone in the query is 200 with a code, or 400
// INVALID_ARGUMENT naming the phone. In development an admin's phone gets a
// code like any other. A phone in a form body is never read (400).
func FuzzUserCode(f *testing.F) {
	for _, p := range []string{"13812345678", "19900000009", "19000000001", "", "123", "1381234567x",
		" 13812345678", "13812345678\n", "+8613812345678", "１３８１２３４５６７８", "13812345678&phone=1"} {
		f.Add(p, false)
		f.Add(p, true)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, phone string, form bool) {
		var req *http.Request
		if form {
			req = rawRequest(t, http.MethodPost, "/user/code", "phone="+url.QueryEscape(phone))
			req.Header.Set("content-type", "application/x-www-form-urlencoded")
		} else {
			req = rawRequest(t, http.MethodPost, "/user/code?"+url.Values{"phone": {phone}}.Encode(), "")
		}
		rec := serveFuzz(t, e, req)
		switch rec.Code {
		case http.StatusOK:
			if form {
				t.Errorf("phone %q in a form body: got %s, want 400 (the phone is read from the query only)", phone, rec.Body.String())
			}
			if !regexp.MustCompile(`"data":"\d{6}"`).MatchString(rec.Body.String()) {
				t.Errorf("phone %q: got %s, want a code in development", phone, rec.Body.String())
			}
		case http.StatusBadRequest:
			if !strings.Contains(rec.Body.String(), "phone") {
				t.Errorf("phone %q: got %s, want the message to name the phone", phone, rec.Body.String())
			}
		default:
			t.Errorf("phone %q: got %d, want 200 or 400", phone, rec.Code)
		}
	})
}

// FuzzLogin: any login body is refused with a 4xx or logs an ordinary user
// in; never an admin.
func FuzzLogin(f *testing.F) {
	for _, b := range []string{
		`{"phone":"13812345678","code":"123456"}`, `{"phone":"19900000009","code":"000000"}`,
		`{"phone":13812345678,"code":"123456"}`, `{"phone":"1","code":1}`, `{"phone":"13812345678"}`,
		`{"phone":"13812345678","code":""}`, "", "{", "[]", "null", `"x"`, `{"phone":null}`,
		`{"phone":"13812345678","code":"123456"}{}`, `{"phone":"13812345678","code":"123456"} x`,
		`{"phone":"\u0031\u0033812345678","code":"1"}`, strings.Repeat(`{"a":`, 10000),
		`{"phone":"13812345678","code":"` + strings.Repeat("9", 70<<10) + `"}`,
	} {
		f.Add(b)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := rawRequest(t, http.MethodPost, "/user/login", body)
		req.Header.Set("content-type", "application/json")
		rec := serveFuzz(t, e, req)
		if rec.Code != http.StatusOK {
			return
		}
		var env struct{ Data string }
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("200 body %s: %v", rec.Body.String(), err)
		}
		c, err := e.tokens.Parse(env.Data)
		if err != nil || c.Role != model.RoleUser {
			t.Errorf("login %q: got a token (%v) with role %v, want an ordinary user's", body, err, c)
		}
	})
}

// FuzzPublish: any voucher body is 400 INVALID_ARGUMENT or a voucher the
// database can store.
func FuzzPublish(f *testing.F) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, b := range []string{
		publishBody(nil),
		publishBody(map[string]any{"endTime": "9999-12-31T23:59:59-01:00"}),
		publishBody(map[string]any{"beginTime": "0001-01-01T00:00:00+01:00"}),
		publishBody(map[string]any{"beginTime": "0000-01-01T00:00:00Z"}),
		publishBody(map[string]any{"endTime": "9999-12-31T23:59:59.999999999Z"}),
		publishBody(map[string]any{"endTime": "2030-01-01T12:00:00+23:59"}),
		publishBody(map[string]any{"stock": raw("1e30")}),
		publishBody(map[string]any{"stock": raw("-0")}),
		publishBody(map[string]any{"shopId": raw("9223372036854775808")}),
		publishBody(map[string]any{"payValue": raw("-9223372036854775808")}),
		publishBody(map[string]any{"title": strings.Repeat("é", 200)}),
		publishBody(map[string]any{"title": "\x00"}),
		publishBody(map[string]any{"beginTime": nil}),
		"", "{", "[]", "null", `{"shopId":1,`, publishBody(nil) + publishBody(nil),
	} {
		f.Add(b)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := rawRequest(t, http.MethodPost, "/voucher/seckill", body)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", e.adminTok)
		checkPublished(t, e, serveFuzz(t, e, req))
	})
}

// FuzzPublishTimes: any beginTime and endTime strings in an otherwise valid
// voucher are 400 INVALID_ARGUMENT naming one of them, or a window the
// database can store.
func FuzzPublishTimes(f *testing.F) {
	for _, p := range [][2]string{
		{"2030-01-01T10:00:00+08:00", "2030-01-01T12:00:00+08:00"},
		{"2030-01-01T10:00:00+08:00", "9999-12-31T23:59:59-01:00"},
		{"0001-01-01T00:00:00+01:00", "2030-01-01T12:00:00Z"},
		{"2030-01-01T10:00:00", "2030-01-01 12:30:00"},
		{"1999-12-31T23:59:59Z", "2030-01-01T12:00:00Z"},
		{"2030-01-01T10:00:00Z", "9999-12-31T23:00:00-23:59"},
		{"2030-01-01T10:00:00Z", "9999-12-31T23:59:59"},
		{"2030-02-30T10:00:00Z", "2030-13-01T00:00:00Z"},
		{"2030-01-01T10:00:00.123456789Z", "2030-01-01T10:00:00.123456790Z"},
		{"", ""},
		{"tomorrow", "2030-01-02"},
	} {
		f.Add(p[0], p[1])
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, begin, end string) {
		body := publishBody(map[string]any{"beginTime": begin, "endTime": end})
		req := rawRequest(t, http.MethodPost, "/voucher/seckill", body)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", e.adminTok)
		rec := checkPublished(t, e, serveFuzz(t, e, req))
		if rec.Code == http.StatusBadRequest && !strings.Contains(rec.Body.String(), "Time") {
			t.Errorf("times %q, %q: got %s, want the message to name beginTime or endTime", begin, end, rec.Body.String())
		}
	})
}

// checkPublished: a publish answer is 200 or 400 INVALID_ARGUMENT. A published
// voucher's window is storable by MySQL: years 1000 to 9999, in UTC and the
// local zone.
func checkPublished(t *testing.T, e *env, rec *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	switch rec.Code {
	case http.StatusOK:
		var env struct{ Data int64 }
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("200 body %s: %v", rec.Body.String(), err)
		}
		sv, err := e.vouchers.GetSeckill(t.Context(), env.Data)
		if err != nil {
			t.Fatalf("published voucher %d: %v", env.Data, err)
		}
		for _, tm := range []time.Time{sv.BeginTime, sv.EndTime} {
			for _, y := range []int{tm.UTC().Year(), tm.Local().Year()} {
				if y < 1000 || y > 9999 {
					t.Errorf("published a voucher with time %v (year %d): MySQL cannot store it", tm, y)
				}
			}
		}
		if !sv.EndTime.After(sv.BeginTime) || sv.Stock < 1 {
			t.Errorf("published an invalid voucher %+v", sv)
		}
	case http.StatusBadRequest:
		if !strings.Contains(rec.Body.String(), handler.CodeInvalidArgument) {
			t.Errorf("400 body %s, want INVALID_ARGUMENT", rec.Body.String())
		}
	default:
		t.Errorf("got %d %s, want 200 or 400", rec.Code, rec.Body.String())
	}
	return rec
}

// FuzzAuthorization: any authorization header is 401 or the caller of a
// valid token, on a user route and an admin route.
func FuzzAuthorization(f *testing.F) {
	e := newEnv(f)
	future := time.Now().Add(time.Hour)
	for _, h := range []string{
		"", "Bearer ", "Bearer", "bearer " + e.userTok, "  Bearer   " + e.adminTok + "  ", e.userTok,
		"not-a-token", "a.b.c", "Basic dXNlcjpwYXNz", e.userTok[:len(e.userTok)-3], e.userTok + "x",
		strings.Replace(e.userTok, ".", "..", 1), "Bearer Bearer " + e.userTok,
		signed(f, jwt.SigningMethodHS512, []byte(testSecret), claimsFor(7, model.RoleUser, future)),
		signed(f, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claimsFor(7, model.RoleAdmin, future)),
		signed(f, jwt.SigningMethodHS256, []byte(testSecret), claimsFor(7, model.RoleUser, time.Now().Add(-time.Minute))),
		signed(f, jwt.SigningMethodHS256, []byte(testSecret), claimsFor(0, model.RoleAdmin, future)),
		signed(f, jwt.SigningMethodHS256, []byte(testSecret), claimsFor(-1, model.RoleAdmin, future)),
		signed(f, jwt.SigningMethodHS256, []byte("another-secret"), claimsFor(9, model.RoleAdmin, future)),
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if strings.ContainsAny(header, "\r\n\x00") {
			t.Skip("not a header value the server accepts")
		}
		for _, target := range []string{"/user/me", "/admin/vouchers/1/audit"} {
			req := rawRequest(t, http.MethodGet, target, "")
			req.Header.Set("authorization", header)
			rec := serveFuzz(t, e, req)
			switch rec.Code {
			case http.StatusOK, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			default:
				t.Errorf("%s with %q: got %d, want 200, 401, 403 or 404", target, header, rec.Code)
			}
		}
	})
}

// FuzzAnyRequest: any method, target and body on the whole router (in
// production: no pprof) is a 2xx or 4xx JSON answer.
func FuzzAnyRequest(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/healthz", ""}, {"FOO123", "/user/me", ""}, {"POST", "/x/y/z", "{}"},
		{"GET", "/voucher/list/1?x=%zz", ""}, {"POST", "/user/code?phone=%", ""},
		{"OPTIONS", "*", ""}, {"GET", "//voucher//list//1", ""}, {"DELETE", "/voucher/seckill", ""},
		{"GET", "/debug/pprof/profile", ""}, {"GET", "/debug/noop", ""}, {"POST", "/voucher-order/seckill/", ""},
		{"GET", "/voucher-order/seckill/1", ""}, {"GET", "http://example.com/healthz", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	e := newEnv(f, production)
	f.Fuzz(func(t *testing.T, method, target, body string) {
		req := rawRequest(t, method, target, body)
		req.Header.Set("authorization", e.adminTok)
		req.Header.Set("content-type", "application/json")
		serveFuzz(t, e, req)
	})
}
