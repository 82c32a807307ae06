package sms

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tcerr "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	tcsms "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/sms/v20210111"
)

// TencentEndpoint is Tencent Cloud SMS's API address.
const TencentEndpoint = "https://sms.tencentcloudapi.com"

// tencentRegion is the region SendSms is asked in; the SMS service
// answers for the whole country from it.
const tencentRegion = "ap-guangzhou"

// TencentConfig names a Tencent Cloud SMS account and its message.
type TencentConfig struct {
	SecretID, SecretKey string
	// AppID is the SMS application (SmsSdkAppId).
	AppID string
	// SignName is the approved signature shown before the message.
	SignName string
	// Template is the approved template's id; its {1} is the code and
	// its {2} the minutes the code stays valid.
	Template string
	// Endpoint is the API address, TencentEndpoint when empty.
	Endpoint string
	// Conns bounds the connections to the API.
	Conns int
}

// Tencent sends each code through Tencent Cloud SMS (SendSms, TC3-HMAC-SHA256
// signed by the SDK).
type Tencent struct {
	client *tcsms.Client
	cfg    TencentConfig
}

// NewTencent returns the sender, or an error for a malformed endpoint.
func NewTencent(cfg TencentConfig) (*Tencent, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = TencentEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("sms: endpoint %q is not an http(s) URL", RedactURL(endpoint))
	}
	p := profile.NewClientProfile()
	p.HttpProfile.Endpoint = u.Host + strings.TrimSuffix(u.Path, "/")
	p.HttpProfile.Scheme = strings.ToUpper(u.Scheme)
	p.HttpProfile.ReqMethod = "POST"
	p.HttpProfile.ReqTimeout = int(DefaultTotal / time.Second)
	// Bounded retries; the SDK's own are off.
	p.NetworkFailureMaxRetries = 0
	p.RateLimitExceededMaxRetries = 0
	p.DisableRegionBreaker = true
	c, err := tcsms.NewClient(common.NewCredential(cfg.SecretID, cfg.SecretKey), tencentRegion, p)
	if err != nil {
		return nil, fmt.Errorf("sms: tencent client: %w", err)
	}
	c.WithHttpTransport(ownTransport(max(cfg.Conns, 1)))
	return &Tencent{client: c, cfg: cfg}, nil
}

// SendCode sends code to +86 phone with the template.
func (t *Tencent) SendCode(ctx context.Context, phone, code string, ttl time.Duration) error {
	req := tcsms.NewSendSmsRequest()
	req.PhoneNumberSet = common.StringPtrs([]string{"+86" + phone})
	req.SmsSdkAppId = common.StringPtr(t.cfg.AppID)
	req.SignName = common.StringPtr(t.cfg.SignName)
	req.TemplateId = common.StringPtr(t.cfg.Template)
	minutes := max(int64(ttl/time.Minute), 1)
	req.TemplateParamSet = common.StringPtrs([]string{code, strconv.FormatInt(minutes, 10)})
	res, err := t.client.SendSmsWithContext(ctx, req)
	if err != nil {
		return tencentError(ctx, err)
	}
	if res.Response == nil || len(res.Response.SendStatusSet) != 1 {
		return &Error{Reason: reasonFailed, Temporary: true, Err: errors.New("tencent: no send status in the answer")}
	}
	st := res.Response.SendStatusSet[0]
	if st.Code == nil || *st.Code != "Ok" {
		c, m := deref(st.Code), deref(st.Message)
		return &Error{Reason: reasonRefused, Temporary: tencentTemporary(c), Err: fmt.Errorf("tencent: %s: %s", c, m)}
	}
	return nil
}

// tencentError classifies an error of the SDK.
func tencentError(ctx context.Context, err error) *Error {
	var se *tcerr.TencentCloudSDKError
	if !errors.As(err, &se) {
		return transportError(ctx, err)
	}
	if strings.HasPrefix(se.Code, "ClientError.") {
		// The SDK's own: the network or the answer's parsing.
		return transportError(ctx, err)
	}
	if tencentTemporary(se.Code) {
		return &Error{Reason: reasonFailed, Temporary: true, Err: err}
	}
	return &Error{Reason: reasonRefused, Err: err}
}

// tencentTemporary reports whether a Tencent error code may pass on
// another attempt: the service's internal errors and request-rate limits.
// A phone's own frequency limits (LimitExceeded.Phone*) do not.
func tencentTemporary(code string) bool {
	return strings.HasPrefix(code, "InternalError") || code == "RequestLimitExceeded" ||
		code == "FailedOperation.FailResolvePacket"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
