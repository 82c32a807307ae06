package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The admission profiles of `harness bench` (BENCH_ADMISSION_PROFILE). One is
// the server's CPU profile during the async admission run. The other is the
// allocations it made during that run's wrk load. Both go to the profiles
// dir: profiles/ beside BENCH_RESULTS, tools/bench/profiles by default. Their top
// 20 go there too, and RESULTS.md shows them.

// The files of a run's admission profiles in the profiles dir: <run><suffix>.
const (
	admissionCPU        = ".cpu.pprof"           // CPU profile over the middle of the wrk run
	admissionAllocsBase = ".allocs-before.pprof" // /debug/pprof/allocs just before the wrk run
	admissionAllocs     = ".allocs.pprof"        // /debug/pprof/allocs just after it
	admissionTop        = ".top.txt"             // the top 20 of each, as text
	admissionPprofTop   = "-top -nodecount=20"   // the pprof options of the summaries
	admissionAllocFlags = "-sample_index=alloc_space"
)

// admissionProfile is what the bench kept of the admission profiles. It holds
// the `go tool pprof -top` tables from their flat% header on. A table is ""
// when its profile is missing.
type admissionProfile struct {
	Run, Dir                      string
	Secs                          string // the CPU profile's seconds
	Files                         []string
	CPUFlat, CPUCum               string
	AllocSpace, AllocObjects      string
	CPUServerOrder, CPURedisOrder string
	Orders                        string
}

// allocsProfile saves the server's /debug/pprof/allocs as <run><suffix> in
// the profiles dir (a failure is logged: the run goes on without it).
func (b reporter) allocsProfile(run, suffix string) {
	dir := b.cfg.profilesDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.logf("profiles dir: %v", err)
		return
	}
	url := b.base + "/debug/pprof/allocs"
	dst := filepath.Join(dir, run+suffix)
	if err := benchFetch(url, dst, 30*time.Second); err != nil {
		b.logf("allocation profile of %s: %v", run, err)
		os.Remove(dst)
		return
	}
	b.noteCmd(fmt.Sprintf("curl -o %s '%s'   # %s", dst, url, run))
}

// benchFetch GETs url into the file dst.
func benchFetch(url, dst string, timeout time.Duration) error {
	resp, err := (&http.Client{Timeout: timeout}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return os.WriteFile(dst, data, 0o644)
}

// saveAdmissionProfiles keeps the run's CPU profile beside its allocation
// profiles. wrkRun took the CPU profile into the out dir. The top 20 of each
// go into <run>.top.txt, which RESULTS.md shows (admissionSection).
func (b reporter) saveAdmissionProfiles(run string) {
	dir := b.cfg.profilesDir()
	p := &admissionProfile{Run: run, Dir: dir, Secs: b.get(run, "profile_secs"),
		CPUServerOrder: b.get(run, "cpu_server_order"), CPURedisOrder: b.get(run, "cpu_redis_order"), Orders: b.get(run, "status_200")}
	top := func(args ...string) string {
		return flatTop(b.pprof(append(strings.Fields(admissionPprofTop), args...)...))
	}
	cpu := filepath.Join(dir, run+admissionCPU)
	os.Remove(cpu)
	if data, err := os.ReadFile(filepath.Join(b.cfg.Out, run+".pprof")); err == nil && b.get(run, "profiled") == "1" {
		if err := os.WriteFile(cpu, data, 0o644); err == nil {
			p.Files = append(p.Files, run+admissionCPU)
			p.CPUFlat = top(b.bin, cpu)
			p.CPUCum = top("-cum", b.bin, cpu)
		}
	} else {
		b.logf("no CPU profile of %s (BENCH_DURATION must be above 3 s)", run)
	}
	base, after := filepath.Join(dir, run+admissionAllocsBase), filepath.Join(dir, run+admissionAllocs)
	if benchExists(base) && benchExists(after) {
		p.Files = append(p.Files, run+admissionAllocsBase, run+admissionAllocs)
		p.AllocSpace = top(admissionAllocFlags, "-base", base, b.bin, after)
		p.AllocObjects = top("-sample_index=alloc_objects", "-base", base, b.bin, after)
	}
	txt := filepath.Join(dir, run+admissionTop)
	if err := os.WriteFile(txt, []byte(admissionTopText(p)), 0o644); err != nil {
		b.logf("%v", err)
	} else {
		p.Files = append(p.Files, run+admissionTop)
	}
	b.admission = p
	b.logf("admission profiles of %s: %s (top 20 in %s)", run, dir, txt)
}

func benchExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Size() > 0
}

// admissionTopText is <run>.top.txt: the four top-20 tables with what
// each is.
func admissionTopText(p *admissionProfile) string {
	var w strings.Builder
	fmt.Fprintf(&w, "Admission profiles of the %s run (harness bench, BENCH_ADMISSION_PROFILE).\n", p.Run)
	fmt.Fprintf(&w, "CPU per admitted order in the run: server %s us, Redis %s us (%s orders).\n", dash(p.CPUServerOrder), dash(p.CPURedisOrder), dash(p.Orders))
	for _, s := range []struct{ title, cmd, table string }{
		{"CPU, flat", "go tool pprof " + admissionPprofTop + " " + p.Run + admissionCPU, p.CPUFlat},
		{"CPU, cumulative", "go tool pprof " + admissionPprofTop + " -cum " + p.Run + admissionCPU, p.CPUCum},
		{"bytes allocated during the wrk run", "go tool pprof " + admissionPprofTop + " " + admissionAllocFlags + " -base " + p.Run + admissionAllocsBase + " " + p.Run + admissionAllocs, p.AllocSpace},
		{"objects allocated during the wrk run", "go tool pprof " + admissionPprofTop + " -sample_index=alloc_objects -base " + p.Run + admissionAllocsBase + " " + p.Run + admissionAllocs, p.AllocObjects},
	} {
		fmt.Fprintf(&w, "\n== %s (%s)\n\n", s.title, s.cmd)
		if s.table == "" {
			w.WriteString("(no profile)\n")
			continue
		}
		w.WriteString(s.table + "\n")
	}
	return w.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// admissionSection is the RESULTS.md section of the admission profiles
// ("" without them).
func admissionSection(p *admissionProfile) string {
	if p == nil {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, `
## Admission profile: %s

Profiles of the %s run above itself (not of an extra run): the server's CPU
profile over %s s in the middle of its wrk load (pprof samples at 100 Hz, a
small cost the run's figures carry), and what the server allocated during
the load (the sampled /debug/pprof/allocs after the load minus the one
before it). CPU per admitted order in this run: server %s us, Redis %s us
(%s orders). The files, in %s: %s (the top 20 of
each profile, allocated objects too, in %s%s).
`, p.Run, p.Run, dash(p.Secs), dash(p.CPUServerOrder), dash(p.CPURedisOrder), dash(p.Orders), p.Dir,
		strings.Join(p.Files, ", "), p.Run, admissionTop)
	for _, s := range []struct{ title, table string }{
		{"CPU, flat, top 20", p.CPUFlat},
		{"CPU, cumulative, top 20", p.CPUCum},
		{"Bytes allocated during the load, flat, top 20", p.AllocSpace},
	} {
		if s.table == "" {
			continue
		}
		fmt.Fprintf(&w, "\n%s:\n\n```\n%s\n```\n", s.title, s.table)
	}
	return w.String()
}

// profileKeep selects the cumulative pprof lines of the project's frames and
// the library calls that matter for the order path.
var profileKeep = regexp.MustCompile(`seckill/|gorm[.]io/gorm[.][(][*](DB|processor)[)][.]|database/sql[.][(][*](DB|Tx|Stmt)[)][.][A-Z]|go-sql-driver/mysql[.][(][*](mysqlConn|mysqlStmt|mysqlTx)[)][.][A-Z]|go-redis/v9[.][(][*]baseClient[)][.]process$|golang-jwt/jwt/v5[.][(][*]Parser[)][.]ParseWithClaims|gin[.][(][*]Engine[)][.]ServeHTTP|linux[.]Syscall6$|runtime[.](gcBgMarkWorker|mallocgc|schedule)$`)

// profileSummary keeps, of `go tool pprof -top -cum` output, the header and
// the kept frames at ≥ 1.5% cumulative, at most 50 lines.
func profileSummary(top string) string {
	var out []string
	for _, line := range strings.Split(top, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "flat" && strings.HasPrefix(strings.TrimLeft(line, " "), "flat"):
			out = append(out, line)
		case len(f) >= 6 && profileKeep.MatchString(line) && figNum0(strings.TrimSuffix(f[4], "%")) >= 1.5:
			out = append(out, line)
		}
		if len(out) == 50 {
			break
		}
	}
	return strings.Join(out, "\n")
}

// flatTop is `go tool pprof -top` output from its "flat%" header on.
func flatTop(top string) string {
	i := strings.Index(top, "flat%")
	if i < 0 {
		return ""
	}
	i = strings.LastIndex(top[:i], "\n") + 1
	return strings.TrimRight(top[i:], "\n")
}

func (b reporter) pprof(args ...string) string {
	out, _ := exec.Command("go", append([]string{"tool", "pprof"}, args...)...).Output()
	return string(out)
}

// profileSection is the RESULTS.md section of a profile ("" without one).
func (b reporter) profileSection(name string) string {
	p := filepath.Join(b.cfg.Out, name+".pprof")
	if st, err := os.Stat(p); err != nil || st.Size() == 0 {
		return ""
	}
	cum := profileSummary(b.pprof("-top", "-cum", "-nodecount=500", b.bin, p))
	flat := flatTop(b.pprof("-top", "-nodecount=15", b.bin, p))
	return b.profileText(name, cum, flat)
}

// profileText renders a profile section from its two pprof extracts.
func (b reporter) profileText(name, cum, flat string) string {
	g := func(k string) string { return b.get(name, k) }
	var what string
	if run, ok := strings.CutSuffix(name, "-drain"); ok {
		what = fmt.Sprintf("The drain after the load of %s (no load meanwhile): backlog\n%s orders at the end of the load, drained in %s s,\n%s orders/s; profile over the first %s s after the load.",
			run, b.get(run, "backlog"), b.get(run, "drain_secs"), b.get(run, "drain_rate"), g("profile_secs"))
	} else {
		what = fmt.Sprintf("An extra run (its figures count for no target: profiling costs CPU) with the server's CPU profile\ntaken during it (%s s from its second second): %s requests,\n%s req/s, p99 %s ms; CPU %% server / client / MariaDB / Redis / rest:\n%s / %s; CPU us/req server / MariaDB / Redis:\n%s / %s / %s;\nMariaDB per request, queries / prepares / closes: %s.",
			g("profile_secs"), g("requests"), fmtRate(g("rps")), benchMS(g("p99_us")), g("share"), g("rest"),
			g("cpu_server"), g("cpu_mariadb"), g("cpu_redis"), g("db_stmts"))
	}
	p := filepath.Join(b.cfg.Out, name+".pprof")
	return fmt.Sprintf("\n## Profile: %s (a target was missed)\n\n%s\nThe profile is %s (`go tool pprof -top -cum %s %s`).\n\nCumulative, the frames of this project and of the libraries it calls, at 1.5%%\nor more of the server's CPU samples:\n\n```\n%s\n```\n\nFlat, the 15 hottest functions:\n\n```\n%s\n```\n",
		name, what, p, b.bin, p, cum, flat)
}
