package waitingroom

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"seckill/e2e/apptest"
	"seckill/internal/fairness"
	"seckill/model"
)

// TestFairnessScaledDown is the fairness run (internal/fairness) at a size
// for the test suite: 600 buyers, 2 % of them bots, 15 units, two
// instances on loopback. Exactly the units are sold, none without a token,
// bots' tokenless purchases are refused, and every joiner who stayed
// learns the outcome. The bots' share and its p-value are logged (the full
// run's figures are in tools/loadtest/fairness/RESULTS.md). With
// SECKILL_TEST_ON_CLUSTER=1 it runs on the Redis Cluster in async mode, the
// voucher's stock in 4 buckets (tools/loadtest/fairness/cluster).
func TestFairnessScaledDown(t *testing.T) {
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
