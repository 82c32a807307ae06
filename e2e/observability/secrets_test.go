package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seckill/e2e/apptest"
	"seckill/handler"
)

// keyed sends method path with token, the Idempotency-Key key ("" = none)
// and the traceparent tp ("" = none). It returns the answer and its raw
// body.
func keyed(t *testing.T, h http.Handler, method, path, token, key, tp string, body any) (apptest.Result, string) {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, rd)
	req.RemoteAddr = "192.0.2.7:4000"
	if token != "" {
		req.Header.Set("authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set(handler.IdempotencyHeader, key)
	}
	if tp != "" {
		req.Header.Set("traceparent", tp)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var r apptest.Result
	r.Status = rec.Code
	if err := json.Unmarshal(rec.Body.Bytes(), &r.Body); err != nil {
		t.Fatalf("%s %s: body %q is not an envelope: %v", method, path, rec.Body.String(), err)
	}
	return r, rec.Body.String()
}

// text is the JSON string or number of data, unquoted.
func text(data json.RawMessage) string { return strings.Trim(string(data), `"`) }

// sampledParent is a caller's traceparent with the sampled flag.
const sampledParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// spanTexts is every text a span shows a trace viewer: its name, status,
// the keys and values of its attributes, its events' and its links'.
func spanTexts(s tracetest.SpanStub) []string {
	out := []string{s.Name, s.Status.Description}
	add := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			out = append(out, string(kv.Key), kv.Value.Emit())
		}
	}
	add(s.Attributes)
	for _, e := range s.Events {
		out = append(out, e.Name)
		add(e.Attributes)
	}
	for _, l := range s.Links {
		add(l.Attributes)
	}
	return out
}

// redisStatement is a statement as the Redis spans may show it: a
// command and key patterns (telemetry.Statement), one per line.
var redisStatement = regexp.MustCompile(`^[a-z_]+( [a-z_]+)?( [a-z_.{}0-9*:-]+)*$`)

// TestTracingKeepsSecrets: the whole flow of a buyer with tracing on, in
// sync and async mode: a login code asked for and a wrong guess, the login,
// a keyed purchase then a keyed pay, a keyed purchase then a keyed cancel,
// every request with a sampled traceparent. No span of any trace shows the
// code, the token, the phone's digits or a stored answer (the envelope's
// "success"), in its name, attributes, events, links or status; each Redis
// statement is a command and key patterns.
func TestTracingKeepsSecrets(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			a, exp := tracedApp(t, map[string]string{"SECKILL_ORDER_MODE": mode})
			h := a.Handler()
			pay, cancel := apptest.PublishVoucher(t, h, 5), apptest.PublishVoucher(t, h, 5)
			exp.Reset()
			phone := fmt.Sprintf("13%09d", rand.IntN(1_000_000_000))
			r, _ := keyed(t, h, http.MethodPost, "/user/code?phone="+phone, "", "", sampledParent, nil)
			code := text(r.Body.Data)
			if r.Status != http.StatusOK || len(code) != 6 {
				t.Fatalf("code: %d %s %q", r.Status, r.Body.Code, code)
			}
			wrong := fmt.Sprintf("%06d", (mustAtoi(t, code)+1)%1_000_000)
			if r, _ := keyed(t, h, http.MethodPost, "/user/login", "", "", sampledParent, map[string]string{"phone": phone, "code": wrong}); r.Status == http.StatusOK {
				t.Fatalf("a wrong code logged in")
			}
			r, _ = keyed(t, h, http.MethodPost, "/user/login", "", "", sampledParent, map[string]string{"phone": phone, "code": code})
			token := text(r.Body.Data)
			if r.Status != http.StatusOK || token == "" {
				t.Fatalf("login: %d %s", r.Status, r.Body.Code)
			}
			var stored []string // the answers the keys keep
			for _, step := range []struct {
				vid    int64
				action string
			}{{pay, "pay"}, {cancel, "cancel"}} {
				r, body := keyed(t, h, http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", step.vid), token, "buy-"+step.action, sampledParent, nil)
				if r.Status != http.StatusOK {
					t.Fatalf("purchase: %d %s", r.Status, r.Body.Code)
				}
				stored = append(stored, body)
				order := text(r.Body.Data)
				waitOrder(t, h, token, order)
				r, body = keyed(t, h, http.MethodPost, "/voucher-order/"+order+"/"+step.action, token, step.action+"-"+order, sampledParent, nil)
				if r.Status != http.StatusOK {
					t.Fatalf("%s: %d %s %s", step.action, r.Status, r.Body.Code, r.Body.ErrorMsg)
				}
				stored = append(stored, body)
			}
			if mode == "async" {
				waitSpans(t, exp, func(tree spanTree) bool { return len(tree.named("seckill.consumer.batch")) >= 2 })
			}
			secrets := map[string]string{"the login code": code, "the token": token, "the phone": phone,
				"the token's signature": token[strings.LastIndexByte(token, '.')+1:], "a stored answer": `"success"`}
			for _, b := range stored {
				secrets["the stored answer "+b] = b
			}
			spans := exp.GetSpans()
			if len(spans) < 10 {
				t.Fatalf("%d spans, want the flow's", len(spans))
			}
			redisSpans := 0
			for _, s := range spans {
				for _, v := range spanTexts(s) {
					for what, secret := range secrets {
						if strings.Contains(v, secret) {
							t.Errorf("span %s shows %s: %q", s.Name, what, v)
						}
					}
				}
				if attr(s, "db.system") != "redis" {
					continue
				}
				redisSpans++
				for _, line := range strings.Split(attr(s, "db.statement"), "\n") {
					if !redisStatement.MatchString(line) {
						t.Errorf("span %s: Redis statement %q is not a command and key patterns", s.Name, line)
					}
				}
			}
			if redisSpans == 0 {
				t.Errorf("no Redis span among %d", len(spans))
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitOrder waits until the buyer's order is written (async mode: by the
// consumer), within 30 s.
func waitOrder(t *testing.T, h http.Handler, token, order string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := apptest.Call(t, h, http.MethodGet, "/voucher-order/"+order, token, nil)
		var o struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(r.Body.Data, &o)
		if r.Status == http.StatusOK && o.Status == "created" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s: %d %s %s", order, r.Status, r.Body.Code, r.Body.Data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSpans waits until done holds of the exported spans, within 30 s.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, done func(spanTree) bool) spanTree {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tree := newSpanTree(exp.GetSpans())
		if done(tree) {
			return tree
		}
		if time.Now().After(deadline) {
			names := map[string]int{}
			for _, s := range tree.spans {
				names[s.Name]++
			}
			t.Fatalf("spans so far: %v", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTraceTrustParent: a request with a sampled traceparent, at a sample
// ratio of 0 (parentbased_traceidratio, 0) and of 1. With
// SECKILL_TRACE_TRUST_PARENT off, the caller's flag decides nothing: at 0
// no span; at 1 the request's span is a root of a trace of our own,
// linked to the caller's span. On, the caller's span is the parent: at 0
// the request is traced in the caller's trace.
func TestTraceTrustParent(t *testing.T) {
	parent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": sampledParent}))
	for _, tt := range []struct {
		trust string
		ratio float64
	}{{"off", 0}, {"off", 1}, {"on", 0}} {
		t.Run(fmt.Sprintf("%s/ratio%v", tt.trust, tt.ratio), func(t *testing.T) {
			a, exp := tracedApp(t, map[string]string{"SECKILL_TRACE_TRUST_PARENT": tt.trust},
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(tt.ratio))))
			exp.Reset()
			if r, _ := keyed(t, a.Handler(), http.MethodGet, "/healthz", "", "", sampledParent, nil); r.Status != http.StatusOK {
				t.Fatalf("GET /healthz: %d %s", r.Status, r.Body.Code)
			}
			spans := exp.GetSpans()
			if tt.trust == "off" && tt.ratio == 0 {
				if len(spans) != 0 {
					t.Fatalf("%d spans (first %s in trace %s), want none: the caller's sampled flag decided", len(spans), spans[0].Name, spans[0].SpanContext.TraceID())
				}
				return
			}
			reqs := newSpanTree(spans).named("GET /healthz")
			if len(reqs) != 1 {
				t.Fatalf("%d request spans among %d, want 1", len(reqs), len(spans))
			}
			req := reqs[0]
			switch tt.trust {
			case "on":
				if req.Parent.SpanID() != parent.SpanID() || req.SpanContext.TraceID() != parent.TraceID() {
					t.Errorf("request span: trace %s parent %s, want the caller's span %s in %s", req.SpanContext.TraceID(), req.Parent.SpanID(), parent.SpanID(), parent.TraceID())
				}
			case "off":
				if req.Parent.IsValid() || req.SpanContext.TraceID() == parent.TraceID() {
					t.Errorf("request span: trace %s parent %v, want a root of a trace of our own", req.SpanContext.TraceID(), req.Parent)
				}
				if len(req.Links) != 1 || req.Links[0].SpanContext.SpanID() != parent.SpanID() || req.Links[0].SpanContext.TraceID() != parent.TraceID() {
					t.Errorf("request span links %v, want one to the caller's span", req.Links)
				}
			}
		})
	}
}

// TestBackgroundNotTraced: with every request traced (ratio 1), the app's
// background loops (revocation reloads, live counters, sweeps, the
// consumers' idle reads) run for 3 s, then one purchase is made. Every
// span exported belongs to the purchase's trace or, in async mode, to a
// consumer batch's trace linked to it.
func TestBackgroundNotTraced(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			// The consumer's lock: its release ends the batch's trace.
			a, exp := tracedApp(t, map[string]string{"SECKILL_ORDER_MODE": mode, "SECKILL_CONSUMER_LOCK": "on"})
			vid := apptest.PublishVoucher(t, a.Handler(), 5)
			tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
			exp.Reset()
			time.Sleep(3 * time.Second) // the background loops' turns
			if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil); r.Status != http.StatusOK {
				t.Fatalf("purchase: %d %s", r.Status, r.Body.Code)
			}
			tree := waitSpans(t, exp, func(tree spanTree) bool {
				return mode == "sync" || len(tree.named("lock.release_all")) > 0
			})
			reqs := tree.named(http.MethodPost + " " + purchaseRoute)
			if len(reqs) != 1 {
				t.Fatalf("%d purchase spans, want 1", len(reqs))
			}
			ours := map[trace.TraceID]bool{reqs[0].SpanContext.TraceID(): true}
			for _, b := range tree.named("seckill.consumer.batch") {
				for _, l := range b.Links {
					if ours[l.SpanContext.TraceID()] {
						ours[b.SpanContext.TraceID()] = true
					}
				}
			}
			others := map[string]int{}
			for _, s := range tree.spans {
				if !ours[s.SpanContext.TraceID()] {
					others[s.Name]++
				}
			}
			if len(others) > 0 {
				t.Errorf("%d spans, %d traces of the purchase; spans of no purchase: %v", len(tree.spans), len(ours), others)
			}
		})
	}
}
