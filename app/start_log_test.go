package app

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"seckill/config"
)

// embeddedConfig is development on the embedded backends under a
// temporary directory, with more variables.
func embeddedConfig(t *testing.T, more map[string]string) config.Config {
	t.Helper()
	vars := map[string]string{"SECKILL_ENV": "development", "SECKILL_DATA_DIR": t.TempDir(), "SECKILL_HTTP_ADDR": "127.0.0.1:0"}
	for k, v := range more {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// TestServeLogsURL: serve's "serving" line names the address a browser
// opens, http://127.0.0.1:<port>/ (a terminal makes it a link), beside the
// address it listens on.
func TestServeLogsURL(t *testing.T) {
	cfg := embeddedConfig(t, nil)
	var buf syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, slog.New(slog.NewJSONHandler(&buf, nil))) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(buf.String(), `"msg":"serving"`) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no serving line within 30 s:\n%s", buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	var line string
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, `"msg":"serving"`) {
			line = l
		}
	}
	i := strings.Index(line, `"url":"http://127.0.0.1:`)
	if i < 0 || !strings.Contains(line[i:], `/","addr":"127.0.0.1:`) {
		t.Errorf("serving line: %s, want the url http://127.0.0.1:<port>/ beside the addr", line)
	}
}

// TestBrowseURL: the address a browser on this machine opens.
func TestBrowseURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/",
		"[::]:9000":      "http://127.0.0.1:9000/",
		"[::1]:8080":     "http://[::1]:8080/",
		"10.1.2.3:80":    "http://10.1.2.3:80/",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := BrowseURL(a); got != want {
			t.Errorf("BrowseURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
