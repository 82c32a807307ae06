package security

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
	"seckill/service/account"
	"seckill/testkit/testenv"
)

// randomPhone is a fresh mobile number (the Redis is shared).
func randomPhone() string { return fmt.Sprintf("13%09d", rand.IntN(1_000_000_000)) }

// randomAddr is a fresh client address (host:port) from 10.0.0.0/8.
func randomAddr() string {
	return fmt.Sprintf("10.%d.%d.%d:40000", rand.IntN(256), rand.IntN(256), 1+rand.IntN(254))
}

// storedCode is the code Redis holds for phone ("" when none).
func storedCode(t testing.TB, rdb redis.UniversalClient, phone string) string {
	t.Helper()
	v, err := rdb.Get(context.Background(), "login:code:"+phone).Result()
	if err == redis.Nil {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	code, _, _ := strings.Cut(v, ":")
	return code
}

// forgetCodeLimits drops phone's cooldown and daily count (a fixed phone of
// the tests, such as the admin's of `seckill tokens --admin`).
func forgetCodeLimits(t testing.TB, rdb redis.UniversalClient, phone string) {
	t.Helper()
	for _, k := range []string{redisstore.CodeCooldownKey(phone), redisstore.CodeDailyKey(phone)} {
		if err := rdb.Del(context.Background(), redisstore.RatePrefix+k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// dataCode is the code of a development answer.
func dataCode(t testing.TB, a apptest.CodeAnswer) string {
	t.Helper()
	var code string
	if a.Status != http.StatusOK || json.Unmarshal(a.Body.Data, &code) != nil || len(code) != 6 {
		t.Fatalf("/user/code: got %d %s %s, want a code", a.Status, a.Body.Code, a.Body.Data)
	}
	return code
}

// otherCode is a 6-digit code other than code.
func otherCode(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}

// TestCodeSurvivesWrongGuess: a wrong guess does not void the owner's code
// (the right one then logs in). The CodeGuesses-th wrong guess does.
func TestCodeSurvivesWrongGuess(t *testing.T) {
	h := apptest.Start(t, nil).Handler()
	phone, addr := randomPhone(), randomAddr()
	code := dataCode(t, apptest.SendCode(t, h, phone, addr))
	if r := apptest.Login(t, h, phone, otherCode(code), addr); r.Status != http.StatusBadRequest {
		t.Fatalf("wrong code: got %d %s, want 400", r.Status, r.Body.Code)
	}
	if r := apptest.Login(t, h, phone, code, addr); r.Status != http.StatusOK {
		t.Errorf("right code after a wrong one: got %d %s %q, want a login", r.Status, r.Body.Code, r.Body.ErrorMsg)
	}

	phone = randomPhone()
	code = dataCode(t, apptest.SendCode(t, h, phone, addr))
	for range account.CodeGuesses {
		apptest.Login(t, h, phone, otherCode(code), addr)
	}
	if r := apptest.Login(t, h, phone, code, addr); r.Status != http.StatusBadRequest || r.Body.ErrorMsg != "invalid code: wrong or expired" {
		t.Errorf("right code after %d wrong ones: got %d %q, want 400 invalid code", account.CodeGuesses, r.Status, r.Body.ErrorMsg)
	}
}

// refused checks a 429 RATE_LIMITED naming the wait (at most max) in
// Retry-After and in the message, which starts with reason.
func refused(t *testing.T, a apptest.CodeAnswer, reason string, max time.Duration) {
	t.Helper()
	secs, err := strconv.Atoi(a.RetryAfter)
	if a.Status != http.StatusTooManyRequests || a.Body.Code != "RATE_LIMITED" || err != nil || secs <= 0 || time.Duration(secs)*time.Second > max+time.Second {
		t.Fatalf("got %d %s Retry-After %q %q, want 429 RATE_LIMITED with Retry-After in (0, %v]", a.Status, a.Body.Code, a.RetryAfter, a.Body.ErrorMsg, max)
	}
	if want := fmt.Sprintf("%s: try again in %ds", reason, secs); a.Body.ErrorMsg != want {
		t.Errorf("message: got %q, want %q", a.Body.ErrorMsg, want)
	}
}

// TestCodeLimits: on the real Redis, the phone's cooldown, its daily cap and
// the client address's limit refuse with 429 and the wait. A spoofed
// X-Forwarded-For does not escape the address's limit unless it comes from
// a trusted proxy.
func TestCodeLimits(t *testing.T) {
	t.Run("cooldown", func(t *testing.T) {
		h := apptest.Start(t, nil).Handler() // the default cooldown, 60s
		phone := randomPhone()
		dataCode(t, apptest.SendCode(t, h, phone, randomAddr()))
		refused(t, apptest.SendCode(t, h, phone, randomAddr()), "a code was just sent to this phone", time.Minute)
	})
	t.Run("daily cap", func(t *testing.T) {
		h := apptest.Start(t, map[string]string{"SECKILL_CODE_COOLDOWN": "1s", "SECKILL_CODE_DAILY_LIMIT": "3"}).Handler()
		phone := randomPhone()
		for i := range 3 {
			if i > 0 {
				time.Sleep(1050 * time.Millisecond)
			}
			dataCode(t, apptest.SendCode(t, h, phone, randomAddr()))
		}
		time.Sleep(1050 * time.Millisecond)
		refused(t, apptest.SendCode(t, h, phone, randomAddr()), "too many codes for this phone", 8*time.Hour)
	})
	t.Run("address", func(t *testing.T) {
		h := apptest.Start(t, map[string]string{"SECKILL_CODE_IP_LIMIT": "3"}).Handler()
		addr := randomAddr()
		for range 3 {
			dataCode(t, apptest.SendCode(t, h, randomPhone(), addr))
		}
		refused(t, apptest.SendCode(t, h, randomPhone(), addr), "too many codes from this address", 20*time.Second)
		// A spoofed X-Forwarded-For is not believed by default.
		for i := range 3 {
			a := apptest.Post(t, h, "/user/code?phone="+randomPhone(), addr, fmt.Sprintf("198.51.100.%d", i+1), nil)
			refused(t, a, "too many codes from this address", 20*time.Second)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		proxy := randomAddr()
		host, _, _ := strings.Cut(proxy, ":")
		h := apptest.Start(t, map[string]string{"SECKILL_CODE_IP_LIMIT": "3", "SECKILL_TRUSTED_PROXIES": host}).Handler()
		for range 5 {
			client, _, _ := strings.Cut(randomAddr(), ":")
			dataCode(t, apptest.Post(t, h, "/user/code?phone="+randomPhone(), proxy, client, nil))
		}
		client, _, _ := strings.Cut(randomAddr(), ":")
		for range 3 {
			dataCode(t, apptest.Post(t, h, "/user/code?phone="+randomPhone(), proxy, client, nil))
		}
		refused(t, apptest.Post(t, h, "/user/code?phone="+randomPhone(), proxy, client, nil), "too many codes from this address", 20*time.Second)
	})
}

// TestBadTrustedProxyStopsStart: a malformed SECKILL_TRUSTED_PROXIES is a
// start error naming the variable.
func TestBadTrustedProxyStopsStart(t *testing.T) {
	_, err := config.Load(apptest.EnvOf(map[string]string{"SECKILL_TRUSTED_PROXIES": "10.0.0.0/40"}))
	if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_TRUSTED_PROXIES:") {
		t.Errorf("got %v, want an error naming SECKILL_TRUSTED_PROXIES", err)
	}
}

// loggedApp is apptest.Start keeping the app's log (debug level).
func loggedApp(t *testing.T, env map[string]string) (*app.App, *testenv.SyncBuffer) {
	t.Helper()
	dsn, _ := apptest.IntegrationEnv(t)
	vars := map[string]string{"SECKILL_MYSQL_DSN": dsn, "SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_ENV": "development"}
	for k, v := range apptest.RedisVars(t) {
		vars[k] = v
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(apptest.EnvOf(vars))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	buf := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a, buf
}

// TestProductionLogHidesCodes: production logs sending a code, guessing
// wrong, logging in and being refused. That log holds no code and no full
// phone. It holds only the masked phone (138****5678).
func TestProductionLogHidesCodes(t *testing.T) {
	a, buf := loggedApp(t, prodEnv(t, apptest.NewReceiver(t), nil))
	h, rdb := a.Handler(), apptest.SharedRedis(t)
	start := len(buf.Bytes())
	phone, addr := randomPhone(), randomAddr()
	if r := apptest.SendCode(t, h, phone, addr); r.Status != http.StatusOK || len(r.Body.Data) != 0 {
		t.Fatalf("/user/code in production: got %d %s, want 200 and no data", r.Status, r.Body.Data)
	}
	code := storedCode(t, rdb, phone)
	apptest.Login(t, h, phone, otherCode(code), addr)
	if r := apptest.Login(t, h, phone, code, addr); r.Status != http.StatusOK {
		t.Fatalf("login: got %d %s", r.Status, r.Body.Code)
	}
	apptest.SendCode(t, h, phone, addr) // refused by the cooldown
	log := string(buf.Bytes()[start:])
	masked := phone[:3] + "****" + phone[7:]
	if !strings.Contains(log, "phone="+masked) {
		t.Errorf("log: want the phone masked as %s:\n%s", masked, log)
	}
	if strings.Contains(log, phone) || strings.Contains(log, code) {
		t.Errorf("log holds the phone %s or the code %s:\n%s", phone, code, log)
	}
}

// TestBruteForceTwoInstances: an attacker alternates between two instances
// on the same MariaDB and Redis. From ever new addresses, it keeps asking
// codes for a victim's phone and guessing. Per code at most CodeGuesses
// guesses are evaluated. Per phone at most the daily cap's codes are sent.
// The expected time to take an account over is years. With unlimited codes
// it would be ten minutes.
func TestBruteForceTwoInstances(t *testing.T) {
	const daily = 3
	env := prodEnv(t, apptest.NewReceiver(t), map[string]string{
		"SECKILL_CODE_COOLDOWN": "1s", "SECKILL_CODE_DAILY_LIMIT": strconv.Itoa(daily),
	})
	apps := []http.Handler{apptest.Start(t, env).Handler(), apptest.Start(t, env).Handler()}
	rdb := apptest.SharedRedis(t)
	victim := randomPhone()

	var sent, limited, guesses, evaluated, logins, requests int
	perCode := map[string]int{} // guesses evaluated per code sent
	const run = 4 * time.Second
	start := time.Now()
	for i := 0; time.Since(start) < run; i++ {
		h := apps[i%2]
		requests++
		switch r := apptest.SendCode(t, h, victim, randomAddr()); r.Status {
		case http.StatusOK:
			sent++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("/user/code: got %d %s", r.Status, r.Body.Code)
		}
		for j := range 8 {
			guess := fmt.Sprintf("%06d", rand.IntN(1_000_000))
			// The observer (not the attacker) reads which code, if any,
			// the guess meets.
			stored := storedCode(t, rdb, victim)
			requests++
			r := apptest.Login(t, apps[(i+j)%2], victim, guess, randomAddr())
			guesses++
			if stored != "" {
				evaluated++
				perCode[stored]++
			}
			if r.Status == http.StatusOK {
				logins++
			}
		}
	}
	elapsed := time.Since(start)
	maxPerCode := 0
	for _, n := range perCode {
		maxPerCode = max(maxPerCode, n)
	}
	if maxPerCode > account.CodeGuesses {
		t.Errorf("guesses evaluated against one code: %d, want at most %d", maxPerCode, account.CodeGuesses)
	}
	if sent > daily || evaluated > daily*account.CodeGuesses {
		t.Errorf("codes sent %d, guesses evaluated %d, want at most %d and %d (daily cap × guesses)", sent, evaluated, daily, daily*account.CodeGuesses)
	}
	if logins > 0 {
		t.Errorf("the attacker logged in %d times", logins)
	}

	// The production defaults: 10 codes a day (GCRA: at most 20 in any
	// 24 h), 5 guesses each, a code living CodeTTL.
	codeSpace := 1e6
	cfg := config.Default()
	perDay := float64(2 * cfg.CodeDailyLimit * account.CodeGuesses)
	takeover := time.Duration(codeSpace / perDay * float64(24*time.Hour))
	t.Logf("run: %d requests in %v over two instances (%.0f/s): %d codes sent, %d refused 429; %d guesses, %d evaluated (at most %d per code, %d codes guessed); %d logins",
		requests, elapsed.Round(time.Millisecond), float64(requests)/elapsed.Seconds(), sent, limited, guesses, evaluated, maxPerCode, len(perCode), logins)
	t.Logf("bound per phone (defaults): %d codes a day sustained, at most %d in any 24 h, × %d guesses = at most %.0f guesses a day",
		cfg.CodeDailyLimit, 2*cfg.CodeDailyLimit, account.CodeGuesses, perDay)
	t.Logf("expected takeover: %.0e codes / %.0f guesses a day = %.0f days (%.1f years), %.1e times a code's lifetime (%v); unlimited at 1,585 pairs/s: %v",
		codeSpace, perDay, takeover.Hours()/24, takeover.Hours()/24/365, float64(takeover)/float64(account.CodeTTL), account.CodeTTL,
		time.Duration(float64(codeSpace)/1585*float64(time.Second)).Round(time.Second))
	if takeover < 10*365*24*time.Hour || takeover < 1e6*account.CodeTTL {
		t.Errorf("expected takeover %v, want years and a million code lifetimes", takeover)
	}
}
