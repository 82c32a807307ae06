package app

import (
	"context"
	"fmt"
	"io"

	"seckill/config"
	"seckill/lock"
	"seckill/observe/telemetry"
	"seckill/repository/sqlstore"
)

// openLocker opens the per-user lock of SECKILL_LOCK_MODE and starts the
// tracing. The locker is traced when tracing is on. What needs closing joins
// a.closers.
func (a *App) openLocker(ctx context.Context, cfg config.Config, given *telemetry.Tracing) (lock.Locker, *telemetry.Tracing, error) {
	d := a.deps
	lockDeps := lock.Deps{Redis: d.Redis, Nodes: d.Nodes, ZKServers: cfg.ZKAddrs}
	if cfg.LockMode == "mysql" {
		lockDB, err := sqlstore.OpenLockDB(ctx, cfg.MySQLDSN)
		if err != nil {
			return nil, nil, err
		}
		a.closers = append(a.closers, lockDB)
		lockDeps.DB = lockDB
	}
	locker, err := lock.New(cfg.LockMode, lockDeps, lock.WithTTL(cfg.LockTTL),
		lock.WithWaitReplicas(cfg.LockWaitReplicas, cfg.LockWaitTimeout))
	if err != nil {
		return nil, nil, fmt.Errorf("SECKILL_LOCK_MODE=%s: %w", cfg.LockMode, err)
	}
	if c, ok := locker.(io.Closer); ok {
		a.closers = append(a.closers, c)
	}
	tr, err := a.startTracing(ctx, cfg, given)
	if err != nil {
		return nil, nil, err
	}
	if tr != nil {
		locker = tr.Locker(locker)
	}
	return locker, tr, nil
}
