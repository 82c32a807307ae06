package wechat

import (
	"context"
	"crypto/sha1"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/wechatpay-apiv3/wechatpay-go/core"
	"github.com/wechatpay-apiv3/wechatpay-go/core/auth/validators"

	"seckill/model"
)

// maxBill bounds a downloaded bill.
const maxBill = 64 << 20

// shanghai is Beijing time, the zone of the bills' days and times.
var shanghai = time.FixedZone("Asia/Shanghai", 8*3600)

// Bill answers the day's (Beijing time) trade bill: GET
// /v3/bill/tradebill?bill_date=&bill_type=ALL answers its download_url
// and SHA1; the file is downloaded with the merchant's signature (WeChat
// Pay does not sign it), its SHA1 checked, and its lines read.
func (p *Provider) Bill(ctx context.Context, day time.Time) ([]model.BillLine, error) {
	date := day.In(shanghai).Format("2006-01-02")
	q := url.Values{"bill_date": {date}, "bill_type": {"ALL"}}
	res, err := p.native.Client.Get(ctx, "https://"+sdkHost+"/v3/bill/tradebill?"+q.Encode())
	if err != nil {
		return nil, apiError("tradebill", err)
	}
	defer res.Response.Body.Close()
	var bill struct {
		HashType    string `json:"hash_type"`
		HashValue   string `json:"hash_value"`
		DownloadURL string `json:"download_url"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Response.Body, 1<<20)).Decode(&bill); err != nil {
		return nil, fmt.Errorf("wechat tradebill %s: %w", date, err)
	}
	if bill.DownloadURL == "" || !strings.EqualFold(bill.HashType, "SHA1") {
		return nil, fmt.Errorf("wechat tradebill %s: download_url %q, hash_type %q: want a URL and SHA1", date, bill.DownloadURL, bill.HashType)
	}
	dl := core.NewClientWithValidator(p.native.Client, &validators.NullValidator{})
	file, err := dl.Get(ctx, bill.DownloadURL)
	if err != nil {
		return nil, apiError("bill download", err)
	}
	defer file.Response.Body.Close()
	body, err := io.ReadAll(io.LimitReader(file.Response.Body, maxBill+1))
	if err != nil {
		return nil, model.Unavailable(fmt.Errorf("wechat bill download %s: %w", date, err))
	}
	if len(body) > maxBill {
		return nil, fmt.Errorf("wechat bill %s exceeds %d bytes", date, maxBill)
	}
	sum := sha1.Sum(body)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, bill.HashValue) {
		return nil, fmt.Errorf("wechat bill %s: SHA1 %s, the tradebill answer says %s: not the bill", date, got, bill.HashValue)
	}
	return ParseBill(body)
}

// The bill's columns the reconciliation reads.
const (
	colTime        = "交易时间"
	colTransaction = "微信订单号"
	colOutTradeNo  = "商户订单号"
	colState       = "交易状态"
	colOrderAmount = "订单金额"
	colSettle      = "应结订单金额"
	colOutRefundNo = "商户退款单号"
	colRefund      = "退款金额"
)

// ParseBill reads a trade bill (bill_type ALL, UTF-8): a header line,
// one line per payment (交易状态 SUCCESS) or refund (REFUND), each field
// prefixed with a backtick, then the summary (总交易单数, ...) which ends
// the lines. Amounts are yuan.
func ParseBill(data []byte) ([]model.BillLine, error) {
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(data), "\ufeff")))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("wechat bill: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("wechat bill: empty")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[strings.TrimSpace(name)] = i
	}
	for _, name := range []string{colTime, colTransaction, colOutTradeNo, colState, colOutRefundNo, colRefund} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("wechat bill: no column %s in the header %q", name, rows[0])
		}
	}
	amountCol := colOrderAmount
	if _, ok := col[amountCol]; !ok {
		amountCol = colSettle
	}
	out := []model.BillLine{}
	for _, row := range rows[1:] {
		if len(row) > 0 && strings.HasPrefix(strings.TrimSpace(row[0]), "总交易单数") {
			break
		}
		get := func(name string) string {
			i, ok := col[name]
			if !ok || i >= len(row) {
				return ""
			}
			return strings.TrimPrefix(strings.TrimSpace(row[i]), "`")
		}
		var l model.BillLine
		var amount string
		switch get(colState) {
		case "SUCCESS":
			l.Kind, amount = model.BillPayment, get(amountCol)
		case "REFUND":
			l.Kind, amount, l.OutRefundNo = model.BillRefund, get(colRefund), get(colOutRefundNo)
		default:
			continue
		}
		l.OutTradeNo, l.ProviderTradeNo = get(colOutTradeNo), get(colTransaction)
		if l.Amount, err = model.ParseYuan(amount); err != nil {
			return nil, fmt.Errorf("wechat bill: trade %s: %w", l.OutTradeNo, err)
		}
		if l.At, err = time.ParseInLocation("2006-01-02 15:04:05", get(colTime), shanghai); err != nil {
			return nil, fmt.Errorf("wechat bill: trade %s: %s: %w", l.OutTradeNo, colTime, err)
		}
		out = append(out, l)
	}
	return out, nil
}
