package observability

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seckill/app"
	"seckill/config"
	"seckill/e2e/apptest"
	"seckill/observe/telemetry"
)

// tracedApp starts an app on the embedded backends, with its own Redis and
// database. So no other process's consumer takes its orders. Its spans go
// to the returned in-memory exporter, through a provider made with opts
// (a sampler) and the exporter.
func tracedApp(t *testing.T, env map[string]string, opts ...sdktrace.TracerProviderOption) (*app.App, *tracetest.InMemoryExporter) {
	t.Helper()
	vars := map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:0", "SECKILL_ENV": "development",
		"SECKILL_DATA_DIR": t.TempDir(), "SECKILL_LOCK_MODE": "lua"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(apptest.EnvOf(vars))
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSyncer(exp))...)
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), cfg, log, app.WithTracing(telemetry.New(tp)))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	apptest.RegisterDB(t, a)
	return a, exp
}

// tracedPurchase starts a traced app in order mode and makes one purchase
// of a fresh voucher. The spans of the set-up are dropped. So the exporter
// holds those of wait (the background loops' turns; 0 for none), then of
// the purchase. The async consumers take the per-user lock: its release
// ends the batch's trace.
func tracedPurchase(t *testing.T, mode string, wait time.Duration) *tracetest.InMemoryExporter {
	t.Helper()
	return tracedPurchaseWith(t, map[string]string{"SECKILL_ORDER_MODE": mode, "SECKILL_CONSUMER_LOCK": "on"}, wait)
}

// tracedPurchaseWith is tracedPurchase on the app env describes.
func tracedPurchaseWith(t *testing.T, env map[string]string, wait time.Duration) *tracetest.InMemoryExporter {
	t.Helper()
	a, exp := tracedApp(t, env)
	vid := apptest.PublishVoucher(t, a.Handler(), 5)
	tok, _ := apptest.DevTokens().Issue(apptest.RandomBase(), "user")
	exp.Reset()
	time.Sleep(wait)
	if r := apptest.Call(t, a.Handler(), http.MethodPost, fmt.Sprintf("/voucher-order/seckill/%d", vid), tok, nil); r.Status != http.StatusOK {
		t.Fatalf("purchase: got %d %s", r.Status, r.Body.Code)
	}
	return exp
}

// spanTree is the spans of one run, by span id.
type spanTree struct {
	spans []tracetest.SpanStub
	byID  map[trace.SpanID]tracetest.SpanStub
}

func newSpanTree(spans tracetest.SpanStubs) spanTree {
	t := spanTree{spans: spans, byID: map[trace.SpanID]tracetest.SpanStub{}}
	for _, s := range spans {
		t.byID[s.SpanContext.SpanID()] = s
	}
	return t
}

// under reports whether s descends from root.
func (t spanTree) under(s, root tracetest.SpanStub) bool {
	for p := s.Parent; p.IsValid(); {
		if p.SpanID() == root.SpanContext.SpanID() {
			return true
		}
		parent, ok := t.byID[p.SpanID()]
		if !ok {
			return false
		}
		p = parent.Parent
	}
	return false
}

// find returns the spans named name (a prefix when it ends with "*")
// that descend from root.
func (t spanTree) find(root tracetest.SpanStub, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range t.spans {
		match := s.Name == name || (strings.HasSuffix(name, "*") && strings.HasPrefix(s.Name, strings.TrimSuffix(name, "*")))
		if match && t.under(s, root) {
			out = append(out, s)
		}
	}
	return out
}

func (t spanTree) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range t.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// render writes the tree under root as indented text, children in start
// order, with the attributes that say what a span did.
func (t spanTree) render(w io.Writer, root tracetest.SpanStub, depth int) {
	shown := []attribute.Key{"http.route", "http.response.status_code", "seckill.lock.mode", "seckill.lock.key",
		"seckill.lock.keys", "seckill.batch.size", "db.statement", "db.query.text", "db.operation.name", "db.system", "db.system.name"}
	var parts []string
	for _, k := range shown {
		if v := attr(root, string(k)); v != "" {
			v = strings.ReplaceAll(v, "\n", "; ")
			if len(v) > 90 {
				v = v[:90] + "…"
			}
			parts = append(parts, fmt.Sprintf("%s=%s", k, v))
		}
	}
	for _, l := range root.Links {
		parts = append(parts, "link→trace "+l.SpanContext.TraceID().String()[:8]+"… span "+l.SpanContext.SpanID().String())
	}
	fmt.Fprintf(w, "%s%s [%s] trace %s… span %s  %s\n", strings.Repeat("  ", depth), root.Name, root.SpanKind,
		root.SpanContext.TraceID().String()[:8], root.SpanContext.SpanID(), strings.Join(parts, " "))
	var kids []tracetest.SpanStub
	for _, s := range t.spans {
		if s.Parent.SpanID() == root.SpanContext.SpanID() && s.Parent.TraceID() == root.SpanContext.TraceID() {
			kids = append(kids, s)
		}
	}
	slices.SortFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	for _, k := range kids {
		t.render(w, k, depth+1)
	}
}

const purchaseRoute = "/voucher-order/seckill/:id"

// TestTracing: one sync and one async purchase with tracing on. The
// request's span (handler/tracing.go) holds the lock's obtain and release with the
// mode, Redis commands and SQL statements. In async mode the consumer's
// batch span is linked to the request's span through the stream entry,
// and holds the SQL write of the order and, with SECKILL_CONSUMER_LOCK on,
// the batch's locks. SECKILL_TRACE_OUT=file writes the async tree as text
// there.
func TestTracing(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			exp := tracedPurchase(t, mode, 0)
			tree := waitSpans(t, exp, func(tree spanTree) bool {
				if len(tree.named(http.MethodPost+" "+purchaseRoute)) != 1 {
					return false
				}
				return mode != "async" || len(tree.named("seckill.consumer.batch")) > 0 && len(tree.named("lock.release_all")) > 0
			})
			req := tree.named(http.MethodPost + " " + purchaseRoute)[0]
			if req.Parent.IsValid() || req.SpanKind != trace.SpanKindServer || attr(req, "http.route") != purchaseRoute {
				t.Errorf("request span: parent %v kind %v route %q, want a server root on %s", req.Parent, req.SpanKind, attr(req, "http.route"), purchaseRoute)
			}
			// The admission's Redis work: the sync lock script, or the
			// async admission script.
			if len(tree.find(req, "evalsha")) == 0 && len(tree.find(req, "eval")) == 0 {
				t.Errorf("no Redis script span under the request")
			}
			var writer tracetest.SpanStub
			switch mode {
			case "sync":
				obtain, release := tree.find(req, "lock.obtain"), tree.find(req, "lock.release")
				if len(obtain) != 1 || len(release) != 1 || attr(obtain[0], "seckill.lock.mode") != "lua" || attr(release[0], "seckill.lock.mode") != "lua" {
					t.Errorf("lock spans under the request: obtain %d release %d, want one each with mode lua", len(obtain), len(release))
				}
				writer = req
			case "async":
				batches := tree.named("seckill.consumer.batch")
				linked := false
				for _, b := range batches {
					for _, l := range b.Links {
						if l.SpanContext.TraceID() == req.SpanContext.TraceID() {
							linked, writer = true, b
						}
					}
				}
				if !linked {
					t.Fatalf("no consumer batch span linked to the request's trace %s", req.SpanContext.TraceID())
				}
				if n := len(tree.find(writer, "lock.obtain_all")); n != 1 || attr(tree.find(writer, "lock.obtain_all")[0], "seckill.lock.mode") != "lua" {
					t.Errorf("lock.obtain_all under the batch: %d, want 1 with mode lua", n)
				}
				if out := os.Getenv("SECKILL_TRACE_OUT"); out != "" {
					var b strings.Builder
					tree.render(&b, req, 0)
					b.WriteString("\n")
					tree.render(&b, writer, 0)
					if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			checkOrderInsert(t, tree, writer)
		})
	}
}

// TestTracingAsyncDefault: the async purchase on the default settings, the
// consumers without the per-user lock (SECKILL_CONSUMER_LOCK off). The
// consumer's batch span is linked to the request's trace and holds the
// order's INSERT, and no lock span.
func TestTracingAsyncDefault(t *testing.T) {
	exp := tracedPurchaseWith(t, map[string]string{"SECKILL_ORDER_MODE": "async"}, 0)
	var req, batch tracetest.SpanStub
	tree := waitSpans(t, exp, func(tree spanTree) bool {
		reqs := tree.named(http.MethodPost + " " + purchaseRoute)
		if len(reqs) != 1 {
			return false
		}
		req = reqs[0]
		for _, b := range tree.named("seckill.consumer.batch") {
			for _, l := range b.Links {
				if l.SpanContext.TraceID() == req.SpanContext.TraceID() && len(tree.find(b, "gorm*")) > 0 {
					batch = b
					return true
				}
			}
		}
		return false
	})
	if locks := tree.find(batch, "lock.*"); len(locks) != 0 {
		t.Errorf("lock spans under the batch with the consumer lock off: %d (%s), want none", len(locks), locks[0].Name)
	}
	checkOrderInsert(t, tree, batch)
}

// checkOrderInsert fails the test unless an INSERT of an order is among
// the SQL spans under writer.
func checkOrderInsert(t *testing.T, tree spanTree, writer tracetest.SpanStub) {
	t.Helper()
	for _, s := range tree.find(writer, "gorm*") {
		if strings.Contains(strings.ToUpper(attr(s, "db.statement")), "INSERT INTO `TB_VOUCHER_ORDER`") {
			return
		}
	}
	var b strings.Builder
	tree.render(&b, writer, 0)
	t.Errorf("no INSERT of the order under %s:\n%s", writer.Name, b.String())
}
