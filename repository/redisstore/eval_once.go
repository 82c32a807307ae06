package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// A script whose reply may be lost is sent at most once: a second send
// could act twice. evalOnce sends it so, and reloads it on NOSCRIPT.

// onceCmd is a command go-redis sends at most once. A failure may come
// after it was written: a lost reply, a timeout. Then it returns the error
// instead of sending again on another connection.
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command a second time.
func (onceCmd) NoRetry() bool { return true }

// evalOnce sends script by EVALSHA with args, at most once. args are what
// follows the hash: the key count, the keys, then ARGV. On NOSCRIPT the
// script did not run: it loads the script and sends EVALSHA once more.
func evalOnce(ctx context.Context, c redis.UniversalClient, script *redis.Script, args []any) *redis.Cmd {
	send := func() *redis.Cmd {
		cmd := newEvalSHA(ctx, script.Hash(), args)
		_ = c.Process(ctx, onceCmd{cmd}) // the error is the command's
		return cmd
	}
	cmd := send()
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := script.Load(ctx, c).Err(); err != nil {
			cmd.SetErr(err)
			return cmd
		}
		cmd = send()
	}
	return cmd
}

// newEvalSHA returns the command EVALSHA hash args....
func newEvalSHA(ctx context.Context, hash string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 2+len(args))
	cmdArgs = append(cmdArgs, "evalsha", hash)
	return redis.NewCmd(ctx, append(cmdArgs, args...)...)
}
