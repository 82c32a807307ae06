package redisstore

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"seckill/repository"
)

// TestShardSlots: each shard tag lies in its sixteenth of the slot space,
// so every shard has a slot of its own, and a shard's keys share it.
func TestShardSlots(t *testing.T) {
	seen := map[uint16]int{}
	for i := range Shards {
		sl := repository.Slot(StreamKey(i))
		if int(sl)*Shards/repository.ClusterSlots != i {
			t.Errorf("shard %d (tag %s): slot %d outside its range", i, ShardTag(i), sl)
		}
		if j, dup := seen[sl]; dup {
			t.Errorf("shards %d and %d share slot %d", j, i, sl)
		}
		seen[sl] = i
		for _, k := range []string{DeadLetterKey(i), EpochKey(i), OrderInfoKey(i, 42)} {
			if repository.Slot(k) != sl {
				t.Errorf("%s: slot %d, want its shard's %d", k, repository.Slot(k), sl)
			}
		}
	}
	for _, v := range []int64{1, 16, 17, 1 << 40} {
		sl := repository.Slot(StreamKey(VoucherShard(v)))
		for _, k := range []string{StockKey(v), BuyersKey(v), VoucherKey(v)} {
			if repository.Slot(k) != sl {
				t.Errorf("%s: slot %d, want its shard's %d", k, repository.Slot(k), sl)
			}
		}
	}
}

// TestSlotAgreesWithCluster: the cluster's CLUSTER KEYSLOT agrees with
// repository.Slot on the keys of every shard (with
// SECKILL_TEST_CLUSTER_ADDRS).
func TestSlotAgreesWithCluster(t *testing.T) {
	addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS")
	if addrs == "" {
		t.Skip("SECKILL_TEST_CLUSTER_ADDRS not set")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	defer c.Close()
	for i := range Shards {
		for _, k := range []string{StreamKey(i), StockKey(int64(i)), "lock:order:" + ShardTag(i)} {
			got, err := c.ClusterKeySlot(context.Background(), k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if uint16(got) != repository.Slot(k) {
				t.Errorf("CLUSTER KEYSLOT %s = %d, Slot says %d", k, got, repository.Slot(k))
			}
		}
	}
}
