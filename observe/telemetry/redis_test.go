package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestRedisStatements: on a real Redis and on the cluster (.ci/env.sh), a
// command, a pipeline and a script under a request's span each have a span
// whose db.statement is the command and its key patterns, without the
// value; the same command with no span around it makes none. A new
// connection's HELLO (it may carry the password) shows its name only.
func TestRedisStatements(t *testing.T) {
	clients := map[string]func() redis.UniversalClient{}
	if addr := os.Getenv("SECKILL_REDIS_ADDR"); addr != "" {
		clients["single"] = func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) }
	}
	if addrs := os.Getenv("SECKILL_TEST_CLUSTER_ADDRS"); addrs != "" {
		clients["cluster"] = func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
		}
	}
	if len(clients) == 0 {
		t.Skip("no Redis: source .ci/env.sh")
	}
	for name, open := range clients {
		t.Run(name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
			rdb := open()
			defer rdb.Close()
			if err := tr.Redis(rdb); err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("test:trace:%d", rand.Int64())
			const value = "secret-value"
			bg := context.Background()
			if err := rdb.Set(bg, key, value, 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			ctx, req := tr.Provider().Tracer("test").Start(bg, "request", trace.WithSpanKind(trace.SpanKindServer))
			if err := rdb.Set(ctx, key, value, 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, key)
				p.Expire(ctx, key, 10*time.Second)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Eval(ctx, "return redis.call('get', KEYS[1])", []string{key}, value).Err(); err != nil {
				t.Fatal(err)
			}
			req.End()
			want := map[string]string{"set": "set test:trace:*", "redis.pipeline get expire": "get test:trace:*\nexpire test:trace:*",
				"eval": "eval test:trace:*"}
			got := map[string]string{}
			for _, s := range exp.GetSpans() {
				if s.Name == "request" {
					continue
				}
				if s.SpanContext.TraceID() != req.SpanContext().TraceID() || !s.Parent.IsValid() {
					t.Errorf("span %s: trace %s, want under the request's span", s.Name, s.SpanContext.TraceID())
				}
				for _, kv := range s.Attributes {
					if strings.Contains(kv.Value.Emit(), value) || strings.Contains(kv.Value.Emit(), key) {
						t.Errorf("span %s: %s=%q shows the value or the key", s.Name, kv.Key, kv.Value.Emit())
					}
				}
				if _, ok := want[s.Name]; !ok {
					continue // a connection's setup (hello, client setinfo)
				}
				if _, dup := got[s.Name]; dup {
					t.Errorf("span %s twice", s.Name)
				}
				got[s.Name] = attrOf(s, "db.statement")
			}
			for n, w := range want {
				if got[n] != w {
					t.Errorf("span %s: db.statement %q, want %q (spans: %v)", n, got[n], w, got)
				}
			}
		})
	}
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
