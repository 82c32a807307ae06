package testbed

import (
	"time"

	"golang.org/x/sys/unix"
)

// MachineNanos reads CLOCK_MONOTONIC: one clock for every process of the
// machine, which never steps (time.Now's monotonic reading is relative to
// each process's start, so it cannot order events across processes).
func MachineNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
