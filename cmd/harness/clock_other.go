//go:build !linux

package main

import "time"

// machineNanos is the wall clock where CLOCK_MONOTONIC is not available.
func machineNanos() int64 { return time.Now().UnixNano() }
