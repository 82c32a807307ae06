package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/auth/sms"
	"seckill/config"
)

// webhookSecrets are the userinfo and query values of the webhook URLs
// below; no log line may hold one.
var webhookSecrets = []string{"gwuser", "gwpass", "SECRETKEY", "SECRETSIG"}

// withSecrets is base (http://host:port) with userinfo and a query.
func withSecrets(base string) string {
	return strings.Replace(base, "http://", "http://gwuser:gwpass@", 1) + "/send?apikey=SECRETKEY&sig=SECRETSIG"
}

// syncBuffer is a log's output, written by the sender's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// assertNoSecret fails t for each log line that holds a webhook secret.
func assertNoSecret(t *testing.T, log string) {
	t.Helper()
	for line := range strings.Lines(log) {
		for _, s := range webhookSecrets {
			if strings.Contains(line, s) {
				t.Errorf("log line %q: leaks %q", line, s)
			}
		}
	}
}

// webhookConfig is development with a webhook sender posting to url.
func webhookConfig(t *testing.T, url string, more map[string]string) config.Config {
	t.Helper()
	vars := map[string]string{"SECKILL_ENV": "development", "SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": url,
		"SECKILL_SMS_WEBHOOK_SECRET": strings.Repeat("w", sms.MinWebhookSecret)}
	for k, v := range more {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// TestStartLogHidesWebhookURL: serve's start-up line names the webhook
// URL masked (the port is taken, so serve stops right after it).
func TestStartLogHidesWebhookURL(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := webhookConfig(t, "https://gwuser:gwpass@gw.example/send?apikey=SECRETKEY&sig=SECRETSIG",
		map[string]string{"SECKILL_HTTP_ADDR": taken.Addr().String()})
	var buf syncBuffer
	if err := Serve(context.Background(), cfg, slog.New(slog.NewJSONHandler(&buf, nil))); err == nil {
		t.Fatal("Serve on a taken port: got nil, want an error")
	}
	if !strings.Contains(buf.String(), `"sms_webhook_url":"https://***@gw.example/send?apikey=***&sig=***"`) {
		t.Errorf("start-up log: want the webhook URL masked:\n%s", buf.String())
	}
	assertNoSecret(t, buf.String())
}

// TestFailedSendLogHidesWebhookURL: serve's code sender, failing on a
// refused connection, a 500 or a redirect, logs each try and returns an
// error without the URL's userinfo or query values. A redirect is not
// followed: its target receives nothing.
func TestFailedSendLogHidesWebhookURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer failing.Close()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed: %s %s reached its target", r.Method, r.URL)
	}))
	defer elsewhere.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	tests := []struct {
		name string
		url  string
	}{
		{"connection refused", withSecrets(closed)},
		{"500", withSecrets(failing.URL)},
		{"redirect", withSecrets(redirecting.URL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncBuffer
			sender, err := codeSender(webhookConfig(t, tt.url, nil), slog.New(slog.NewTextHandler(&buf, nil)))
			if err != nil || sender == nil {
				t.Fatalf("codeSender: %v, %v", sender, err)
			}
			err = sender.SendCode(context.Background(), "13812345678", "123456", time.Minute)
			var se *sms.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want an *sms.Error", err)
			}
			if tt.name == "redirect" && !errors.Is(err, sms.ErrRedirect) {
				t.Errorf("got %v, want sms.ErrRedirect", err)
			}
			if !strings.Contains(buf.String(), "login code send failed") {
				t.Fatalf("log: want \"login code send failed\":\n%s", buf.String())
			}
			assertNoSecret(t, buf.String())
			assertNoSecret(t, err.Error())
		})
	}
}
