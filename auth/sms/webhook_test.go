package sms_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
