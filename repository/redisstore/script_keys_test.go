package redisstore

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"seckill/repository"
	"seckill/testkit/scripttest"
)

// TestScriptKeysMatchHeaders: each script's KEYS, as its header in scripts/
// lists them, are what this package builds. The count is the same. Each
// key is the header's pattern with its placeholders filled in.
func TestScriptKeysMatchHeaders(t *testing.T) {
	const shard, voucher, order, user = 5, int64(1234567), int64(98765), int64(4242)
	vars := map[string]string{
		"tag": ShardTag(shard), "voucherId": strconv.FormatInt(voucher, 10),
		"orderId": strconv.FormatInt(order, 10), "userId": strconv.FormatInt(user, 10),
		"keyHash": IdempotencyKeyHash("k-1"), "phone": "13800000000",
	}
	tests := []struct {
		script string
		keys   []string
	}{
		{"seckill.lua", SeckillKeysIn(StreamName, shard, voucher, order)},
		{"seckill_settle.lua", settleKeys(shard, order)},
		{"seckill_release.lua", releaseKeys(shard, voucher, order)},
		{"deadletter.lua", deadLetterKeys(StreamName, DeadLetterName, shard, voucher, order)},
		{"touch.lua", touchKeys(StreamName, shard)},
		{"giveback.lua", giveBackKeys(shard, voucher)},
		{"idempotency_begin.lua", idempotencyKeys(user, "k-1")},
		{"idempotency_finish.lua", idempotencyKeys(user, "k-1")},
		{"check_code.lua", codeKeys(vars["phone"])},
		{"live_history.lua", []string{LiveHistoryKey(voucher)}},
	}
	for _, tt := range tests {
		patterns, err := scripttest.KeysOf(filepath.Join("scripts", tt.script))
		if err != nil {
			t.Fatal(err)
		}
		if len(patterns) != len(tt.keys) {
			t.Errorf("%s: header lists %d KEYS %v, Go builds %d %v", tt.script, len(patterns), patterns, len(tt.keys), tt.keys)
			continue
		}
		for i, p := range patterns {
			if want := fill(t, p, vars); tt.keys[i] != want {
				t.Errorf("%s: KEYS[%d] is %q by its header (%s), Go builds %q", tt.script, i+1, want, p, tt.keys[i])
			}
		}
	}
}

// TestScriptKeysOneSlot: every script's KEYS lie in one cluster slot.
func TestScriptKeysOneSlot(t *testing.T) {
	for shard := range Shards {
		for _, keys := range [][]string{
			SeckillKeysIn(StreamName, shard, 7, 9), releaseKeys(shard, 7, 9),
			deadLetterKeys(StreamName, DeadLetterName, shard, 7, 9), giveBackKeys(shard, 7),
			idempotencyKeys(int64(shard)+1, "k-1"),
		} {
			for _, k := range keys[1:] {
				if repository.Slot(k) != repository.Slot(keys[0]) {
					t.Errorf("shard %d: %s and %s are in different slots", shard, keys[0], k)
				}
			}
		}
	}
}

// fill replaces each <name> of a header's pattern with vars[name].
func fill(t *testing.T, pattern string, vars map[string]string) string {
	t.Helper()
	var b strings.Builder
	for rest := pattern; rest != ""; {
		open := strings.IndexByte(rest, '<')
		if open < 0 {
			b.WriteString(rest)
			break
		}
		end := strings.IndexByte(rest[open:], '>')
		if end < 0 {
			t.Fatalf("pattern %q: unclosed <", pattern)
		}
		name := rest[open+1 : open+end]
		v, ok := vars[name]
		if !ok {
			t.Fatalf("pattern %q: no value for <%s>", pattern, name)
		}
		b.WriteString(rest[:open] + v)
		rest = rest[open+end+1:]
	}
	return b.String()
}

// TestRoomKeysMatchHeader: waiting_room.lua's KEYS, by its header, are
// what roomKeys builds, all in the voucher's slot.
func TestRoomKeysMatchHeader(t *testing.T) {
	const voucher = int64(1234565)
	vars := map[string]string{"tag": ShardTag(VoucherShard(voucher)), "voucherId": strconv.FormatInt(voucher, 10)}
	patterns, err := scripttest.KeysOf(filepath.Join("scripts", "waiting_room.lua"))
	if err != nil {
		t.Fatal(err)
	}
	keys := roomKeys(voucher)
	if len(patterns) != len(keys) {
		t.Fatalf("header lists %d KEYS, Go builds %d", len(patterns), len(keys))
	}
	for i, p := range patterns {
		if want := fill(t, p, vars); keys[i] != want {
			t.Errorf("KEYS[%d]: got %q, want %q", i+1, keys[i], want)
		}
		if repository.Slot(keys[i]) != repository.Slot(StockKey(voucher)) {
			t.Errorf("%s is not in the slot of the voucher's stock", keys[i])
		}
	}
}
