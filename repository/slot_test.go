package repository

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSlot: CRC16/XMODEM's check value, slots from the Redis Cluster
// specification, and hash tags. Each shard tag lies in its sixteenth of the
// slot space. So every shard has a slot of its own.
func TestSlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16 check value: got %#x, want 0x31c3", got)
	}
	for key, want := range map[string]uint16{
		"foo": 12182, "bar": 5061, "{user1000}.following": Slot("user1000"),
		"{}x": crc16("{}x") % ClusterSlots, "a{b}{c}": Slot("b"), "{b": crc16("{b") % ClusterSlots,
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	seen := map[uint16]int{}
	for i := range Shards {
		sl := Slot(StreamKey(i))
		if int(sl)*Shards/ClusterSlots != i {
			t.Errorf("shard %d (tag %s): slot %d outside its range", i, ShardTag(i), sl)
		}
		if j, dup := seen[sl]; dup {
			t.Errorf("shards %d and %d share slot %d", j, i, sl)
		}
		seen[sl] = i
		for _, k := range []string{DeadLetterKey(i), EpochKey(i), OrderInfoKey(i, 42)} {
			if Slot(k) != sl {
				t.Errorf("%s: slot %d, want its shard's %d", k, Slot(k), sl)
			}
		}
	}
	for _, v := range []int64{1, 16, 17, 1 << 40} {
		sl := Slot(StreamKey(VoucherShard(v)))
		for _, k := range []string{StockKey(v), BuyersKey(v), VoucherKey(v)} {
			if Slot(k) != sl {
				t.Errorf("%s: slot %d, want its shard's %d", k, Slot(k), sl)
			}
		}
	}
}

// TestSlotAgreesWithCluster: the cluster's CLUSTER KEYSLOT agrees with
// Slot on the keys of every shard (with SECKILL_TEST_CLUSTER_ADDRS).
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
			if uint16(got) != Slot(k) {
				t.Errorf("CLUSTER KEYSLOT %s = %d, Slot says %d", k, got, Slot(k))
			}
		}
	}
}
