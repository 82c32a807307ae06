package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"seckill/model"
)

// user is one line of a `seckill tokens` file.
type user struct {
	id    string
	token string
}

// readTokens reads userId,token lines; blank lines are skipped.
func readTokens(path string) ([]user, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	defer f.Close()
	var users []user
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		id, token, ok := strings.Cut(line, ",")
		if !ok || id == "" || token == "" {
			return nil, fmt.Errorf("read tokens: %s:%d: not userId,token", path, n)
		}
		users = append(users, user{id: id, token: token})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read tokens %s: %w", path, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("read tokens: %s holds no user", path)
	}
	return users, nil
}

// client talks to the seckill API.
type client struct{ http *http.Client }

func newClient(conns int, timeout time.Duration) *client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = conns + 16
	transport.MaxIdleConnsPerHost = conns + 16
	return &client{http: &http.Client{Transport: transport, Timeout: timeout}}
}

// envelope is the Heima response body.
type envelope struct {
	Success  bool            `json:"success"`
	Code     string          `json:"code"`
	ErrorMsg string          `json:"errorMsg"`
	Data     json.RawMessage `json:"data"`
}

func (c *client) do(ctx context.Context, method, url, token string, body []byte) (int, *envelope, []byte, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("authorization", token)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, nil, fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return resp.StatusCode, nil, raw, nil
	}
	return resp.StatusCode, &env, raw, nil
}

// createShop creates the shop the voucher belongs to (a voucher must name
// one) through the admin API and returns its id.
func (c *client) createShop(ctx context.Context, base, adminToken string) (int64, error) {
	body, err := json.Marshal(map[string]any{
		"name": "load test shop", "typeId": 1, "address": "loopback 1", "x": 120.15, "y": 30.28,
	})
	if err != nil {
		return 0, fmt.Errorf("create shop: %w", err)
	}
	status, env, raw, err := c.do(ctx, http.MethodPost, base+"/shop", adminToken, body)
	if err != nil {
		return 0, fmt.Errorf("create shop: %w", err)
	}
	if status != http.StatusOK || env == nil || !env.Success {
		return 0, fmt.Errorf("create shop: status %d: %.200s", status, raw)
	}
	var id int64
	if err := json.Unmarshal(env.Data, &id); err != nil || id <= 0 {
		return 0, fmt.Errorf("create shop: data %s is not a shop id", env.Data)
	}
	return id, nil
}

// publish creates a shop and a seckill voucher of it with stock through
// the admin API and returns the voucher's id.
func (c *client) publish(ctx context.Context, base, adminToken string, stock int, now time.Time) (string, error) {
	shop, err := c.createShop(ctx, base, adminToken)
	if err != nil {
		return "", fmt.Errorf("publish voucher: %w", err)
	}
	body, err := json.Marshal(map[string]any{
		"shopId": shop, "title": "go driver seckill " + now.UTC().Format(time.RFC3339),
		"subTitle": "load test", "rules": "one per user", "payValue": 8000, "actualValue": 10000,
		"type": 1, "stock": stock,
		"beginTime": now.Add(-time.Minute).Format(time.RFC3339),
		"endTime":   now.Add(24 * time.Hour).Format(time.RFC3339),
	})
	if err != nil {
		return "", fmt.Errorf("publish voucher: %w", err)
	}
	status, env, raw, err := c.do(ctx, http.MethodPost, base+"/voucher/seckill", adminToken, body)
	if err != nil {
		return "", fmt.Errorf("publish voucher: %w", err)
	}
	if status != http.StatusOK || env == nil || !env.Success {
		return "", fmt.Errorf("publish voucher: status %d: %.200s", status, raw)
	}
	var id int64
	if err := json.Unmarshal(env.Data, &id); err != nil || id <= 0 {
		return "", fmt.Errorf("publish voucher: data %s is not a voucher id", env.Data)
	}
	return strconv.FormatInt(id, 10), nil
}

// outcome is one purchase's result.
type outcome struct {
	code    string // OK, a refusal code, OTHER or TRANSPORT
	orderID string // with OK
	status  int
	elapsed time.Duration
}

// buy sends one purchase and classifies the answer like the k6 script.
func (c *client) buy(ctx context.Context, base, voucherID, token string) outcome {
	start := time.Now()
	status, env, _, err := c.do(ctx, http.MethodPost, base+"/voucher-order/seckill/"+voucherID, token, nil)
	o := outcome{status: status, elapsed: time.Since(start)}
	switch {
	case err != nil && status == 0:
		o.code = "TRANSPORT"
	case env == nil:
		o.code = "OTHER"
	case status == http.StatusOK && env.Success:
		var id string
		if json.Unmarshal(env.Data, &id) == nil && id != "" {
			o.code, o.orderID = "OK", id
		} else {
			o.code = "OTHER"
		}
	case env.Code != "":
		o.code = env.Code
	default:
		o.code = "OTHER"
	}
	return o
}

// audit is GET /admin/vouchers/:id/audit's data: the server's model.Audit.
type audit model.Audit

func (c *client) audit(ctx context.Context, base, adminToken, voucherID string) (*audit, error) {
	status, env, raw, err := c.do(ctx, http.MethodGet, base+"/admin/vouchers/"+voucherID+"/audit", adminToken, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK || env == nil || !env.Success {
		return nil, fmt.Errorf("status %d: %.200s", status, raw)
	}
	var a audit
	if err := json.Unmarshal(env.Data, &a); err != nil {
		return nil, fmt.Errorf("decode audit: %w", err)
	}
	if a.VoucherID == 0 {
		return nil, errors.New("audit without voucherId")
	}
	return &a, nil
}

// violations lists the invariants of docs/contract.md that the audit shows
// broken, by the shared checker model.Counts, and the audit's own verdict.
// The buyers set is not in the audit, so invariant 5 is judged on the Redis
// stock only.
func (a audit) violations() []string {
	modelAudit := model.Audit(a)
	c := modelAudit.Counts()
	if a.RedisStock != nil && a.Pending != nil {
		c.Async = &model.AsyncCounts{RedisStock: *a.RedisStock, Pending: *a.Pending}
		if a.GivebacksDue != nil {
			returned := a.Cancelled - *a.GivebacksDue
			c.Async.Returned = &returned
		}
	}
	broken := c.Violations()
	var v []string
	for _, x := range broken {
		if x.Invariant == 5 {
			continue // reported after the flags, as before
		}
		v = append(v, fmt.Sprintf("%d: %s", x.Invariant, x.Msg))
	}
	if a.Oversold {
		v = append(v, "oversold flag set")
	}
	if !a.Consistent {
		v = append(v, "consistent flag false")
	}
	for _, x := range broken {
		if x.Invariant == 5 {
			v = append(v, fmt.Sprintf("%d: %s", x.Invariant, x.Msg))
		}
	}
	return v
}
