package app

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"seckill/service/account"
)

// listed is a account.RevocationLister that revokes user 7 from the second
// load on. It tells each load to a channel, without waiting.
type listed struct {
	n     atomic.Int64
	loads chan int64
}

func (l *listed) NotBefore(context.Context) (map[int64]time.Time, error) {
	n := l.n.Add(1)
	select {
	case l.loads <- n:
	default:
	}
	if n < 2 {
		return map[int64]time.Time{}, nil
	}
	return map[int64]time.Time{7: time.Unix(2000, 0)}, nil
}

// TestRevocationReloads: the component reloads the set on its period, so a
// revocation made after the start reaches the routes. Stop ends the reloads.
func TestRevocationReloads(t *testing.T) {
	l := &listed{loads: make(chan int64, 100)}
	set := account.NewRevocationSet(l, discard())
	if err := set.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1000, 0)
	if set.Revoked(7, old) {
		t.Fatal("user 7 revoked before any reload")
	}
	r := newRevocationReloads(set, time.Millisecond)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The start's load, then two reloads: the first reload's set is stored
	// before the second starts.
	for range 3 {
		<-l.loads
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !set.Revoked(7, old) {
		t.Error("user 7's revocation did not reach the set through the reloads")
	}
	if r.running() {
		t.Error("the reloads run after Stop")
	}
}
