package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"seckill/repository/redisstore"
	"seckill/testkit/proc"
)

// queryString is the one value of a query ("" on error).
func (b limitRuns) queryString(q string) string {
	var s string
	b.db.QueryRowContext(b.ctx, q).Scan(&s)
	return s
}

// redisBench runs redis-benchmark EVALSHA of the script in file (from the
// root: lock/scripts/..., repository/redisstore/scripts/...).
func (b limitRuns) redisBench(name, file string, args ...string) {
	sha := b.scriptLoad(file)
	c := b.cfg
	b.noteCmd(fmt.Sprintf(`redis-cli -h %s -p %s SCRIPT LOAD "$(cat %s)"   # -> %s`, b.redisHost, b.redisPort, file, sha))
	full := append([]string{"-h", b.redisHost, "-p", b.redisPort, "-n", strconv.Itoa(c.RedisN), "-c", strconv.Itoa(c.Conns), "--csv"}, substSHA(args, sha)...)
	b.noteCmd("redis-benchmark " + strings.Join(full, " ") + "   # " + name)
	cmd := exec.Command("redis-benchmark", full...)
	errf, _ := os.Create(filepath.Join(c.Out, "redis-"+name+".err"))
	cmd.Stderr = errf
	out, _ := cmd.Output()
	errf.Close()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	last := lines[len(lines)-1]
	os.WriteFile(filepath.Join(c.Out, "redis-"+name+".csv"), []byte(last+"\n"), 0o644)
	rps, p50, p99, ok := redisBenchCSV(last)
	if !ok {
		b.die("redis-benchmark printed no rate for %s: %s", name, last)
	}
	b.put(name, "rps", rps)
	b.put(name, "p50_us", p50)
	b.put(name, "p99_us", p99)
	b.logf("%s: %s ops/s", name, rps)
}

// substSHA replaces the placeholder "@SHA@" in args.
func substSHA(args []string, sha string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "@SHA@", sha)
	}
	return out
}

func (b limitRuns) scriptLoad(file string) string {
	src, err := os.ReadFile(filepath.Join(b.root, file))
	if err != nil {
		b.die("%v", err)
	}
	sha, err := b.rdb.ScriptLoad(b.ctx, string(src)).Result()
	if err != nil {
		b.die("SCRIPT LOAD %s: %v", file, err)
	}
	return sha
}

func (b limitRuns) redisLimits() {
	c := b.cfg
	b.redisBench("acquire", "lock/scripts/acquire.lua", "-r", "1000000000", "EVALSHA", "@SHA@", "2", "bench:lock:__rand_int__", "bench:lock:__rand_int__:fence", "bench-owner", "10000")
	b.unlinkPattern("bench:lock:*")
	// The release keyspace is 4 x the request count. Every key is written
	// beforehand, owned by bench-owner. About 88% of the calls find their
	// key and delete it.
	relSpace := 4 * c.RedisN
	b.info["rel_space"] = strconv.Itoa(relSpace)
	const fill = `for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call("SET", string.format("bench:lock:%012d", i), ARGV[3], "PX", ARGV[4]) end return 1`
	for i := 0; i < relSpace; i += 100000 {
		if err := b.rdb.Eval(b.ctx, fill, nil, i, min(i+99999, relSpace-1), "bench-owner", 300000).Err(); err != nil {
			b.die("writing the release keys: %v", err)
		}
	}
	const count = `local n = 0 for i = 0, tonumber(ARGV[1]) - 1 do n = n + redis.call("EXISTS", string.format("bench:lock:%012d", i)) end return n`
	b.redisBench("release", "lock/scripts/unlock.lua", "-r", strconv.Itoa(relSpace), "EVALSHA", "@SHA@", "1", "bench:lock:__rand_int__", "bench-owner")
	left, err := b.rdb.Eval(b.ctx, count, nil, relSpace).Int64()
	if err != nil {
		b.die("counting the release keys: %v", err)
	}
	b.info["rel_deleted"] = strconv.FormatInt(int64(relSpace)-left, 10)
	b.unlinkPattern("bench:lock:*")

	if !c.wantAsync() {
		return
	}
	b.admitLimit("admit", 1)
}

// admitLimit is the async admission's limit. It runs redis-benchmark of
// repository/redisstore/scripts/seckill.lua with the service's keys and arguments, as the script's
// header lists them. Each client pipelines depth commands (-P; none when 1).
//
// It runs on a scratch voucher, loaded as the service loads a published one.
// That is the stock, and the hash with the window and state ok. A scratch
// stream takes the orders. All of it is removed afterwards.
//
// Each call draws a random user. The few users drawn twice are refused as
// duplicates (code 2). The others are admitted (code 0: DECR, SADD, XADD, SET
// with TTL).
//
// The voucher id is far above any AUTO_INCREMENT id of tb_voucher. Its
// order-info keys are seckill:orderinfo:<12 digits> (__rand_int__). The
// service's order ids have 18 digits or more.
func (b limitRuns) admitLimit(name string, depth int) {
	c := b.cfg
	b.admitV = 9000000000000 + int64(os.Getpid())
	v := strconv.FormatInt(b.admitV, 10)
	b.info["admit_v"] = v
	nowMS := time.Now().UnixMilli()
	b.admitLoaded = true
	shard := redisstore.VoucherShard(b.admitV)
	stockKey, buyersKey, hashKey := redisstore.StockKey(b.admitV), redisstore.BuyersKey(b.admitV), redisstore.VoucherKey(b.admitV)
	streamKey, infoPrefix := redisstore.ShardKey(shard, admitStream), redisstore.OrderInfoPrefix(shard)
	b.rdb.Set(b.ctx, stockKey, 1000000000, 0)
	b.rdb.HSet(b.ctx, hashKey, "begin", nowMS-60000, "end", nowMS+7200000, "initial", 1000000000, "state", "ok")
	b.noteCmd(fmt.Sprintf("redis-cli SET '%s' 1000000000; redis-cli HSET '%s' begin <now-60s ms> end <now+2h ms> initial 1000000000 state ok", stockKey, hashKey))
	var args []string
	if depth > 1 {
		args = []string{"-P", strconv.Itoa(depth)}
	}
	b.redisBench(name, "repository/redisstore/scripts/seckill.lua", append(args, "-r", "1000000000", "EVALSHA", "@SHA@", "5", stockKey, buyersKey,
		hashKey, streamKey, infoPrefix+"__rand_int__",
		"__rand_int__", v, "__rand_int__", strconv.FormatInt(nowMS, 10), "600")...)
	stock, _ := b.rdb.Get(b.ctx, stockKey).Int64()
	admitted := 1000000000 - stock
	xlen, _ := b.rdb.XLen(b.ctx, streamKey).Result()
	buyers, _ := b.rdb.SCard(b.ctx, buyersKey).Result()
	b.put(name, "depth", strconv.Itoa(depth))
	b.put(name, "voucher", v)
	b.put(name, "admitted", strconv.FormatInt(admitted, 10))
	if !(admitted == xlen && admitted == buyers && admitted > int64(c.RedisN)*9/10) {
		b.violate(name, fmt.Sprintf("admission limit: %d admitted, stream %d entries, %d buyers of %d calls", admitted, xlen, buyers, c.RedisN))
	}
	b.admitKeysClean()
	b.admitLoaded = false
}

// slapBench runs mariadb-slap with BENCH_CONNS clients. Each client runs the
// query reps times; the query holds stmts statements separated by ;. They run
// on a scratch voucher of huge stock, whose id replaces @V@. The voucher and
// its orders are deleted afterwards. Every run of the query must write one
// order (checked).
func (b limitRuns) slapBench(name string, stmts int, query string, reps int) {
	c := b.cfg
	res, err := b.db.ExecContext(b.ctx, "INSERT INTO tb_voucher (shop_id, title, sub_title, pay_value, actual_value, type) VALUES (1, 'bench slap scratch', 'make bench', 100, 100, 1)")
	if err != nil {
		b.die("scratch voucher: %v", err)
	}
	id, _ := res.LastInsertId()
	b.slapVoucher = id
	if _, err := b.db.ExecContext(b.ctx, "INSERT INTO tb_seckill_voucher (voucher_id, stock, initial_stock, begin_time, end_time) VALUES (?, 1000000000, 1000000000, NOW() - INTERVAL 1 MINUTE, NOW() + INTERVAL 2 HOUR)", id); err != nil {
		b.die("scratch voucher: %v", err)
	}
	q := strings.ReplaceAll(query, "@V@", strconv.FormatInt(id, 10))
	args := []string{"--protocol=tcp", "-h" + b.dbHost, "-P" + b.dbPort, "-u" + b.dbUser, "--create-schema=" + b.dbName, "--no-drop",
		"--delimiter=;", fmt.Sprintf("--concurrency=%d", c.Conns), "--iterations=1", fmt.Sprintf("--number-of-queries=%d", stmts*reps*c.Conns)}
	q0 := b.dbCounters()
	m0 := pidTicks(b.mariadbPID)
	cmd := exec.Command(b.slap, append(args, "--query="+q)...)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+b.dbPass)
	out, err := cmd.CombinedOutput()
	os.WriteFile(filepath.Join(c.Out, name+".txt"), out, 0o644)
	if err != nil {
		b.die("mariadb-slap failed: %s", proc.Tail(filepath.Join(c.Out, name+".txt"), 3))
	}
	m1 := pidTicks(b.mariadbPID)
	q1 := b.dbCounters()
	shown := strings.Replace(strings.Join(args, " "), "--delimiter=;", "--delimiter=';'", 1)
	b.put(name, "cmd", fmt.Sprintf(`MYSQL_PWD=... %s %s --query="%s"`, filepath.Base(b.slap), shown, q))
	secs := slapSeconds(string(out))
	f := b.dbState(id)
	txns := int64(reps * c.Conns)
	if f.Orders != txns || f.Distinct != txns {
		b.violate(name, fmt.Sprintf("mariadb-slap wrote %d orders (%d users), want %d", f.Orders, f.Distinct, txns))
	}
	b.put(name, "txns", strconv.FormatInt(txns, 10))
	b.put(name, "secs", secs)
	rps := 0.0
	if s := figNum0(secs); s > 0 {
		rps = float64(txns) / s
	}
	b.put(name, "rps", fmt.Sprintf("%.1f", rps))
	b.put(name, "cpu_mariadb", fmt.Sprintf("%.0f", 1e6*(m1-m0)/b.hz/float64(txns)))
	b.put(name, "db_stmts", dbStmts(q0, q1, float64(txns)))
	b.logf("%s: %s txn/s (%d transactions in %s s)", name, b.get(name, "rps"), txns, secs)
	b.deleteVoucher(id)
	b.slapVoucher = 0
}

// dbState reads a voucher's initial stock, stock, orders and distinct buyers.
func (b limitRuns) dbState(v int64) voucherFacts {
	var f voucherFacts
	err := b.db.QueryRowContext(b.ctx, `SELECT sv.initial_stock, sv.stock,
	       (SELECT COUNT(*) FROM tb_voucher_order o WHERE o.voucher_id=sv.voucher_id),
	       (SELECT COUNT(DISTINCT user_id) FROM tb_voucher_order o WHERE o.voucher_id=sv.voucher_id)
	     FROM tb_seckill_voucher sv WHERE sv.voucher_id=?`, v).Scan(&f.Initial, &f.Stock, &f.Orders, &f.Distinct)
	if err != nil {
		b.die("reading voucher %d: %v", v, err)
	}
	return f
}

// wrkRun is one wrk run with tools/bench/rotate.lua. Its BENCH lines become the
// run's figures. The CPU of the server, MariaDB, Redis and wrk joins them,
// with the machine's busy share. Without tokens the runs alternate
// tokens-0.csv and tokens-1.csv.
func (b limitRuns) wrkRun(name, method, path, once, tokens string) {
	c := b.cfg
	if tokens == "" {
		tokens = filepath.Join(c.Out, fmt.Sprintf("tokens-%d.csv", b.half))
		b.half = 1 - b.half
	}
	if b.profileWanted(name) && c.Duration > 3 {
		b.profileStart(name, c.Duration-2, time.Second) // the run's middle
	}
	m0 := b.sample(0)
	outPath := filepath.Join(c.Out, "wrk-"+name+".txt")
	outf, err := os.Create(outPath)
	if err != nil {
		b.die("%v", err)
	}
	cmd := exec.Command("wrk", "-t"+strconv.Itoa(c.Threads), "-c"+strconv.Itoa(c.Conns), fmt.Sprintf("-d%ds", c.Duration),
		"--latency", "-s", filepath.Join(b.root, "tools", "bench", "rotate.lua"), b.base+path)
	cmd.Env = append(os.Environ(), "BENCH_TOKENS="+tokens, "BENCH_THREADS="+strconv.Itoa(c.Threads), "BENCH_ONCE="+once, "BENCH_METHOD="+method,
		"BENCH_ADDRS="+b.serverAddrs())
	addrs := ""
	if a := b.serverAddrs(); a != "" {
		addrs = "BENCH_ADDRS=" + a + " "
	}
	cmd.Stdout, cmd.Stderr = outf, os.Stderr
	err = cmd.Run()
	outf.Close()
	b.put(name, "t_end", strconv.FormatInt(time.Now().UnixNano(), 10))
	b.noteCmd(fmt.Sprintf("%sBENCH_TOKENS=%s BENCH_THREADS=%d BENCH_ONCE=%s BENCH_METHOD=%s wrk -t%d -c%d -d%ds --latency -s tools/bench/rotate.lua %s%s   # %s",
		addrs, filepath.Base(tokens), c.Threads, once, method, c.Threads, c.Conns, c.Duration, b.base, path, name))
	if err != nil {
		b.die("wrk failed for %s: %v (see %s)", name, err, outPath)
	}
	b.putAll(name, wrkFigures(benchReadFile(outPath)))
	if b.get(name, "requests") == "" {
		b.die("wrk printed no figures for %s: see %s", name, outPath)
	}
	m1 := b.sampleEnd(b.childTicks(cmd))
	b.putAll(name, meterFigures(m0, m1, figNum0(b.get(name, "received")), b.hz))
	if once == "1" { // every 200 is an order
		b.putAll(name, orderCPUFigures(m0, m1, figNum0(b.get(name, "status_200")), b.hz))
		b.nodeOrderCPU(name, m0, m1)
	}
	b.profileFinish(name)
	b.logf("%s: %s requests, %s req/s, p99 %s us", name, b.get(name, "requests"), b.get(name, "rps"), b.get(name, "p99_us"))
	if once == "1" && strings.HasPrefix(name, "sync-") {
		b.logf("%s: CPU per order: server %s us, MariaDB %s us", name, b.get(name, "cpu_server"), b.get(name, "cpu_mariadb"))
	}
	b.logOrderCPU(name)
}

// logOrderCPU prints a run's CPU per admitted order, when it has one.
func (b limitRuns) logOrderCPU(name string) {
	if b.get(name, "cpu_server_order") == "" {
		return
	}
	b.logf("%s: CPU per admitted order: server %s us, Redis %s us (%s orders admitted during the run)",
		name, b.get(name, "cpu_server_order"), b.get(name, "cpu_redis_order"), b.get(name, "status_200"))
}

// checkWrk: wrk itself must report no socket errors and no timeouts, and
// its "Non-2xx or 3xx responses" must equal what response() counted.
func (b limitRuns) checkWrk(name string) {
	for _, k := range []string{"err_connect", "err_read", "err_write", "err_timeout"} {
		if b.get(name, k) != "0" {
			b.violate(name, fmt.Sprintf("wrk %s=%s", k, b.get(name, k)))
		}
	}
	b.mu.Lock()
	counted := non2xxCounted(b.runs[name])
	b.mu.Unlock()
	if b.get(name, "non2xx3xx") != strconv.FormatInt(counted, 10) {
		b.violate(name, fmt.Sprintf("wrk counted %s non-2xx, the script %d", b.get(name, "non2xx3xx"), counted))
	}
}
