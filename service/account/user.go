package account

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"regexp"
	"time"

	"seckill/model"
)

// CodeTTL is how long a login code stays valid.
const CodeTTL = 2 * time.Minute

// CodeGuesses is how many wrong guesses void a login code.
const CodeGuesses = 5

var phonePattern = regexp.MustCompile(`^1[3-9]\d{9}$`)

// ValidPhone reports whether phone is an 11-digit mainland mobile number.
func ValidPhone(phone string) bool { return phonePattern.MatchString(phone) }

// MaskPhone is phone as logs show it: 138****5678.
func MaskPhone(phone string) string {
	if len(phone) != 11 {
		return "***"
	}
	return phone[:3] + "****" + phone[7:]
}

// CodeConfig are the limits of sending login codes; a zero limit is off.
type CodeConfig struct {
	// Cooldown is the least time between two codes to one phone.
	Cooldown time.Duration
	// Daily is how many codes one phone gets per 24 h (GCRA: Daily at
	// once, then one every 24h/Daily).
	Daily int
	// PerAddr is how many codes one client address may ask for a minute.
	PerAddr int
	// Development logs the codes (never in production).
	Development bool
	// Sender delivers the codes; nil leaves them to the development log.
	Sender CodeSender
}

// CodeSender delivers a login code to a phone. A nil error means it was
// delivered; an error may say why in words (BuyerReason).
type CodeSender interface {
	SendCode(ctx context.Context, phone, code string, ttl time.Duration) error
}

// buyerReason is a send error that says what failed in words.
type buyerReason interface{ BuyerReason() string }

// Users logs users in with a phone code.
type Users struct {
	users  UserStore
	codes  CodeStore
	limits CodeLimiter
	tokens TokenIssuer
	log    *slog.Logger
	cfg    CodeConfig
}

// NewUsers returns a Users service. limits may be nil when cfg sets no
// limit.
func NewUsers(users UserStore, codes CodeStore, limits CodeLimiter, tokens TokenIssuer, log *slog.Logger, cfg CodeConfig) *Users {
	if limits == nil {
		limits = noLimits{}
	}
	return &Users{users: users, codes: codes, limits: limits, tokens: tokens, log: log, cfg: cfg}
}

// errWrongCode refuses a wrong or expired code, and any login of an admin's
// phone. The two must not be told apart.
var errWrongCode = model.InvalidArgument("code", "wrong or expired")

// SendCode sends a fresh 6-digit code to phone, asked for by the client
// address addr, then stores it and returns it, within the limits (a
// *model.RateLimitedError beyond them). A failed send stores nothing and is
// a *model.CodeNotSentError. The handler returns the code to the client in
// development only. Every phone is served alike, an admin's too (Login
// refuses it), so the answer and its work never tell admins' phones apart.
func (s *Users) SendCode(ctx context.Context, phone, addr string) (string, error) {
	if !ValidPhone(phone) {
		return "", model.InvalidArgument("phone", "must be an 11-digit mobile number")
	}
	if err := s.allowSend(ctx, phone, addr); err != nil {
		return "", err
	}
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", fmt.Errorf("login code: %w", err)
	}
	code := fmt.Sprintf("%06d", n.Int64())
	// Send first: a code that never left is never stored, so no verify
	// can meet a code the buyer cannot have.
	if err := s.deliver(ctx, phone, code); err != nil {
		return "", err
	}
	if err := s.codes.SaveCode(ctx, phone, code, CodeTTL); err != nil {
		return "", err
	}
	if s.cfg.Development {
		s.log.InfoContext(ctx, "login code sent", "phone", MaskPhone(phone), "code", code)
	} else {
		s.log.InfoContext(ctx, "login code sent", "phone", MaskPhone(phone))
	}
	return code, nil
}

// deliver hands code to the sender, if any; a failure is logged and
// returned in words.
func (s *Users) deliver(ctx context.Context, phone, code string) error {
	if s.cfg.Sender == nil {
		return nil
	}
	err := s.cfg.Sender.SendCode(ctx, phone, code, CodeTTL)
	if err == nil {
		return nil
	}
	reason := "the message service failed"
	var r buyerReason
	if errors.As(err, &r) {
		reason = r.BuyerReason()
	}
	s.log.ErrorContext(ctx, "login code not sent", "phone", MaskPhone(phone), "reason", reason, "err", err)
	return fmt.Errorf("%w: %w", &model.CodeNotSentError{To: MaskPhone(phone), Reason: reason, Wait: s.cfg.Cooldown}, err)
}

// allowSend counts a code against the client address's limit, then the
// phone's cooldown, then its daily cap; the first refusal stops.
func (s *Users) allowSend(ctx context.Context, phone, addr string) error {
	checks := []struct {
		on     bool
		allow  func(context.Context, string, model.Limit) (bool, time.Duration, error)
		key    string
		limit  model.Limit
		reason string
	}{
		{s.cfg.PerAddr > 0 && addr != "", s.limits.AllowAddr, addr,
			model.Limit{Rate: s.cfg.PerAddr, Burst: s.cfg.PerAddr, Period: time.Minute}, "too many codes from this address"},
		{s.cfg.Cooldown > 0, s.limits.AllowCooldown, phone,
			model.Limit{Rate: 1, Burst: 1, Period: s.cfg.Cooldown}, "a code was just sent to this phone"},
		{s.cfg.Daily > 0, s.limits.AllowDaily, phone,
			model.Limit{Rate: s.cfg.Daily, Burst: s.cfg.Daily, Period: 24 * time.Hour}, "too many codes for this phone"},
	}
	for _, c := range checks {
		if !c.on {
			continue
		}
		ok, wait, err := c.allow(ctx, c.key, c.limit)
		if err != nil {
			return err
		}
		if !ok {
			s.log.DebugContext(ctx, "login code refused", "phone", MaskPhone(phone), "reason", c.reason)
			return model.RateLimited(c.reason, wait)
		}
	}
	return nil
}

// Login checks the code sent to phone, creates the user on first login and
// returns a token with the user's role (user or staff; an admin's phone is
// refused). A wrong code is counted against the code (CodeGuesses
// void it) but leaves it valid for the right one.
func (s *Users) Login(ctx context.Context, phone, code string) (string, error) {
	if !ValidPhone(phone) {
		return "", model.InvalidArgument("phone", "must be an 11-digit mobile number")
	}
	if code == "" {
		return "", model.InvalidArgument("code", "required")
	}
	match, err := s.codes.CheckCode(ctx, phone, code, CodeGuesses)
	if err != nil {
		return "", err
	}
	if !match {
		return "", errWrongCode
	}
	u, err := s.users.FindByPhone(ctx, phone)
	if errors.Is(err, model.ErrUserNotFound) {
		u = &model.User{Phone: phone, NickName: "user_" + randomSuffix(), Role: model.RoleUser}
		// A user created concurrently with the phone is returned instead.
		err = s.users.Create(ctx, u)
	}
	if err != nil {
		return "", err
	}
	if u.Role != model.RoleUser && u.Role != model.RoleStaff {
		// An admin's phone gets codes like any other: refused like a
		// wrong code. A shop's staff log in like buyers, their token
		// carrying the role staff (docs/redemption.md).
		s.log.WarnContext(ctx, "login refused: the phone is not an ordinary user's", "phone", MaskPhone(phone), "user", u.ID)
		return "", errWrongCode
	}
	return s.tokens.Issue(u.ID, u.Role)
}

// Cooldown is the least time between two codes to one phone
// (SECKILL_CODE_COOLDOWN; 0 when off).
func (s *Users) Cooldown() time.Duration { return s.cfg.Cooldown }

// Me returns the user with id.
func (s *Users) Me(ctx context.Context, id int64) (*model.User, error) {
	return s.users.FindByID(ctx, id)
}

func randomSuffix() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 10)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(letters))))
		if err != nil {
			return "anonymous"
		}
		b[i] = letters[n.Int64()]
	}
	return string(b)
}

// noLimits refuses nothing (a CodeConfig without limits).
type noLimits struct{}

func (noLimits) AllowAddr(context.Context, string, model.Limit) (bool, time.Duration, error) {
	return true, 0, nil
}
func (noLimits) AllowCooldown(context.Context, string, model.Limit) (bool, time.Duration, error) {
	return true, 0, nil
}
func (noLimits) AllowDaily(context.Context, string, model.Limit) (bool, time.Duration, error) {
	return true, 0, nil
}
