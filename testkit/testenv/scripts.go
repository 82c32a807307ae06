package testenv

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptCounter is a go-redis hook that counts the script runs (EVALSHA
// and EVAL, piped or not) a client asks for, and the round trips that carry
// them. An EVALSHA refused with NOSCRIPT is not a run: the EVAL that
// follows it is. Add it with client.AddHook.
type ScriptCounter struct {
	Trips, Scripts atomic.Int64
}

// Reset zeroes both counts.
func (h *ScriptCounter) Reset() {
	h.Trips.Store(0)
	h.Scripts.Store(0)
}

// DialHook leaves dialing alone.
func (h *ScriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts a single command.
func (h *ScriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count([]redis.Cmder{cmd}, []error{err})
		return err
	}
}

// ProcessPipelineHook counts a pipeline's commands.
func (h *ScriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		errs := make([]error, len(cmds))
		for i, cmd := range cmds {
			errs[i] = cmd.Err()
		}
		h.count(cmds, errs)
		return err
	}
}

// count counts cmds, each with the error it got. A single command's
// error is set on it only after the hooks return: the caller passes it.
func (h *ScriptCounter) count(cmds []redis.Cmder, errs []error) {
	n := 0
	for i, cmd := range cmds {
		name := cmd.Name()
		if name == "eval" || name == "evalsha" && !redis.HasErrorPrefix(errs[i], "NOSCRIPT") {
			n++
		}
	}
	if n > 0 {
		h.Trips.Add(1)
		h.Scripts.Add(int64(n))
	}
}
