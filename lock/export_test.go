package lock

// Test hooks, visible to package lock_test only.

// SetOwnerPauseForTest makes o run pause between the GET and the DEL of
// every Release, to reproduce the check-then-delete race.
func SetOwnerPauseForTest(o *Owner, pause func()) { o.pauseBeforeDelete = pause }

// RenewalsForTest reports how many watchdog renewals of r succeeded.
func RenewalsForTest(r *Reentrant) int64 { return r.renewals.Load() }

// LocalSizeForTest reports how many keys l keeps an entry for.
func LocalSizeForTest(l *Local) int { return l.size() }
