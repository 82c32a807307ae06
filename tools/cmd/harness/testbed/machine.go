package testbed

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes the machine in one line.
func Machine() string {
	host, _ := os.Hostname()
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	return fmt.Sprintf("%s, %d cores (%s), %s/%s, %s, load average at start %s", host, runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version(), load)
}

// RunInfo heads a results.json: when, by which command, on what machine,
// with which settings, and how long the run took.
type RunInfo struct {
	Date     string   `json:"date"`
	Command  string   `json:"command"`
	Machine  string   `json:"machine"`
	Settings []string `json:"settings"`
	ElapsedS float64  `json:"elapsedS"`
}

// NewRunInfo is the head of a run that started at started and ends now.
func NewRunInfo(started time.Time, command string, settings []string) RunInfo {
	return RunInfo{Date: started.UTC().Format("2006-01-02 15:04 UTC"), Command: command, Machine: Machine(),
		Settings: settings, ElapsedS: time.Since(started).Seconds()}
}
