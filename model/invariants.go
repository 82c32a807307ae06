package model

import (
	"fmt"
	"sort"
	"strings"
)

// This file is the one implementation of the invariants of docs/contract.md.
// Orders holding a unit are the unpaid and paid ones. A cancelled or expired
// order's unit is back on sale, exactly once. The audit, the end-to-end tests,
// the load-test driver and the harness all call it. Counts.Violations judges
// what counts can tell. Facts.Violations judges the full facts: order lists and
// announced orders.

// Violation is one broken invariant.
type Violation struct {
	Invariant int    `json:"invariant"` // 1 to 6
	Msg       string `json:"msg"`
}

func (v Violation) String() string { return fmt.Sprintf("invariant %d: %s", v.Invariant, v.Msg) }

// Counts is what the invariants need to know about one voucher as numbers.
// Orders counts the orders holding a unit: unpaid and paid. Cancelled counts
// the cancelled and expired ones, whose units are back on sale. Their buyers
// keep the slot: DistinctUsers counts every order's buyer.
type Counts struct {
	InitialStock, Stock   int64
	Orders, DistinctUsers int64
	Cancelled             int64
	// PaidCancelled counts cancelled orders that had been paid: must be 0.
	PaidCancelled int64
	// Async holds the Redis side in async mode; nil in sync mode.
	Async *AsyncCounts
}

// AsyncCounts is the Redis side of one voucher in async mode.
type AsyncCounts struct {
	RedisStock int64
	Pending    int64 // announced orders not written yet (0 once drained)
	// Buyers is the size of the buyers set; nil when unknown (the audit
	// route does not report it), which skips that half of invariant 5.
	Buyers *int64
	// Returned is how many cancelled orders' units Redis took back (the
	// returned sets' sizes); nil when unknown, read as all of them.
	Returned *int64
}

// Oversold says invariant 1 is broken: more orders than initial stock.
func (c Counts) Oversold() bool { return c.Orders > c.InitialStock }

// Violations returns the invariants broken by the counts, at most one per
// invariant (4 needs the order lists: see Facts).
func (c Counts) Violations() []Violation {
	var v []Violation
	if c.Oversold() {
		v = append(v, Violation{1, fmt.Sprintf("%d orders > initial stock %d (oversold)", c.Orders, c.InitialStock)})
	}
	if c.Orders != c.InitialStock-c.Stock {
		v = append(v, Violation{2, fmt.Sprintf("%d orders != initial %d - stock %d = %d", c.Orders, c.InitialStock, c.Stock, c.InitialStock-c.Stock)})
	}
	if all := c.Orders + c.Cancelled; c.DistinctUsers != all {
		v = append(v, Violation{3, fmt.Sprintf("%d orders for %d distinct users", all, c.DistinctUsers)})
	}
	var given []string // invariant 6
	if c.PaidCancelled > 0 {
		given = append(given, fmt.Sprintf("%d paid orders cancelled", c.PaidCancelled))
	}
	if a := c.Async; a != nil {
		var msgs []string
		due := int64(0)
		if a.Returned != nil {
			due = c.Cancelled - *a.Returned
			if due < 0 {
				given = append(given, fmt.Sprintf("redis took back %d units for %d cancelled orders", *a.Returned, c.Cancelled))
			}
		}
		if got := a.RedisStock + c.Orders + a.Pending + due; got != c.InitialStock {
			msgs = append(msgs, fmt.Sprintf("redis stock %d + orders %d + pending %d + give-backs due %d = %d != initial %d",
				a.RedisStock, c.Orders, a.Pending, due, got, c.InitialStock))
		}
		if a.Buyers != nil && *a.Buyers != c.Orders+c.Cancelled+a.Pending {
			msgs = append(msgs, fmt.Sprintf("buyers set %d != orders %d + cancelled %d + pending %d", *a.Buyers, c.Orders, c.Cancelled, a.Pending))
		}
		if len(msgs) > 0 {
			v = append(v, Violation{5, strings.Join(msgs, "; ")})
		}
	}
	if len(given) > 0 {
		v = append(v, Violation{6, strings.Join(given, "; ")})
	}
	return v
}

// Announced is one order id a 200 response announced.
type Announced struct {
	OrderID int64
	UserID  int64 // 0 when the client did not record it
}

// Facts is everything known about one voucher after a load.
// It holds the database's stock and orders, the 200 responses the clients saw,
// and in async mode Redis.
type Facts struct {
	InitialStock, Stock int64
	Orders              map[int64]int64 // order id -> user id, every status
	// Cancelled holds the ids among Orders that are cancelled or expired;
	// PaidCancelled counts those of them that had been paid.
	Cancelled     map[int64]bool
	PaidCancelled int64
	// Announced lists one entry per 200 response; nil Announced with
	// CheckAnnounced false skips invariant 4.
	Announced      []Announced
	CheckAnnounced bool
	Async          *AsyncCounts
}

// Counts reduces the facts to counts.
func (f Facts) Counts() Counts {
	users := map[int64]bool{}
	for _, u := range f.Orders {
		users[u] = true
	}
	var cancelled int64
	for id := range f.Cancelled {
		if _, ok := f.Orders[id]; ok {
			cancelled++
		}
	}
	return Counts{InitialStock: f.InitialStock, Stock: f.Stock,
		Orders: int64(len(f.Orders)) - cancelled, Cancelled: cancelled, PaidCancelled: f.PaidCancelled,
		DistinctUsers: int64(len(users)), Async: f.Async}
}

// Violations returns the broken invariants, at most one per invariant, in
// order. Invariants 1, 2, 3 and 5 come from the counts, 3 naming the users.
// Invariant 4 comes from the order lists.
func (f Facts) Violations() []Violation {
	v := f.Counts().Violations()
	for i := range v {
		if v[i].Invariant == 3 {
			v[i].Msg += ": " + f.multiBuyers()
		}
	}
	if f.CheckAnnounced {
		if m := f.announcedMismatch(); m != "" {
			v = append(v, Violation{4, m})
		}
	}
	sort.SliceStable(v, func(i, j int) bool { return v[i].Invariant < v[j].Invariant })
	return v
}

// multiBuyers names the users holding more than one order.
func (f Facts) multiBuyers() string {
	per := map[int64]int{}
	for _, u := range f.Orders {
		per[u]++
	}
	var users []int64
	for u, n := range per {
		if n > 1 {
			users = append(users, u)
		}
	}
	sort.Slice(users, func(i, j int) bool { return users[i] < users[j] })
	parts := make([]string, 0, len(users))
	for k, u := range users {
		if k == 5 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("user %d has %d orders", u, per[u]))
	}
	return fmt.Sprintf("%d users hold more than one order (%s)", len(users), strings.Join(parts, ", "))
}

// announcedMismatch compares the 200 responses with the orders; "" when they
// agree. Every announced order is in the database for its user, announced once.
// Every order was announced.
func (f Facts) announcedMismatch() string {
	seen := map[int64]int{}
	var missing, wrongUser, twice, unannounced []int64
	for _, a := range f.Announced {
		seen[a.OrderID]++
		if seen[a.OrderID] == 2 {
			twice = append(twice, a.OrderID)
		}
		if seen[a.OrderID] > 1 {
			continue
		}
		u, ok := f.Orders[a.OrderID]
		switch {
		case !ok:
			missing = append(missing, a.OrderID)
		case a.UserID != 0 && u != a.UserID:
			wrongUser = append(wrongUser, a.OrderID)
		}
	}
	for id := range f.Orders {
		if seen[id] == 0 {
			unannounced = append(unannounced, id)
		}
	}
	var msgs []string
	add := func(ids []int64, what string) {
		if len(ids) > 0 {
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			msgs = append(msgs, fmt.Sprintf("%d %s %s", len(ids), what, idList(ids)))
		}
	}
	add(missing, "order ids answered with 200 are not in the database")
	add(wrongUser, "order ids answered with 200 belong to another user in the database")
	add(unannounced, "orders in the database were never answered with 200")
	add(twice, "order ids were answered twice")
	return strings.Join(msgs, "; ")
}

func idList(ids []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for k, id := range ids {
		if k == 5 {
			b.WriteString(" ...")
			break
		}
		if k > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, id)
	}
	b.WriteByte(']')
	return b.String()
}
