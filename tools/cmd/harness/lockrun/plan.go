package lockrun

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"seckill/lock"
	"seckill/tools/cmd/harness/testbed"
)

// lcFaults are the faults, in the order of the table.
var lcFaults = []string{"none", "pause", "partition-lock", "partition-db", "latency", "cut-lock", "redlock-restart", "failover"}

// lcFaultModes limits a fault to the modes it means something for.
var lcFaultModes = map[string][]string{
	"redlock-restart": {"redsync", "multi"},
	"failover":        {"simple", "owner", "lua", "reentrant"},
}

// lcTokenModes mint fencing tokens. Only they have fenced rows.
var lcTokenModes = []string{"lua", "reentrant", "multi", "zookeeper"}

// Row is one row of tools/lock-check/results.json.
type Row struct {
	Mode               string `json:"mode"`
	Fault              string `json:"fault"`
	Fencing            bool   `json:"fencing"`
	Operations         int    `json:"operations"`
	MutexViolations    int    `json:"mutexViolations"`
	RegisterViolations int    `json:"registerViolations"`
	Undecided          int    `json:"undecided,omitempty"`
	Verdict            string `json:"verdict"`
	// History is the saved checker page of a violation (the register's
	// when the register was violated), relative to tools/lock-check/.
	History string `json:"history,omitempty"`
	// MutexHistory is the mutex's page when History is the register's.
	MutexHistory string `json:"mutexHistory,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Report is tools/lock-check/results.json.
type Report struct {
	testbed.RunInfo
	Rows []Row `json:"rows"`
}

// verdictOf names a row's outcome.
func verdictOf(r Row) string {
	switch {
	case r.Error != "":
		return "error"
	case r.RegisterViolations > 0:
		return "fails"
	case r.MutexViolations > 0 && r.Fencing:
		return "fenced"
	case r.MutexViolations > 0:
		return "lock fails"
	case r.Undecided > 0:
		return "undecided"
	}
	return "holds"
}

// lcMustHold says whether the row is one that must hold: the fenced
// register of every token mode, and mysql's session lock, under pause and
// partition. CI fails when such a row shows a violation.
func lcMustHold(r Row) bool {
	if r.Fault != "pause" && r.Fault != "partition-lock" && r.Fault != "none" {
		return false
	}
	return (r.Fencing && slices.Contains(lcTokenModes, r.Mode)) || r.Mode == "mysql"
}

// lcBroken is the reason a must-hold row broke its promise, or "".
func lcBroken(r Row) string {
	if !lcMustHold(r) {
		return ""
	}
	switch {
	case r.Error != "":
		return "error: " + r.Error
	case r.RegisterViolations > 0:
		return fmt.Sprintf("%d register violation(s)", r.RegisterViolations)
	case r.Mode == "mysql" && r.MutexViolations > 0:
		return fmt.Sprintf("%d mutex violation(s)", r.MutexViolations)
	case r.Undecided > 0:
		return "undecided"
	}
	return ""
}

func lcCommand(ci bool) string {
	if ci {
		return "make lock-check-ci"
	}
	c := "make lock-check"
	for _, k := range []string{"LOCKCHECK_MODES", "LOCKCHECK_FAULTS"} {
		if v := os.Getenv(k); v != "" {
			c = k + "=" + v + " " + c
		}
	}
	return c
}

func lcSettingsText() []string {
	return []string{
		fmt.Sprintf("%d client processes x %d clients, %d users (lock:order:<userId>)", lcProcesses, lcClients, lcUsers),
		fmt.Sprintf("lease %v, operation timeout %v, work between read and write up to %v", lcTTL, lcOpTimeout, lcWorkMax),
		fmt.Sprintf("warm-up %v, one fault on process 0 (%v, zookeeper %v), tail %v", lcWarmup, lcFaultLen("lua"), lcFaultLen("zookeeper"), lcTail),
		"private MariaDB (the register, and mysql's GET_LOCK), private redis-servers (1 + 3 Redlock nodes, and a Sentinel set per failover row), the shared ZooKeeper",
		"every link of a client process through its own fault proxy",
	}
}

// lcPlan lists the rows: every mode x fault, fencing off, and fencing on
// for the token modes. CI keeps the must-hold rows under pause and
// partition.
func lcPlan(modes, faults string, ci bool) []Row {
	ms, fs := lock.Modes, lcFaults
	if modes != "" {
		ms = strings.Split(modes, ",")
	}
	if faults != "" {
		fs = strings.Split(faults, ",")
	}
	var rows []Row
	for _, m := range ms {
		for _, f := range fs {
			for _, fencing := range []bool{false, true} {
				r := Row{Mode: m, Fault: f, Fencing: fencing}
				if fencing && !slices.Contains(lcTokenModes, m) {
					continue
				}
				if only, ok := lcFaultModes[f]; ok && !slices.Contains(only, m) {
					continue
				}
				if ci && (!lcMustHold(r) || f == "none") {
					continue
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// lcFaultLen is how long a pause or partition lasts: three leases, and
// past ZooKeeper's smallest session timeout (two ticks of 2 s) for it.
func lcFaultLen(mode string) time.Duration {
	if mode == "zookeeper" {
		return 8 * time.Second
	}
	return 3 * lcTTL
}
