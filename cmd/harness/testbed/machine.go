package testbed

import (
	"fmt"
	"os"
	"runtime"
	"strings"
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
