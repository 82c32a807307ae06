package security

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/app"
	"seckill/auth"
	"seckill/config"
	"seckill/e2e/apptest"
)

// TestRealBackendsRefuseWithoutSecret: on the real MariaDB and Redis with
// no SECKILL_ENV, the process is in production. Without SECKILL_JWT_SECRET
// it stops at start with one line naming the variable. It never serves with
// the public development secret.
func TestRealBackendsRefuseWithoutSecret(t *testing.T) {
	vars := apptest.RealEnv(t, nil)
	for _, cmd := range []string{"migrate", "tokens"} {
		args := []string{cmd}
		if cmd == "tokens" {
			args = append(args, "--count", "1", "--admin")
		}
		err := app.Run(context.Background(), args, apptest.EnvOf(vars), io.Discard, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_JWT_SECRET:") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s on real backends without SECKILL_ENV and secret: got %v, want one line naming SECKILL_JWT_SECRET", cmd, err)
		}
	}
}

// TestProductionByDefaultOnRealBackends: with a secret and no SECKILL_ENV,
// the real backends mean production. There is no login code in the
// response, no pprof and no /debug/noop. The public development secret is
// refused. An admin is answered like any phone: a code stored, none
// returned. `seckill tokens --admin` makes that admin, phone 19000000001.
// It cannot log in through the code flow, not even with that code.
func TestProductionByDefaultOnRealBackends(t *testing.T) {
	const secret = "security-test-secret-0123456789abcdef"
	vars := apptest.RealEnv(t, apptest.NewReceiver(t).Env())
	vars["SECKILL_JWT_SECRET"] = secret
	maps.Copy(vars, apptest.ProductionPay(t))
	cfg, err := config.Load(apptest.EnvOf(vars))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.Env != config.EnvProduction {
		t.Fatalf("Env: got %q, want production on real backends", cfg.Env)
	}
	var out bytes.Buffer
	if err := app.Run(context.Background(), []string{"tokens", "--count", "1", "--admin"}, apptest.EnvOf(vars), &out, io.Discard); err != nil {
		t.Fatalf("tokens --admin: %v", err)
	}
	adminLine := strings.TrimSpace(out.String())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	h := a.Handler()

	// The admin token of the offline command works.
	_, adminTok, _ := strings.Cut(adminLine, ",")
	if r := apptest.Call(t, h, http.MethodGet, "/user/me", adminTok, nil); r.Status != http.StatusOK {
		t.Errorf("admin token from seckill tokens --admin: got %d %s, want 200", r.Status, r.Body.Code)
	}

	// An ordinary phone: a code is stored, none is returned.
	phone := fmt.Sprintf("13%09d", time.Now().UnixNano()%1_000_000_000)
	if r := apptest.Call(t, h, http.MethodPost, "/user/code?phone="+phone, "", nil); r.Status != http.StatusOK || len(r.Body.Data) != 0 {
		t.Errorf("/user/code in production: got %d data %s, want 200 and no data", r.Status, r.Body.Data)
	}
	rdb := apptest.Redis(t, vars["SECKILL_REDIS_ADDR"])
	if n, err := rdb.Exists(context.Background(), "login:code:"+phone).Result(); err != nil || n != 1 {
		t.Errorf("code of an ordinary phone: got %d keys (%v), want it stored", n, err)
	}

	// The admin's phone: a code stored like any phone's, none returned.
	// Login refused like a wrong code, with that code too.
	const adminPhone = "19000000001"
	forgetCodeLimits(t, rdb, adminPhone)
	if r := apptest.Call(t, h, http.MethodPost, "/user/code?phone="+adminPhone, "", nil); r.Status != http.StatusOK || len(r.Body.Data) != 0 {
		t.Errorf("/user/code of the admin phone: got %d data %s, want 200 and no data (like any phone)", r.Status, r.Body.Data)
	}
	stored := storedCode(t, rdb, adminPhone)
	if stored == "" {
		t.Errorf("code of the admin phone: none stored, want one like any phone's")
	}
	for _, code := range []string{"123456", stored} {
		r := apptest.Call(t, h, http.MethodPost, "/user/login", "", map[string]string{"phone": adminPhone, "code": code})
		if r.Status != http.StatusBadRequest || r.Body.Code != "INVALID_ARGUMENT" || r.Body.ErrorMsg != "invalid code: wrong or expired" {
			t.Errorf("login of the admin phone with %q: got %d %s %q, want 400 INVALID_ARGUMENT (wrong code)", code, r.Status, r.Body.Code, r.Body.ErrorMsg)
		}
	}

	// Development-only routes are absent and the public secret is refused.
	devTok, err := auth.NewTokens(config.DevJWTSecret, time.Hour).Issue(1, "admin")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/noop", "/debug/pprof/", "/debug/pprof/heap"} {
		if r := apptest.Call(t, h, http.MethodGet, path, adminTok, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s in production: got %d, want 404", path, r.Status)
		}
	}
	if r := apptest.Call(t, h, http.MethodGet, "/user/me", devTok, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("token signed with the public development secret: got %d, want 401", r.Status)
	}
}

// TestDevelopmentOnRealBackendsWhenAsked: SECKILL_ENV=development on the
// real backends still gives the development behaviour. The tests and load
// tests rely on it. It never gives an admin through the code flow. An
// admin's phone gets a code like any, with the same answer and a code
// stored. That code does not log in.
func TestDevelopmentOnRealBackendsWhenAsked(t *testing.T) {
	a := apptest.Start(t, nil) // SECKILL_ENV=development
	h := a.Handler()
	r := apptest.Call(t, h, http.MethodPost, "/user/code?phone="+randomPhone(), "", nil)
	if r.Status != http.StatusOK || len(r.Body.Data) == 0 {
		t.Errorf("/user/code in development: got %d data %s, want the code", r.Status, r.Body.Data)
	}
	tok, _ := apptest.DevTokens().Issue(1, "user")
	if r := apptest.Call(t, h, http.MethodGet, "/debug/noop", tok, nil); r.Status != http.StatusOK {
		t.Errorf("/debug/noop in development: got %d, want 200", r.Status)
	}
	var out bytes.Buffer
	vars := apptest.RealEnv(t, map[string]string{"SECKILL_ENV": "development"})
	if err := app.Run(context.Background(), []string{"tokens", "--count", "1", "--admin"}, apptest.EnvOf(vars), &out, io.Discard); err != nil {
		t.Fatalf("tokens --admin: %v", err)
	}
	const adminPhone = "19000000001"
	rdb := apptest.SharedRedis(t)
	forgetCodeLimits(t, rdb, adminPhone)
	r = apptest.Call(t, h, http.MethodPost, "/user/code?phone="+adminPhone, "", nil)
	var code string
	if r.Status != http.StatusOK || json.Unmarshal(r.Body.Data, &code) != nil || len(code) != 6 {
		t.Fatalf("/user/code of the admin phone in development: got %d data %s, want 200 and a code like any phone's", r.Status, r.Body.Data)
	}
	if stored := storedCode(t, rdb, adminPhone); stored != code {
		t.Errorf("code of the admin phone in Redis: got %q, want %q", stored, code)
	}
	r = apptest.Call(t, h, http.MethodPost, "/user/login", "", map[string]string{"phone": adminPhone, "code": code})
	if r.Status != http.StatusBadRequest || r.Body.ErrorMsg != "invalid code: wrong or expired" {
		t.Errorf("login of the admin phone with its code: got %d %s %q, want 400 like a wrong code", r.Status, r.Body.Code, r.Body.ErrorMsg)
	}
}
