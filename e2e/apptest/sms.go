package apptest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// WebhookSecret signs the test receivers' requests.
const WebhookSecret = "apptest-webhook-secret-0123456789abcdef"

// Receiver is an operator's SMS webhook for tests. It checks each
// request's X-Seckill-Signature with WebhookSecret (HMAC-SHA256 computed
// here) and keeps the last code per phone. Answer, when set, decides the
// answer to each valid request instead of 204.
type Receiver struct {
	*httptest.Server
	mu     sync.Mutex
	codes  map[string]string
	posts  int
	bad    int
	Answer func(w http.ResponseWriter, r *http.Request)
}

// NewReceiver starts a receiver, closed when t ends.
func NewReceiver(t testing.TB) *Receiver {
	rc := &Receiver{codes: map[string]string{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	m := hmac.New(sha256.New, []byte(WebhookSecret))
	m.Write(body)
	sig := "sha256=" + hex.EncodeToString(m.Sum(nil))
	var msg struct {
		Phone      string `json:"phone"`
		Code       string `json:"code"`
		TTLSeconds int    `json:"ttlSeconds"`
	}
	ok := err == nil && r.Method == http.MethodPost && hmac.Equal([]byte(r.Header.Get("X-Seckill-Signature")), []byte(sig)) &&
		json.Unmarshal(body, &msg) == nil && msg.Phone != "" && len(msg.Code) == 6 && msg.TTLSeconds > 0
	rc.mu.Lock()
	answer := rc.Answer
	if !ok {
		rc.bad++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.posts++
	if answer == nil {
		rc.codes[msg.Phone] = msg.Code
	}
	rc.mu.Unlock()
	if answer != nil {
		answer(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Env is the settings of a webhook sender posting to rc.
func (rc *Receiver) Env() map[string]string {
	return map[string]string{"SECKILL_SMS_SENDER": "webhook", "SECKILL_SMS_WEBHOOK_URL": rc.URL, "SECKILL_SMS_WEBHOOK_SECRET": WebhookSecret}
}

// Code is the last code delivered to phone, "" when none.
func (rc *Receiver) Code(phone string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.codes[phone]
}

// Counts are the valid posts received and the requests refused for their
// signature or body.
func (rc *Receiver) Counts() (posts, bad int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.posts, rc.bad
}
