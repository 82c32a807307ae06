package sms_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/auth/sms"
)

const testWebhookSecret = "webhook-test-secret-0123456789abcdef"

// receiver is an operator's webhook: it checks each request's signature
// (computed here, not by sms.Sign) and answers with the next status.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int // answered in turn; 204 once they run out
	bodies   []sms.WebhookBody
	bad      int
	location string // the Location of each valid answer, when set
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{statuses: statuses}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte(testWebhookSecret))
		m.Write(body)
		want := "sha256=" + hex.EncodeToString(m.Sum(nil))
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
			!hmac.Equal([]byte(r.Header.Get("X-Seckill-Signature")), []byte(want)) {
			rc.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var b sms.WebhookBody
		if err := json.Unmarshal(body, &b); err != nil {
			rc.bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.bodies = append(rc.bodies, b)
		status := http.StatusNoContent
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		if rc.location != "" {
			w.Header().Set("Location", rc.location)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func bounded(next sms.Sender, o sms.Options) *sms.Bounded {
	return sms.NewBounded(next, "test", o, slog.New(slog.DiscardHandler))
}

// TestWebhookSigned: the body is the documented JSON, signed with the
// secret; a receiver with another secret refuses it and the send fails.
func TestWebhookSigned(t *testing.T) {
	rc := newReceiver(t)
	if err := sms.NewWebhook(rc.URL, testWebhookSecret, 1).SendCode(context.Background(), "13812345678", "123456", 2*time.Minute); err != nil {
		t.Fatalf("SendCode: %v", err)
	}
	want := sms.WebhookBody{Phone: "13812345678", Code: "123456", TTLSeconds: 120}
	if len(rc.bodies) != 1 || rc.bodies[0] != want || rc.bad != 0 {
		t.Fatalf("got %+v (bad %d), want one %+v", rc.bodies, rc.bad, want)
	}
	err := sms.NewWebhook(rc.URL, strings.Repeat("x", 32), 1).SendCode(context.Background(), "13812345678", "123456", 2*time.Minute)
	var se *sms.Error
	if !errors.As(err, &se) || se.Temporary || rc.bad != 1 {
		t.Fatalf("wrong secret: got %v (bad %d), want a permanent refusal", err, rc.bad)
	}
}

// TestBoundedRetriesTemporary: 503 then 500 then 204 is three tries and
// sent; a 400 is one try and not sent.
func TestBoundedRetriesTemporary(t *testing.T) {
	rc := newReceiver(t, 503, 500)
	b := bounded(sms.NewWebhook(rc.URL, testWebhookSecret, 1), sms.Options{Backoff: time.Millisecond})
	if err := b.SendCode(context.Background(), "13812345678", "123456", time.Minute); err != nil || len(rc.bodies) != 3 {
		t.Fatalf("got %v after %d tries, want sent at the third", err, len(rc.bodies))
	}
	rc = newReceiver(t, 400)
	b = bounded(sms.NewWebhook(rc.URL, testWebhookSecret, 1), sms.Options{Backoff: time.Millisecond})
	err := b.SendCode(context.Background(), "13812345678", "123456", time.Minute)
	var se *sms.Error
	if !errors.As(err, &se) || len(rc.bodies) != 1 || se.BuyerReason() != "the SMS service refused the message" {
		t.Fatalf("400: got %v after %d tries, want refused after one", err, len(rc.bodies))
	}
	rc = newReceiver(t, 500, 500, 500, 500)
	b = bounded(sms.NewWebhook(rc.URL, testWebhookSecret, 1), sms.Options{Backoff: time.Millisecond})
	if err := b.SendCode(context.Background(), "13812345678", "123456", time.Minute); err == nil || len(rc.bodies) != sms.DefaultAttempts {
		t.Fatalf("500s: got %v after %d tries, want failed after %d", err, len(rc.bodies), sms.DefaultAttempts)
	}
}

// TestBoundedSlowReceiver: a receiver that never answers is given up
// within the attempts; the error says it did not answer in time.
func TestBoundedSlowReceiver(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	b := bounded(sms.NewWebhook(srv.URL, testWebhookSecret, 2), sms.Options{AttemptTimeout: 20 * time.Millisecond, Backoff: time.Millisecond})
	err := b.SendCode(context.Background(), "13812345678", "123456", time.Minute)
	var se *sms.Error
	if !errors.As(err, &se) || se.BuyerReason() != "the SMS service did not answer in time" {
		t.Fatalf("got %v, want did not answer in time", err)
	}
}

// blockSender blocks each send until released.
type blockSender struct {
	entered chan struct{}
	release chan struct{}
}

func (s blockSender) SendCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	s.entered <- struct{}{}
	<-s.release
	return nil
}

// TestBoundedBudget: with every slot taken, one more send fails at once
// with words instead of waiting; a freed slot sends again.
func TestBoundedBudget(t *testing.T) {
	s := blockSender{entered: make(chan struct{}), release: make(chan struct{})}
	b := bounded(s, sms.Options{Concurrent: 1, Total: time.Hour, AttemptTimeout: time.Hour})
	done := make(chan error)
	go func() { done <- b.SendCode(context.Background(), "13812345678", "1", time.Minute) }()
	<-s.entered
	err := b.SendCode(context.Background(), "13912345678", "2", time.Minute)
	var se *sms.Error
	if !errors.As(err, &se) || se.BuyerReason() != "too many codes are being sent right now" {
		t.Errorf("second send with the slot taken: got %v, want busy", err)
	}
	close(s.release)
	if err := <-done; err != nil {
		t.Fatalf("first send: %v", err)
	}
	go func() { <-s.entered }()
	if err := b.SendCode(context.Background(), "13912345678", "3", time.Minute); err != nil {
		t.Errorf("send after the slot was freed: got %v, want nil", err)
	}
}

// TestWebhookRedirectNotFollowed: a gateway answering a redirect to
// another server fails the send (refused, not retried, ErrRedirect), and
// the other server receives nothing: no phone, no code, no signature.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var hits atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(other.Close)
			gateway := newReceiver(t, status)
			gateway.redirectTo(other.URL + "/steal")
			err := bounded(sms.NewWebhook(gateway.URL, testWebhookSecret, 1), sms.Options{Backoff: time.Millisecond}).
				SendCode(context.Background(), "13812345678", "123456", time.Minute)
			var se *sms.Error
			if !errors.As(err, &se) || !errors.Is(err, sms.ErrRedirect) || se.Temporary || se.BuyerReason() != "the SMS service refused the message" {
				t.Errorf("got %v, want a permanent refusal wrapping ErrRedirect", err)
			}
			gateway.mu.Lock()
			defer gateway.mu.Unlock()
			if hits.Load() != 0 || len(gateway.bodies) != 1 || gateway.bad != 0 {
				t.Errorf("the redirect's target got %d requests, the gateway %d posts (%d bad): want 0 and 1 signed", hits.Load(), len(gateway.bodies), gateway.bad)
			}
		})
	}
}

// redirectTo makes rc's valid answers carry Location: location.
func (rc *receiver) redirectTo(location string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.location = location
}

// TestFailedSendHidesURL: a failed send's error and every log line
// (each try's "login code send failed") show the webhook URL's userinfo
// and query values nowhere: a refused connection (net/http's *url.Error
// repeats the URL), a 500, a redirect.
func TestFailedSendHidesURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	secrets := []string{"gwuser", "gwpass", "SECRETKEY", "SECRETSIG"}
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://gwuser:gwpass@", 1) + "/send?apikey=SECRETKEY&sig=SECRETSIG"
	}
	failing := newReceiver(t, 500, 500, 500)
	redirecting := newReceiver(t, 307)
	redirecting.redirectTo("http://127.0.0.1:9/elsewhere")
	tests := []struct {
		name   string
		url    string
		reason string
	}{
		{"connection refused", withSecrets("http://" + closed), "the SMS service could not be reached"},
		{"500", withSecrets(failing.URL), "the SMS service failed"},
		{"redirect", withSecrets(redirecting.URL), "the SMS service refused the message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			b := sms.NewBounded(sms.NewWebhook(tt.url, testWebhookSecret, 1), "webhook", sms.Options{Backoff: time.Millisecond}, log)
			err := b.SendCode(context.Background(), "13812345678", "123456", time.Minute)
			var se *sms.Error
			if !errors.As(err, &se) || se.BuyerReason() != tt.reason {
				t.Fatalf("got %v, want %q", err, tt.reason)
			}
			if !strings.Contains(buf.String(), "login code send failed") {
				t.Fatalf("log: want \"login code send failed\":\n%s", buf.String())
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q: leaks %q", err, s)
				}
				for line := range strings.Lines(buf.String()) {
					if strings.Contains(line, s) {
						t.Errorf("log line %q: leaks %q", line, s)
					}
				}
			}
		})
	}
}

// TestWebhookBadURL: a URL that does not parse fails the send with
// ErrWebhookURL, never repeating the URL.
func TestWebhookBadURL(t *testing.T) {
	err := sms.NewWebhook("http://gwuser:gwpass@gw.example:port/send?apikey=SECRETKEY", testWebhookSecret, 1).
		SendCode(context.Background(), "13812345678", "123456", time.Minute)
	if !errors.Is(err, sms.ErrWebhookURL) || strings.Contains(err.Error(), "gwpass") || strings.Contains(err.Error(), "SECRETKEY") {
		t.Errorf("got %v, want ErrWebhookURL without the URL", err)
	}
}
