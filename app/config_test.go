package app

import (
	"slices"
	"testing"

	"seckill/config"
	"seckill/lock"
	"seckill/service/async"
)

// TestConfigValuesArePackages: config's plain values are those of the
// packages app hands them to: the lock modes lock.New accepts, and the
// consumers' defaults.
func TestConfigValuesArePackages(t *testing.T) {
	if !slices.Equal(config.LockModes, lock.Modes) {
		t.Errorf("config.LockModes %v, want lock.Modes %v", config.LockModes, lock.Modes)
	}
	if config.DefaultConsumers != async.DefaultConsumers || config.DefaultClaimIdle != async.DefaultClaimIdle ||
		config.DefaultConsumerDuty != async.DefaultDuty || config.ConsumerBatchTimeout != async.DefaultBatchTimeout {
		t.Errorf("config's consumer defaults %d, %v, %v, %v; want the service's %d, %v, %v, %v",
			config.DefaultConsumers, config.DefaultClaimIdle, config.DefaultConsumerDuty, config.ConsumerBatchTimeout,
			async.DefaultConsumers, async.DefaultClaimIdle, async.DefaultDuty, async.DefaultBatchTimeout)
	}
}
