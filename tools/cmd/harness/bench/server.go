package bench

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"seckill/repository/redisstore"
	"seckill/testkit/proc"
	"seckill/tools/cmd/harness/testbed"
)

// The server under test, the HTTP calls of the bench, the meter (/proc) and
// the cleanup. The shared instance helpers of tools/cmd/harness start load-test
// instances on several ports. The bench needs one server, its pid for the
// meter and its log for frozen(). So it keeps its own here.

var benchHTTP = &http.Client{Timeout: 60 * time.Second}

// startServer starts the server in orderMode and lockMode, its log in
// server-<logname>.log, with env (NAME=value) added to its environment,
// and waits for /readyz (20 s).
func (b serverUnderTest) startServer(orderMode, lockMode, logname string, env ...string) {
	b.server = b.startOn(b.cfg.Port, "the server", "server-"+logname+".log", orderMode, lockMode, env)
}

// startServers is startServer, then, for n = 2, startSecond alike.
func (b serverUnderTest) startServers(n int, orderMode, lockMode, logname string, env ...string) {
	b.startServer(orderMode, lockMode, logname, env...)
	if n > 1 {
		b.startSecond(orderMode, lockMode, logname, env...)
	}
}

// startSecond starts a second instance like startServer's, on BENCH_PORT+1,
// its log in server-<logname>-2.log, and waits for /readyz. While it runs,
// wrkRun splits wrk's threads between the two (BENCH_ADDRS of rotate.lua)
// and the meter's server CPU is both processes'. /metrics are the first
// instance's.
func (b serverUnderTest) startSecond(orderMode, lockMode, logname string, env ...string) {
	b.second = b.startOn(b.cfg.Port+1, "the second instance", "server-"+logname+"-2.log", orderMode, lockMode, env)
}

// startOn starts an instance (what names it in errors) on 127.0.0.1:port,
// its log in the out dir's log, and waits for /readyz (20 s).
func (b serverUnderTest) startOn(port int, what, log, orderMode, lockMode string, env []string) *testbed.Instance {
	if testbed.PortOpen(port) {
		b.die("something already serves 127.0.0.1:%d (%s; BENCH_PORT=%d): stop it or pick another port", port, what, b.cfg.Port)
	}
	in, err := testbed.StartInstance(b.bin, port, filepath.Join(b.cfg.Out, log),
		append([]string{"SECKILL_ORDER_MODE=" + orderMode, "SECKILL_LOCK_MODE=" + lockMode, "SECKILL_LOG_LEVEL=warn"}, env...)...)
	if err != nil {
		b.die("starting %s: %v", what, err)
	}
	if err := testbed.WaitReady(b.ctx, in, 20*time.Second); err != nil {
		testbed.StopInstances([]*testbed.Instance{in})
		b.die("%s (%s, %s) is not ready: %v: %s", what, orderMode, lockMode, err, proc.Tail(in.Log, 3))
	}
	return in
}

// stopServer stops the server and the second instance, if any (SIGTERM),
// and waits for them.
func (b serverUnderTest) stopServer() {
	var ins []*testbed.Instance
	for _, in := range []*testbed.Instance{b.server, b.second} {
		if in != nil {
			ins = append(ins, in)
		}
	}
	testbed.StopInstances(ins)
	b.server, b.second = nil, nil
}

// serverTicks is the CPU of the server so far, with the second instance's
// while one runs, in clock ticks.
func (b serverUnderTest) serverTicks() float64 {
	t := pidTicks(b.serverPID())
	if b.second != nil {
		t += pidTicks(b.second.Proc.Pid())
	}
	return t
}

// serverAddrs is BENCH_ADDRS of rotate.lua: the instances' addresses
// while a second one runs, "" otherwise.
func (b serverUnderTest) serverAddrs() string {
	if b.second == nil {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", b.cfg.Port, b.cfg.Port+1)
}

func (b serverUnderTest) serverPID() int {
	if b.server == nil {
		return 0
	}
	return b.server.Proc.Pid()
}

// call makes one HTTP request with the token. It returns the status and body.
func (b serverUnderTest) call(method, path, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(b.ctx, method, b.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("authorization", token)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	resp, err := benchHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// publish creates a shop and a seckill voucher of it with stock through the
// admin API. The voucher's id joins the vouchers cleaned up at exit.
func (b serverUnderTest) publish(stock int) int64 { return b.publishWith(stock, "") }

// publishWith is publish with more fields of the body (`,"stockBuckets":4`).
func (b serverUnderTest) publishWith(stock int, more string) int64 {
	return b.publishAt(stock, -time.Minute, more)
}

// publishAt is publishWith with the sale's start begin from now (negative:
// started). It ends two hours from now.
func (b serverUnderTest) publishAt(stock int, begin time.Duration, more string) int64 {
	shopID := b.createdID("creating a shop", "/shop",
		`{"name":"bench shop","typeId":1,"address":"loopback 1","x":120.15,"y":30.28}`)
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"shopId":%d,"title":"bench","subTitle":"make bench","rules":"","payValue":100,"actualValue":100,"type":1,"stock":%d,"beginTime":"%s","endTime":"%s"%s}`,
		shopID, stock, now.Add(begin).Format("2006-01-02T15:04:05Z"), now.Add(2*time.Hour).Format("2006-01-02T15:04:05Z"), more)
	id := b.createdID("publishing a voucher", "/voucher/seckill", body)
	b.vouchers = append(b.vouchers, id)
	return id
}

// createdID POSTs body to path as the admin and returns the id of what it
// created. Without one the bench dies: "what failed".
func (b serverUnderTest) createdID(what, path, body string) int64 {
	status, data, err := b.call("POST", path, b.adminToken, []byte(body))
	var env struct {
		Data json.Number `json:"data"`
	}
	if err != nil || status >= 400 || json.Unmarshal(data, &env) != nil {
		b.die("%s failed: %d %s %v", what, status, data, err)
	}
	id, err := env.Data.Int64()
	if err != nil || id <= 0 {
		b.die("%s failed: %s", what, data)
	}
	return id
}

func benchReadFile(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
}

// pidTicks is a process's user+system clock ticks (0 if gone).
func pidTicks(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	t, _ := procTicks(benchReadFile("/proc/" + strconv.Itoa(pid) + "/stat"))
	return float64(t)
}

// dbCounters are MariaDB's Questions, Com_stmt_prepare, Com_stmt_close.
func (b serverUnderTest) dbCounters() [3]float64 {
	var out [3]float64
	rows, err := b.db.QueryContext(b.ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_stmt_close')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) != nil {
			continue
		}
		switch strings.ToLower(k) {
		case "questions":
			out[0] = figNum0(v)
		case "com_stmt_prepare":
			out[1] = figNum0(v)
		case "com_stmt_close":
			out[2] = figNum0(v)
		}
	}
	return out
}

// sample reads the meter. client is the load generator's CPU so far in
// clock ticks (it is known only once it exited: 0 before).
func (b serverUnderTest) sample(client float64) cpuSample {
	s := cpuSample{DB: b.dbCounters()}
	s.Server, s.MariaDB, s.Redis = b.serverTicks(), pidTicks(b.mariadbPID), b.redisTicks(&s)
	s.Client = client
	busy, total, _ := machineTicks(benchReadFile("/proc/stat"))
	s.Busy, s.Total = float64(busy), float64(total)
	return s
}

// sampleEnd reads the meter at the end of a run, in the reverse order of
// sample (the machine first, the database counters last).
func (b serverUnderTest) sampleEnd(client float64) cpuSample {
	busy, total, _ := machineTicks(benchReadFile("/proc/stat"))
	s := cpuSample{Busy: float64(busy), Total: float64(total), Client: client}
	s.Server, s.MariaDB, s.Redis = b.serverTicks(), pidTicks(b.mariadbPID), b.redisTicks(&s)
	s.DB = b.dbCounters()
	return s
}

// redisTicks is the Redis CPU so far: the one Redis's, or, in the cluster
// block, the sum of the nodes' (each recorded in s.Nodes).
func (b serverUnderTest) redisTicks(s *cpuSample) float64 {
	if len(b.nodePIDs) == 0 {
		return pidTicks(b.redisPID)
	}
	var sum float64
	for _, pid := range b.nodePIDs {
		t := pidTicks(pid)
		s.Nodes = append(s.Nodes, t)
		sum += t
	}
	return sum
}

// childTicks is the CPU an exited child used, in clock ticks.
func (b serverUnderTest) childTicks(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds() * b.hz
}

// profileStart takes a CPU profile of the server over secs (at most 30: the
// server's write timeout), starting after delay, in the background.
func (b serverUnderTest) profileStart(name string, secs int, delay time.Duration) {
	secs = min(secs, 30)
	if secs < 1 {
		return
	}
	done := make(chan bool, 1)
	b.profiles[name] = done
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", b.base, secs)
	out := filepath.Join(b.cfg.Out, name+".pprof")
	go func() {
		time.Sleep(delay)
		resp, err := (&http.Client{Timeout: time.Duration(secs+30) * time.Second}).Get(url)
		if err != nil {
			done <- false
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			done <- false
			return
		}
		done <- os.WriteFile(out, data, 0o644) == nil
	}()
	b.put(name, "profiled", "1")
	b.put(name, "profile_secs", strconv.Itoa(secs))
	b.noteCmd(fmt.Sprintf("curl -o %s.pprof '%s'   # %s, after %s s", name, url, name, strconv.FormatFloat(delay.Seconds(), 'f', -1, 64)))
}

// profileFinish waits for the profile and writes its `go tool pprof -top`
// (flat and cumulative) next to it.
func (b serverUnderTest) profileFinish(name string) {
	done, ok := b.profiles[name]
	if !ok {
		return
	}
	delete(b.profiles, name)
	if !<-done {
		b.logf("profiling %s failed", name)
		b.put(name, "profiled", "")
		return
	}
	p := filepath.Join(b.cfg.Out, name+".pprof")
	for _, v := range []struct{ file, args string }{
		{".top.txt", "-top -nodecount=60"}, {".cum.txt", "-top -cum -nodecount=150"},
	} {
		args := append([]string{"tool", "pprof"}, strings.Fields(v.args)...)
		out, _ := exec.Command("go", append(args, b.bin, p)...).CombinedOutput()
		os.WriteFile(filepath.Join(b.cfg.Out, name+v.file), out, 0o644)
	}
	b.logf("profile of %s: %s/%s.top.txt, %s/%s.cum.txt", name, b.cfg.Out, name, b.cfg.Out, name)
}

// purgeLua deletes a shard's stream entries of some vouchers. It XACKs (the
// consumer group) and XDELs the entries of KEYS[1] whose voucherId is one of
// ARGV[2..]. It deletes their order-info keys too; ARGV[1] is the shard's
// order-info prefix. Returns how many. The group is repository's.
var purgeLua = strings.NewReplacer("{{group}}", redisstore.GroupName).Replace(`
local want = {}
for i = 2, #ARGV do want[ARGV[i]] = true end
local n, start = 0, "-"
while true do
  local page = redis.call("XRANGE", KEYS[1], start, "+", "COUNT", 1000)
  for _, e in ipairs(page) do
    local f, voucher, order = e[2], nil, nil
    for i = 1, #f, 2 do
      if f[i] == "voucherId" then voucher = f[i + 1] elseif f[i] == "orderId" then order = f[i + 1] end
    end
    if voucher and want[voucher] then
      redis.pcall("XACK", KEYS[1], "{{group}}", e[1])
      redis.call("XDEL", KEYS[1], e[1])
      if order then redis.call("DEL", ARGV[1] .. order) end
      n = n + 1
    end
  end
  if #page < 1000 then break end
  start = "(" .. page[#page][1]
end
return n`)

// unlinkPattern removes the keys matching pattern (SCAN, UNLINK in batches).
func (b serverUnderTest) unlinkPattern(pattern string) {
	iter := b.rdb.Scan(b.ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(b.ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			b.rdb.Unlink(b.ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		b.rdb.Unlink(b.ctx, batch...)
	}
}

func (b serverUnderTest) deleteVoucher(v int64) {
	for _, q := range []string{"DELETE FROM tb_voucher_order WHERE voucher_id=?", "DELETE FROM tb_seckill_voucher WHERE voucher_id=?", "DELETE FROM tb_voucher WHERE id=?"} {
		b.db.ExecContext(b.ctx, q, v)
	}
}

func (b serverUnderTest) admitKeysClean() {
	v, shard := b.admitV, redisstore.VoucherShard(b.admitV)
	b.rdb.Unlink(b.ctx, redisstore.StockKey(v), redisstore.BuyersKey(v), redisstore.VoucherKey(v), redisstore.ShardKey(shard, admitStream))
	b.unlinkPattern(redisstore.OrderInfoPrefix(shard) + "????????????")
}

// cleanup stops the server and removes what the bench wrote (once).
func (b serverUnderTest) cleanup() {
	b.mu.Lock()
	if b.cleaned {
		b.mu.Unlock()
		return
	}
	b.cleaned = true
	b.mu.Unlock()
	b.stopServer()
	if b.rdb == nil || b.db == nil {
		return
	}
	b.unlinkPattern("bench:lock:*")
	if b.admitLoaded {
		b.admitKeysClean()
	}
	if b.slapVoucher != 0 {
		b.deleteVoucher(b.slapVoucher)
	}
	if !b.cfg.Keep && len(b.vouchers) > 0 {
		// Entries of these vouchers may still be in stream.orders
		// after a run that did not drain. They would outlive their
		// voucher and stay pending for ever with whichever consumer
		// reads them. Their dead-letter needs the voucher's Redis
		// state. So settle them first.
		var total int64
		var failed error
		for shard := range redisstore.Shards {
			args := []any{redisstore.OrderInfoPrefix(shard)}
			for _, v := range b.vouchers {
				args = append(args, strconv.FormatInt(v, 10))
			}
			n, err := b.rdb.Eval(b.ctx, purgeLua, []string{redisstore.StreamKey(shard)}, args...).Int64()
			total += n
			failed = cmp.Or(failed, err)
		}
		if failed != nil || total != 0 {
			b.logf("removed %d entries of the bench vouchers from the order streams (error: %v)", total, failed)
		}
		for _, v := range b.vouchers {
			b.deleteVoucher(v)
			b.rdb.Del(b.ctx, redisstore.DuplicateRejectionsKey(v))
			for shard := range redisstore.Shards { // every bucket a voucher can have
				b.rdb.Del(b.ctx, redisstore.StockKeyIn(shard, v), redisstore.BuyersKeyIn(shard, v), redisstore.VoucherKeyIn(shard, v))
			}
		}
	}
}
