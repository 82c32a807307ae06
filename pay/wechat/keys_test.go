package wechat

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Test keys, generated at test time: WeChat Pay's platform key, a key not
// WeChat Pay's, the merchant's key and the APIv3 key.
type testKeys struct {
	platform, other, merchant *rsa.PrivateKey
	apiV3                     []byte
}

var (
	keysOnce sync.Once
	keysVal  *testKeys
	keysErr  error
)

const (
	testMchID = "1900000001"
	testAppID = "wx0000000000000001"
	testKeyID = "PUB_KEY_ID_0000000000000001"
	testOrder = "T20260101000001"
)

func keys(t *testing.T) *testKeys {
	t.Helper()
	keysOnce.Do(func() {
		k := &testKeys{apiV3: make([]byte, 32)}
		for _, p := range []**rsa.PrivateKey{&k.platform, &k.other, &k.merchant} {
			if *p, keysErr = rsa.GenerateKey(rand.Reader, 2048); keysErr != nil {
				return
			}
		}
		// The APIv3 key is 32 printable bytes, as the merchant platform sets it.
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		if _, keysErr = rand.Read(k.apiV3); keysErr != nil {
			return
		}
		for i, b := range k.apiV3 {
			k.apiV3[i] = letters[int(b)%len(letters)]
		}
		keysVal = k
	})
	if keysErr != nil {
		t.Fatal(keysErr)
	}
	return keysVal
}

func publicPEM(t *testing.T, k *rsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func privatePEM(t *testing.T, k *rsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func testConfig(t *testing.T) Config {
	k := keys(t)
	return Config{
		MchID: testMchID, AppID: testAppID, Serial: "MERCHANT_SERIAL_01",
		PrivateKey: privatePEM(t, k.merchant), APIv3Key: k.apiV3,
		PublicKey: publicPEM(t, &k.platform.PublicKey), PublicKeyID: testKeyID,
	}
}

func newTestProvider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// note is a notification to build as WeChat Pay sends it.
type note struct {
	event    string
	resource map[string]any
	at       time.Time       // Wechatpay-Timestamp; zero = now
	key      *rsa.PrivateKey // signer; nil = the platform key
	serial   string          // "" = the public key ID
	apiV3    []byte          // encrypts the resource; nil = the APIv3 key
	body     []byte          // signed as is instead of the envelope
	alter    func([]byte) []byte
}

// trade is a paid transaction's resource.
func trade() map[string]any {
	return map[string]any{
		"mchid": testMchID, "appid": testAppID, "out_trade_no": testOrder,
		"transaction_id": "4200000000000000000000000001", "trade_type": "NATIVE",
		"trade_state": "SUCCESS", "success_time": "2026-01-01T12:00:00+08:00",
		"payer":  map[string]any{"openid": "o0000000000000000000000000001"},
		"amount": map[string]any{"total": 1234, "payer_total": 1234, "currency": "CNY", "payer_currency": "CNY"},
	}
}

// refund is a refund's resource.
func refund(status string) map[string]any {
	return map[string]any{
		"mchid": testMchID, "out_trade_no": testOrder, "transaction_id": "4200000000000000000000000001",
		"out_refund_no": "R1", "refund_id": "50000000000000000000000001", "refund_status": status,
		"success_time": "2026-01-02T12:00:00+08:00", "user_received_account": "balance",
		"amount": map[string]any{"total": 1234, "refund": 1000, "payer_total": 1234, "payer_refund": 1000},
	}
}

func (n note) build(t *testing.T) (http.Header, []byte) {
	t.Helper()
	k := keys(t)
	body := n.body
	if body == nil {
		plain, err := json.Marshal(n.resource)
		if err != nil {
			t.Fatal(err)
		}
		key := n.apiV3
		if key == nil {
			key = k.apiV3
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			t.Fatal(err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			t.Fatal(err)
		}
		nonce, kind := randomText(t, 12), "transaction"
		if n.event != "" && n.event[:6] == "REFUND" {
			kind = "refund"
		}
		envelope := map[string]any{
			"id": "EV-" + randomText(t, 8), "create_time": "2026-01-01T12:00:01+08:00",
			"resource_type": "encrypt-resource", "event_type": n.event, "summary": "payment succeeded",
			"resource": map[string]any{
				"original_type": kind, "algorithm": "AEAD_AES_256_GCM", "associated_data": kind, "nonce": nonce,
				"ciphertext": base64.StdEncoding.EncodeToString(gcm.Seal(nil, []byte(nonce), plain, []byte(kind))),
			},
		}
		if body, err = json.Marshal(envelope); err != nil {
			t.Fatal(err)
		}
	}
	at := n.at
	if at.IsZero() {
		at = time.Now()
	}
	signer, serial := n.key, n.serial
	if signer == nil {
		signer = k.platform
	}
	if serial == "" {
		serial = testKeyID
	}
	nonce := randomText(t, 32)
	digest := sha256.Sum256([]byte(fmt.Sprintf("%d\n%s\n%s\n", at.Unix(), nonce, body)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, signer, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	if n.alter != nil {
		body = n.alter(body)
	}
	h := http.Header{}
	h.Set("Wechatpay-Timestamp", fmt.Sprint(at.Unix()))
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Signature", base64.StdEncoding.EncodeToString(sig))
	h.Set("Wechatpay-Serial", serial)
	h.Set("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048")
	h.Set("Content-Type", "application/json")
	return h, body
}

func randomText(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}
