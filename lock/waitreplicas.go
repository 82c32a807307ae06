package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// runWaited runs script and then WAIT o.WaitReplicas o.WaitReplicasTimeout
// in one pipeline. A go-redis pipeline writes its commands on one pooled
// connection and reads the replies in order. WAIT counts the replicas that
// acknowledged that connection's last write, which is the script's. It falls
// back to EVAL on NOSCRIPT, as redis.Script.Run does. cmd is the script's
// reply. acks is WAIT's answer, or waitErr when WAIT got none. The script
// may still have run then, and the caller undoes its grant.
func runWaited(ctx context.Context, c redis.UniversalClient, o Options, script *redis.Script,
	keys []string, args ...any) (cmd *redis.Cmd, acks int64, waitErr error) {
	run := func(eval bool) (*redis.Cmd, *redis.Cmd) {
		pipe := c.Pipeline()
		var cmd *redis.Cmd
		if eval {
			cmd = script.Eval(ctx, pipe, keys, args...)
		} else {
			cmd = script.EvalSha(ctx, pipe, keys, args...)
		}
		wait := pipe.Do(ctx, "WAIT", o.WaitReplicas, o.WaitReplicasTimeout.Milliseconds())
		// Each command carries its own error; Exec's is the first of them.
		_, _ = pipe.Exec(ctx) //nolint:errcheck
		return cmd, wait
	}
	cmd, wait := run(false)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd, wait = run(true)
	}
	acks, err := wait.Int64()
	if err != nil {
		return cmd, 0, fmt.Errorf("WAIT %d: %w", o.WaitReplicas, err)
	}
	return cmd, acks, nil
}

// errTooFewReplicas is the reason of an ErrNotObtained whose grant was
// undone because fewer replicas than asked acknowledged it.
func errTooFewReplicas(o Options, acks int64) error {
	return fmt.Errorf("%w: %d of %d replicas acknowledged the grant within %v (undone)",
		ErrNotObtained, acks, o.WaitReplicas, o.WaitReplicasTimeout)
}

// checkWaitClient refuses WAIT on Redis Cluster, whose pipelines send a
// keyless WAIT to a node of their choice, not on the script's connection.
func checkWaitClient(o Options, c redis.UniversalClient) error {
	if _, cluster := c.(*redis.ClusterClient); cluster && o.WaitReplicas > 0 {
		return errors.New("lock: WAIT for replicas needs one primary, not Redis Cluster")
	}
	return nil
}
