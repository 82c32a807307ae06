package service

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
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

var phonePattern = regexp.MustCompile(`^1[3-9]\d{9}$`)

// ValidPhone reports whether phone is an 11-digit mainland mobile number.
func ValidPhone(phone string) bool { return phonePattern.MatchString(phone) }

// Users logs users in with a phone code.
type Users struct {
	users  UserStore
	codes  CodeStore
	tokens TokenIssuer
	log    *slog.Logger
}

// NewUsers returns a Users service.
func NewUsers(users UserStore, codes CodeStore, tokens TokenIssuer, log *slog.Logger) *Users {
	return &Users{users: users, codes: codes, tokens: tokens, log: log}
}

// errWrongCode is the refusal of a wrong or expired code, and of any login
// of an admin's phone, which must not be told apart from it.
var errWrongCode = model.InvalidArgument("code", "wrong or expired")

// SendCode stores a fresh 6-digit code for phone and returns it. Delivery is
// a log line (there is no SMS gateway); the handler returns the code to the
// client in development only. An admin's phone gets no code at all (none
// stored, logged or returned: code ""), with no error, so the answer does not
// tell admins' phones apart: admins are never reachable through the public
// code flow, only through `seckill tokens --admin`.
func (s *Users) SendCode(ctx context.Context, phone string) (string, error) {
	if !ValidPhone(phone) {
		return "", model.InvalidArgument("phone", "must be an 11-digit mobile number")
	}
	u, err := s.users.FindByPhone(ctx, phone)
	switch {
	case errors.Is(err, model.ErrUserNotFound):
	case err != nil:
		return "", err
	case u.Role != model.RoleUser:
		s.log.WarnContext(ctx, "login code refused: the phone is not an ordinary user's", "phone", phone)
		return "", nil
	}
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", fmt.Errorf("login code: %w", err)
	}
	code := fmt.Sprintf("%06d", n.Int64())
	if err := s.codes.SaveCode(ctx, phone, code, CodeTTL); err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "login code sent", "phone", phone, "code", code)
	return code, nil
}

// Login checks the code sent to phone, creates the user on first login and
// returns a token.
func (s *Users) Login(ctx context.Context, phone, code string) (string, error) {
	if !ValidPhone(phone) {
		return "", model.InvalidArgument("phone", "must be an 11-digit mobile number")
	}
	if code == "" {
		return "", model.InvalidArgument("code", "required")
	}
	want, err := s.codes.TakeCode(ctx, phone)
	if err != nil {
		return "", err
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(code)) != 1 {
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
	if u.Role != model.RoleUser {
		// An admin's phone (a code sent before it became one, or an admin
		// created concurrently): refused like a wrong code.
		s.log.WarnContext(ctx, "login refused: the phone is not an ordinary user's", "phone", phone, "user", u.ID)
		return "", errWrongCode
	}
	return s.tokens.Issue(u.ID, u.Role)
}

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
