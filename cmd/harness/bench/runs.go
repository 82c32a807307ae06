package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"seckill/cmd/harness/testbed"
	"seckill/internal/audit"
	"seckill/internal/proc"
	"seckill/model"
	"seckill/repository"
	"strconv"
	"strings"
	"time"
)

// The measurements of `harness bench`: the limits (redis-benchmark,
// mariadb-slap, wrk on the no-op endpoint), the seckill runs (wrk, k6), the
// drain and the audit of every run, and the extra profiled runs of a missed
// target.

// admitStream is the scratch stream of the admission limit (no consumer
// group reads it).
const admitStream = "bench:orders"

func (b *bench) profileWanted(name string) bool {
	for _, p := range strings.Fields(b.cfg.Profile) {
		if p == name {
			return true
		}
	}
	return false
}

// measure runs every limit and every run, then the extra profiled runs of
// the missed targets.
func (b *bench) measure() {
	c := b.cfg
	if c.Only == "cluster" {
		b.clusterOnly()
		return
	}
	if run := c.admissionRun(); run != "" {
		// Its CPU profile (wrkRun), kept by saveAdmissionProfiles; and its
		// partner without the drain profiled alike, so that their ratio
		// compares like with like.
		b.cfg.Profile += " " + run + " " + run + "-nodrain"
	}
	b.machine()
	b.logf("machine: %s x %s, %s, %s; load %s", b.info["nproc"], b.info["cpu"], b.info["mem"], b.info["kernel"], b.info["load_before"])

	// ---- limits: redis-benchmark
	b.redisLimits()

	// ---- limit: no-op, and the sold-out path
	b.logf("no-op endpoint and sold-out path (server: sync, lua)")
	b.startServer("sync", "lua", "noop")
	b.wrkRun("noop", "GET", "/debug/noop", "0", "")
	b.checkWrk("noop")
	if b.get("noop", "non2xx3xx") != "0" {
		b.violate("noop", b.get("noop", "non2xx3xx")+" non-2xx responses from the no-op endpoint")
	}
	soldV := b.publish(1)
	b.info["sold_v"] = strconv.FormatInt(soldV, 10)
	status, body, err := b.call("POST", fmt.Sprintf("/voucher-order/seckill/%d", soldV), b.firstUser, nil)
	var first struct {
		Success bool `json:"success"`
	}
	if err != nil || json.Unmarshal(body, &first) != nil || !first.Success {
		b.die("buying the only voucher of %d failed: %d %s", soldV, status, body)
	}
	b.wrkRun("soldout", "POST", fmt.Sprintf("/voucher-order/seckill/%d", soldV), "0", "")
	b.checkWrk("soldout")
	b.audit("soldout", soldV)
	n := b.get("soldout", "received")
	if b.get("soldout", "status_409") != n {
		b.violate("soldout", fmt.Sprintf("%s of %s responses are 409", b.get("soldout", "status_409"), n))
	}
	if b.get("soldout", "code_SOLD_OUT") != n {
		b.violate("soldout", fmt.Sprintf("%s of %s responses are SOLD_OUT", b.get("soldout", "code_SOLD_OUT"), n))
	}
	if b.get("soldout", "non2xx3xx") != b.get("soldout", "requests") {
		b.violate("soldout", fmt.Sprintf("wrk: %s non-2xx of %s requests", b.get("soldout", "non2xx3xx"), b.get("soldout", "requests")))
	}
	if b.get("soldout", "orders") != "1" || b.get("soldout", "stock") != "0" {
		b.violate("soldout", fmt.Sprintf("orders %s, stock %s; want 1 and 0", b.get("soldout", "orders"), b.get("soldout", "stock")))
	}
	b.stopServer()

	// ---- limit: mariadb-slap
	b.logf("mariadb-slap of the order transaction")
	// ids and user ids from UUID_SHORT(): unique, increasing, like the ID worker's.
	b.slapBench("slap", 4, "BEGIN;UPDATE tb_seckill_voucher SET stock=stock-1 WHERE voucher_id=@V@ AND stock>0;INSERT INTO tb_voucher_order (id,user_id,voucher_id,pay_type,status) VALUES (UUID_SHORT(),UUID_SHORT(),@V@,1,1);COMMIT", c.SlapTxns)
	if c.wantAsync() {
		b.logf("mariadb-slap of a single-row order INSERT")
		// As many statements as the transaction's run: 4 rows per transaction.
		b.slapBench("insert", 1, "INSERT INTO tb_voucher_order (id,user_id,voucher_id,pay_type,status) VALUES (UUID_SHORT(),UUID_SHORT(),@V@,1,1)", 4*c.SlapTxns)
	}

	// ---- the seckill, every mode
	for _, om := range c.OrderModes {
		if om == "sync" {
			for i, lm := range c.LockModes {
				b.seckillRun("sync-"+lm, "sync", lm)
				b.rows = append(b.rows, "sync-"+lm)
				if i > 0 {
					continue
				}
				// The course's path beside it: one transaction per order.
				run := "sync-" + lm + "-pertxn"
				b.noteCmd(fmt.Sprintf("# %s: the server started with %s", run, groupCommitOff))
				b.seckillRun(run, "sync", lm, groupCommitOff)
				b.rows = append(b.rows, run)
			}
			continue
		}
		for i, lm := range c.AsyncLockModes {
			name := "async-" + lm
			b.attempt(name, func() { b.asyncRun(name, lm, false) })
			b.rows = append(b.rows, name)
			if i > 0 {
				continue
			}
			// The same admission with the consumers held (the partner of
			// "admission not slowed by the drain"), then the admission
			// script alone at the pipelining depth the server used.
			nd := name + "-nodrain"
			b.attempt(nd, func() { b.asyncNoDrainRun(nd, lm) })
			b.rows = append(b.rows, nd)
			// The same admission with the purchase limits configured but
			// never hit, then with tracing on at a 1 % sample: their cost
			// is their req/s ÷ this run's.
			for _, v := range []struct {
				suffix string
				env    []string
			}{{"-limits", benchLimits()}, {"-traced", tracedAt1Percent}} {
				run := name + v.suffix
				b.noteCmd(fmt.Sprintf("# %s: the server started with %s", run, strings.Join(v.env, " ")))
				b.attempt(run, func() { b.asyncRun(run, lm, false, v.env...) })
				b.rows = append(b.rows, run)
			}
			mean := b.get(name, "pipeline_mean")
			if p := admitPName(mean); p != "" {
				b.logf("redis-benchmark of seckill.lua at %s's mean pipelining depth (%s): -P %d", name, mean, pipelineDepth(mean))
				b.admitLimit(p, pipelineDepth(mean))
			} else {
				b.logf("%s: no pipelining depth in the server's /metrics: no admit-P limit", name)
			}
		}
		// The same admission on a Redis with a replica, then on the Redis
		// Cluster by stock buckets.
		b.replicaRun()
		b.clusterRuns()
		// Latency at half the sync maximum (the sync lua run), in the first
		// async lock mode.
		rate := c.K6Rate
		if rate == "" && b.get("sync-lua", "rps") != "" {
			rate = fmt.Sprintf("%d", int64(figNum0(b.get("sync-lua", "rps"))/2))
		}
		if r, _ := strconv.Atoi(rate); r > 0 && len(c.AsyncLockModes) > 0 {
			lm := c.AsyncLockModes[0]
			name := "k6-async-" + lm
			b.attempt(name, func() { b.k6Run(name, lm, r, true) })
			b.k6Runs = append(b.k6Runs, name)
		} else {
			b.logf("no k6 run: no sync lua figure to halve and no BENCH_K6_RATE")
		}
	}

	// ---- targets, and a profile when one is missed
	t := b.targets()
	// A missed target gets an extra run (not in the table: profiling costs
	// CPU) with the server's CPU profile, summarised in RESULTS.md.
	if t.T1 != "-" && (!atLeast(t.T1, 0.6) || !atLeast(t.G1, 1.0)) {
		b.cfg.Profile += " profile-sync-lua"
		b.seckillRun("profile-sync-lua", "sync", "lua")
		b.profiled = append(b.profiled, "profile-sync-lua")
	}
	if t.T2 != "-" && !atLeast(t.T2, 0.9) {
		b.cfg.Profile += " profile-soldout"
		b.logf("sold-out path, profiled")
		b.startServer("sync", "lua", "profile-soldout")
		b.wrkRun("profile-soldout", "POST", "/voucher-order/seckill/"+b.info["sold_v"], "0", "")
		b.stopServer()
		b.profiled = append(b.profiled, "profile-soldout")
	}
	if c.wantAsync() && len(c.AsyncLockModes) > 0 {
		alm := c.AsyncLockModes[0]
		ar, kr := "async-"+alm, "k6-async-"+alm
		missed := !atLeast(t.A1, 8) || !atLeast(t.A3, 1) ||
			(t.A2 != "-" && !atLeast(t.A2, 0.4)) || (t.N1 != "-" && !atLeast(t.N1, 0.8))
		if t.A1 != "-" && missed {
			// The admission under wrk, and the drain after it.
			b.cfg.Profile += " profile-" + ar
			b.asyncRun("profile-"+ar, alm, true)
			b.profiled = append(b.profiled, "profile-"+ar)
			if !atLeast(t.A3, 1) {
				b.profiled = append(b.profiled, "profile-"+ar+"-drain")
			}
		}
		if b.get(kr, "p99_us") != "" && !atMost(t.A4, 5) {
			b.cfg.Profile += " profile-" + kr
			r, _ := strconv.Atoi(b.get(kr, "rate"))
			b.k6Run("profile-"+kr, alm, r, false)
			b.profiled = append(b.profiled, "profile-"+kr)
			b.profiledK6 = append(b.profiledK6, "profile-"+kr)
		}
	}
}

// machine reads the machine's description and the versions of the tools.
func (b *bench) machine() {
	in := b.info
	in["start"] = time.Now().UTC().Format("2006-01-02 15:04:05 UTC")
	in["load_before"] = benchLoadAvg()
	for _, line := range strings.Split(benchReadFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(k, "model name") {
			in["cpu"] = v
			break
		}
	}
	in["nproc"] = benchOutput("nproc")
	for _, line := range strings.Split(benchReadFile("/proc/meminfo"), "\n") {
		if strings.HasPrefix(line, "MemTotal") {
			f := strings.Fields(line)
			in["mem"] = fmt.Sprintf("%.1f GiB", figNum0(f[1])/1048576)
		}
	}
	in["kernel"] = benchOutput("uname", "-sr")
	if f := strings.Fields(benchOutput("go", "version")); len(f) >= 3 {
		in["go"] = f[2]
	}
	in["mariadb"] = b.queryString("SELECT VERSION()")
	in["flush"] = b.queryString("SELECT @@innodb_flush_log_at_trx_commit")
	if info, err := b.rdb.Info(b.ctx, "server").Result(); err == nil {
		in["redis"] = infoField(info, "redis_version")
	}
	out, _ := exec.Command("wrk", "-v").CombinedOutput()
	if f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0]); len(f) >= 2 {
		in["wrk"] = f[1]
	}
	if b.k6 != "" {
		if f := strings.Fields(strings.SplitN(benchOutput(b.k6, "version"), "\n", 2)[0]); len(f) >= 2 {
			b.k6ver = f[1]
		}
	}
}

// queryString is the one value of a query ("" on error).
func (b *bench) queryString(q string) string {
	var s string
	b.db.QueryRowContext(b.ctx, q).Scan(&s)
	return s
}

func benchLoadAvg() string {
	f := strings.Fields(benchReadFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// redisBench runs redis-benchmark EVALSHA of a lua/ script.
func (b *bench) redisBench(name, file string, args ...string) {
	sha := b.scriptLoad(file)
	c := b.cfg
	b.noteCmd(fmt.Sprintf(`redis-cli -h %s -p %s SCRIPT LOAD "$(cat lua/%s)"   # -> %s`, b.redisHost, b.redisPort, file, sha))
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

func (b *bench) scriptLoad(file string) string {
	src, err := os.ReadFile(filepath.Join(b.root, "lua", file))
	if err != nil {
		b.die("%v", err)
	}
	sha, err := b.rdb.ScriptLoad(b.ctx, string(src)).Result()
	if err != nil {
		b.die("SCRIPT LOAD lua/%s: %v", file, err)
	}
	return sha
}

func (b *bench) redisLimits() {
	c := b.cfg
	b.redisBench("acquire", "acquire.lua", "-r", "1000000000", "EVALSHA", "@SHA@", "2", "bench:lock:__rand_int__", "bench:lock:__rand_int__:fence", "bench-owner", "10000")
	b.unlinkPattern("bench:lock:*")
	// The release keyspace is 4 x the request count, every key written
	// (owner bench-owner) beforehand: about 88% of the calls find their key
	// and delete it.
	relSpace := 4 * c.RedisN
	b.info["rel_space"] = strconv.Itoa(relSpace)
	const fill = `for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call("SET", string.format("bench:lock:%012d", i), ARGV[3], "PX", ARGV[4]) end return 1`
	for i := 0; i < relSpace; i += 100000 {
		if err := b.rdb.Eval(b.ctx, fill, nil, i, min(i+99999, relSpace-1), "bench-owner", 300000).Err(); err != nil {
			b.die("writing the release keys: %v", err)
		}
	}
	const count = `local n = 0 for i = 0, tonumber(ARGV[1]) - 1 do n = n + redis.call("EXISTS", string.format("bench:lock:%012d", i)) end return n`
	b.redisBench("release", "unlock.lua", "-r", strconv.Itoa(relSpace), "EVALSHA", "@SHA@", "1", "bench:lock:__rand_int__", "bench-owner")
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

// admitLimit is the async admission's limit: redis-benchmark of
// lua/seckill.lua with the service's keys and arguments (lua/seckill.lua's
// header), depth commands pipelined per client (-P; none when 1), on the
// scratch voucher loaded as the service loads a published one (stock, and
// the hash with the window and state ok) and the scratch stream, all
// removed afterwards. A random user per call: the few users drawn twice
// are refused as duplicates (code 2), the others admitted (code 0: DECR,
// SADD, XADD, SET with TTL). The voucher id is far above any
// AUTO_INCREMENT id of tb_voucher; its order-info keys are
// seckill:orderinfo:<12 digits> (redis-benchmark's __rand_int__), the
// service's order ids have 18 or more.
func (b *bench) admitLimit(name string, depth int) {
	c := b.cfg
	b.admitV = 9000000000000 + int64(os.Getpid())
	v := strconv.FormatInt(b.admitV, 10)
	b.info["admit_v"] = v
	nowMS := time.Now().UnixMilli()
	b.admitLoaded = true
	shard := repository.VoucherShard(b.admitV)
	stockKey, buyersKey, hashKey := repository.StockKey(b.admitV), repository.BuyersKey(b.admitV), repository.VoucherKey(b.admitV)
	streamKey, infoPrefix := repository.ShardKey(shard, admitStream), repository.OrderInfoPrefix(shard)
	b.rdb.Set(b.ctx, stockKey, 1000000000, 0)
	b.rdb.HSet(b.ctx, hashKey, "begin", nowMS-60000, "end", nowMS+7200000, "initial", 1000000000, "state", "ok")
	b.noteCmd(fmt.Sprintf("redis-cli SET '%s' 1000000000; redis-cli HSET '%s' begin <now-60s ms> end <now+2h ms> initial 1000000000 state ok", stockKey, hashKey))
	var args []string
	if depth > 1 {
		args = []string{"-P", strconv.Itoa(depth)}
	}
	b.redisBench(name, "seckill.lua", append(args, "-r", "1000000000", "EVALSHA", "@SHA@", "5", stockKey, buyersKey,
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

// slapBench runs mariadb-slap, BENCH_CONNS clients, each running reps times
// the ;-separated query of stmts statements, on a scratch voucher of huge
// stock (@V@ in query is its id) deleted afterwards with its orders. Every
// run of the query must write one order (checked).
func (b *bench) slapBench(name string, stmts int, query string, reps int) {
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
func (b *bench) dbState(v int64) voucherFacts {
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

// wrkRun is one wrk run with bench/rotate.lua; its BENCH lines become the
// run's figures, with the CPU used by the server, MariaDB, Redis and wrk,
// and the machine's busy share, during the run. Without tokens the runs
// alternate tokens-0.csv and tokens-1.csv.
func (b *bench) wrkRun(name, method, path, once, tokens string) {
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
		"--latency", "-s", filepath.Join(b.root, "bench", "rotate.lua"), b.base+path)
	cmd.Env = append(os.Environ(), "BENCH_TOKENS="+tokens, "BENCH_THREADS="+strconv.Itoa(c.Threads), "BENCH_ONCE="+once, "BENCH_METHOD="+method)
	cmd.Stdout, cmd.Stderr = outf, os.Stderr
	err = cmd.Run()
	outf.Close()
	b.put(name, "t_end", strconv.FormatInt(time.Now().UnixNano(), 10))
	b.noteCmd(fmt.Sprintf("BENCH_TOKENS=%s BENCH_THREADS=%d BENCH_ONCE=%s BENCH_METHOD=%s wrk -t%d -c%d -d%ds --latency -s bench/rotate.lua %s%s   # %s",
		filepath.Base(tokens), c.Threads, once, method, c.Threads, c.Conns, c.Duration, b.base, path, name))
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
func (b *bench) logOrderCPU(name string) {
	if b.get(name, "cpu_server_order") == "" {
		return
	}
	b.logf("%s: CPU per admitted order: server %s us, Redis %s us (%s orders admitted during the run)",
		name, b.get(name, "cpu_server_order"), b.get(name, "cpu_redis_order"), b.get(name, "status_200"))
}

// checkWrk: wrk itself must report no socket errors and no timeouts, and
// its "Non-2xx or 3xx responses" must equal what response() counted.
func (b *bench) checkWrk(name string) {
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

// auditResponse is the admin audit endpoint's answer (model.Audit).
type auditResponse struct {
	Data struct {
		DuplicateRejections int64  `json:"duplicateRejections"`
		Consistent          bool   `json:"consistent"`
		Pending             *int64 `json:"pending"`
	} `json:"data"`
}

// audit reads the audit endpoint (waiting, in async mode, for the queue to
// drain), the database and, in async mode, Redis, and judges the facts with
// model.Counts (the invariants of docs/contract.md, as the tests do).
func (b *bench) audit(name string, v int64) {
	var a auditResponse
	var raw []byte
	for tries := 0; ; tries++ {
		status, body, err := b.call("GET", fmt.Sprintf("/admin/vouchers/%d/audit", v), b.adminToken, nil)
		if err != nil || status != 200 {
			b.die("audit of voucher %d failed: %d %s %v", v, status, body, err)
		}
		a = auditResponse{}
		if err := json.Unmarshal(body, &a); err != nil {
			b.die("audit of voucher %d: %v: %s", v, err, body)
		}
		raw = body
		if a.Data.Pending == nil || *a.Data.Pending == 0 {
			break
		}
		if tries >= 600 {
			b.violate(name, "async queue not drained after 60 s: "+string(body))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	os.WriteFile(filepath.Join(b.cfg.Out, "audit-"+name+".json"), append(raw, '\n'), 0o644)
	f := b.dbState(v)
	b.put(name, "voucher", strconv.FormatInt(v, 10))
	b.put(name, "initial", strconv.FormatInt(f.Initial, 10))
	b.put(name, "stock", strconv.FormatInt(f.Stock, 10))
	b.put(name, "orders", strconv.FormatInt(f.Orders, 10))
	b.put(name, "distinct", strconv.FormatInt(f.Distinct, 10))
	b.put(name, "duprej", strconv.FormatInt(a.Data.DuplicateRejections, 10))
	b.put(name, "consistent", strconv.FormatBool(a.Data.Consistent))
	if !a.Data.Consistent {
		b.violate(name, "audit endpoint says consistent=false: "+string(raw))
	}
	if a.Data.DuplicateRejections != 0 {
		b.violate(name, fmt.Sprintf("unique-key rejections: %d (the lock let duplicates through)", a.Data.DuplicateRejections))
	}
	if a.Data.Pending != nil {
		// Async mode: invariant 5 from Redis itself too (the endpoint's
		// consistent covers it; this does not trust the endpoint).
		f.Async = true
		f.Pending = *a.Data.Pending
		rc, err := audit.ReadRedis(b.ctx, b.rdb, v)
		if err != nil {
			b.die("audit of voucher %d: %v", v, err)
		}
		f.RedisStock, f.Buyers = rc.RedisStock, *rc.Buyers
		b.put(name, "pending", strconv.FormatInt(f.Pending, 10))
		b.put(name, "redis_stock", strconv.FormatInt(f.RedisStock, 10))
		b.put(name, "buyers", strconv.FormatInt(f.Buyers, 10))
		if f.Pending != 0 {
			b.violate(name, fmt.Sprintf("%d orders still pending after the drain", f.Pending))
		}
	}
	for _, msg := range factsViolations(f) {
		b.violate(name, msg)
	}
}

// factsViolations judges a voucher's facts with model.Counts, the one
// implementation of the invariants.
func factsViolations(f voucherFacts) []string {
	c := model.Counts{InitialStock: f.Initial, Stock: f.Stock, Orders: f.Orders, DistinctUsers: f.Distinct}
	if f.Async {
		buyers := f.Buyers
		c.Async = &model.AsyncCounts{RedisStock: f.RedisStock, Pending: f.Pending, Buyers: &buyers}
	}
	var out []string
	for _, v := range c.Violations() {
		out = append(out, v.String())
	}
	return out
}

// orderChecks: after a run where every request must create an order: no
// token reused (else knob is too low), every response 200, and 200s ≤
// orders ≤ 200s + unanswered.
func (b *bench) orderChecks(name, knob string) {
	n200 := int64(figNum0(b.get(name, "status_200")))
	received := int64(figNum0(b.get(name, "received")))
	inflight := int64(figNum0(b.get(name, "sent"))) - received
	orders := int64(figNum0(b.get(name, "orders")))
	b.put(name, "inflight", strconv.FormatInt(inflight, 10))
	if b.get(name, "wrapped") != "0" {
		b.violate(name, fmt.Sprintf("%s requests reused a token: raise %s", b.get(name, "wrapped"), knob))
	}
	if n200 != received {
		b.violate(name, fmt.Sprintf("%d of %d responses are not 200 (every request must create an order)", received-n200, received))
	}
	if !(orders >= n200 && orders <= n200+inflight) {
		b.violate(name, fmt.Sprintf("orders %d, 200 responses %d, unanswered at stop %d: want 200s <= orders <= 200s + unanswered", orders, n200, inflight))
	}
}

// seckillRun: a fresh server, a voucher of stock far above the request
// count, one wrk run where every request is a new user, then the audit and
// the checks.
func (b *bench) seckillRun(name, orderMode, lockMode string, env ...string) {
	b.logf("seckill %s %s", name, strings.Join(env, " "))
	b.startServer(orderMode, lockMode, name, env...)
	v := b.publish(10000000)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", "")
	b.serverMetrics(name, "")
	b.checkWrk(name)
	b.audit(name, v)
	b.orderChecks(name, "BENCH_USERS")
	b.stopServer()
}

// groupCommitOff is the server setting of the sync -pertxn run: one
// transaction per order, the course's path.
const groupCommitOff = "SECKILL_SYNC_GROUP_COMMIT=off"

// limitsNotHit are the purchase limits of the -limits run: every limit
// on, none reached (every request is a new user; one voucher and one
// address get far fewer requests than their limits).
var limitsNotHit = []string{"SECKILL_RATE_LIMIT=1000", "SECKILL_RATE_LIMIT_VOUCHER=100000000", "SECKILL_RATE_LIMIT_IP=100000000"}

// benchLimits are the settings of the -limits run: BENCH_LIMITS when set
// (e.g. one limit alone), else limitsNotHit.
func benchLimits() []string {
	if v := strings.Fields(os.Getenv("BENCH_LIMITS")); len(v) > 0 {
		return v
	}
	return limitsNotHit
}

// tracedAt1Percent is tracing in the -traced run: 1 % of the requests
// sampled, their spans written by the console exporter to the server's log.
var tracedAt1Percent = []string{"OTEL_TRACES_EXPORTER=console", "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01"}

// asyncRun: like seckillRun in async mode, then the drain and the audit with
// invariant 5. With profile, the wrk run and the drain are CPU-profiled (the
// drain profile is <name>-drain).
func (b *bench) asyncRun(name, lockMode string, profile bool, env ...string) {
	b.logf("seckill %s %s", name, strings.Join(env, " "))
	b.startServer("async", lockMode, name, env...)
	v := b.publish(10000000)
	admission := name == b.cfg.admissionRun()
	if admission {
		b.allocsProfile(name, admissionAllocsBase)
	}
	b.costBegin(name)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", filepath.Join(b.cfg.Out, "tokens-async.csv"))
	if admission {
		b.allocsProfile(name, admissionAllocs)
		b.saveAdmissionProfiles(name)
	}
	if profile {
		secs := int(figNum0(b.get("async-"+lockMode, "drain_secs")) + 0.5)
		b.profileStart(name+"-drain", max(secs, 2), 0)
	}
	b.drain(name, v)
	b.costEnd(name)
	b.profileFinish(name + "-drain")
	b.serverMetrics(name, "")
	b.asyncChecks(name, v)
}

// asyncChecks ends an async run once drained, its server still up: the
// other consumers, wrk's checks, the audit and the order checks, then the
// server's stop and the count of frozen refusals.
func (b *bench) asyncChecks(name string, v int64) {
	b.otherConsumers(name)
	b.checkWrk(name)
	b.audit(name, v)
	b.orderChecks(name, "BENCH_ASYNC_USERS")
	b.stopServer()
	b.frozen(name)
}

// asyncNoDrainRun: the admission of asyncRun (a fresh voucher, the same wrk
// run and tokens) on a server whose consumers do not write during the load:
// started with SECKILL_DEV_CONSUMER_DELAY (development only, allowed as the
// bench's servers run in SECKILL_ENV=development) longer than the load, so
// that each consumer holds the batch it read, unwritten, and reads no more.
// The partner of the admission target "not slowed by the drain": its req/s
// is the admission without the consumers' work. The figures of the load
// (latency, pipelining, CPU) are that server's. Then that server is stopped:
// SIGTERM does not wait for the pause (the consumer's sleep, c.sleep, ends
// when the consumers are stopped), and the consumer then writes the batch
// it held if the batch's deadline (its BatchTimeout, 8 s after the read) has
// not passed, else leaves it pending (never written twice: the next server
// claims it). A normal async server then drains the backlog and is audited
// as in asyncRun. Its drain time includes the stop and the start and, after
// a load longer than 8 s, the wait for the held batch (at most one batch,
// 100 entries) to be claimed by the new server's consumer after
// SECKILL_CLAIM_IDLE (default 30 s): its drain rate is not the consumers'
// speed. "written_load" is the orders in the database at the end of the
// load (0 unless something else, another process's consumers, wrote them).
func (b *bench) asyncNoDrainRun(name, lockMode string) {
	delay := fmt.Sprintf("SECKILL_DEV_CONSUMER_DELAY=%ds", b.cfg.Duration+600)
	b.logf("seckill %s (%s: the consumers hold their first batch)", name, delay)
	b.startServer("async", lockMode, name, delay)
	b.noteCmd(fmt.Sprintf("# %s: the server started with %s; its backlog drained by a normal async server (log server-%s-drain.log)", name, delay, name))
	v := b.publish(10000000)
	b.wrkRun(name, "POST", fmt.Sprintf("/voucher-order/seckill/%d", v), "1", filepath.Join(b.cfg.Out, "tokens-async.csv"))
	b.serverMetrics(name, "")
	held := b.dbState(v)
	written := held.Initial - held.Stock
	if written != 0 {
		b.logf("%s: %d orders written during the load although its consumers were held (another process's consumers?)", name, written)
	}
	b.stopServer()
	b.startServer("async", lockMode, name+"-drain")
	b.drain(name, v)
	b.put(name, "written_load", strconv.FormatInt(written, 10))
	// The drain's batches are the second server's.
	drained := b.scrapeMetrics(name+"-drain", "")
	b.put(name, "batch_mean", drained["batch_mean"])
	b.put(name, "batches", drained["batches"])
	b.asyncChecks(name, v)
}

// drain: after an async run, the consumers' drain. It polls the voucher's
// stock in the database (a primary-key read) and in Redis every 50 ms until
// they are equal: Redis holds initial - admitted, the database initial -
// written, so equal means every admitted order is written. (The audit
// endpoint scans the whole stream: polling it would slow the drain it
// measures; it is read once the drain is over, and must say pending 0.)
// Figures: the backlog and the orders written at the first poll, the
// seconds from the end of the load until drained, and the drain rate
// (orders written between the first poll and the last, per second).
func (b *bench) drain(name string, v int64) {
	tEnd := time.Unix(0, int64(figNum0(b.get(name, "t_end"))))
	var initial int64
	if err := b.db.QueryRowContext(b.ctx, "SELECT initial_stock FROM tb_seckill_voucher WHERE voucher_id=?", v).Scan(&initial); err != nil {
		b.die("reading voucher %d: %v", v, err)
	}
	var t0, t1 time.Time
	var n0, ds, rs int64
	for {
		if err := b.db.QueryRowContext(b.ctx, "SELECT stock FROM tb_seckill_voucher WHERE voucher_id=?", v).Scan(&ds); err != nil {
			b.die("reading voucher %d: %v", v, err)
		}
		rs = b.redisStock(v)
		t1 = time.Now()
		if t0.IsZero() {
			t0, n0 = t1, initial-ds
			b.put(name, "backlog", strconv.FormatInt(ds-rs, 10))
			b.put(name, "written_load", strconv.FormatInt(n0, 10))
			b.put(name, "first_poll_ms", fmt.Sprintf("%.0f", float64(t1.Sub(tEnd).Microseconds())/1000))
		}
		if ds <= rs {
			break
		}
		if t1.Sub(tEnd).Seconds() > float64(b.cfg.DrainTimeout) {
			b.violate(name, fmt.Sprintf("not drained %d s after the load: database stock %d, Redis stock %d", b.cfg.DrainTimeout, ds, rs))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ds < rs {
		b.violate(name, fmt.Sprintf("database stock %d below Redis stock %d: more orders written than admitted", ds, rs))
	}
	drained := initial - ds - n0
	b.put(name, "drained", strconv.FormatInt(drained, 10))
	b.put(name, "drain_secs", fmt.Sprintf("%.2f", t1.Sub(tEnd).Seconds()))
	// Kept up (nothing left at the first poll): no drain rate to measure.
	rate := ""
	if d := t1.Sub(t0).Seconds(); drained > 0 && d > 0 {
		rate = fmt.Sprintf("%.0f", float64(drained)/d)
	}
	b.put(name, "drain_rate", rate)
	b.logf("%s: backlog %s at the end of the load, drained in %s s, %s orders/s", name, b.get(name, "backlog"), b.get(name, "drain_secs"), rate)
}

// otherConsumers: consumers of group g1 that are not this server's and read
// the stream in the last 5 s (other processes on this Redis, such as tests
// in async mode, share stream.orders and take part in the drain).
func (b *bench) otherConsumers(name string) {
	host, _ := os.Hostname()
	mine := fmt.Sprintf("%s-%d-", host, b.serverPID())
	others := map[string]bool{}
	for shard := range repository.Shards {
		cs, _ := b.rdb.XInfoConsumers(b.ctx, repository.StreamKey(shard), repository.GroupName).Result()
		for _, c := range cs {
			if !strings.HasPrefix(c.Name, mine) && c.Idle < 5*time.Second {
				others[c.Name] = true
			}
		}
	}
	b.put(name, "other_consumers", strconv.Itoa(len(others)))
}

// redisStock is the voucher's Redis stock summed over its buckets (0 when
// it cannot be read).
func (b *bench) redisStock(v int64) int64 {
	c, err := audit.ReadRedis(b.ctx, b.rdb, v)
	if err != nil {
		return 0
	}
	return c.RedisStock
}

// serverMetrics reads the server's /metrics (cumulative since its start,
// one server per run): the route's latency as the server itself saw it, the
// consumers' mean batch size and the admissions' mean pipelining depth
// (promHistogram). route defaults to the seckill route.
func (b *bench) serverMetrics(name, route string) {
	b.putAll(name, b.scrapeMetrics(name, route))
}

// scrapeMetrics reads the server's /metrics, keeps it as
// metrics-<file>.txt in the out dir and returns its figures
// (promHistogram; none when the server did not answer).
func (b *bench) scrapeMetrics(file, route string) benchFigures {
	if route == "" {
		route = "/voucher-order/seckill/:id"
	}
	text, err := testbed.ScrapeMetrics([]string{b.base})
	if err != nil {
		b.logf("no /metrics for %s", file)
		return benchFigures{}
	}
	os.WriteFile(filepath.Join(b.cfg.Out, "metrics-"+file+".txt"), []byte(text), 0o644)
	return promHistogram(text, route)
}

// frozen: how many requests of the run the server refused because the
// voucher's Redis state was not trusted (state frozen or unsafe). Only a
// reconciler sets that state: another process starting in async mode on
// this Redis (tests, load tests) checks every live voucher, bench vouchers
// too, and rebuilds those that look inconsistent, which a voucher under
// load always does, freezing it meanwhile.
func (b *bench) frozen(name string) {
	n := strings.Count(benchReadFile(filepath.Join(b.cfg.Out, "server-"+name+".log")), "voucher state in redis not trusted")
	b.put(name, "frozen", strconv.Itoa(n))
	if n > 0 {
		b.logf("%s: %d requests refused while the voucher was frozen or unsafe (another process's start-up reconciliation)", name, n)
	}
}

// attempt runs a run; when its voucher was frozen by another process during
// the run (see frozen), the attempt is recorded in disturbed, its
// violations with it, and the run is repeated once. A repeat disturbed
// again counts as it is.
func (b *bench) attempt(name string, run func()) {
	nv := len(b.violations)
	run()
	if figNum0(b.get(name, "frozen")) <= 0 {
		return
	}
	note := fmt.Sprintf("%s: %s of %s responses 503 UNAVAILABLE (voucher frozen by another process's start-up reconciliation)", name, b.get(name, "frozen"), b.get(name, "received"))
	for _, v := range b.violations[nv:] {
		note += "; " + v
	}
	b.disturbed = append(b.disturbed, note)
	b.violations = b.violations[:nv]
	for _, p := range []string{"server-" + name + ".log", "wrk-" + name + ".txt", "k6-" + name + ".json"} {
		p = filepath.Join(b.cfg.Out, p)
		if _, err := os.Stat(p); err == nil {
			ext := filepath.Ext(p)
			os.Rename(p, strings.TrimSuffix(p, ext)+".disturbed"+ext)
		}
	}
	b.mu.Lock()
	delete(b.runs, name)
	b.mu.Unlock()
	b.logf("repeating %s", name)
	run()
}

// k6Exec is one k6 run (bench/arrival.js) at rate arrivals per second for
// BENCH_DURATION seconds, every request a new user: the seckill of voucher
// v, or GET path.
func (b *bench) k6Exec(name string, rate int, v int64, path string) {
	c := b.cfg
	need := rate * (c.Duration + 1)
	tokens := filepath.Join(c.Out, "tokens-k6.csv")
	data, _ := os.ReadFile(filepath.Join(c.Out, "tokens-async.csv"))
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(tokens, []byte(strings.Join(lines[:min(need, len(lines))], "")), 0o644)
	sum := filepath.Join(c.Out, "k6-"+name+".json")
	b.put(name, "rate", strconv.Itoa(rate))
	if b.profileWanted(name) && c.Duration > 3 {
		b.profileStart(name, c.Duration-2, 1500*time.Millisecond) // k6 starts in about a second
	}
	m0 := b.sample(0)
	env := []string{"BENCH_BASE=" + b.base, fmt.Sprintf("BENCH_VOUCHER=%d", v), "BENCH_PATH=" + path, "BENCH_TOKENS=" + tokens,
		fmt.Sprintf("BENCH_RATE=%d", rate), fmt.Sprintf("BENCH_DURATION=%d", c.Duration), fmt.Sprintf("BENCH_VUS=%d", 4*c.Conns), "BENCH_SUMMARY=" + sum}
	args := []string{"run", "--quiet", "--no-color"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	cmd := exec.Command(b.k6, append(args, filepath.Join(b.root, "bench", "arrival.js"))...)
	out, err := cmd.CombinedOutput()
	txt := filepath.Join(c.Out, "k6-"+name+".txt")
	os.WriteFile(txt, out, 0o644)
	if err != nil {
		b.die("k6 failed: %s", proc.Tail(txt, 5))
	}
	b.put(name, "t_end", strconv.FormatInt(time.Now().UnixNano(), 10))
	b.noteCmd(fmt.Sprintf("%s run --quiet -e BENCH_BASE=%s -e BENCH_VOUCHER=%d -e BENCH_PATH=%s -e BENCH_TOKENS=tokens-k6.csv -e BENCH_RATE=%d -e BENCH_DURATION=%d -e BENCH_VUS=%d -e BENCH_SUMMARY=k6-%s.json bench/arrival.js   # %s; tokens-k6.csv: the first %d lines of tokens-async.csv",
		filepath.Base(b.k6), b.base, v, path, rate, c.Duration, 4*c.Conns, name, name, need))
	sumData, err := os.ReadFile(sum)
	if err != nil {
		b.die("k6 wrote no summary for %s: %v", name, err)
	}
	f, err := k6Figures(sumData)
	if err != nil {
		b.die("k6 summary of %s: %v", name, err)
	}
	b.putAll(name, f)
	m1 := b.sampleEnd(b.childTicks(cmd))
	b.putAll(name, meterFigures(m0, m1, figNum0(b.get(name, "received")), b.hz))
	if v != 0 { // the seckill: every 200 is an order
		b.putAll(name, orderCPUFigures(m0, m1, figNum0(b.get(name, "status_200")), b.hz))
	}
	b.profileFinish(name)
	if b.get(name, "received") != b.get(name, "requests") {
		b.violate(name, fmt.Sprintf("k6: %s responses to %s iterations", b.get(name, "received"), b.get(name, "requests")))
	}
	if b.get(name, "wrapped") != "0" {
		b.violate(name, fmt.Sprintf("k6: %s requests reused a token: raise BENCH_ASYNC_USERS", b.get(name, "wrapped")))
	}
	b.logf("%s: %s responses, %s req/s, p50/p95/p99 %s / %s / %s us, dropped %s", name, b.get(name, "received"), b.get(name, "rps"),
		b.get(name, "p50_us"), b.get(name, "p95_us"), b.get(name, "p99_us"), b.get(name, "dropped"))
	b.logOrderCPU(name)
}

// k6Figures reads a k6 JSON summary (handleSummary's data) into the run's
// figures, as run.sh's jq did.
func k6Figures(data []byte) (benchFigures, error) {
	var s struct {
		Metrics map[string]struct {
			Values map[string]float64 `json:"values"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	val := func(metric, k string) float64 { return s.Metrics[metric].Values[k] }
	g := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	f := benchFigures{
		"requests": g(val("iterations", "count")),
		"received": g(val("http_reqs", "count")),
		"rps":      g(val("http_reqs", "rate")),
		"dropped":  g(val("dropped_iterations", "count")),
		"wrapped":  g(val("wrapped", "count")),
		"vus_max":  g(val("vus_max", "max")),
		"max_us":   g(roundHalfAway(val("http_req_duration", "max") * 1000)),
	}
	f["sent"] = f["requests"]
	for _, p := range []string{"50", "90", "95", "99"} {
		f["p"+p+"_us"] = g(roundHalfAway(val("http_req_duration", "p("+p+")") * 1000))
	}
	for _, k := range []string{"200", "409", "429", "5xx", "other"} {
		if n := val("status_"+k, "count"); n != 0 {
			f["status_"+k] = g(n)
		}
	}
	for _, k := range []string{"DUPLICATE_ORDER", "SOLD_OUT", "UNAVAILABLE", "other"} {
		if n := val("code_"+k, "count"); n != 0 {
			f["code_"+k] = g(n)
		}
	}
	return f, nil
}

// roundHalfAway is jq's round.
func roundHalfAway(x float64) float64 {
	if x < 0 {
		return -roundHalfAway(-x)
	}
	return float64(int64(x + 0.5))
}

// k6Run: a fresh async server, a voucher of stock far above the request
// count, k6 at rate; then the drain, the audit and the checks: every
// response 200, orders = 200s. With floor, first the same k6 run on the
// no-op endpoint of the same server (<name>-noop): the latency floor of
// this machine and client at that rate.
func (b *bench) k6Run(name, lockMode string, rate int, floor bool) {
	b.logf("k6 %s: %d requests/s for %d s", name, rate, b.cfg.Duration)
	b.startServer("async", lockMode, name)
	if floor {
		b.k6Exec(name+"-noop", rate, 0, "/debug/noop")
		b.serverMetrics(name+"-noop", "/debug/noop")
		if b.get(name+"-noop", "status_200") != b.get(name+"-noop", "received") {
			b.violate(name+"-noop", fmt.Sprintf("%s of %s no-op responses are 200", b.get(name+"-noop", "status_200"), b.get(name+"-noop", "received")))
		}
	}
	v := b.publish(10000000)
	b.k6Exec(name, rate, v, "")
	b.drain(name, v)
	b.otherConsumers(name)
	b.serverMetrics(name, "")
	b.audit(name, v)
	b.orderChecks(name, "BENCH_ASYNC_USERS")
	b.stopServer()
	b.frozen(name)
}
