package security

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/repository/sqlstore"
)

// Token revocation (docs/operations.md, "Revoking tokens"): admin routes
// read the admin's role and revocation from the database on each request.
// The other routes read a copy reloaded every revocationReload.

// freshUser creates a user of role with a random phone in db and returns
// its id and a development token.
func freshUser(t *testing.T, db *sqlstore.DB, role string) (int64, string) {
	t.Helper()
	u := &model.User{Phone: fmt.Sprintf("18%09d", rand.IntN(1_000_000_000)), Role: role}
	if err := sqlstore.NewUsers(db).Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if u.Role != role {
		t.Fatalf("phone %s taken by a %s", u.Phone, u.Role)
	}
	tok, err := apptest.DevTokens().Issue(u.ID, role)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID, tok
}

// createShopAs is POST /shop (an admin route) with token.
func createShopAs(t *testing.T, h http.Handler, token string) apptest.Result {
	t.Helper()
	return apptest.Call(t, h, http.MethodPost, "/shop", token, map[string]any{
		"name": "revocation test shop", "typeId": 1, "address": "test street 1", "x": 120.15, "y": 30.28,
	})
}

// eventually polls the request until it answers want, failing after a
// deadline well past revocationReload.
func eventually(t *testing.T, what string, want int, req func() apptest.Result) {
	t.Helper()
	deadline := time.Now().Add(5*app.RevocationReload + 5*time.Second)
	for {
		r := req()
		if r.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %d %s after %s, want %d", what, r.Status, r.Body.Code, 5*app.RevocationReload+5*time.Second, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNextSecond sleeps until the next whole second. A token issued then
// has an iat at or after the not_before of any earlier revocation.
func waitNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
}

// TestDemotedAdminRefusedAtOnce: an admin demoted in tb_user loses the
// admin routes on its next request (403), while its token still
// authenticates the other routes.
func TestDemotedAdminRefusedAtOnce(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	id, tok := freshUser(t, a.DB(), model.RoleAdmin)
	if r := createShopAs(t, a.Handler(), tok); r.Status != http.StatusOK {
		t.Fatalf("admin before demotion: got %d %s, want 200", r.Status, r.Body.Code)
	}
	if err := a.DB().Gorm.Exec("UPDATE tb_user SET role = 'user' WHERE id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	if r := createShopAs(t, a.Handler(), tok); r.Status != http.StatusForbidden || r.Body.Code != "FORBIDDEN" {
		t.Errorf("demoted admin on POST /shop: got %d %s, want 403 FORBIDDEN", r.Status, r.Body.Code)
	}
	if r := apptest.Call(t, a.Handler(), http.MethodGet, "/user/me", tok, nil); r.Status != http.StatusOK {
		t.Errorf("demoted admin on /user/me: got %d %s, want 200", r.Status, r.Body.Code)
	}
	// A token of a user the database does not know is no admin either.
	ghost, err := apptest.DevTokens().Issue(1<<50+rand.Int64N(1<<40), model.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if r := createShopAs(t, a.Handler(), ghost); r.Status != http.StatusUnauthorized {
		t.Errorf("admin token of no user: got %d %s, want 401", r.Status, r.Body.Code)
	}
}

// TestRevokeCommand: `seckill revoke` on the shared MariaDB. An admin's
// token is refused on admin routes at once. It is refused everywhere within
// the reload period. A user's token is refused on /user/me and the purchase
// route within it. This holds on a running instance and on one started
// afterwards. Tokens issued after the revocation work.
func TestRevokeCommand(t *testing.T) {
	a := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	h := a.Handler()
	vid := apptest.PublishVoucher(t, h, 10)
	adminID, adminTok := freshUser(t, a.DB(), model.RoleAdmin)
	userID, userTok := freshUser(t, a.DB(), model.RoleUser)
	buy := func(tok string) func() apptest.Result {
		return func() apptest.Result {
			return apptest.Call(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil)
		}
	}
	me := func(h http.Handler, tok string) func() apptest.Result {
		return func() apptest.Result { return apptest.Call(t, h, http.MethodGet, "/user/me", tok, nil) }
	}
	if r := createShopAs(t, h, adminTok); r.Status != http.StatusOK {
		t.Fatalf("admin before revocation: got %d %s, want 200", r.Status, r.Body.Code)
	}
	if r := me(h, userTok)(); r.Status != http.StatusOK {
		t.Fatalf("user before revocation: got %d %s, want 200", r.Status, r.Body.Code)
	}

	vars := apptest.RealEnv(t, map[string]string{"SECKILL_ENV": "development"})
	for _, id := range []int64{adminID, userID} {
		var out bytes.Buffer
		if err := app.Run(context.Background(), []string{"revoke", "--user", strconv.FormatInt(id, 10)}, apptest.EnvOf(vars), &out, io.Discard); err != nil {
			t.Fatalf("revoke --user %d: %v", id, err)
		}
		if want := fmt.Sprintf("user %d (role ", id); !strings.HasPrefix(out.String(), want) {
			t.Errorf("revoke output: got %q, want it to start with %q", out.String(), want)
		}
		if id == adminID && !strings.Contains(out.String(), fmt.Sprintf("UPDATE tb_user SET role = 'user' WHERE id = %d", id)) {
			t.Errorf("revoke of an admin: got %q, want the demotion SQL", out.String())
		}
	}
	if r := createShopAs(t, h, adminTok); r.Status != http.StatusUnauthorized || r.Body.Code != "UNAUTHORIZED" {
		t.Errorf("revoked admin on POST /shop right after revoke: got %d %s, want 401 UNAUTHORIZED", r.Status, r.Body.Code)
	}
	eventually(t, "revoked admin on /user/me", http.StatusUnauthorized, me(h, adminTok))
	eventually(t, "revoked user on /user/me", http.StatusUnauthorized, me(h, userTok))
	eventually(t, "revoked user on the purchase route", http.StatusUnauthorized, buy(userTok))

	// The revocation is in the database: an instance started now refuses
	// the old tokens from its first request.
	b := apptest.Start(t, map[string]string{"SECKILL_LOCK_MODE": "lua"})
	if r := me(b.Handler(), userTok)(); r.Status != http.StatusUnauthorized {
		t.Errorf("new instance, revoked user on /user/me: got %d %s, want 401", r.Status, r.Body.Code)
	}
	if r := createShopAs(t, b.Handler(), adminTok); r.Status != http.StatusUnauthorized {
		t.Errorf("new instance, revoked admin on POST /shop: got %d %s, want 401", r.Status, r.Body.Code)
	}

	waitNextSecond()
	newAdmin, err := apptest.DevTokens().Issue(adminID, model.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	newUser, err := apptest.DevTokens().Issue(userID, model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	if r := createShopAs(t, h, newAdmin); r.Status != http.StatusOK {
		t.Errorf("admin token issued after the revocation: got %d %s, want 200", r.Status, r.Body.Code)
	}
	if r := me(h, newUser)(); r.Status != http.StatusOK {
		t.Errorf("user token issued after the revocation on /user/me: got %d %s, want 200", r.Status, r.Body.Code)
	}
	if r := buy(newUser)(); r.Status != http.StatusOK {
		t.Errorf("user token issued after the revocation on the purchase route: got %d %s, want 200", r.Status, r.Body.Code)
	}
}

// TestRevokeCommandEmbedded: on the embedded database, `seckill revoke`
// run while an instance serves it refuses the tokens of `seckill tokens`.
// An unknown user or a missing --user is an error.
func TestRevokeCommandEmbedded(t *testing.T) {
	vars := map[string]string{"SECKILL_DATA_DIR": t.TempDir(), "SECKILL_HTTP_ADDR": "127.0.0.1:0"}
	ctx := context.Background()
	tokenOf := func(args ...string) (int64, string) {
		t.Helper()
		var out bytes.Buffer
		if err := app.Run(ctx, append([]string{"tokens", "--count", "1"}, args...), apptest.EnvOf(vars), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		idStr, tok, _ := strings.Cut(strings.TrimSpace(out.String()), ",")
		id, err := strconv.ParseInt(idStr, 10, 64)
		if err != nil {
			t.Fatalf("tokens: got %q", out.String())
		}
		return id, tok
	}
	userID, userTok := tokenOf()
	adminID, adminTok := tokenOf("--admin")

	cfg, err := config.Load(apptest.EnvOf(vars))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	h := a.Handler()
	me := func(tok string) func() apptest.Result {
		return func() apptest.Result { return apptest.Call(t, h, http.MethodGet, "/user/me", tok, nil) }
	}
	if r := createShopAs(t, h, adminTok); r.Status != http.StatusOK {
		t.Fatalf("admin before revocation: got %d %s, want 200", r.Status, r.Body.Code)
	}
	if r := me(userTok)(); r.Status != http.StatusOK {
		t.Fatalf("user before revocation: got %d %s, want 200", r.Status, r.Body.Code)
	}

	for _, id := range []int64{userID, adminID} {
		var out bytes.Buffer
		if err := app.Run(ctx, []string{"revoke", "--user", strconv.FormatInt(id, 10)}, apptest.EnvOf(vars), &out, io.Discard); err != nil {
			t.Fatalf("revoke --user %d: %v", id, err)
		}
		if !strings.Contains(out.String(), "are refused") {
			t.Errorf("revoke output: got %q", out.String())
		}
	}
	if r := createShopAs(t, h, adminTok); r.Status != http.StatusUnauthorized {
		t.Errorf("revoked admin on POST /shop: got %d %s, want 401", r.Status, r.Body.Code)
	}
	eventually(t, "revoked user on /user/me", http.StatusUnauthorized, me(userTok))
	eventually(t, "revoked admin on /user/me", http.StatusUnauthorized, me(adminTok))

	waitNextSecond()
	_, userTok = tokenOf()
	if r := me(userTok)(); r.Status != http.StatusOK {
		t.Errorf("token of `seckill tokens` after the revocation: got %d %s, want 200", r.Status, r.Body.Code)
	}

	for _, args := range [][]string{{"revoke"}, {"revoke", "--user", "0"}, {"revoke", "--user", "987654321"}} {
		err := app.Run(ctx, args, apptest.EnvOf(vars), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v: got nil error, want a refusal", args)
		} else if args[len(args)-1] == "987654321" && !strings.Contains(err.Error(), "user not found") {
			t.Errorf("%v: got %v, want it to say user not found", args, err)
		}
	}
}
