package testbed

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"seckill/testkit/proc"
)

// Instance is one seckill process started by the harness.
type Instance struct {
	URL string // http://127.0.0.1:port
	Log string // its stdout and stderr

	Proc *proc.Proc // the `seckill serve` process
}

// InstanceSpec says how to start instances: Env is added to the harness's
// environment (SECKILL_ENV=development and SECKILL_HTTP_ADDR are set here).
type InstanceSpec struct {
	Bin      string // bin/seckill
	BasePort int    // the first port; instance i listens on BasePort+i
	Count    int
	Env      []string
	LogDir   string // instance-<i>.log files go here
}

// PortOpen says something listens on 127.0.0.1:port.
func PortOpen(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 500*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// StartInstance starts `bin serve` on 127.0.0.1:port in development mode,
// with env added to the harness's environment and its output in log
// (truncated first). It does not wait for readiness.
func StartInstance(bin string, port int, log string, env ...string) (*Instance, error) {
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		return nil, err
	}
	in := &Instance{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Log: log}
	e := append(append(os.Environ(), env...), "SECKILL_ENV=development", fmt.Sprintf("SECKILL_HTTP_ADDR=127.0.0.1:%d", port))
	in.Proc = &proc.Proc{Name: bin + " serve", Args: []string{bin, "serve"}, Env: e, Out: log, Attr: proc.TermWithParent()}
	if err := in.Proc.Start(); err != nil {
		return nil, err
	}
	return in, nil
}

// StartInstances starts the instances (`seckill serve`) and waits until
// each answers /readyz (30 s each). On error the ones started are stopped.
func StartInstances(ctx context.Context, s InstanceSpec) ([]*Instance, error) {
	var ins []*Instance
	for i := 0; i < s.Count; i++ {
		port := s.BasePort + i
		if PortOpen(port) {
			StopInstances(ins)
			return nil, fmt.Errorf("port %d is already in use (BASE_PORT=%d)", port, s.BasePort)
		}
		in, err := StartInstance(s.Bin, port, fmt.Sprintf("%s/instance-%d.log", s.LogDir, i+1), s.Env...)
		if err != nil {
			StopInstances(ins)
			return nil, err
		}
		ins = append(ins, in)
	}
	for i, in := range ins {
		if err := WaitReady(ctx, in, 30*time.Second); err != nil {
			StopInstances(ins)
			return nil, fmt.Errorf("instance %d (%s) is not ready: %v: %s", i+1, in.URL, err, proc.Tail(in.Log, 3))
		}
	}
	return ins, nil
}

// WaitReady polls the instance's /readyz until it answers 2xx, the process
// exits or the limit passes.
func WaitReady(ctx context.Context, in *Instance, limit time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := c.Get(in.URL + "/readyz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
		}
		select {
		case <-in.Proc.Exited():
			return fmt.Errorf("the process exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no ready answer in %s", limit)
}

// StopInstances sends SIGTERM to every instance, waits up to 12 s for each,
// then kills it.
func StopInstances(ins []*Instance) {
	for _, in := range ins {
		in.Proc.Signal(syscall.SIGTERM)
	}
	for _, in := range ins {
		pid := in.Proc.Pid()
		if pid == 0 {
			continue
		}
		select {
		case <-in.Proc.Exited():
		case <-time.After(12 * time.Second):
			fmt.Fprintf(os.Stderr, "[harness] instance %d did not stop in 12 s: killing it\n", pid)
			in.Proc.Kill(0)
		}
	}
}

// URLs lists the instances' base URLs.
func URLs(ins []*Instance) []string {
	u := make([]string, len(ins))
	for i, in := range ins {
		u[i] = in.URL
	}
	return u
}

// MakeTokens writes count user tokens (`seckill tokens`, userId,token lines)
// or, with admin, one admin token per line to out. The command's output is
// appended to logPath.
func MakeTokens(ctx context.Context, bin, out string, count int, admin bool, logPath string) error {
	args := []string{"tokens", "--count", strconv.Itoa(count), "--out", out}
	if admin {
		args = append(args, "--admin")
	}
	if _, err := RunTool(ctx, 2*time.Minute, logPath, []string{"SECKILL_ENV=development"}, bin, args...); err != nil {
		return fmt.Errorf("seckill %s failed: %v: %s", strings.Join(args, " "), err, proc.Tail(logPath, 3))
	}
	return nil
}

// ScrapeMetrics reads /metrics of every URL, concatenated.
func ScrapeMetrics(urls []string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	var b strings.Builder
	for _, u := range urls {
		resp, err := c.Get(u + "/metrics")
		if err != nil {
			return "", fmt.Errorf("cannot read %s/metrics: %w", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("cannot read %s/metrics: status %d %v", u, resp.StatusCode, err)
		}
		b.Write(body)
	}
	return b.String(), nil
}

// MetricSum sums the samples of one series over a Prometheus text: the
// lines whose name is name (labels "") or exactly name{labels}.
func MetricSum(text, name, labels string) int64 {
	var s float64
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if f[0] == name || (labels != "" && f[0] == name+"{"+labels+"}") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				s += v
			}
		}
	}
	return int64(s)
}
