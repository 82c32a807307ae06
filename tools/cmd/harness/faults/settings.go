package faults

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"seckill/tools/cmd/harness/testbed"
)

// faultSettings are the suite's settings (environment variables).
type faultSettings struct {
	Cases      []string      // CASE: names or prefixes, comma separated ("" = all)
	Users      int           // FAULTS_USERS
	Dups       int           // FAULTS_DUPS
	Stock      int           // FAULTS_STOCK
	Duration   time.Duration // FAULTS_DURATION: the load's scheduled length
	BasePort   int           // FAULTS_BASE_PORT
	Rebuild    string        // FAULTS_REBUILD: if-needed or never
	AutoWait   time.Duration // FAULTS_AUTO_WAIT: how long Redis-restart recovery may take without a person
	DrainLimit time.Duration // FAULTS_DRAIN_LIMIT: async: bound of the wait for the stream to drain
	Out        string        // FAULTS_OUT: where RESULTS.md and results.json go
	Keep       bool          // FAULTS_KEEP=1: keep the work directory (logs, datadir)
	SkipBuild  bool          // SKIP_BUILD=1: use bin/seckill as it is
	Seed       uint64        // FAULTS_SEED
}

// faultDefaults are the settings' defaults, as tools/faults/README.md lists them.
var faultDefaults = map[string]string{
	"FAULTS_USERS": "600", "FAULTS_DUPS": "3", "FAULTS_STOCK": "300", "FAULTS_DURATION": "9s",
	"FAULTS_BASE_PORT": "27300", "FAULTS_REBUILD": "if-needed", "FAULTS_AUTO_WAIT": "20s",
	"FAULTS_DRAIN_LIMIT": "45s", "FAULTS_SEED": "11",
}

// faultSettingsFrom reads the settings. out defaults to root/faults.
func faultSettingsFrom(getenv func(string) string, root string) (faultSettings, error) {
	get := func(k string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return faultDefaults[k]
	}
	var s faultSettings
	var errs []string
	num := func(k string, dst *int, min int) {
		n, err := strconv.Atoi(get(k))
		if err != nil || n < min {
			errs = append(errs, fmt.Sprintf("%s=%s: a whole number >= %d", k, get(k), min))
		}
		*dst = n
	}
	dur := func(k string, dst *time.Duration) {
		d, err := time.ParseDuration(get(k))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s=%s: a duration like 9s", k, get(k)))
		}
		*dst = d
	}
	num("FAULTS_USERS", &s.Users, 20)
	num("FAULTS_DUPS", &s.Dups, 1)
	num("FAULTS_STOCK", &s.Stock, 1)
	num("FAULTS_BASE_PORT", &s.BasePort, 1024)
	dur("FAULTS_DURATION", &s.Duration)
	dur("FAULTS_AUTO_WAIT", &s.AutoWait)
	dur("FAULTS_DRAIN_LIMIT", &s.DrainLimit)
	seed, err := strconv.ParseUint(get("FAULTS_SEED"), 10, 64)
	if err != nil {
		errs = append(errs, "FAULTS_SEED: a whole number")
	}
	s.Seed = seed
	s.Rebuild = get("FAULTS_REBUILD")
	if s.Rebuild != "if-needed" && s.Rebuild != "never" {
		errs = append(errs, fmt.Sprintf("FAULTS_REBUILD=%s: if-needed or never", s.Rebuild))
	}
	for _, c := range strings.Split(getenv("CASE"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			s.Cases = append(s.Cases, c)
		}
	}
	if _, err := selectCases(faultCases, s.Cases); err != nil {
		errs = append(errs, err.Error())
	}
	if s.Stock >= s.Users {
		errs = append(errs, fmt.Sprintf("FAULTS_STOCK=%d must be below FAULTS_USERS=%d (the sale must sell out)", s.Stock, s.Users))
	}
	if err := portsFrom(s.BasePort).check(); err != nil {
		errs = append(errs, err.Error())
	}
	s.Out = getenv("FAULTS_OUT")
	if s.Out == "" {
		s.Out = filepath.Join(root, "tools", "faults")
	}
	s.Keep = getenv("FAULTS_KEEP") == "1"
	s.SkipBuild = getenv("SKIP_BUILD") == "1"
	if len(errs) > 0 {
		return s, errors.New(strings.Join(errs, "; "))
	}
	return s, nil
}

// selectCases picks the cases named (exactly, or by a prefix such as
// "mariadb"). None named is all of them.
func selectCases(all []faultCase, names []string) ([]faultCase, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []faultCase
	for _, c := range all {
		for _, n := range names {
			if c.Name == n || strings.HasPrefix(c.Name, n+"-") || strings.HasPrefix(c.Name, n) && strings.HasSuffix(n, "-") {
				out = append(out, c)
				break
			}
		}
	}
	for _, n := range names {
		found := false
		for _, c := range out {
			if c.Name == n || strings.HasPrefix(c.Name, n+"-") || strings.HasPrefix(c.Name, n) && strings.HasSuffix(n, "-") {
				found = true
			}
		}
		if !found {
			var known []string
			for _, c := range all {
				known = append(known, c.Name)
			}
			return nil, fmt.Errorf("CASE=%s: no such case (cases: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// faultsCommand is the command line that reproduces the run.
func faultsCommand(getenv func(string) string) string {
	cmd := "make faults"
	if c := getenv("CASE"); c != "" {
		cmd += " CASE=" + c
	}
	for _, kv := range faultSettingsText(getenv) {
		cmd += " " + kv
	}
	return cmd
}

// faultSettingsText lists the settings that differ from their defaults.
func faultSettingsText(getenv func(string) string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(faultDefaults)) {
		if v := getenv(k); v != "" && v != faultDefaults[k] {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// firstTaken is the first port of the layout something listens on (0:
// none).
func firstTaken(p faultPorts) int {
	for _, port := range p.all() {
		if !testbed.FreePort(port) {
			return port
		}
	}
	return 0
}

func caseNames(cases []faultCase) string {
	n := make([]string, len(cases))
	for i, c := range cases {
		n[i] = c.Name
	}
	return strings.Join(n, " ")
}
