package app

import (
	"slices"
	"testing"

	"seckill/config"
	"seckill/lock"
	"seckill/service"
)

// TestConfigValuesArePackages: config's plain values are those of the
// packages app hands them to: the lock modes lock.New accepts, and the
// consumers' defaults.
func TestConfigValuesArePackages(t *testing.T) {
	if !slices.Equal(config.LockModes, lock.Modes) {
		t.Errorf("config.LockModes %v, want lock.Modes %v", config.LockModes, lock.Modes)
	}
	if config.DefaultConsumers != service.DefaultConsumers || config.DefaultClaimIdle != service.DefaultClaimIdle ||
		config.DefaultConsumerDuty != service.DefaultDuty || config.ConsumerBatchTimeout != service.DefaultBatchTimeout {
		t.Errorf("config's consumer defaults %d, %v, %v, %v; want the service's %d, %v, %v, %v",
			config.DefaultConsumers, config.DefaultClaimIdle, config.DefaultConsumerDuty, config.ConsumerBatchTimeout,
			service.DefaultConsumers, service.DefaultClaimIdle, service.DefaultDuty, service.DefaultBatchTimeout)
	}
}
