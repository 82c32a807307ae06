package scripts_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/repository/redisstore/scripts"
	"seckill/testkit/scripttest"
)

// TestHeaders: every script opens with a comment naming its KEYS, ARGV and
// return values.
func TestHeaders(t *testing.T) { scripttest.CheckHeaders(t, ".") }

// TestScriptsLoad: every script compiles (SCRIPT LOAD) under the hash its
// redis.Script value sends.
func TestScriptsLoad(t *testing.T) {
	scripttest.CheckLoad(t, map[string]*redis.Script{
		"Seckill": scripts.Seckill, "SeckillSettle": scripts.SeckillSettle, "SeckillRelease": scripts.SeckillRelease,
		"CheckCode":  scripts.CheckCode,
		"DeadLetter": scripts.DeadLetter, "Touch": scripts.Touch, "GiveBack": scripts.GiveBack,
		"IdempotencyBegin": scripts.IdempotencyBegin, "IdempotencyFinish": scripts.IdempotencyFinish,
	})
}
