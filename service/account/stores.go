// Package account holds the users and their login: login codes, tokens
// and their revocation. It declares the stores it needs; repository
// implements them.
package account

import (
	"context"
	"time"

	"seckill/model"
)

// UserStore reads and writes users.
type UserStore interface {
	// FindByPhone returns model.ErrUserNotFound when no user has the phone.
	FindByPhone(ctx context.Context, phone string) (*model.User, error)
	// FindByID returns model.ErrUserNotFound when no user has the id.
	FindByID(ctx context.Context, id int64) (*model.User, error)
	// Create inserts u and sets its id. A user created concurrently with the
	// same phone is returned instead of an error.
	Create(ctx context.Context, u *model.User) error
}

// CodeStore keeps login codes (Redis login:code:<phone>).
type CodeStore interface {
	// SaveCode stores code for phone (replacing any other) with no wrong
	// guesses.
	SaveCode(ctx context.Context, phone, code string, ttl time.Duration) error
	// CheckCode compares code with phone's code in one atomic step, across
	// instances. A match deletes the code and answers true. A mismatch counts a
	// wrong guess, and the maxWrong-th deletes the code. No code answers false.
	CheckCode(ctx context.Context, phone, code string, maxWrong int) (bool, error)
}

// CodeLimiter counts the sends of login codes against limits shared by
// every instance: ok, or refused with the wait until one is allowed.
type CodeLimiter interface {
	// AllowAddr counts a code sent at the request of the client address.
	AllowAddr(ctx context.Context, addr string, l model.Limit) (ok bool, retryAfter time.Duration, err error)
	// AllowCooldown counts a code sent to phone against its cooldown.
	AllowCooldown(ctx context.Context, phone string, l model.Limit) (ok bool, retryAfter time.Duration, err error)
	// AllowDaily counts a code sent to phone against its daily cap.
	AllowDaily(ctx context.Context, phone string, l model.Limit) (ok bool, retryAfter time.Duration, err error)
}

// TokenIssuer signs login tokens.
type TokenIssuer interface {
	Issue(userID int64, role string) (string, error)
}
