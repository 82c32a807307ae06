package app

import (
	"context"
	"time"

	"seckill/service/account"
)

// RevocationReload is how often each instance reloads the token revocations. A
// revoked token stops working within it on every non-admin route.
const RevocationReload = time.Second

// revocationReloads reloads the token revocations every period, so the
// non-admin routes refuse a revoked token from memory.
type revocationReloads struct{ loop }

func newRevocationReloads(set *account.RevocationSet, period time.Duration) *revocationReloads {
	return &revocationReloads{loop{run: func(ctx context.Context) { set.Run(ctx, period) }}}
}

// Name is "revocation reloads".
func (*revocationReloads) Name() string { return "revocation reloads" }
