package repository

import "testing"

// TestSlot: CRC16/XMODEM's check value, slots from the Redis Cluster
// specification, and hash tags. redisstore's TestShardSlots checks the
// shards' slots, and its TestSlotAgreesWithCluster a real cluster.
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
}
