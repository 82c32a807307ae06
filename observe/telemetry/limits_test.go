package telemetry

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSpanLimits: a span attribute of 100 KB (a client's User-Agent) is
// cut to AttributeValueLimit bytes by default, and to what
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT
// says when one is set.
func TestSpanLimits(t *testing.T) {
	long := strings.Repeat("a", 100<<10)
	valueLen := func(limits sdktrace.SpanLimits) int {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithRawSpanLimits(limits))
		_, span := tp.Tracer("test").Start(context.Background(), "request")
		span.SetAttributes(attribute.String("user_agent.original", long))
		span.End()
		spans := exp.GetSpans()
		if len(spans) != 1 || len(spans[0].Attributes) != 1 {
			t.Fatalf("got %d spans (%v), want 1 with 1 attribute", len(spans), spans)
		}
		return len(spans[0].Attributes[0].Value.AsString())
	}
	t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "")
	os.Unsetenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	if got := valueLen(SpanLimits(os.LookupEnv)); got != AttributeValueLimit {
		t.Errorf("default: attribute of %d bytes, want %d", got, AttributeValueLimit)
	}
	t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "64")
	if got := valueLen(SpanLimits(os.LookupEnv)); got != 64 {
		t.Errorf("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT=64: attribute of %d bytes, want 64", got)
	}
	os.Unsetenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	t.Setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "32")
	if got := valueLen(SpanLimits(os.LookupEnv)); got != 32 {
		t.Errorf("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=32: attribute of %d bytes, want 32", got)
	}
	// The SDK alone keeps the whole value: the limit is this package's.
	os.Unsetenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	if got := valueLen(sdktrace.NewSpanLimits()); got != len(long) {
		t.Errorf("the SDK's default: attribute of %d bytes, want %d", got, len(long))
	}
}
