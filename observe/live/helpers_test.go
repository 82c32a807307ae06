package live

import (
	"log/slog"
	"time"

	"seckill/testkit/testenv"
)

// newClock returns the tests' clock, at a fixed start.
func newClock() *testenv.Clock { return testenv.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) }

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
