package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// redisErr maps go-redis errors: redis.Nil is not an error of this layer.
// Connection problems (including a connection closed mid-reply: io.EOF)
// are model.ErrUnavailable.
func redisErr(err error) error {
	if err == nil {
		return nil
	}
	var netErr net.Error
	if isClusterUnavailable(err) {
		return model.Unavailable(err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, redis.ErrClosed) || errors.As(err, &netErr) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return model.Unavailable(err)
	}
	return fmt.Errorf("redis: %w", err)
}

// isClusterUnavailable reports the errors of a Redis node that cannot
// serve the key for now. CLUSTERDOWN: some slots have no master, as during
// a failover. TRYAGAIN: a slot is moving. LOADING: the node loads its data.
// MASTERDOWN: a replica lost its master. READONLY: a write reached a
// replica, such as a demoted master.
func isClusterUnavailable(err error) bool {
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
