// Package cpu reads CPU time for the benchmarks. It reads this process's
// (getrusage) and a Redis server's (INFO cpu). So a benchmark can report CPU
// per operation on both sides. Test support only: nothing in the product
// imports it.
package cpu

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Self returns the user plus system CPU time this process has used.
func Self() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Redis returns the user plus system CPU time the Redis server behind c has
// used. INFO cpu gives it as used_cpu_user + used_cpu_sys.
func Redis(ctx context.Context, c redis.UniversalClient) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	return parseRedis(info)
}

// parseRedis sums used_cpu_user and used_cpu_sys of an INFO cpu reply.
func parseRedis(info string) (time.Duration, error) {
	var sum float64
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_sys" && k != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %q: %w", line, err)
		}
		sum += f
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu: used_cpu_user and used_cpu_sys not both found")
	}
	return time.Duration(sum * float64(time.Second)), nil
}
