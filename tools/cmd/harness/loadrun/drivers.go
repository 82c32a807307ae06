package loadrun

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"seckill/model"
	"seckill/tools/cmd/harness/testbed"
)

// driverRun is what a driver left. It holds the voucher it published and the
// order ids its 200 responses announced. The user comes with each id when the
// driver recorded it. It holds the driver's exit status too. Each driver also
// leaves OUT/summary.env (purchases, rps, p50_ms, p95_ms, p99_ms,
// code_<CODE>), OUT/voucher and OUT/ok-orders.
type driverRun struct {
	voucher   int64
	announced []model.Announced
	exit      int
}

// driverLimit bounds one driver run.
const driverLimit = 20 * time.Minute

const k6Version = "v1.8.1"

// findK6 sets l.K6 to k6 v1.8.1 (K6, k6 on PATH, $(go env GOPATH)/bin/k6)
// and says whether it is there.
func (l *loadtest) findK6() bool {
	if l.K6 == "" {
		if p, err := exec.LookPath("k6"); err == nil && k6IsVersion(p) {
			l.K6 = p
		} else if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			l.K6 = filepath.Join(strings.TrimSpace(string(gp)), "bin/k6")
		}
	}
	return l.K6 != "" && k6IsVersion(l.K6)
}

func k6IsVersion(p string) bool {
	out, err := exec.Command(p, "version").Output()
	return err == nil && strings.Contains(string(out), "k6 "+k6Version)
}

// ensureK6 installs k6 with go install when it is missing.
func (l *loadtest) ensureK6() error {
	if l.findK6() {
		return nil
	}
	l.logf("installing k6 %s (go install go.k6.io/k6@%s: 1.5 to 5 min cold on 2 cores, cached afterwards)", k6Version, k6Version)
	t0 := time.Now()
	cmd := exec.CommandContext(l.ctx, "go", "install", "go.k6.io/k6@"+k6Version)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go install go.k6.io/k6@%s failed: %v", k6Version, err)
	}
	l.K6 = ""
	if !l.findK6() {
		return fmt.Errorf("k6 %s is not at %s after the install", k6Version, l.K6)
	}
	l.logf("k6 installed in %.0f s: %s", time.Since(t0).Seconds(), l.K6)
	return nil
}

// The plan's samplers and config elements come from JMeter's core,
// components and http jars. Debian ships the http one in jmeter-http, which
// jmeter only recommends (so --no-install-recommends leaves it out and the
// plan fails with ClassNotFoundException: ...HTTPResultConverter). Check for
// the jars the plan loads, not for the jmeter command.
var jmeterJars = []string{"bin/ApacheJMeter.jar", "lib/ext/ApacheJMeter_core.jar", "lib/ext/ApacheJMeter_components.jar", "lib/ext/ApacheJMeter_http.jar"}

// jmeterMissing names the first missing jar (or javac), "" when complete.
func jmeterMissing(home string) string {
	for _, j := range jmeterJars {
		if _, err := os.Stat(filepath.Join(home, j)); err != nil {
			return j
		}
	}
	if _, err := exec.LookPath("javac"); err != nil {
		return "javac"
	}
	return ""
}

// ensureJMeter installs Debian's jmeter, jmeter-http and a JDK when a jar
// the plan loads or javac is missing.
func (l *loadtest) ensureJMeter() error {
	missing := jmeterMissing(l.JMeterHome)
	if missing == "" {
		return nil
	}
	l.logf("JMeter incomplete (%s missing): installing Debian's jmeter, jmeter-http and a JDK", missing)
	env := []string{"DEBIAN_FRONTEND=noninteractive", "NEEDRESTART_MODE=a"}
	if _, err := testbed.RunTool(l.ctx, 10*time.Minute, "", env, "apt-get", "update", "-qq"); err != nil {
		return fmt.Errorf("apt-get install jmeter jmeter-http failed: %v", err)
	}
	if _, err := testbed.RunTool(l.ctx, 10*time.Minute, "", env, "apt-get", "install", "-y", "-qq", "--no-install-recommends",
		"jmeter", "jmeter-http", "default-jdk-headless"); err != nil {
		return fmt.Errorf("apt-get install jmeter jmeter-http failed: %v", err)
	}
	if missing := jmeterMissing(l.JMeterHome); missing != "" {
		return fmt.Errorf("JMeter still lacks %s/%s after the install", l.JMeterHome, missing)
	}
	return nil
}

// runK6 runs tools/loadtest/k6/seckill.js. The voucher and the announced orders
// come from its console (VOUCHER <id> and ORDER <orderId> <userId> lines).
func (l *loadtest) runK6(baseURLs string) driverRun {
	o := l.Out
	args := []string{"run", "--quiet", "--no-color", "--console-output=" + filepath.Join(o, "k6-console.log"),
		"-e", "BASE_URLS=" + baseURLs, "-e", "TOKENS_FILE=" + filepath.Join(o, "tokens.csv"),
		"-e", "ADMIN_TOKENS_FILE=" + filepath.Join(o, "admin.csv"),
		"-e", fmt.Sprint("USERS=", l.Users), "-e", fmt.Sprint("STOCK=", l.Stock), "-e", fmt.Sprint("DUPS=", l.Dups),
		"-e", fmt.Sprint("VUS=", l.VUs), "-e", "SCENARIO=" + l.Scenario, "-e", fmt.Sprint("SPACING_MS=", l.SpacingMS),
		"-e", "REQUEST_TIMEOUT=60s", "-e", "SUMMARY_FILE=" + filepath.Join(o, "summary.env"),
		"-e", fmt.Sprint("PAY_SHARE=", l.PayShare), "-e", fmt.Sprint("CANCEL_SHARE=", l.CancelShare),
		"-e", fmt.Sprint("SETTLE_S=", l.SettleS),
		filepath.Join(l.Root, "tools/loadtest/k6/seckill.js")}
	logPath := filepath.Join(o, "k6.log")
	os.Remove(logPath)
	var d driverRun
	d.exit, _ = testbed.RunTool(l.ctx, driverLimit, logPath, nil, l.K6, args...)
	console, _ := os.ReadFile(filepath.Join(o, "k6-console.log"))
	d.voucher, d.announced = parseK6Console(string(console))
	writeDriverFiles(o, d)
	return d
}

var (
	k6Voucher = regexp.MustCompile(`msg="VOUCHER ([0-9]+) `)
	k6Order   = regexp.MustCompile(`msg="ORDER ([0-9]+) ([0-9]+)`)
)

// parseK6Console reads the VOUCHER line and the ORDER lines of k6's
// console output.
func parseK6Console(text string) (voucher int64, announced []model.Announced) {
	for _, line := range strings.Split(text, "\n") {
		if m := k6Voucher.FindStringSubmatch(line); m != nil && voucher == 0 {
			voucher, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if m := k6Order.FindStringSubmatch(line); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			user, _ := strconv.ParseInt(m[2], 10, 64)
			announced = append(announced, model.Announced{OrderID: id, UserID: user})
		}
	}
	return voucher, announced
}

// writeDriverFiles leaves OUT/voucher and OUT/ok-orders as the shell
// runner did.
func writeDriverFiles(out string, d driverRun) {
	v := ""
	if d.voucher > 0 {
		v = fmt.Sprintln(d.voucher)
	}
	os.WriteFile(filepath.Join(out, "voucher"), []byte(v), 0o644)
	var b strings.Builder
	for _, a := range d.announced {
		fmt.Fprintln(&b, a.OrderID)
	}
	os.WriteFile(filepath.Join(out, "ok-orders"), []byte(b.String()), 0o644)
}

// runGo runs the Go driver (bin/seckill-load), which writes the voucher,
// the order ids and the summary itself.
func (l *loadtest) runGo(baseURLs string) driverRun {
	o := l.Out
	logPath := filepath.Join(o, "go.log")
	os.Remove(logPath)
	var d driverRun
	d.exit, _ = testbed.RunTool(l.ctx, driverLimit, logPath, nil, filepath.Join(l.Root, "bin/seckill-load"),
		"-base-urls", baseURLs, "-tokens", filepath.Join(o, "tokens.csv"), "-admin-tokens", filepath.Join(o, "admin.csv"),
		"-users", fmt.Sprint(l.Users), "-stock", fmt.Sprint(l.Stock), "-dups", fmt.Sprint(l.Dups), "-vus", fmt.Sprint(l.VUs),
		"-scenario", l.Scenario, "-spacing", fmt.Sprintf("%dms", l.SpacingMS), "-request-timeout", "60s",
		"-summary-file", filepath.Join(o, "summary.env"), "-orders-file", filepath.Join(o, "ok-orders"),
		"-voucher-file", filepath.Join(o, "voucher"),
		"-pay-share", fmt.Sprint(l.PayShare), "-cancel-share", fmt.Sprint(l.CancelShare), "-settle", fmt.Sprintf("%ds", l.SettleS))
	b, _ := os.ReadFile(filepath.Join(o, "voucher"))
	d.voucher, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	d.announced = readOrderIDs(filepath.Join(o, "ok-orders"))
	return d
}

// readOrderIDs reads one order id a line (users unknown).
func readOrderIDs(path string) []model.Announced {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var a []model.Announced
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
			a = append(a, model.Announced{OrderID: id})
		}
	}
	return a
}

// runJMeter runs tools/loadtest/jmeter/seckill.jmx with Debian's JMeter 2.13. It
// goes through SeckillJMeter.java: as shipped, 2.13 on Java 17 loads no plan
// and still exits 0 (see that file's comment). So it reads the results file,
// never JMeter's exit code. Exit 2: the plan did not run. 1: the audit sample
// (oversold or inconsistent) failed.
func (l *loadtest) runJMeter(urls []string) driverRun {
	o, home := l.Out, l.JMeterHome
	logPath := filepath.Join(o, "jmeter.log")
	os.Remove(logPath)
	fail := func(code int, format string, a ...any) driverRun {
		msg := fmt.Sprintf("[jmeter] "+format+"\n", a...)
		fmt.Fprint(l.logw, msg)
		appendFile(logPath, msg)
		return driverRun{exit: code}
	}
	// The launcher, compiled once per source change.
	src := filepath.Join(l.Root, "tools/loadtest/jmeter/SeckillJMeter.java")
	classes := filepath.Join(o, "../.jmeter-launcher")
	os.MkdirAll(classes, 0o755)
	if newer(src, filepath.Join(classes, "SeckillJMeter.class")) {
		if _, err := testbed.RunTool(l.ctx, 5*time.Minute, logPath, nil, "javac", "-nowarn", "-cp", filepath.Join(home, "bin/ApacheJMeter.jar"), "-d", classes, src); err != nil {
			return fail(2, "javac SeckillJMeter.java failed: %v", err)
		}
	}
	// One CSV line per purchase: userId,token,port. burst: each user's DUPS
	// purchases on consecutive lines, round-robin over the instances, so
	// that the threads send them at about the same time. random: shuffled.
	ports := make([]string, len(urls))
	for i, u := range urls {
		ports[i] = u[strings.LastIndex(u, ":")+1:]
	}
	tokens, err := os.ReadFile(filepath.Join(o, "tokens.csv"))
	if err != nil {
		return fail(2, "%v", err)
	}
	var lines []string
	for _, t := range strings.Split(string(tokens), "\n") {
		f := strings.Split(t, ",")
		if len(f) < 2 {
			continue
		}
		for i := 0; i < l.Dups; i++ {
			lines = append(lines, f[0]+","+f[1]+","+ports[i%len(ports)])
		}
	}
	if l.Scenario == "random" {
		rand.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	}
	if err := os.WriteFile(filepath.Join(o, "requests.csv"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fail(2, "%v", err)
	}
	admin, _ := os.ReadFile(filepath.Join(o, "admin.csv"))
	adminToken := ""
	if first, _, _ := strings.Cut(string(admin), "\n"); strings.Contains(first, ",") {
		_, adminToken, _ = strings.Cut(first, ",")
	}
	jtl := filepath.Join(o, "results.jtl")
	os.Remove(jtl)
	args := []string{"-Xms256m", "-Xmx1g", "-Djmeter.home=" + home, "-cp", classes + ":" + filepath.Join(home, "bin/ApacheJMeter.jar"),
		"SeckillJMeter", "-n", "-t", filepath.Join(l.Root, "tools/loadtest/jmeter/seckill.jmx"), "-l", jtl, "-j", filepath.Join(o, "jmeter-run.log"),
		"-Jhost=127.0.0.1", "-Jport=" + ports[0], "-Jrequests=" + filepath.Join(o, "requests.csv"), "-Jadmin_token=" + adminToken,
		fmt.Sprint("-Jstock=", l.Stock), fmt.Sprint("-Jthreads=", l.VUs), "-Jrampup=1", "-Jsample_variables=voucherId,orderId,code",
		"-Jjmeter.save.saveservice.output_format=csv", "-Jjmeter.save.saveservice.print_field_names=true"}
	for _, off := range []string{"response_message", "thread_name", "data_type", "bytes", "sent_bytes", "thread_counts",
		"latency", "connect_time", "idle_time", "url", "assertion_results_failure_message"} {
		args = append(args, "-Jjmeter.save.saveservice."+off+"=false")
	}
	testbed.RunTool(l.ctx, driverLimit, logPath, nil, "java", args...) // its exit status says nothing
	runLog, _ := os.ReadFile(filepath.Join(o, "jmeter-run.log"))
	st, err := os.Stat(jtl)
	if err != nil || st.Size() == 0 || regexp.MustCompile(`ERROR.*NonGUIDriver`).Match(runLog) {
		return fail(2, "JMeter ran no sample (see %s/jmeter.log and %s/jmeter-run.log)", o, o)
	}
	f, err := os.Open(jtl)
	if err != nil {
		return fail(2, "%v", err)
	}
	defer f.Close()
	jr, err := parseJTL(f)
	if err != nil {
		return fail(2, "read %s: %v", jtl, err)
	}
	d := driverRun{voucher: jr.voucher, announced: jr.announced}
	writeDriverFiles(o, d)
	os.WriteFile(filepath.Join(o, "summary.env"), []byte(jr.summary()), 0o644)
	if !jr.auditOK {
		fail(1, "the audit sample failed (oversold or inconsistent): see %s", jtl)
		d.exit = 1
	}
	return d
}

// jtlResult is what a JMeter results file says.
type jtlResult struct {
	voucher   int64
	announced []model.Announced
	codes     map[string]int64
	elapsed   []float64 // ms, one per purchase
	t0, t1    int64     // first start, last end (ms)
	auditOK   bool
}

// parseJTL reads a CSV results file by column name. It takes the "publish
// voucher" sample's voucherId and each "buy" sample's code and elapsed time.
// It notes whether the "audit" sample succeeded.
func parseJTL(rd io.Reader) (jtlResult, error) {
	r := jtlResult{codes: map[string]int64{}}
	cr := csv.NewReader(rd)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return r, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	known := map[string]bool{}
	for _, c := range allCodes {
		known[c] = true
	}
	upper := regexp.MustCompile(`^[A-Z_]+$`)
	digits := regexp.MustCompile(`^[0-9]+$`)
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return r, err
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		label, rc := get("label"), get("responseCode")
		switch label {
		case "publish voucher":
			if rc == "200" {
				r.voucher, _ = strconv.ParseInt(get("voucherId"), 10, 64)
			}
			continue
		case "audit":
			r.auditOK = get("success") == "true"
			continue
		case "buy":
		default:
			continue
		}
		elapsed, _ := strconv.ParseInt(get("elapsed"), 10, 64)
		ts, _ := strconv.ParseInt(get("timeStamp"), 10, 64)
		r.elapsed = append(r.elapsed, float64(elapsed))
		if first || ts < r.t0 {
			r.t0 = ts
		}
		if ts+elapsed > r.t1 {
			r.t1 = ts + elapsed
		}
		first = false
		code, id := get("code"), get("orderId")
		switch {
		case rc == "200" && digits.MatchString(id):
			r.codes["OK"]++
			n, _ := strconv.ParseInt(id, 10, 64)
			r.announced = append(r.announced, model.Announced{OrderID: n})
		case !digits.MatchString(rc):
			r.codes["TRANSPORT"]++
		case upper.MatchString(code) && known[code]:
			r.codes[code]++
		default:
			r.codes["OTHER"]++
		}
	}
	return r, nil
}

// summary is the summary.env of the run.
func (r jtlResult) summary() string {
	var b strings.Builder
	n := len(r.elapsed)
	secs := float64(r.t1-r.t0) / 1000
	rps := 0.0
	if secs > 0 {
		rps = float64(n) / secs
	}
	fmt.Fprintf(&b, "purchases=%d\nseconds=%.3f\nrps=%.1f\n", n, secs, rps)
	for _, c := range allCodes {
		fmt.Fprintf(&b, "code_%s=%d\n", c, r.codes[c])
	}
	v := 1
	if r.auditOK {
		v = 0
	}
	fmt.Fprintf(&b, "driver_violations=%d\n", v)
	sorted := append([]float64(nil), r.elapsed...)
	sort.Float64s(sorted)
	for _, p := range []int{50, 95, 99} {
		fmt.Fprintf(&b, "p%d_ms=%.1f\n", p, nearestRank(sorted, float64(p)))
	}
	return b.String()
}

// nearestRank is the p-th percentile of sorted values, nearest rank.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	r := int(math.Ceil(p / 100 * float64(len(sorted))))
	r = max(1, min(r, len(sorted)))
	return sorted[r-1]
}

// newer says src is newer than dst or dst is missing.
func newer(src, dst string) bool {
	s, err1 := os.Stat(src)
	d, err2 := os.Stat(dst)
	return err2 != nil || (err1 == nil && s.ModTime().After(d.ModTime()))
}

func appendFile(path, text string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		f.WriteString(text)
		f.Close()
	}
}
