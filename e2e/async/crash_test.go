package async

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/e2e/apptest"
	"seckill/repository/redisstore"
)

// buildBinary builds the seckill binary into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "seckill")
	out, err := exec.Command(gobin, "build", "-o", bin, "seckill").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// instance is a running seckill process.
type instance struct {
	cmd  *exec.Cmd
	url  *url.URL
	logf string
	done chan error
}

// startInstance runs `seckill serve` with env (plus PATH and HOME) on a free
// port and waits until it is ready.
func startInstance(t *testing.T, bin, name string, env map[string]string) *instance {
	t.Helper()
	addr := apptest.FreeAddr(t)
	logf := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	apptest.TakeStreamTurn(t, env)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SECKILL_HTTP_ADDR=" + addr}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{cmd: cmd, url: &url.URL{Scheme: "http", Host: addr}, logf: logf, done: make(chan error, 1)}
	go func() {
		in.done <- cmd.Wait()
		f.Close()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Logf("kill %s: %v", name, err)
			}
			<-in.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf)
			t.Logf("%s log (last 4 KiB):\n%s", name, apptest.Tail(b, 4096))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(in.url.String() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in
			}
		}
		select {
		case err := <-in.done:
			b, _ := os.ReadFile(logf)
			t.Fatalf("%s exited at start: %v\n%s", name, err, apptest.Tail(b, 4096))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 60s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// handler forwards the test helpers' requests to the process.
func (in *instance) handler() http.Handler { return httputil.NewSingleHostReverseProxy(in.url) }

// voucherPending counts the entries of stream.orders for the voucher.
func voucherPending(t *testing.T, rdb redis.UniversalClient, vid int64) int {
	t.Helper()
	entries, err := redisstore.NewOrderStream(rdb).Entries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.VoucherID == vid {
			n++
		}
	}
	return n
}

// TestAsyncCrashRecovery kills (SIGKILL) an instance while it holds pending
// orders. Its consumer read them and sits in the development delay. Then
// another instance starts with a short claim idle time. Every admitted
// order is written exactly once and all invariants hold. Then the second
// instance stops gracefully on SIGTERM.
func TestAsyncCrashRecovery(t *testing.T) {
	dsn, _ := apptest.IntegrationEnv(t)
	bin := buildBinary(t)
	rdb := apptest.SharedRedis(t)
	db := apptest.OpenDB(t)
	ctx := context.Background()
	env := map[string]string{
		"SECKILL_MYSQL_DSN":  dsn,
		"SECKILL_ORDER_MODE": "async", "SECKILL_LOCK_MODE": "lua",
		"SECKILL_ENV": "development", // real backends default to production
	}
	maps.Copy(env, apptest.RedisVars(t))
	envA := map[string]string{"SECKILL_DEV_CONSUMER_DELAY": "1h"}
	for k, v := range env {
		envA[k] = v
	}
	a := startInstance(t, bin, "A", envA)
	const users, stock = 60, 40
	vid := apptest.PublishVoucher(t, a.handler(), stock)
	seen := apptest.Storm(t, []http.Handler{a.handler()}, vid, apptest.RandomBase(), users, 1)
	if seen.ByCode["OK"] != stock {
		t.Fatalf("admissions: got %v, want %d OK", seen.ByCode, stock)
	}

	// A's consumer holds some of the orders pending.
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	prefix := host + "-" + strconv.Itoa(a.cmd.Process.Pid) + "-"
	var held int64
	for deadline := time.Now().Add(15 * time.Second); held == 0; {
		p, err := rdb.XPending(ctx, redisstore.StreamKey(redisstore.VoucherShard(vid)), redisstore.GroupName).Result()
		if err != nil {
			t.Fatal(err)
		}
		for name, n := range p.Consumers {
			if strings.HasPrefix(name, prefix) {
				held += n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance A (consumers %s*) holds no pending entry after 15s: %+v", prefix, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	// Consumers of other processes on the same Redis may have written some
	// orders A had not read. The invariants below hold regardless.

	envB := map[string]string{"SECKILL_CLAIM_IDLE": "8s"} // the shortest allowed (the batch timeout)
	for k, v := range env {
		envB[k] = v
	}
	start := time.Now()
	b := startInstance(t, bin, "B", envB)
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, orders := apptest.StockOf(t, vid)
		if orders == stock && voucherPending(t, rdb, vid) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained 60s after B started: %d orders, %d pending", orders, voucherPending(t, rdb, vid))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("A held %d of %d orders pending when killed; B drained them %v after its start", held, stock, time.Since(start).Round(time.Millisecond))

	orders := apptest.CheckInvariants(t, db, vid, seen) // each announced order exactly once
	if orders != stock {
		t.Errorf("got %d orders, want %d", orders, stock)
	}
	redisStock, err := rdb.Get(ctx, redisstore.StockKey(vid)).Int64()
	if err != nil {
		t.Fatal(err)
	}
	buyers, err := rdb.SCard(ctx, redisstore.BuyersKey(vid)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if redisStock+int64(orders) != stock || buyers != int64(orders) {
		t.Errorf("invariant 5: got redis stock %d + orders %d (want %d) and %d buyers (want %d)", redisStock, orders, stock, buyers, orders)
	}
	resp, err := http.Get(b.url.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	metricsText := string(raw)
	if !strings.Contains(metricsText, "seckill_async_claimed_total") || strings.Contains(metricsText, "seckill_async_claimed_total 0\n") {
		t.Errorf("B claimed nothing from the dead consumer (seckill_async_claimed_total is 0)")
	}

	// Graceful stop within the 10 seconds of the contract.
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.done:
		if err != nil {
			t.Errorf("B after SIGTERM: got %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("B did not stop within 10s of SIGTERM")
	}
	logB, _ := os.ReadFile(b.logf)
	if !strings.Contains(string(logB), `"consumer stopped"`) {
		t.Errorf("B's log has no consumer stop: %s", apptest.Tail(logB, 2048))
	}
}
