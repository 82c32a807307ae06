package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
	"seckill/repository/redisstore/scripts"
)

// Codes keeps login codes in Redis under login:code:<phone>, each with its
// count of wrong guesses ("<code>:<wrong>").
type Codes struct{ rdb redis.UniversalClient }

// NewCodes returns the code store.
func NewCodes(rdb redis.UniversalClient) *Codes { return &Codes{rdb: rdb} }

// SaveCode stores code for phone for ttl, with no wrong guesses. Redis
// errors are model.ErrUnavailable (the code flow needs Redis).
func (c *Codes) SaveCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	if err := c.rdb.Set(ctx, LoginCodeKey(phone), code+":0", ttl).Err(); err != nil {
		return model.Unavailable(err)
	}
	return nil
}

// CheckCode compares code with phone's code atomically (check_code.lua): ok on
// a match, which deletes it. A wrong guess is counted and the maxWrong-th
// deletes the code. No code is not ok. Redis errors are
// model.ErrUnavailable.
func (c *Codes) CheckCode(ctx context.Context, phone, code string, maxWrong int) (bool, error) {
	n, err := scripts.CheckCode.Run(ctx, c.rdb, codeKeys(phone), code, maxWrong).Int()
	if err != nil {
		return false, model.Unavailable(err)
	}
	return n == 1, nil
}
