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
	if (cfg.LockMode == "redsync" || cfg.LockMode == "multi") && len(d.Nodes) < 2 {
		// One node has no majority to keep and no other node to refuse:
		// the lock is a plain SET NX, and a test or a load test of the
		// mode shows nothing of Redlock or MultiLock.
		name := map[string]string{"redsync": "Redlock", "multi": "MultiLock"}[cfg.LockMode]
		a.log.WarnContext(ctx, "SECKILL_LOCK_MODE="+cfg.LockMode+" on one Redis node: "+name+" on one node proves nothing "+
			"(it is a plain SET NX lock there); set SECKILL_REDLOCK_ADDRS to three or more independent Redis nodes (host:port,...)",
			"lock_mode", cfg.LockMode, "redlock_nodes", len(d.Nodes))
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
