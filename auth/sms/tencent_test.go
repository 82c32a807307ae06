package sms_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/auth/sms"
)

// Test credentials of the fake Tencent Cloud API.
const (
	testSecretID  = "AKIDtest0123456789"
	testSecretKey = "test-secret-key-0123456789"
)

// tc3Server is a fake Tencent Cloud SMS API. It checks each request's
// TC3-HMAC-SHA256 signature as Tencent documents it (written here, not
// taken from the SDK) and records the SendSms bodies it accepted.
type tc3Server struct {
	*httptest.Server
	mu       sync.Mutex
	accepted []map[string]any
	refused  []string
	status   string // SendStatusSet[0].Code, "Ok" when empty
}

func newTC3Server(t *testing.T) *tc3Server {
	s := &tc3Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *tc3Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if why := verifyTC3(r, body, testSecretID, testSecretKey); why != "" {
		s.mu.Lock()
		s.refused = append(s.refused, why)
		s.mu.Unlock()
		tencentAnswer(w, map[string]any{"Error": map[string]string{"Code": "AuthFailure.SignatureFailure", "Message": why}})
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		tencentAnswer(w, map[string]any{"Error": map[string]string{"Code": "InvalidParameter", "Message": err.Error()}})
		return
	}
	s.mu.Lock()
	s.accepted = append(s.accepted, req)
	status := s.status
	s.mu.Unlock()
	if status == "" {
		status = "Ok"
	}
	tencentAnswer(w, map[string]any{"SendStatusSet": []map[string]any{{
		"SerialNo": "2028:1", "PhoneNumber": "+8613812345678", "Fee": 1, "Code": status, "Message": "send result", "IsoCode": "CN",
	}}})
}

func tencentAnswer(w http.ResponseWriter, resp map[string]any) {
	resp["RequestId"] = "req-1"
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(map[string]any{"Response": resp}); err != nil {
		panic(err)
	}
}

// verifyTC3 returns why r's signature is wrong, "" when it is right:
// https://www.tencentcloud.com/document/api/382/40469 ("Signature v3").
func verifyTC3(r *http.Request, body []byte, id, key string) string {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "TC3-HMAC-SHA256 ")
	if !ok {
		return "not TC3-HMAC-SHA256: " + auth
	}
	parts := map[string]string{}
	for _, p := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	scope := strings.SplitN(parts["Credential"], "/", 2)
	if len(scope) != 2 || scope[0] != id {
		return "unknown credential " + parts["Credential"]
	}
	ts := r.Header.Get("X-TC-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return "bad timestamp " + ts
	}
	date := time.Unix(sec, 0).UTC().Format("2006-01-02")
	if scope[1] != date+"/sms/tc3_request" {
		return "bad scope " + scope[1]
	}
	signed := strings.Split(parts["SignedHeaders"], ";")
	if !sort.StringsAreSorted(signed) || !contains(signed, "content-type") || !contains(signed, "host") {
		return "bad signed headers " + parts["SignedHeaders"]
	}
	var headers strings.Builder
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		fmt.Fprintf(&headers, "%s:%s\n", h, strings.ToLower(strings.TrimSpace(v)))
	}
	payload := sha256.Sum256(body)
	canonical := strings.Join([]string{r.Method, "/", r.URL.RawQuery, headers.String(), parts["SignedHeaders"], hex.EncodeToString(payload[:])}, "\n")
	hashed := sha256.Sum256([]byte(canonical))
	toSign := strings.Join([]string{"TC3-HMAC-SHA256", ts, scope[1], hex.EncodeToString(hashed[:])}, "\n")
	k := mac([]byte("TC3"+key), date)
	k = mac(k, "sms")
	k = mac(k, "tc3_request")
	want := hex.EncodeToString(mac(k, toSign))
	if !hmac.Equal([]byte(want), []byte(parts["Signature"])) {
		return "signature mismatch"
	}
	if r.Header.Get("X-TC-Action") != "SendSms" || r.Header.Get("X-TC-Version") != "2021-01-11" {
		return "not SendSms 2021-01-11"
	}
	return ""
}

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func tencentSender(t *testing.T, endpoint, key string) *sms.Tencent {
	t.Helper()
	s, err := sms.NewTencent(sms.TencentConfig{SecretID: testSecretID, SecretKey: key, AppID: "1400000001",
		SignName: "Seckill", Template: "1234567", Endpoint: endpoint, Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTencentSignedRequest: the SDK's request carries a TC3 signature the
// fake API verifies with the test credentials, and the message's fields.
func TestTencentSignedRequest(t *testing.T) {
	srv := newTC3Server(t)
	if err := tencentSender(t, srv.URL, testSecretKey).SendCode(context.Background(), "13812345678", "042917", 2*time.Minute); err != nil {
		t.Fatalf("SendCode: %v (refused: %v)", err, srv.refused)
	}
	if len(srv.accepted) != 1 || len(srv.refused) != 0 {
		t.Fatalf("got %d accepted, refused %v, want 1 accepted", len(srv.accepted), srv.refused)
	}
	got, _ := json.Marshal(srv.accepted[0])
	for _, want := range []string{`"PhoneNumberSet":["+8613812345678"]`, `"TemplateParamSet":["042917","2"]`,
		`"SmsSdkAppId":"1400000001"`, `"SignName":"Seckill"`, `"TemplateId":"1234567"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("body %s: want %s", got, want)
		}
	}
}

// TestTencentWrongKey: a request signed with another key is refused by the
// fake API's check, and the send is an error that is not retried.
func TestTencentWrongKey(t *testing.T) {
	srv := newTC3Server(t)
	err := tencentSender(t, srv.URL, "another-key").SendCode(context.Background(), "13812345678", "042917", 2*time.Minute)
	var se *sms.Error
	if !errors.As(err, &se) || se.Temporary || len(srv.refused) != 1 || srv.refused[0] != "signature mismatch" {
		t.Fatalf("got %v (refused %v), want a permanent *sms.Error after one signature mismatch", err, srv.refused)
	}
}

// TestTencentStatusNotOk: an answer whose send status is not Ok is a
// refusal in words, though the API call itself succeeded.
func TestTencentStatusNotOk(t *testing.T) {
	srv := newTC3Server(t)
	srv.status = "FailedOperation.PhoneNumberInBlacklist"
	err := tencentSender(t, srv.URL, testSecretKey).SendCode(context.Background(), "13812345678", "042917", 2*time.Minute)
	var se *sms.Error
	if !errors.As(err, &se) || se.Temporary || !strings.Contains(se.BuyerReason(), "refused") {
		t.Fatalf("got %v, want a permanent refusal", err)
	}
}
