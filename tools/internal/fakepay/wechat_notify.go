package fakepay

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The fake WeChat Pay's signatures and notifications.

// wechatSummaries are the notifications' summaries by event type.
var wechatSummaries = map[string]string{
	"TRANSACTION.SUCCESS": "payment succeeded",
	"REFUND.SUCCESS":      "refund succeeded",
	"REFUND.ABNORMAL":     "refund abnormal",
	"REFUND.CLOSED":       "refund closed",
}

// sign is the Wechatpay-* headers of a message (an answer or a
// notification) signed at at: by the platform key, or by the stranger's
// key when wrongKey.
func (w *wechat) sign(body []byte, at time.Time, wrongKey bool) (http.Header, error) {
	key := w.c.Keys.WechatPlatform
	if wrongKey {
		key = w.c.Keys.Stranger
	}
	nonce := randomHex(16)
	ts := strconv.FormatInt(at.Unix(), 10)
	digest := sha256.Sum256([]byte(ts + "\n" + nonce + "\n" + string(body) + "\n"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Wechatpay-Timestamp", ts)
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Serial", w.c.Keys.WechatPublicKeyID)
	h.Set("Wechatpay-Signature", base64.StdEncoding.EncodeToString(sig))
	h.Set("Wechatpay-Signature-Type", wechatAuth)
	return h, nil
}

// verifySHA256RSA checks a base64 SHA256-with-RSA signature of msg.
func verifySHA256RSA(pub *rsa.PublicKey, msg, signature string) error {
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil {
		return fmt.Errorf("signature is not base64: %v", err)
	}
	digest := sha256.Sum256([]byte(msg))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig)
}

// Notification is the notification WeChat Pay posts: a JSON envelope
// whose resource (the transaction, or the refund) is encrypted with
// AEAD_AES_256_GCM under the APIv3 key, and the Wechatpay-* headers that
// sign it. A trade's is TRANSACTION.SUCCESS (it must be paid); a refund's
// REFUND.SUCCESS or REFUND.ABNORMAL (it must be done or failed). Tamper:
// Amount the total, AppID the appid (a refund's resource has none: its
// mchid), Time the signed timestamp and create_time, OutTradeNo the
// trade's number, WrongKey signs with a stranger's key, Alter changes the
// summary after signing.
func (w *wechat) Notification(t *Trade, r *Refund, tm Tamper) (http.Header, []byte, error) {
	at := time.Now()
	if !tm.Time.IsZero() {
		at = tm.Time
	}
	total, no := t.Amount, t.OutTradeNo
	if tm.Amount != 0 {
		total = tm.Amount
	}
	if tm.OutTradeNo != "" {
		no = tm.OutTradeNo
	}
	var (
		event, kind string
		res         map[string]any
	)
	if r == nil {
		if t.State != StatePaid {
			return nil, nil, fmt.Errorf("trade %s is %s: WeChat Pay notifies paid trades only", t.OutTradeNo, t.State)
		}
		appID := WechatAppID
		if tm.AppID != "" {
			appID = tm.AppID
		}
		event, kind = "TRANSACTION.SUCCESS", "transaction"
		res = map[string]any{
			"mchid": WechatMchID, "appid": appID, "out_trade_no": no, "transaction_id": t.TradeNo,
			"trade_type": "NATIVE", "trade_state": "SUCCESS", "trade_state_desc": "paid", "bank_type": "OTHERS", "attach": "",
			"success_time": t.PaidAt.In(shanghai).Format(time.RFC3339),
			"payer":        map[string]string{"openid": wechatOpenID},
			"amount":       map[string]any{"total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY"},
		}
	} else {
		switch r.State {
		case RefundDone:
			event = "REFUND.SUCCESS"
		case RefundFailed:
			event = "REFUND.ABNORMAL"
		default:
			return nil, nil, errors.New("refund " + r.OutRefundNo + " is processing: no notification yet")
		}
		mchID := WechatMchID
		if tm.AppID != "" {
			mchID = tm.AppID
		}
		kind = "refund"
		res = map[string]any{
			"mchid": mchID, "out_trade_no": no, "transaction_id": t.TradeNo,
			"out_refund_no": r.OutRefundNo, "refund_id": r.RefundNo, "refund_status": wechatRefundStatus(r),
			"user_received_account": "the buyer's balance",
			"amount":                map[string]any{"total": total, "refund": r.Amount, "payer_total": total, "payer_refund": r.Amount},
		}
		if r.State == RefundDone {
			res["success_time"] = r.At.In(shanghai).Format(time.RFC3339)
		}
	}
	resource, err := w.encrypt(res, kind)
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(map[string]any{
		"id": fmt.Sprintf("EV-%d", w.c.Store.Seq()), "create_time": at.In(shanghai).Format(time.RFC3339),
		"resource_type": "encrypt-resource", "event_type": event, "summary": wechatSummaries[event], "resource": resource,
	})
	if err != nil {
		return nil, nil, err
	}
	h, err := w.sign(body, at, tm.WrongKey)
	if err != nil {
		return nil, nil, err
	}
	h.Set("Content-Type", "application/json")
	if tm.Alter {
		body = bytes.Replace(body, []byte(`"summary":"`), []byte(`"summary":"altered `), 1)
	}
	return h, body, nil
}

// encrypt seals res as a notification's resource, under the APIv3 key
// with a 12-character nonce and kind as the associated data.
func (w *wechat) encrypt(res map[string]any, kind string) (map[string]string, error) {
	plain, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(w.c.Keys.WechatAPIv3Key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := randomHex(6)
	return map[string]string{
		"original_type": kind, "algorithm": "AEAD_AES_256_GCM", "associated_data": kind, "nonce": nonce,
		"ciphertext": base64.StdEncoding.EncodeToString(gcm.Seal(nil, []byte(nonce), plain, []byte(kind))),
	}, nil
}
