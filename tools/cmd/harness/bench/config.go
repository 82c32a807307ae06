package bench

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// benchConfig is the BENCH_* settings.
type benchConfig struct {
	Duration, Threads, Conns, Users, AsyncUsers, SkipUsers int
	DrainTimeout, RedisN, SlapTxns, Port                   int
	LockModes, OrderModes, AsyncLockModes                  []string
	K6Rate                                                 string
	Profile                                                string // grows by the extra profiled runs
	ProfileSetting                                         string // BENCH_PROFILE as given
	Out, Results                                           string
	Keep                                                   bool
	Bin                                                    string
	AdmissionProfile                                       bool
	Only                                                   string // BENCH_ONLY
}

// benchConfigFromEnv reads the BENCH_* variables with their defaults.
// getenv is os.Getenv outside the tests.
func benchConfigFromEnv(getenv func(string) string, root string, now time.Time) (benchConfig, error) {
	def := func(k, d string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return d
	}
	c := benchConfig{
		LockModes:      strings.Fields(def("BENCH_LOCK_MODES", "lua none local simple owner reentrant redsync multi mysql zookeeper")),
		OrderModes:     strings.Fields(def("BENCH_ORDER_MODES", "sync async")),
		AsyncLockModes: strings.Fields(def("BENCH_ASYNC_LOCK_MODES", "lua")),
		K6Rate:         getenv("BENCH_K6_RATE"),
		Profile:        getenv("BENCH_PROFILE"),
		ProfileSetting: getenv("BENCH_PROFILE"),
		Out:            def("BENCH_OUT", filepath.Join(root, "tools", "bench", "out", now.Format("20060102-150405"))),
		Results:        def("BENCH_RESULTS", filepath.Join(root, "tools", "bench", "RESULTS.md")),
		Keep:           getenv("BENCH_KEEP") == "1",
		Bin:            getenv("BENCH_BIN"),
		Only:           getenv("BENCH_ONLY"),
	}
	if c.Only != "" && c.Only != "cluster" {
		return c, fmt.Errorf("BENCH_ONLY=%s: the only block to run alone is cluster", c.Only)
	}
	c.AdmissionProfile = def("BENCH_ADMISSION_PROFILE", "1") != "0"
	ints := []struct {
		name string
		def  string
		dst  *int
	}{
		{"DURATION", "10", &c.Duration}, {"THREADS", "2", &c.Threads}, {"CONNS", "32", &c.Conns},
		{"USERS", "300000", &c.Users}, {"ASYNC_USERS", "400000", &c.AsyncUsers},
		{"REDIS_N", "150000", &c.RedisN}, {"SLAP_TXNS", "500", &c.SlapTxns}, {"PORT", "18181", &c.Port},
		{"SKIP_USERS", "5000", &c.SkipUsers}, {"DRAIN_TIMEOUT", "120", &c.DrainTimeout},
	}
	for _, v := range ints {
		s := def("BENCH_"+v.name, v.def)
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || strings.Trim(s, "0123456789") != "" || (n == 0 && v.name != "SKIP_USERS") {
			return c, fmt.Errorf("BENCH_%s=%s is not a positive number", v.name, s)
		}
		*v.dst = n
	}
	if c.Conns < c.Threads {
		return c, fmt.Errorf("BENCH_CONNS (%d) must be at least BENCH_THREADS (%d)", c.Conns, c.Threads)
	}
	if c.K6Rate != "" {
		if n, err := strconv.Atoi(c.K6Rate); err != nil || n <= 0 || strings.Trim(c.K6Rate, "0123456789") != "" || c.K6Rate[0] == '0' {
			return c, fmt.Errorf("BENCH_K6_RATE=%s is not a positive number", c.K6Rate)
		}
	}
	for _, om := range c.OrderModes {
		if om != "sync" && om != "async" {
			return c, fmt.Errorf("BENCH_ORDER_MODES: unknown order mode %s (sync, async)", om)
		}
	}
	return c, nil
}

// admissionRun is the run whose profiles BENCH_ADMISSION_PROFILE asks for:
// the async run of the first async lock mode ("" when there is none).
func (c benchConfig) admissionRun() string {
	if !c.AdmissionProfile || !c.wantAsync() || len(c.AsyncLockModes) == 0 {
		return ""
	}
	return "async-" + c.AsyncLockModes[0]
}

// profilesDir is where the admission profiles go: profiles/ beside
// BENCH_RESULTS (tools/bench/profiles by default).
func (c benchConfig) profilesDir() string {
	return filepath.Join(filepath.Dir(c.Results), "profiles")
}

func (c benchConfig) wantAsync() bool {
	for _, om := range c.OrderModes {
		if om == "async" {
			return true
		}
	}
	return false
}
