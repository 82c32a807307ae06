// Package stampede is `harness stampede`: thousands of connections open at
// once on the purchase, closed loop, a new user per request, beside the
// same purchase at 64 connections (the limit measured in the same run).
// It appends its figures to tools/bench/STAMPEDE.md (docs/bench-harness.md).
package stampede

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seckill/testkit/proc"
	"seckill/tools/cmd/harness/testbed"
)

// config is the STAMPEDE_* settings.
type config struct {
	Bin, Label, Commit, Out, Results string
	Modes                            []string
	ServerEnv                        []string
	Conns, LimitConns, Duration      int
	Timeout, Port, Users, Skip       int
	Repeat                           int
	RetryAfter, Profile              bool
}

func configFromEnv(root string, now time.Time) (config, error) {
	c := config{
		Bin:        os.Getenv("STAMPEDE_BIN"),
		Label:      testbed.EnvOr("STAMPEDE_LABEL", "stampede"),
		Commit:     os.Getenv("STAMPEDE_COMMIT"),
		Out:        testbed.EnvOr("STAMPEDE_OUT", filepath.Join(root, "tools", "bench", "out", "stampede-"+now.Format("20060102-150405"))),
		Results:    testbed.EnvOr("STAMPEDE_RESULTS", filepath.Join(root, "tools", "bench", "STAMPEDE.md")),
		Modes:      strings.Fields(testbed.EnvOr("STAMPEDE_MODES", "sync async")),
		ServerEnv:  strings.Fields(os.Getenv("STAMPEDE_SERVER_ENV")),
		RetryAfter: testbed.EnvOr("STAMPEDE_RETRY_AFTER", "1") != "0",
		Profile:    os.Getenv("STAMPEDE_PROFILE") == "1",
	}
	ints := []struct {
		name, def string
		dst       *int
	}{
		{"CONNS", "5000", &c.Conns}, {"LIMIT_CONNS", "64", &c.LimitConns}, {"DURATION", "10", &c.Duration},
		{"TIMEOUT", "10", &c.Timeout}, {"PORT", "18281", &c.Port}, {"USERS", "200000", &c.Users},
		{"SKIP", "5000", &c.Skip}, {"REPEAT", "1", &c.Repeat},
	}
	for _, v := range ints {
		s := testbed.EnvOr("STAMPEDE_"+v.name, v.def)
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || (n == 0 && v.name != "SKIP") {
			return c, fmt.Errorf("STAMPEDE_%s=%s is not a positive number", v.name, s)
		}
		*v.dst = n
	}
	// Bounded in count and time: at most 20,000 connections, 60 s a run.
	if c.Conns > 20000 || c.LimitConns > 20000 || c.Duration > 60 || c.Timeout > 60 || c.Repeat > 5 {
		return c, errors.New("STAMPEDE_CONNS and _LIMIT_CONNS ≤ 20000, _DURATION and _TIMEOUT ≤ 60 s, _REPEAT ≤ 5")
	}
	for _, m := range c.Modes {
		if m != "sync" && m != "async" {
			return c, fmt.Errorf("STAMPEDE_MODES: unknown order mode %s", m)
		}
	}
	return c, nil
}

// Run is `harness stampede`: 0 when every run kept the invariants, 1 on a
// violation (the figures written), 2 when it could not run.
func Run(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: harness stampede (settings: the STAMPEDE_* variables, docs/bench-harness.md)")
		return 2
	}
	root, err := testbed.CIRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "[stampede]", err)
		return 2
	}
	cfg, err := configFromEnv(root, time.Now())
	if err != nil {
		fmt.Fprintln(os.Stderr, "[stampede]", err)
		return 2
	}
	s := &stampede{cfg: cfg, root: root, ctx: context.Background()}
	if err := s.prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "[stampede]", err)
		return 2
	}
	defer s.db.Close()
	var results []result
	for r := 0; r < cfg.Repeat; r++ {
		for _, mode := range cfg.Modes {
			for _, conns := range []int{cfg.LimitConns, cfg.Conns} {
				res, err := s.run(mode, conns)
				if err != nil {
					fmt.Fprintln(os.Stderr, "[stampede]", err)
					return 2
				}
				results = append(results, res)
				fmt.Fprintln(os.Stderr, "[stampede]", res.line())
			}
		}
	}
	if err := s.report(results); err != nil {
		fmt.Fprintln(os.Stderr, "[stampede]", err)
		return 2
	}
	for _, r := range results {
		if len(r.Violations) > 0 {
			return 1
		}
	}
	return 0
}

type stampede struct {
	cfg        config
	root       string
	ctx        context.Context
	bin        string
	commit     string
	tokens     []string // user tokens, each once per run
	adminToken string
	db         *sql.DB
	started    time.Time
}

// prepare builds (or takes) the server, makes the tokens and opens the
// database for the audit.
func (s *stampede) prepare() error {
	s.started = time.Now()
	if err := os.MkdirAll(s.cfg.Out, 0o755); err != nil {
		return err
	}
	s.commit = s.cfg.Commit
	if s.cfg.Bin != "" {
		s.bin, _ = filepath.Abs(s.cfg.Bin)
		if s.commit == "" {
			s.commit = "prebuilt " + s.bin
		}
	} else {
		s.bin = filepath.Join(s.cfg.Out, "seckill")
		if err := testbed.GoBuild(s.ctx, s.root, s.bin, "."); err != nil {
			return err
		}
		rev, _ := exec.Command("git", "-C", s.root, "rev-parse", "--short", "HEAD").Output()
		s.commit = strings.TrimSpace(string(rev))
		if st, _ := exec.Command("git", "-C", s.root, "status", "--porcelain", "--untracked-files=no", "--", "*.go").Output(); len(st) > 0 {
			s.commit += " (with uncommitted Go files)"
		}
	}
	users := filepath.Join(s.cfg.Out, "tokens.csv")
	log := filepath.Join(s.cfg.Out, "tokens.log")
	if err := testbed.MakeTokens(s.ctx, s.bin, users, s.cfg.Skip+s.cfg.Users, false, log); err != nil {
		return err
	}
	admin := filepath.Join(s.cfg.Out, "admin.csv")
	if err := testbed.MakeTokens(s.ctx, s.bin, admin, 1, true, log); err != nil {
		return err
	}
	all, err := readTokens(users)
	if err != nil {
		return err
	}
	if len(all) <= s.cfg.Skip {
		return fmt.Errorf("%s holds %d tokens, no more than STAMPEDE_SKIP", users, len(all))
	}
	s.tokens = all[s.cfg.Skip:]
	adm, err := readTokens(admin)
	if err != nil || len(adm) == 0 {
		return fmt.Errorf("no admin token in %s: %v", admin, err)
	}
	s.adminToken = adm[0]
	s.db, err = testbed.OpenDB(s.ctx, os.Getenv("SECKILL_MYSQL_DSN"))
	return err
}

// readTokens reads the tokens of a userId,token file.
func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if len(r) >= 2 {
			out = append(out, r[1])
		}
	}
	return out, nil
}

// result is one run's figures.
type result struct {
	Mode             string
	Conns            int
	Requests         int     // answered or failed, in the window and after it
	Goodput          float64 // 200s answered within the window, per second
	Status           map[int]int
	RetryAfter       int // 503s with a Retry-After header
	Timeouts, Errors int
	P50, P99         time.Duration // the answered (every status but 503)
	P99All, P99Shed  time.Duration
	// P99Later is P99 of the requests sent after the run's first second
	// (the burst of the connections' first requests left out).
	P99Later              time.Duration
	TokensOut             bool
	Orders                int64
	Violations            []string
	LoadBefore, LoadAfter string
	// ServerUS, MariaDBUS and ClientUS are CPU µs per request of the
	// server, of MariaDB (the whole database, other clients included) and
	// of this client during the load.
	ServerUS, MariaDBUS, ClientUS float64
}

func (r result) line() string {
	return fmt.Sprintf("%s %d conns: %d requests, goodput %.0f/s, 200 %d, 503 %d, timeouts %d, errors %d, p50 %s p99 %s (answered; after 1 s %s), invariants %s",
		r.Mode, r.Conns, r.Requests, r.Goodput, r.Status[200], r.Status[503], r.Timeouts, r.Errors,
		ms(r.P50), ms(r.P99), ms(r.P99Later), verdict(r.Violations))
}

// record is one request's outcome.
type record struct {
	status     int // 0: timeout or error
	timeout    bool
	retryAfter time.Duration // the 503's Retry-After (0: none)
	took       time.Duration
	done       time.Time
	orderID    string
}

// run starts a fresh server in mode, publishes a voucher with ample stock,
// sends conns closed loops at it for the duration and audits it.
func (s *stampede) run(mode string, conns int) (result, error) {
	res := result{Mode: mode, Conns: conns, Status: map[int]int{}, LoadBefore: loadavg()}
	logName := filepath.Join(s.cfg.Out, fmt.Sprintf("server-%s-%d-%d.log", mode, conns, time.Now().Unix()))
	env := append([]string{"SECKILL_ORDER_MODE=" + mode, "SECKILL_LOCK_MODE=lua", "SECKILL_LOG_LEVEL=warn"}, s.cfg.ServerEnv...)
	if testbed.PortOpen(s.cfg.Port) {
		return res, fmt.Errorf("something already serves 127.0.0.1:%d (STAMPEDE_PORT)", s.cfg.Port)
	}
	in, err := testbed.StartInstance(s.bin, s.cfg.Port, logName, env...)
	if err != nil {
		return res, err
	}
	defer testbed.StopInstances([]*testbed.Instance{in})
	if err := testbed.WaitReady(s.ctx, in, 30*time.Second); err != nil {
		return res, fmt.Errorf("server not ready: %v: %s", err, proc.Tail(logName, 3))
	}
	voucher, err := s.publish(in.URL)
	if err != nil {
		return res, err
	}
	db := mariadbPID()
	cpu0, db0, cl0 := procCPU(in.Proc.Pid()), procCPU(db), procCPU(os.Getpid())
	var profiled sync.WaitGroup
	if s.cfg.Profile {
		profiled.Add(1)
		go func() {
			defer profiled.Done()
			s.profile(in.URL, fmt.Sprintf("cpu-%s-%d-%d.pprof", mode, conns, time.Now().Unix()))
		}()
	}
	recs, ranOut, start := s.load(in.URL, voucher, conns)
	profiled.Wait()
	cpu1, db1, cl1 := procCPU(in.Proc.Pid()), procCPU(db), procCPU(os.Getpid())
	res.TokensOut = ranOut
	s.summarize(&res, recs, start)
	if res.Requests > 0 {
		res.ServerUS = (cpu1 - cpu0).Seconds() * 1e6 / float64(res.Requests)
		res.MariaDBUS = (db1 - db0).Seconds() * 1e6 / float64(res.Requests)
		res.ClientUS = (cl1 - cl0).Seconds() * 1e6 / float64(res.Requests)
	}
	s.audit(&res, in.URL, voucher, recs)
	res.LoadAfter = loadavg()
	return res, nil
}

// load sends conns closed loops, all released at once, each request a new
// user, until the duration ends or the tokens run out. A 503 with
// Retry-After makes its connection wait as asked (STAMPEDE_RETRY_AFTER=1).
func (s *stampede) load(base string, voucher int64, conns int) ([][]record, bool, time.Time) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Duration(s.cfg.Timeout) * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Duration(s.cfg.Timeout) * time.Second}
	url := fmt.Sprintf("%s/voucher-order/seckill/%d", base, voucher)
	var next atomic.Int64
	var ranOut atomic.Bool
	recs := make([][]record, conns)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	var start, end time.Time
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for time.Now().Before(end) {
				i := next.Add(1) - 1
				if int(i) >= len(s.tokens) {
					ranOut.Store(true)
					return
				}
				r := s.once(client, url, s.tokens[i])
				recs[w] = append(recs[w], r)
				if r.status == http.StatusServiceUnavailable && r.retryAfter > 0 && s.cfg.RetryAfter {
					time.Sleep(min(r.retryAfter, time.Until(end)))
				}
			}
		}()
	}
	start = time.Now()
	end = start.Add(time.Duration(s.cfg.Duration) * time.Second)
	close(gate)
	wg.Wait()
	return recs, ranOut.Load(), start
}

// once sends one purchase. Its time runs from the connection in hand (as
// wrk's: the connect is not counted) to the end of the body.
func (s *stampede) once(client *http.Client, url, token string) record {
	var t0 time.Time
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { t0 = time.Now() }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(s.ctx, trace), http.MethodPost, url, nil)
	req.Header.Set("authorization", token)
	resp, err := client.Do(req)
	if err != nil {
		var ne net.Error
		return record{timeout: errors.As(err, &ne) && ne.Timeout(), done: time.Now()}
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	now := time.Now()
	if t0.IsZero() {
		t0 = now
	}
	r := record{status: resp.StatusCode, took: now.Sub(t0), done: now}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		r.retryAfter = time.Duration(secs) * time.Second
	}
	if err != nil {
		return record{done: now}
	}
	if r.status == http.StatusOK {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(body, &env) == nil {
			r.orderID = strings.Trim(string(env.Data), `"`)
		}
	}
	return r
}

// profile saves a CPU profile of the server over the middle of the run
// (STAMPEDE_PROFILE=1) in the out dir.
func (s *stampede) profile(base, name string) {
	secs := max(1, s.cfg.Duration/2)
	time.Sleep(time.Duration(s.cfg.Duration-secs) * time.Second / 2)
	body, err := s.get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs), "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "[stampede] profile:", err)
		return
	}
	os.WriteFile(filepath.Join(s.cfg.Out, name), body, 0o644)
}

// summarize counts the statuses and takes the percentiles.
func (s *stampede) summarize(res *result, recs [][]record, start time.Time) {
	end := start.Add(time.Duration(s.cfg.Duration) * time.Second)
	var answered, later, all, shed []time.Duration
	secs := make([]struct{ ok, shed, slow int }, s.cfg.Duration+61)
	ok := 0
	for _, rs := range recs {
		for _, r := range rs {
			res.Requests++
			switch {
			case r.timeout:
				res.Timeouts++
				continue
			case r.status == 0:
				res.Errors++
				continue
			}
			res.Status[r.status]++
			all = append(all, r.took)
			if r.status == http.StatusServiceUnavailable {
				shed = append(shed, r.took)
				if sec := int(r.done.Add(-r.took).Sub(start) / time.Second); sec >= 0 && sec < len(secs) {
					secs[sec].shed++
				}
				if r.retryAfter > 0 {
					res.RetryAfter++
				}
				continue
			}
			answered = append(answered, r.took)
			sent := r.done.Add(-r.took).Sub(start)
			if sent >= time.Second {
				later = append(later, r.took)
			}
			if sec := int(sent / time.Second); sec >= 0 && sec < len(secs) {
				secs[sec].ok++
				if r.took > time.Second {
					secs[sec].slow++
				}
			}
			if r.status == http.StatusOK && !r.done.After(end) {
				ok++
			}
		}
	}
	res.Goodput = float64(ok) / float64(s.cfg.Duration)
	res.P50, res.P99 = percentile(answered, 50), percentile(answered, 99)
	res.P99All, res.P99Shed = percentile(all, 99), percentile(shed, 99)
	res.P99Later = percentile(later, 99)
	var b strings.Builder
	b.WriteString("second sent,answered,answered in more than 1 s,503\n")
	for i, x := range secs[:s.cfg.Duration] {
		fmt.Fprintf(&b, "%d,%d,%d,%d\n", i, x.ok, x.slow, x.shed)
	}
	os.WriteFile(filepath.Join(s.cfg.Out, fmt.Sprintf("seconds-%s-%d-%d.csv", res.Mode, res.Conns, start.Unix())), []byte(b.String()), 0o644)
}

// percentile is the p-th percentile of d (nearest rank); d is sorted.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (len(d)*p + 99) / 100
	return d[max(i, 1)-1]
}

// audit checks the invariants: the audit endpoint says consistent (async:
// once drained), every 200's order is in the database, and the database
// holds no order that no answer may have announced.
func (s *stampede) audit(res *result, base string, voucher int64, recs [][]record) {
	violate := func(f string, a ...any) { res.Violations = append(res.Violations, fmt.Sprintf(f, a...)) }
	for tries := 0; ; tries++ {
		body, err := s.get(base+fmt.Sprintf("/admin/vouchers/%d/audit", voucher), s.adminToken)
		var a struct {
			Data struct {
				Consistent bool   `json:"consistent"`
				Pending    *int64 `json:"pending"`
			} `json:"data"`
		}
		if err != nil || json.Unmarshal(body, &a) != nil {
			violate("audit failed: %v %s", err, body)
			break
		}
		if a.Data.Pending != nil && *a.Data.Pending > 0 && tries < 1200 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !a.Data.Consistent {
			violate("audit: not consistent: %s", body)
		}
		break
	}
	ids := map[string]bool{}
	rows, err := s.db.QueryContext(s.ctx, "SELECT id FROM tb_voucher_order WHERE voucher_id = ?", voucher)
	if err != nil {
		violate("reading the orders: %v", err)
		return
	}
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids[strconv.FormatInt(id, 10)] = true
		}
	}
	rows.Close()
	res.Orders = int64(len(ids))
	unsure := res.Timeouts + res.Errors // their outcome is unknown to the client
	if n := res.Status[200]; len(ids) < n || len(ids) > n+unsure {
		violate("orders %d, 200s %d, unknown outcomes %d: want 200s ≤ orders ≤ 200s + unknown", len(ids), n, unsure)
	}
	missing := 0
	for _, rs := range recs {
		for _, r := range rs {
			if r.status == http.StatusOK && !ids[r.orderID] {
				missing++
			}
		}
	}
	if missing > 0 {
		violate("%d answered order ids are not in the database", missing)
	}
	var initial, stock int64
	if err := s.db.QueryRowContext(s.ctx, "SELECT initial_stock, stock FROM tb_seckill_voucher WHERE voucher_id = ?", voucher).Scan(&initial, &stock); err != nil {
		violate("reading the stock: %v", err)
	} else if initial-stock != int64(len(ids)) {
		violate("initial %d − stock %d ≠ orders %d", initial, stock, len(ids))
	}
}

// publish creates a shop and a voucher of stock 10,000,000 on sale now.
func (s *stampede) publish(base string) (int64, error) {
	shop, err := s.created(base+"/shop", `{"name":"stampede shop","typeId":1,"address":"loopback 1","x":120.15,"y":30.28}`)
	if err != nil {
		return 0, fmt.Errorf("creating a shop: %w", err)
	}
	now := time.Now().UTC()
	body := fmt.Sprintf(`{"shopId":%d,"title":"stampede","subTitle":"harness stampede","rules":"","payValue":100,"actualValue":100,"type":1,"stock":10000000,"beginTime":"%s","endTime":"%s"}`,
		shop, now.Add(-time.Minute).Format("2006-01-02T15:04:05Z"), now.Add(2*time.Hour).Format("2006-01-02T15:04:05Z"))
	v, err := s.created(base+"/voucher/seckill", body)
	if err != nil {
		return 0, fmt.Errorf("publishing a voucher: %w", err)
	}
	return v, nil
}

// created POSTs body as the admin and returns the id in the answer.
func (s *stampede) created(url, body string) (int64, error) {
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("authorization", s.adminToken)
	req.Header.Set("content-type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Data json.Number `json:"data"`
	}
	if resp.StatusCode >= 400 || json.Unmarshal(data, &env) != nil {
		return 0, fmt.Errorf("%d %s", resp.StatusCode, data)
	}
	return env.Data.Int64()
}

func (s *stampede) get(url, token string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodGet, url, nil)
	req.Header.Set("authorization", token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// report appends the runs to the results file.
func (s *stampede) report(results []result) error {
	var b strings.Builder
	up, _ := exec.Command("uptime").Output()
	fmt.Fprintf(&b, "\n## %s, %s\n\n", s.cfg.Label, s.started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- machine: %s\n- server: %s\n", testbed.Machine(), s.commit)
	fmt.Fprintf(&b, "- command: `%s go -C tools run ./cmd/harness stampede`\n", strings.Join(s.settings(), " "))
	fmt.Fprintf(&b, "- uptime at the end: `%s`\n\n", strings.TrimSpace(string(up)))
	b.WriteString("| mode | conns | requests | goodput /s | ÷ limit | 200 | 503 (Retry-After) | other | timeouts | errors | p50 ms | p99 ms | p99 after 1 s ms | p99 all ms | p99 503 ms | CPU us/req server / MariaDB / client | orders | invariants | load before / after |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|\n")
	var limit float64
	for _, r := range results {
		ratio := "-"
		if r.Conns == s.cfg.LimitConns {
			limit = r.Goodput
		} else if limit > 0 {
			ratio = fmt.Sprintf("%.2f", r.Goodput/limit)
		}
		var other []string
		for st, n := range r.Status {
			if st != 200 && st != 503 {
				other = append(other, fmt.Sprintf("%d: %d", st, n))
			}
		}
		slices.Sort(other)
		inv := verdict(r.Violations)
		if r.TokensOut {
			inv += " (tokens ran out)"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %s | %d | %d (%d) | %s | %d | %d | %s | %s | %s | %s | %s | %.0f / %.0f / %.0f | %d | %s | %s / %s |\n",
			r.Mode, r.Conns, r.Requests, r.Goodput, ratio, r.Status[200], r.Status[503], r.RetryAfter, strings.Join(other, ", "),
			r.Timeouts, r.Errors, ms(r.P50), ms(r.P99), ms(r.P99Later), ms(r.P99All), ms(r.P99Shed), r.ServerUS, r.MariaDBUS, r.ClientUS, r.Orders, inv, r.LoadBefore, r.LoadAfter)
	}
	b.WriteString("\np50 and p99: the answered requests (every status but 503), from the connection in hand to the last byte; \"after 1 s\": those sent after the run's first second; goodput: 200s answered within the run's seconds; ÷ limit: over the run before it at " +
		strconv.Itoa(s.cfg.LimitConns) + " connections (its own fresh server, same mode).\n")
	f, err := os.OpenFile(s.cfg.Results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, _ := f.Stat(); st.Size() == 0 {
		f.WriteString("# The stampede\n\nWritten by `harness stampede` (tools/cmd/harness/stampede, docs/bench-harness.md): each section one invocation.\n")
	}
	_, err = f.WriteString(b.String())
	return err
}

// settings are the STAMPEDE_ variables set, as a command's prefix.
func (s *stampede) settings() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "STAMPEDE_") {
			k, v, _ := strings.Cut(kv, "=")
			out = append(out, k+"="+strconv.Quote(v))
		}
	}
	slices.Sort(out)
	return out
}

// procCPU is the user+system CPU a process used so far (0 when unknown).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if pid <= 0 || err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100 // USER_HZ
}

// mariadbPID is the pid of the local MariaDB server (0 when none is seen).
func mariadbPID() int {
	for _, name := range []string{"mariadbd", "mysqld"} {
		if out, err := exec.Command("pidof", "-s", name).Output(); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
				return pid
			}
		}
	}
	return 0
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func verdict(v []string) string {
	if len(v) == 0 {
		return "ok"
	}
	return strings.Join(v, "; ")
}
