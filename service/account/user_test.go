package account

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/account/accounttest"
	"seckill/service/internal/servicetest"
)

// testAddr is the client address of the tests' codes.
const testAddr = "192.0.2.7"

// sendCode sends a code to phone from testAddr and returns it, failing the
// test on an error.
func sendCode(t *testing.T, svc *Users, phone string) string {
	t.Helper()
	code, err := svc.SendCode(context.Background(), phone, testAddr)
	if err != nil {
		t.Fatalf("SendCode: %v", err)
	}
	return code
}

func newTestUsers() (*Users, *accounttest.Users, *accounttest.Codes) {
	us, cs := accounttest.NewUsers(500), accounttest.NewCodes()
	return NewUsers(us, cs, nil, accounttest.Issuer{}, servicetest.DiscardLog(), CodeConfig{}), us, cs
}

func TestValidPhone(t *testing.T) {
	tests := []struct {
		phone string
		want  bool
	}{
		{"13812345678", true},
		{"19912345678", true},
		{"", false},
		{"1381234567", false},   // 10 digits
		{"138123456789", false}, // 12 digits
		{"12812345678", false},  // second digit 2
		{"23812345678", false},
		{"1381234567a", false},
		{" 13812345678", false},
		{"13812345678\n", false},
		{"+8613812345678", false},
	}
	for _, tt := range tests {
		if got := ValidPhone(tt.phone); got != tt.want {
			t.Errorf("ValidPhone(%q): got %v, want %v", tt.phone, got, tt.want)
		}
	}
}

func TestSendCode(t *testing.T) {
	tests := []struct {
		name      string
		phone     string
		saveErr   error
		wantField string
		wantErr   error
	}{
		{name: "valid", phone: "13812345678"},
		{name: "empty", phone: "", wantField: "phone"},
		{name: "short", phone: "138", wantField: "phone"},
		{name: "letters", phone: "1381234567x", wantField: "phone"},
		{name: "redis down", phone: "13812345678", saveErr: model.Unavailable(servicetest.ErrIO), wantErr: model.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _, codes := newTestUsers()
			codes.SaveErr = tt.saveErr
			code, err := svc.SendCode(context.Background(), tt.phone, testAddr)
			if servicetest.CheckErr(t, err, tt.wantField, tt.wantErr) {
				if tt.wantField != "" && len(codes.Codes) != 0 {
					t.Errorf("codes saved: got %d, want 0", len(codes.Codes))
				}
				return
			}
			if !regexp.MustCompile(`^\d{6}$`).MatchString(code) {
				t.Errorf("code: got %q, want 6 digits", code)
			}
			if got := codes.Codes[tt.phone]; got != code {
				t.Errorf("stored code: got %q, want %q", got, code)
			}
			if got := codes.TTLs[tt.phone]; got != CodeTTL {
				t.Errorf("code TTL: got %v, want %v", got, CodeTTL)
			}
		})
	}
}

func TestLogin(t *testing.T) {
	const phone = "13812345678"
	tests := []struct {
		name      string
		phone     string
		code      string // "SENT" means the code that was sent
		expire    bool
		takeErr   error
		wantField string
		wantErr   error
	}{
		{name: "right code", phone: phone, code: "SENT"},
		{name: "wrong code", phone: phone, code: "000000x", wantField: "code"},
		{name: "empty code", phone: phone, code: "", wantField: "code"},
		{name: "expired code", phone: phone, code: "SENT", expire: true, wantField: "code"},
		{name: "bad phone", phone: "12", code: "SENT", wantField: "phone"},
		{name: "code for another phone", phone: "13900000000", code: "SENT", wantField: "code"},
		{name: "redis down", phone: phone, code: "SENT", takeErr: model.Unavailable(servicetest.ErrIO), wantErr: model.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, users, codes := newTestUsers()
			sent, err := svc.SendCode(context.Background(), phone, testAddr)
			if err != nil {
				t.Fatalf("SendCode: %v", err)
			}
			if tt.expire {
				codes.Expire(phone)
			}
			codes.CheckErr = tt.takeErr
			code := tt.code
			if code == "SENT" {
				code = sent
			}
			tok, err := svc.Login(context.Background(), tt.phone, code)
			if !servicetest.CheckErr(t, err, tt.wantField, tt.wantErr) {
				if want := "tok-501-user"; tok != want {
					t.Errorf("token: got %q, want %q", tok, want)
				}
			}
			if tt.wantField != "" || tt.wantErr != nil {
				if tok != "" {
					t.Errorf("token on failure: got %q, want empty", tok)
				}
				if users.Created != 0 {
					t.Errorf("users created on failure: got %d, want 0", users.Created)
				}
			}
		})
	}
}

func TestLoginCodeUsableOnce(t *testing.T) {
	svc, _, _ := newTestUsers()
	ctx := context.Background()
	const phone = "13812345678"
	code := sendCode(t, svc, phone)
	if _, err := svc.Login(ctx, phone, code); err != nil {
		t.Fatalf("first login: got %v, want nil", err)
	}
	_, err := svc.Login(ctx, phone, code)
	var ia *model.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "code" {
		t.Fatalf("second login with the same code: got %v, want InvalidArgumentError on code", err)
	}
}

func TestLoginCreatesUserOnce(t *testing.T) {
	svc, users, _ := newTestUsers()
	ctx := context.Background()
	const phone = "13812345678"
	var tokens []string
	for range 2 {
		code := sendCode(t, svc, phone)
		tok, err := svc.Login(ctx, phone, code)
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		tokens = append(tokens, tok)
	}
	if users.Created != 1 {
		t.Fatalf("users created: got %d, want 1", users.Created)
	}
	if tokens[0] != tokens[1] {
		t.Errorf("second login token: got %q, want the same user as %q", tokens[1], tokens[0])
	}
	u, err := users.FindByPhone(ctx, phone)
	if err != nil {
		t.Fatalf("FindByPhone: %v", err)
	}
	if u.Role != model.RoleUser {
		t.Errorf("role: got %q, want %q", u.Role, model.RoleUser)
	}
	if u.NickName == "" {
		t.Errorf("nick name: got empty, want a generated one")
	}
	me, err := svc.Me(ctx, u.ID)
	if err != nil || me.Phone != phone {
		t.Errorf("Me: got %v, %v, want the user with phone %s", me, err, phone)
	}
	if _, err := svc.Me(ctx, 99999); !errors.Is(err, model.ErrUserNotFound) {
		t.Errorf("Me unknown: got %v, want %v", err, model.ErrUserNotFound)
	}
}

// TestLoginRefusesAdmin: an admin is never reachable through the public code
// flow. SendCode serves an admin's phone like any other: a code stored and
// returned. Login of an admin's phone is refused exactly like a wrong code.
// That holds even with the right code, and with a code stored before the phone
// became an admin's. It holds for an admin created concurrently with the login
// too.
func TestLoginRefusesAdmin(t *testing.T) {
	ctx := context.Background()
	wrongCode := func(t *testing.T, tok string, err error) {
		t.Helper()
		var ia *model.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Error() != "invalid code: wrong or expired" {
			t.Errorf("Login: got %q, %v, want the wrong-code error", tok, err)
		}
	}
	t.Run("existing admin", func(t *testing.T) {
		svc, users, codes := newTestUsers()
		const phone = "19000000001"
		if err := users.Create(ctx, &model.User{Phone: phone, NickName: "admin_1", Role: model.RoleAdmin}); err != nil {
			t.Fatal(err)
		}
		code, err := svc.SendCode(ctx, phone, testAddr)
		if err != nil || len(code) != 6 {
			t.Errorf("SendCode: got %q, %v, want a code like any phone's", code, err)
		}
		if got := codes.Codes[phone]; got != code {
			t.Errorf("code stored: got %q, want %q", got, code)
		}
		for _, c := range []string{"000000", code} {
			tok, err := svc.Login(ctx, phone, c)
			wrongCode(t, tok, err)
		}
	})
	t.Run("code sent before the phone became an admin's", func(t *testing.T) {
		svc, users, _ := newTestUsers()
		const phone = "19000000002"
		code, err := svc.SendCode(ctx, phone, testAddr)
		if err != nil || code == "" {
			t.Fatalf("SendCode: got %q, %v, want a code", code, err)
		}
		if err := users.Create(ctx, &model.User{Phone: phone, NickName: "admin_2", Role: model.RoleAdmin}); err != nil {
			t.Fatal(err)
		}
		tok, err := svc.Login(ctx, phone, code)
		wrongCode(t, tok, err)
	})
	t.Run("admin created concurrently", func(t *testing.T) {
		users := &adminOnCreate{Users: accounttest.NewUsers(500)}
		svc := NewUsers(users, accounttest.NewCodes(), nil, accounttest.Issuer{}, servicetest.DiscardLog(), CodeConfig{})
		const phone = "19000000003"
		code := sendCode(t, svc, phone)
		tok, err := svc.Login(ctx, phone, code)
		wrongCode(t, tok, err)
	})
}

// TestLoginStaff: a shop's staff member logs in by code like a buyer, and
// the token carries the role staff (the staff page's login).
func TestLoginStaff(t *testing.T) {
	svc, users, _ := newTestUsers()
	const phone = "16600000001"
	u := &model.User{Phone: phone, NickName: "user_staff", Role: model.RoleStaff}
	if err := users.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	tok, err := svc.Login(context.Background(), phone, sendCode(t, svc, phone))
	if want := fmt.Sprintf("tok-%d-staff", u.ID); err != nil || tok != want {
		t.Errorf("Login of staff: got %q, %v, want %q", tok, err, want)
	}
}

// adminOnCreate is a UserStore whose Create finds that an admin with the
// phone was created concurrently and returns it (as the real one does).
type adminOnCreate struct{ *accounttest.Users }

func (a *adminOnCreate) Create(ctx context.Context, u *model.User) error {
	u.Role = model.RoleAdmin
	return a.Users.Create(ctx, u)
}

// TestWrongGuessKeepsCode: a wrong guess does not void the owner's code:
// the right one still logs in after CodeGuesses-1 wrong ones.
func TestWrongGuessKeepsCode(t *testing.T) {
	svc, _, _ := newTestUsers()
	ctx := context.Background()
	const phone = "13812345678"
	code := sendCode(t, svc, phone)
	for i := 0; i < CodeGuesses-1; i++ {
		if _, err := svc.Login(ctx, phone, wrongOf(code)); !errors.As(err, new(*model.InvalidArgumentError)) {
			t.Fatalf("wrong guess %d: got %v, want the wrong-code error", i+1, err)
		}
	}
	if _, err := svc.Login(ctx, phone, code); err != nil {
		t.Errorf("right code after %d wrong guesses: got %v, want a login", CodeGuesses-1, err)
	}
}

// TestWrongGuessesVoidCode: the CodeGuesses-th wrong guess voids the code.
func TestWrongGuessesVoidCode(t *testing.T) {
	svc, _, codes := newTestUsers()
	ctx := context.Background()
	const phone = "13812345678"
	code := sendCode(t, svc, phone)
	for range CodeGuesses {
		svc.Login(ctx, phone, wrongOf(code))
	}
	if _, ok := codes.Codes[phone]; ok {
		t.Errorf("code kept after %d wrong guesses", CodeGuesses)
	}
	if _, err := svc.Login(ctx, phone, code); err == nil || err.Error() != errWrongCode.Error() {
		t.Errorf("right code after %d wrong guesses: got %v, want %v", CodeGuesses, err, errWrongCode)
	}
}

// wrongOf is a 6-digit code other than code.
func wrongOf(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}

// TestSendCodeLimits: SendCode refuses beyond a limit with a
// *model.RateLimitedError naming the wait. The limits are the address's, the
// phone's cooldown and its daily cap. A limiter error is returned as it is.
func TestSendCodeLimits(t *testing.T) {
	ctx := context.Background()
	newSvc := func(cfg CodeConfig) (*Users, *accounttest.CodeLimits, *accounttest.Codes) {
		l, cs := accounttest.NewCodeLimits(), accounttest.NewCodes()
		return NewUsers(accounttest.NewUsers(500), cs, l, accounttest.Issuer{}, servicetest.DiscardLog(), cfg), l, cs
	}
	refused := func(t *testing.T, err error, reason string, wait time.Duration) {
		t.Helper()
		var rl *model.RateLimitedError
		if !errors.As(err, &rl) || !errors.Is(err, model.ErrRateLimited) || rl.Reason != reason || rl.RetryAfter != wait {
			t.Fatalf("got %v, want RateLimitedError %q after %v", err, reason, wait)
		}
		if want := fmt.Sprintf("%s: try again in %ds", reason, model.RetryAfterSeconds(wait)); err.Error() != want {
			t.Errorf("message: got %q, want %q", err.Error(), want)
		}
	}
	t.Run("cooldown", func(t *testing.T) {
		svc, _, codes := newSvc(CodeConfig{Cooldown: time.Minute, Daily: 10, PerAddr: 30})
		first := sendCode(t, svc, "13812345678")
		_, err := svc.SendCode(ctx, "13812345678", testAddr)
		refused(t, err, "a code was just sent to this phone", time.Minute)
		if codes.Codes["13812345678"] != first {
			t.Errorf("a refused send replaced the code")
		}
		if _, err := svc.SendCode(ctx, "13812345679", testAddr); err != nil {
			t.Errorf("another phone: got %v, want a code", err)
		}
	})
	t.Run("daily cap", func(t *testing.T) {
		svc, l, _ := newSvc(CodeConfig{Cooldown: time.Second, Daily: 3})
		for i := range 3 {
			if _, err := svc.SendCode(ctx, "13812345678", testAddr); err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
			l.Reset("cooldown:13812345678") // the cooldown passed
		}
		_, err := svc.SendCode(ctx, "13812345678", testAddr)
		refused(t, err, "too many codes for this phone", 8*time.Hour)
	})
	t.Run("address", func(t *testing.T) {
		svc, _, _ := newSvc(CodeConfig{Cooldown: time.Minute, Daily: 10, PerAddr: 2})
		for i := range 2 {
			if _, err := svc.SendCode(ctx, fmt.Sprintf("1381234567%d", i), testAddr); err != nil {
				t.Fatal(err)
			}
		}
		_, err := svc.SendCode(ctx, "13812345670", testAddr)
		refused(t, err, "too many codes from this address", 30*time.Second)
		if _, err := svc.SendCode(ctx, "13812345672", "192.0.2.8"); err != nil {
			t.Errorf("another address: got %v, want a code", err)
		}
	})
	t.Run("redis down", func(t *testing.T) {
		svc, l, codes := newSvc(CodeConfig{Cooldown: time.Minute, Daily: 10, PerAddr: 30})
		l.Err = model.Unavailable(servicetest.ErrIO)
		if _, err := svc.SendCode(ctx, "13812345678", testAddr); !errors.Is(err, model.ErrUnavailable) {
			t.Errorf("got %v, want ErrUnavailable", err)
		}
		if len(codes.Codes) != 0 {
			t.Errorf("a code was stored without the limits")
		}
	})
}

// TestSendCodeLog: production logs neither the code nor the full phone;
// development logs the code, the phone masked all the same.
func TestSendCodeLog(t *testing.T) {
	for _, dev := range []bool{false, true} {
		var buf bytes.Buffer
		svc := NewUsers(accounttest.NewUsers(500), accounttest.NewCodes(), nil, accounttest.Issuer{}, slog.New(slog.NewJSONHandler(&buf, nil)), CodeConfig{Development: dev})
		const phone = "13812345678"
		code, err := svc.SendCode(context.Background(), phone, testAddr)
		if err != nil {
			t.Fatal(err)
		}
		svc.Login(context.Background(), phone, wrongOf(code))
		log := buf.String()
		if strings.Contains(log, phone) || !strings.Contains(log, `"phone":"138****5678"`) {
			t.Errorf("development=%v: log %s, want the phone masked (138****5678)", dev, log)
		}
		if got := strings.Contains(log, `"code":"`); got != dev || (dev && !strings.Contains(log, `"code":"`+code+`"`)) {
			t.Errorf("development=%v: code in the log: %v, want %v (%s)", dev, got, dev, log)
		}
	}
}
