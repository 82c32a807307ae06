package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// life is what buyers do after a purchase: pay (share pay), cancel (share
// cancel) or walk away (the rest), and what the server answered.
type life struct {
	pay, cancel float64
	mu          sync.Mutex
	counts      map[string]int
}

func newLife(pay, cancel float64) *life {
	return &life{pay: pay, cancel: cancel, counts: map[string]int{}}
}

// after acts on a purchase answered 200, on the instance that sold it.
func (l *life) after(ctx context.Context, cl *client, base, orderID, token string) {
	if l == nil || l.pay+l.cancel == 0 {
		return
	}
	action := "walk"
	switch r := rand.Float64(); {
	case r < l.pay:
		action = "pay"
	case r < l.pay+l.cancel:
		action = "cancel"
	}
	if action == "walk" {
		l.count("walk_away")
		return
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, env, _, err := cl.do(ctx, http.MethodPost, base+"/voucher-order/"+orderID+"/"+action, token, nil)
		code := "TRANSPORT"
		switch {
		case err == nil && status == http.StatusOK:
			code = "OK"
		case env != nil && env.Code != "":
			code = env.Code
		}
		if code == "ORDER_PENDING" && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		l.count(action + "_" + code)
		return
	}
}

func (l *life) count(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[k]++
}

// lines are the summary lines life_<what>=<n>, sorted.
func (l *life) lines() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "life_%s=%d\n", k, l.counts[k])
	}
	return b.String()
}

// settle polls the audit until no order is unpaid or pending and no
// give-back is due (every walked-away order expired), for at most wait.
func settle(ctx context.Context, cl *client, base, admin, voucherID string, wait time.Duration) (*audit, error) {
	deadline := time.Now().Add(wait)
	for {
		a, err := cl.audit(ctx, base, admin, voucherID)
		if err == nil && a.Unpaid == 0 && (a.Pending == nil || *a.Pending == 0) && (a.GivebacksDue == nil || *a.GivebacksDue == 0) {
			return a, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("not settled after %v: %d unpaid", wait, a.Unpaid)
			}
			return a, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
