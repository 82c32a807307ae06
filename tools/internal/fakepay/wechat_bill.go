package fakepay

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The fake WeChat Pay's bills: GET /v3/bill/tradebill?bill_date=&bill_type=ALL
// (signed like every answer) announces download_url and the file's SHA1;
// GET of download_url, with the merchant's Authorization, answers the CSV
// unsigned, as WeChat Pay does. download_url names WeChat Pay's host, as
// the real one does: the service's client sends it to its base URL.

func (w *wechat) tradeBill(r *http.Request, _ []byte) (int, any) {
	q := r.URL.Query()
	if t := q.Get("bill_type"); t != "" && t != "ALL" && t != "SUCCESS" && t != "REFUND" {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", fmt.Sprintf("bill_type %q", t))
	}
	day, err := billDay(q.Get("bill_date"))
	if err != nil {
		return wechatError(http.StatusBadRequest, "PARAM_ERROR", "bill_date: want yyyy-MM-dd")
	}
	if day.After(w.c.Now()) {
		return wechatError(http.StatusBadRequest, "NO_STATEMENT_EXIST", "no bill of "+q.Get("bill_date")+" yet")
	}
	file := wechatBill(w.c.Store.Bill(wechatName, day))
	sum := sha1.Sum(file)
	token := w.bills.put(file)
	return http.StatusOK, map[string]string{
		"hash_type": "SHA1", "hash_value": hex.EncodeToString(sum[:]),
		"download_url": "https://api.mch.weixin.qq.com/v3/billdownload/file?" + url.Values{"token": {token}}.Encode(),
	}
}

// billFile answers an announced file once, to the merchant's signed GET.
func (w *wechat) billFile(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := w.verifyRequest(r, body); err != nil {
		w.answer(rw, http.StatusUnauthorized, wechatErr("SIGN_ERROR", err.Error()))
		return
	}
	file, ok := w.bills.take(r.URL.Query().Get("token"))
	if !ok {
		w.answer(rw, http.StatusNotFound, wechatErr("RESOURCE_NOT_EXISTS", "no such bill file (tokens are good once)"))
		return
	}
	rw.Header().Set("Content-Type", "application/octet-stream")
	_, _ = rw.Write(file)
}

// wechatBill is a trade bill of type ALL: the header, a line per payment
// (SUCCESS) and refund (REFUND), every field prefixed with a backtick,
// then the summary's header and totals.
func wechatBill(lines []BillLine) []byte {
	var b strings.Builder
	b.WriteString("交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n")
	var paid, refunded int64
	for _, l := range lines {
		at := l.At.In(shanghai).Format(time.DateTime)
		subject := strings.ReplaceAll(l.Subject, ",", " ")
		var f []string
		if l.Kind == BillRefund {
			refunded += l.Amount
			f = []string{at, WechatAppID, WechatMchID, "0", "", l.TradeNo, l.OutTradeNo, wechatOpenID, "NATIVE", "REFUND", "OTHERS", "CNY",
				"0.00", "0.00", "5030" + l.TradeNo, l.OutRefundNo, yuan(l.Amount), "0.00", "ORIGINAL", "SUCCESS", subject, "", "0.00000", "0.60%", "0.00", yuan(l.Amount), ""}
		} else {
			paid += l.Amount
			f = []string{at, WechatAppID, WechatMchID, "0", "", l.TradeNo, l.OutTradeNo, wechatOpenID, "NATIVE", "SUCCESS", "OTHERS", "CNY",
				yuan(l.Amount), "0.00", "0", "0", "0.00", "0.00", "", "", subject, "", "0.00000", "0.60%", yuan(l.Amount), "0.00", ""}
		}
		b.WriteString("`" + strings.Join(f, ",`") + "\r\n")
	}
	b.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n")
	fmt.Fprintf(&b, "`%d,`%s,`%s,`0.00,`0.00000,`%s,`%s\r\n", len(lines), yuan(paid), yuan(refunded), yuan(paid), yuan(refunded))
	return []byte(b.String())
}
