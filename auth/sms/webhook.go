package sms

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

// Errors of a send, in the *Error's Err.
var (
	// ErrRedirect is a webhook that answered 3xx. A redirect is never
	// followed: it would post the phone, the code and a valid signature
	// to an address the operator did not configure.
	ErrRedirect = errors.New("sms: the webhook answered a redirect, which is not followed")
	// ErrWebhookURL is a webhook URL that does not parse; the error
	// never repeats it.
	ErrWebhookURL = errors.New("sms: the webhook URL does not parse")
)

// NewWebhook posts to url, signed with secret. Its connections are its
// own (transport), never the purchase path's, and it follows no
// redirect.
func NewWebhook(url, secret string, conns int) *Webhook {
	return &Webhook{url: url, secret: []byte(secret), client: &http.Client{
		Transport:     ownTransport(conns),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Sign is the value of SignatureHeader for body: "sha256=" and the hex
// HMAC-SHA256 of body with secret.
func Sign(body, secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SendCode posts {"phone","code","ttlSeconds"}; any 2xx means sent, a
// 3xx is refused (ErrRedirect). No error it returns shows the URL's
// userinfo or query values (RedactURL).
func (w *Webhook) SendCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	body, err := json.Marshal(WebhookBody{Phone: phone, Code: code, TTLSeconds: int64(ttl / time.Second)})
	if err != nil {
		return &Error{Reason: reasonFailed, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return &Error{Reason: reasonFailed, Err: ErrWebhookURL}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(body, w.secret))
	res, err := w.client.Do(req)
	if err != nil {
		return transportError(ctx, redactedErr(err))
	}
	defer res.Body.Close()
	// Drain a little so the connection can be reused.
	io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	if res.StatusCode >= 300 && res.StatusCode <= 399 {
		return &Error{Reason: reasonRefused, Err: fmt.Errorf("%w (%s)", ErrRedirect, res.Status)}
	}
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
