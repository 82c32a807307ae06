package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestStatement: a Redis command in a trace is its name and its keys'
// patterns; no value, no argument, no key's variable part.
func TestStatement(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		cmd  redis.Cmder
		want string
	}{
		{redis.NewStatusCmd(ctx, "set", "login:code:13812345678", "123456:0", "ex", 120), "set login:code:*"},
		{redis.NewCmd(ctx, "evalsha", "d6da358d", 1, "seckill:idem:2:buy-pay", "JKUV", 200, `{"success":true}`), "evalsha seckill:idem:*"},
		{redis.NewCmd(ctx, "evalsha", "c50fe377", 2, "lock:order:2", "lock:order:2:fence", 10000, "GTV2YTSE"), "evalsha lock:order:* lock:order:*"},
		{redis.NewCmd(ctx, "evalsha", "4ec4f75a", 2, "seckill:{s1.13}:stock:1", "seckill:{s1.13}:orders", "7", "token"), "evalsha seckill:{s1.13}:stock:* seckill:{s1.13}:orders"},
		{redis.NewCmd(ctx, "xreadgroup", "group", "g1", "host-1", "count", 100, "streams", "seckill:{s0.10}:orders", ">"), "xreadgroup seckill:{s0.10}:orders"},
		{redis.NewCmd(ctx, "del", "login:code:13812345678", "login:daily:13812345678"), "del login:code:* login:daily:*"},
		{redis.NewCmd(ctx, "auth", "user", "secret:word"), "auth"},
		{redis.NewCmd(ctx, "hello", 3, "auth", "default", "secret:word"), "hello"},
		{redis.NewCmd(ctx, "script", "load", "return 1"), "script"},
		{redis.NewCmd(ctx, "xgroup", "create", "seckill:{s0.10}:orders", "g1", "0"), "xgroup create seckill:{s0.10}:orders"},
		{redis.NewCmd(ctx, "get", "Login:Code:x"), "get *"},
	} {
		if got := Statement(tt.cmd); got != tt.want {
			t.Errorf("Statement(%v) = %q, want %q", tt.cmd.Args(), got, tt.want)
		}
	}
}

// TestScrubbedErrors: an error recorded on a span (a database's duplicate
// entry) keeps its words, not the values it quotes.
func TestScrubbedErrors(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := New(tp)
	ctx, req := tr.Provider().Tracer("test").Start(context.Background(), "request", trace.WithSpanKind(trace.SpanKindServer))
	_, span := tr.Provider().Tracer("test").Start(ctx, "gorm.Create", trace.WithSpanKind(trace.SpanKindClient))
	err := errors.New("Error 1062 (23000): Duplicate entry '13812345678' for key 'tb_user.phone'")
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.End()
	req.End()
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	s := spans[0]
	if len(s.Events) != 1 || s.Status.Code != codes.Error {
		t.Fatalf("events %v status %v, want the error recorded", s.Events, s.Status)
	}
	for _, v := range []string{s.Status.Description, s.Events[0].Attributes[1].Value.Emit()} {
		if strings.Contains(v, "13812345678") || !strings.Contains(v, "Duplicate entry") {
			t.Errorf("recorded %q, want the words without the phone", v)
		}
	}
}

// TestNoBackgroundRoot: a client span with no parent is not started; under
// a request's span, and as a consumer's root, spans are.
func TestNoBackgroundRoot(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	tracer := tr.Provider().Tracer("test")
	_, bg := tracer.Start(context.Background(), "background", trace.WithSpanKind(trace.SpanKindClient))
	bg.End()
	ctx, batch := tracer.Start(context.Background(), "batch", trace.WithSpanKind(trace.SpanKindConsumer))
	_, child := tracer.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient))
	child.End()
	batch.End()
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "child,batch" {
		t.Errorf("spans %v, want child and batch", names)
	}
}
