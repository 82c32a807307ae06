package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/repository/redisstore"
)

// The waiting room's cost (docs/waiting-room.md), measured right after
// sync-<lock> (today's purchase) by a server of the same modes on a voucher
// with a room and ample stock (so every joiner is admitted at once):
//
//	sync-<lock>-room-join  wrk POST .../queue, a new user per request while
//	                       the tokens file lasts: the join, ÷ the no-op;
//	sync-<lock>-room-poll  wrk GET .../queue, cycling over buyers waiting in
//	                       the room of a second voucher (stock 1), each
//	                       with the place ticket of its join (Queue-Ticket):
//	                       the poll of the many who wait, ÷ the no-op;
//	sync-<lock>-room-buy   wrk POST the purchase with Admission-Token, each
//	                       of those buyers once: ÷ sync-<lock>.

// roomWaiting is how many buyers wait in the room of the poll run.
const roomWaiting = 2000

// roomTTL keeps the admissions made before the poll and the purchase alive
// through both runs.
const roomTTL = "SECKILL_WAITING_ROOM_TOKEN_TTL=10m"

// roomRunNames are the waiting room's runs after sync-<lm>.
func roomRunNames(lm string) (join, poll, buy string) {
	base := "sync-" + lm + "-room"
	return base + "-join", base + "-poll", base + "-buy"
}

// roomPoolName is the run of joins before the start (into the pool).
func roomPoolName(lm string) string { return "sync-" + lm + "-room-pool" }

// roomRuns measures the join, the poll and an admitted purchase.
func (b seckillRuns) roomRuns(lm string) {
	join, poll, buy := roomRunNames(lm)
	b.logf("the waiting room: join, poll and an admitted purchase (server: sync, %s, %s)", lm, roomTTL)
	b.noteCmd(fmt.Sprintf("# sync-%s-room-*: the server started with %s, a voucher published with \"waitingRoom\":true", lm, roomTTL))
	b.startServer("sync", lm, "sync-"+lm+"-room", roomTTL)
	v := b.publishWith(10000000, `,"waitingRoom":true`)
	path := fmt.Sprintf("/voucher-order/seckill/%d", v)

	b.wrkRun(join, "POST", path+"/queue", "0", "")
	b.serverMetrics(join, "/voucher-order/seckill/:id/queue")
	b.checkWrk(join)
	b.allOK(join)
	b.roomBytes(join, v)

	// The join before the start: a room whose sale starts in an hour,
	// every join into the pool.
	pool := roomPoolName(lm)
	pv := b.publishAt(10000000, time.Hour, `,"waitingRoom":true`)
	b.wrkRun(pool, "POST", fmt.Sprintf("/voucher-order/seckill/%d/queue", pv), "0", "")
	b.serverMetrics(pool, "/voucher-order/seckill/:id/queue")
	b.checkWrk(pool)
	b.allOK(pool)
	b.roomBytes(pool, pv)

	// The poll of those who wait: a voucher of stock 1, its room joined
	// by roomWaiting buyers, all but one waiting.
	tokens := filepath.Join(b.cfg.Out, fmt.Sprintf("tokens-%d.csv", b.half))
	w := b.publishWith(1, `,"waitingRoom":true`)
	wpath := fmt.Sprintf("/voucher-order/seckill/%d", w)
	waiting := b.joinBuyers(wpath, tokens, roomWaiting, true, "room-waiting.csv")
	b.wrkRun(poll, "GET", wpath+"/queue", "0", waiting)
	b.serverMetrics(poll, "/voucher-order/seckill/:id/queue")
	b.checkWrk(poll)
	b.allOK(poll)

	// As many admitted buyers as today's purchase served in its run, and
	// half again, from the tokens file the join run did not use.
	want := int(figNum0(b.get("sync-"+lm, "requests")))*3/2 + 1000
	file := b.joinBuyers(path, tokens, want, false, "room-admitted.csv")

	b.wrkRun(buy, "POST", path, "1", file)
	b.serverMetrics(buy, "")
	b.checkWrk(buy)
	b.audit(buy, v)
	b.orderChecks(buy, "BENCH_USERS (the admitted buyers are at most half of them)")
	b.stopServer()
	b.rows = append(b.rows, join, pool, poll, buy)
}

// roomBytes records the Redis memory the room of voucher v holds per
// joiner of the run name (MEMORY USAGE of the room's keys, every nested
// value counted, ÷ its 200s): "room_bytes". docs/capacity.md projects the
// memory of a large room from it.
func (b seckillRuns) roomBytes(name string, v int64) {
	joiners := figNum0(b.get(name, "status_200"))
	if joiners <= 0 {
		return
	}
	var sum int64
	for _, k := range []string{redisstore.RoomKey(v), redisstore.RoomPoolKey(v), redisstore.RoomLineKey(v),
		redisstore.RoomAdmittedKey(v), redisstore.RoomDoneKey(v)} {
		n, err := b.rdb.MemoryUsage(b.ctx, k, 0).Result()
		if err != nil && err != redis.Nil {
			b.logf("%s: MEMORY USAGE %s: %v", name, k, err)
			return
		}
		sum += n
	}
	b.put(name, "room_bytes", fmt.Sprintf("%.0f", float64(sum)/joiners))
	b.logf("%s: the room holds %d bytes in Redis, %s per joiner", name, sum, b.get(name, "room_bytes"))
}

// allOK: every response of the run must be 200.
func (b seckillRuns) allOK(name string) {
	if n, got := b.get(name, "received"), b.get(name, "status_200"); n != got {
		b.violate(name, fmt.Sprintf("%s of %s responses are 200", got, n))
	}
}

// joinBuyers joins the first n users of tokens to the room of path (up to
// BENCH_CONNS at a time) and writes name in the out dir: userId,token and,
// for an admitted buyer, the admission token, for a waiting one an empty
// field and its place ticket. With wait every buyer but
// one must answer waiting (the room of a voucher of stock 1); else every
// one must answer admitted.
func (b seckillRuns) joinBuyers(path, tokens string, n int, wait bool, name string) string {
	data, err := os.ReadFile(tokens)
	if err != nil {
		b.die("%v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if n > len(lines) {
		b.logf("%s holds %d users, fewer than the %d buyers wanted: raise BENCH_USERS", filepath.Base(tokens), len(lines), n)
		n = len(lines)
	}
	out := make([]string, n)
	var failed sync.Map
	var admitted atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	for range b.cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id, tok, _ := strings.Cut(strings.TrimSpace(lines[i]), ",")
				status, body, err := b.call("POST", path+"/queue", tok, nil)
				var env struct {
					Data struct {
						Status string `json:"status"`
						Token  string `json:"token"`
						Ticket string `json:"ticket"`
					} `json:"data"`
				}
				if err != nil || status != 200 || json.Unmarshal(body, &env) != nil {
					failed.Store(i, fmt.Sprintf("%d %s %v", status, body, err))
					continue
				}
				switch {
				case env.Data.Status == "admitted" && env.Data.Token != "":
					admitted.Add(1)
					if !wait {
						out[i] = id + "," + tok + "," + env.Data.Token + "\n"
					}
					// The poll run is of those who wait: an admitted
					// buyer's poll has no place ticket, reaches Redis and
					// counts against the user's limit (polled 20 times a
					// second here, it would be refused, rightly).
				case env.Data.Status == "waiting" && wait && env.Data.Ticket != "":
					out[i] = id + "," + tok + ",," + env.Data.Ticket + "\n"
				default:
					failed.Store(i, fmt.Sprintf("%d %s", status, body))
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	failed.Range(func(k, v any) bool {
		b.die("joining user line %d to the room of %s: %v", k.(int)+1, path, v)
		return false
	})
	if wait && admitted.Load() > 1 {
		b.die("the room of %s (stock 1) admitted %d buyers", path, admitted.Load())
	}
	file := filepath.Join(b.cfg.Out, name)
	if err := os.WriteFile(file, []byte(strings.Join(out, "")), 0o644); err != nil {
		b.die("%v", err)
	}
	b.noteCmd(fmt.Sprintf("# %s: the first %d users of %s, joined (POST %s/queue; %d admitted), with their admission tokens or place tickets", name, n, filepath.Base(tokens), path, admitted.Load()))
	b.logf("%s: %d buyers joined, %d admitted", name, n, admitted.Load())
	return file
}

// roomSection compares the waiting room's runs with the no-op endpoint
// and today's purchase. "" without them.
func (b reporter) roomSection() string {
	lm := b.syncLockModeOf("-room-buy")
	if lm == "" {
		return ""
	}
	join, poll, buy := roomRunNames(lm)
	var w strings.Builder
	fmt.Fprintf(&w, `
## The waiting room's cost

One server (sync, %[1]s, %[2]s) and a voucher with a waiting room and
ample stock, so every joiner is admitted at once (docs/waiting-room.md).
The join: a new user per request. The poll: the buyers waiting in the room of
a second voucher (stock 1; %[3]d joined, one admitted), again and again. The admitted purchase:
buyers joined before the run, each once, with the header Admission-Token. The join and the poll are compared with the no-op
endpoint (same gin stack and JWT check), the admitted purchase with
sync-%[1]s, today's purchase, in this same run.

| run | req/s | p50 ms | p99 ms | compared with | ratio |
|---|---:|---:|---:|---|---:|
`, lm, roomTTL, roomWaiting)
	for _, r := range []struct{ name, ref, label string }{
		{join, "noop", "no-op"}, {roomPoolName(lm), "noop", "no-op"}, {poll, "noop", "no-op"}, {buy, "sync-" + lm, "sync-" + lm},
	} {
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s (%s req/s) | %s |\n", r.name, fmtRate(b.get(r.name, "rps")),
			benchMS(b.get(r.name, "p50_us")), benchMS(b.get(r.name, "p99_us")), r.label, fmtRate(b.get(r.ref, "rps")),
			benchRatio(b.get(r.name, "rps"), b.get(r.ref, "rps")))
	}
	if by := b.get(join, "room_bytes"); by != "" {
		fmt.Fprintf(&w, "\nAfter %s, its room held %s bytes of Redis memory per joiner (MEMORY USAGE of the room's keys ÷ the run's %s joiners, each admitted).\n",
			join, by, b.get(join, "status_200"))
	}
	if pool := roomPoolName(lm); b.get(pool, "room_bytes") != "" {
		fmt.Fprintf(&w, "After %s, %s bytes per joiner (%s joiners, each in the pool).\n",
			pool, b.get(pool, "room_bytes"), b.get(pool, "status_200"))
	}
	return w.String()
}
