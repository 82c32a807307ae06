//go:build !linux

package testbed

import "time"

// MachineNanos is the wall clock where CLOCK_MONOTONIC is not available.
func MachineNanos() int64 { return time.Now().UnixNano() }
