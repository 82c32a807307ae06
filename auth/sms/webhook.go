package sms

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// SignatureHeader carries the webhook body's HMAC-SHA256.
const SignatureHeader = "X-Seckill-Signature"

// MinWebhookSecret is the shortest webhook secret accepted: 32 bytes.
const MinWebhookSecret = 32

// Webhook posts each code to an operator's URL, which delivers it.
type Webhook struct {
	url    string
	secret []byte
	client *http.Client
}

// WebhookBody is the JSON a webhook receives.
type WebhookBody struct {
	Phone      string `json:"phone"`
	Code       string `json:"code"`
	TTLSeconds int64  `json:"ttlSeconds"`
}

// NewWebhook posts to url, signed with secret. Its connections are its
// own (transport), never the purchase path's.
func NewWebhook(url, secret string, conns int) *Webhook {
	return &Webhook{url: url, secret: []byte(secret), client: &http.Client{Transport: ownTransport(conns)}}
}

// Sign is the value of SignatureHeader for body: "sha256=" and the hex
// HMAC-SHA256 of body with secret.
func Sign(body, secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SendCode posts {"phone","code","ttlSeconds"}; any 2xx means sent.
func (w *Webhook) SendCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	body, err := json.Marshal(WebhookBody{Phone: phone, Code: code, TTLSeconds: int64(ttl / time.Second)})
	if err != nil {
		return &Error{Reason: reasonFailed, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return &Error{Reason: reasonFailed, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(body, w.secret))
	res, err := w.client.Do(req)
	if err != nil {
		return transportError(ctx, err)
	}
	defer res.Body.Close()
	// Drain a little so the connection can be reused.
	io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return statusError(res.StatusCode, fmt.Errorf("webhook answered %s", res.Status))
	}
	return nil
}

// ownTransport is an HTTP transport for one sender, at most conns
// connections per host.
func ownTransport(conns int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost = conns
	t.MaxIdleConnsPerHost = conns
	t.ResponseHeaderTimeout = DefaultTotal
	return t
}
