package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seckill/lock"
	"seckill/testkit/testenv"
)

// countingIDs draws ids as the SDK's generator would and counts them.
type countingIDs struct {
	roots, children atomic.Int64
}

func (g *countingIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	g.roots.Add(1)
	var tid trace.TraceID
	var sid trace.SpanID
	for i := range tid {
		tid[i] = byte(rand.IntN(255) + 1)
	}
	for i := range sid {
		sid[i] = byte(rand.IntN(255) + 1)
	}
	return tid, sid
}

func (g *countingIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.children.Add(1)
	var sid trace.SpanID
	for i := range sid {
		sid[i] = byte(rand.IntN(255) + 1)
	}
	return sid
}

// TestUnsampledRequestStartsNoSpan: under a request's span that the
// sampler left out (ratio 0), a Redis command, a pipeline, a script and a
// lock's obtain and release start no span: the SDK draws no span id and
// nothing is exported. The same work under a sampled request's span
// (ratio 1) makes its spans: the hooks are there.
func TestUnsampledRequestStartsNoSpan(t *testing.T) {
	addr := testenv.Need(t, "SECKILL_REDIS_ADDR")
	for _, c := range []struct {
		name  string
		ratio float64
	}{{"unsampled", 0}, {"sampled", 1}} {
		t.Run(c.name, func(t *testing.T) {
			ids := &countingIDs{}
			exp := tracetest.NewInMemoryExporter()
			tr := New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(ids),
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.ratio)))))
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			if err := tr.Redis(rdb); err != nil {
				t.Fatal(err)
			}
			local, err := lock.NewLocal()
			if err != nil {
				t.Fatal(err)
			}
			locker := tr.Locker(local)
			key := fmt.Sprintf("test:unsampled:%d", rand.Int64())
			ctx, req := tr.Provider().Tracer("test").Start(context.Background(), "request", trace.WithSpanKind(trace.SpanKindServer))
			if req.IsRecording() != (c.ratio == 1) {
				t.Fatalf("request span recording %v at ratio %v", req.IsRecording(), c.ratio)
			}
			if err := rdb.Set(ctx, key, "v", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, key)
				p.Expire(ctx, key, 10*time.Second)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Eval(ctx, "return redis.call('get', KEYS[1])", []string{key}).Err(); err != nil {
				t.Fatal(err)
			}
			lk, err := locker.Obtain(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				t.Fatal(err)
			}
			req.End()
			spans := len(exp.GetSpans())
			if c.ratio == 0 {
				if ids.children.Load() != 0 || spans != 0 || ids.roots.Load() != 1 {
					t.Errorf("unsampled request: %d span ids drawn under it, %d spans exported, %d trace ids, want 0, 0, 1",
						ids.children.Load(), spans, ids.roots.Load())
				}
				return
			}
			// request, set, pipeline, eval, lock.obtain, lock.release,
			// and a new connection's setup.
			if spans < 6 || ids.children.Load() < 5 {
				t.Errorf("sampled request: %d spans, %d span ids drawn, want at least 6 and 5", spans, ids.children.Load())
			}
		})
	}
}
