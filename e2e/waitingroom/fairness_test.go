package waitingroom

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/model"
	"seckill/testkit/fairness"
)

// TestFairnessScaledDown is the fairness run (testkit/fairness) at a size
// for the test suite: 600 buyers, 2 % of them bots, 15 units, two
// instances on loopback. Exactly the units are sold, none without a token,
// bots' tokenless purchases are refused, and every joiner who stayed
// learns the outcome. The bots' share and its p-value are logged (the full
// run's figures are in tools/loadtest/fairness/RESULTS.md). With
// SECKILL_TEST_ON_CLUSTER=1 it runs on the Redis Cluster in async mode, the
// voucher's stock in 4 buckets (tools/loadtest/fairness/cluster).
func TestFairnessScaledDown(t *testing.T) {
	bases := fairnessBases(t)
	first := users(1)[0]
	res, err := fairness.Run(context.Background(), fairness.Config{
		Bases: bases, Buyers: 600, Units: 15, BotShare: 0.02, BotJoins: 5, BotEvery: 20 * time.Millisecond,
		NoShow: 0.1, StartAfter: 4 * time.Second, Deadline: time.Minute, Conns: 16,
		AdminToken: apptest.AdminToken(t, nil), FirstUser: first, Seed: 35,
		Token: func(id int64) (string, error) { return apptest.DevTokens().Issue(id, model.RoleUser) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sold %d (bots %d of %d buyers, %d bots): bots' share of units %.3f vs of joiners %.3f, p = %.3g; learned %d, max %s after the last sale; walked away %d; requests %v; room %s",
		res.Sold, res.SoldByBots, res.Buyers, res.Bots, res.BotShareUnits, res.BotShareJoiners, res.PValue, res.Learned, res.LearnedMax, res.WalkedAway, res.Requests, res.Room)
	if res.Sold != 15 || res.Orders != 15 {
		t.Errorf("got %d sold and %d orders, want 15 and 15", res.Sold, res.Orders)
	}
	if res.TokenlessSold != 0 || res.TokenlessRefused == 0 {
		t.Errorf("purchases without a token: got %d sold, %d refused, want 0 sold and some refused", res.TokenlessSold, res.TokenlessRefused)
	}
	if res.Unlearned != 0 {
		t.Errorf("got %d joiners who never learned the outcome, want 0", res.Unlearned)
	}
	if len(res.Errors) > 0 {
		t.Errorf("errors: %v", res.Errors)
	}
}

// fairnessBases starts the two instances of a scaled-down fairness run: a
// 2 s admission TTL; on the Redis Cluster in async mode, the voucher's
// stock in 4 buckets, with SECKILL_TEST_ON_CLUSTER=1.
func fairnessBases(t *testing.T) []string {
	env := apptest.RedisVars(t)
	env["SECKILL_WAITING_ROOM_TOKEN_TTL"] = "2s"
	start := apptest.Start
	if apptest.OnCluster() {
		env["SECKILL_STOCK_BUCKETS"] = "4"
		start = apptest.StartAsync
	}
	var bases []string
	for range 2 {
		srv := httptest.NewServer(start(t, env).Handler())
		t.Cleanup(srv.Close)
		bases = append(bases, srv.URL)
	}
	return bases
}

// TestFairnessSybilScaledDown is the scaled-down run with one person
// holding half of the 600 accounts (each an ordinary account that joins
// once, polls when told and always buys when admitted), 40 units: the
// room gives each account one draw entry, so the person's units are a
// binomial draw of the sold units at half each. It fails when the test of
// that share rejects at 0.1 % (the person rewarded or punished beyond
// their entries: fewer than 10 or more than 30 units of 40), a level at
// which a fair room fails it once in a thousand runs.
func TestFairnessSybilScaledDown(t *testing.T) {
	bases := fairnessBases(t)
	const buyers, units, accounts = 600, 40, 300
	res, err := fairness.Run(context.Background(), fairness.Config{
		Bases: bases, Buyers: buyers, Units: units, BotShare: 0.02, BotJoins: 5, BotEvery: 20 * time.Millisecond,
		NoShow: 0.1, StartAfter: 4 * time.Second, Deadline: time.Minute, Conns: 16,
		AdminToken: apptest.AdminToken(t, nil), FirstUser: users(1)[0], Seed: 36,
		Token:         func(id int64) (string, error) { return apptest.DevTokens().Issue(id, model.RoleUser) },
		SybilAccounts: accounts,
	})
	if err != nil {
		t.Fatal(err)
	}
	sy := res.Sybil
	if sy == nil {
		t.Fatal("no figures of the person holding many accounts")
	}
	t.Logf("sold %d; the person's %d accounts: %d admitted, %d units won vs %.1f fair (%d × %.4g), ratio %.2f, p = %.3g; expected among the joiners who buy %.1f; errors %v",
		res.Sold, sy.Accounts, sy.Admitted, sy.Won, sy.FairN, sy.Accounts, sy.FairOne, sy.Ratio, sy.PValue, sy.FairNBuying, res.Errors)
	if res.Sold != units || res.Orders != units {
		t.Fatalf("got %d sold and %d orders, want %d and %d", res.Sold, res.Orders, units, units)
	}
	if res.TokenlessSold != 0 {
		t.Errorf("got %d purchases without a token sold, want 0", res.TokenlessSold)
	}
	if sy.Won > sy.Admitted {
		t.Errorf("the person won %d units with %d accounts admitted", sy.Won, sy.Admitted)
	}
	if lo, hi := fairness.BinomialRange(res.Sold, float64(accounts)/buyers, 0.001); sy.Won < lo || sy.Won > hi {
		t.Errorf("the person won %d units of %d with %d of %d accounts: outside %d..%d, the range a test of that share accepts at 0.1 %% (p = %.3g)",
			sy.Won, res.Sold, accounts, buyers, lo, hi, sy.PValue)
	}
	if len(res.Errors) > 0 {
		t.Errorf("errors: %v", res.Errors)
	}
}
