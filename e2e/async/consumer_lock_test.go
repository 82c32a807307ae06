package async

import (
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/lock"
)

// TestConsumerLockSetting: the consumers take lock:order:<userId> only with
// SECKILL_CONSUMER_LOCK=on. Each lock granted leaves its fencing counter
// behind. So after the drain the buyers have one counter each with the
// lock on, and none by default. The orders are written and the invariants
// hold either way. It runs on one Redis, and on the cluster with
// `make test-cluster`.
func TestConsumerLockSetting(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want int64 // fencing counters of the buyers after the drain
	}{
		{"default", nil, 0},
		{"on", map[string]string{"SECKILL_CONSUMER_LOCK": "on"}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := apptest.StartAsync(t, tt.env)
			db := apptest.OpenDB(t)
			const users, stock = 3, 5
			vid := apptest.PublishVoucher(t, a.Handler(), stock)
			base := apptest.RandomBase()
			seen := apptest.Storm(t, []http.Handler{a.Handler()}, vid, base, users, 1)
			if got := seen.ByCode["OK"]; got != users {
				t.Fatalf("got %d admissions, want %d: %v", got, users, seen.ByCode)
			}
			apptest.WaitDrained(t, a.Handler(), vid, users)
			if orders := apptest.CheckInvariants(t, db, vid, seen); orders != users {
				t.Errorf("got %d orders, want %d", orders, users)
			}
			rdb := apptest.SharedRedis(t)
			_, cluster := rdb.(*redis.ClusterClient)
			var fences int64
			for i := range int64(users) {
				key := lock.OrderKey(base + i + 1)
				fence := lock.FenceKey(key)
				if cluster {
					fence = lock.ClusterFenceKey(key)
				}
				n, err := rdb.Exists(t.Context(), fence).Result()
				if err != nil {
					t.Fatal(err)
				}
				fences += n
			}
			if fences != tt.want {
				t.Errorf("fencing counters of the %d buyers: got %d, want %d", users, fences, tt.want)
			}
		})
	}
}
