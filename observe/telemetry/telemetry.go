// Package telemetry turns OpenTelemetry tracing on from the standard
// OTEL_* variables. It instruments the service with the maintained
// instrumentation of gorm (gorm.io/plugin/opentelemetry). It adds what no
// library does: the request's span (ServerSpan, in package handler), the
// spans of Redis commands (Redis), spans around the lock's obtain and
// release, and the trace context carried in an async order's stream entry.
// A request the sampler leaves out costs one non-recording span: no
// attribute is built and no span is started under it.
//
// No span carries a secret: Redis statements are the command and its key
// patterns (Statement), SQL statements have no values, and a request's
// caller decides no sampling unless SECKILL_TRACE_TRUST_PARENT says so
// (EdgePropagator). Background loops start no root span: only a request
// or a consumer batch does (New).
//
// Tracing is off unless the OTEL_* variables turn it on (config.Config's
// Tracing). Off, nothing is instrumented: the hot path is the same code
// as without this package.
package telemetry

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	gormtracing "gorm.io/plugin/opentelemetry/tracing"
)

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME
// names another.
const ServiceName = "seckill"

// scope is the instrumentation scope of the spans this package makes.
const scope = "seckill/observe/telemetry"

// Start returns a tracer provider that exports spans in batches. The
// exporter is the one the OTEL_* variables name (OTLP by default; see
// autoexport). It samples as OTEL_TRACES_SAMPLER says, parent-based and
// always on by default. Shut it down to flush the last spans.
func Start(ctx context.Context) (*sdktrace.TracerProvider, error) {
	exporter, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %w", err)
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(semconv.ServiceName(ServiceName)))
	if err != nil {
		return nil, err
	}
	// The environment's OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// win over the default name.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(SpanLimits(os.LookupEnv))), nil
}

// AttributeValueLimit bounds the length of a span attribute's value
// unless OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT or
// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT says otherwise. The SDK's default is
// no bound, and a request span copies the client's User-Agent and Host:
// a client could make every span it sends hold all the headers the
// server takes, and the exporter's queue thousands of such spans.
const AttributeValueLimit = 1024

// SpanLimits are the SDK's limits from the OTEL_* variables, with
// AttributeValueLimit unless one of the two length variables is set.
func SpanLimits(lookup func(string) (string, bool)) sdktrace.SpanLimits {
	limits := sdktrace.NewSpanLimits()
	_, span := lookup("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	_, general := lookup("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	if !span && !general {
		limits.AttributeValueLengthLimit = AttributeValueLimit
	}
	return limits
}

// Tracing instruments the service on one tracer provider.
type Tracing struct {
	provider   trace.TracerProvider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// New returns the instrumentation on provider. Its spans start under a
// request's span (server) or a consumer batch's (consumer): a span that
// would be a root of anything else (a background loop's Redis command or
// SQL statement) is not started.
func New(provider trace.TracerProvider) *Tracing {
	provider = rootless{tp: provider}
	return &Tracing{provider: provider, tracer: provider.Tracer(scope), propagator: propagation.TraceContext{}}
}

// Provider is the tracer provider. Nil for a nil Tracing (tracing off).
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// Propagator is the W3C trace-context propagator every span crosses
// processes with.
func (t *Tracing) Propagator() propagation.TextMapPropagator { return t.propagator }

// Redis adds a span to every command, pipeline and script of rdb under a
// span that records. Its db.statement is the command and its key patterns
// (Statement), never a value: no login code, token or stored answer.
func (t *Tracing) Redis(client redis.UniversalClient) error {
	return addRedisHook(client, t.tracer)
}

// DB adds a span to every SQL statement of db, its values left out.
func (t *Tracing) DB(db *gorm.DB) error {
	return db.Use(gormtracing.NewPlugin(gormtracing.WithTracerProvider(t.provider), gormtracing.WithoutMetrics(),
		gormtracing.WithoutQueryVariables()))
}

// TraceParent is the W3C traceparent of ctx's span, "" when it has none
// or is not sampled (an unsampled request links nothing).
func (t *Tracing) TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	t.propagator.Inject(ctx, c)
	return c["traceparent"]
}

// StartBatch starts the span of one consumer batch and returns its context
// and its end. The span links to the spans of the requests that admitted its
// orders, read from their traceparents. Empty traceparents are skipped. A
// batch of no traced request's orders is not traced (background work).
func (t *Tracing) StartBatch(ctx context.Context, size int, parents []string) (context.Context, func()) {
	links := make([]trace.Link, 0, len(parents))
	for _, p := range parents {
		if p == "" {
			continue
		}
		sc := trace.SpanContextFromContext(t.propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": p}))
		if sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	if len(links) == 0 {
		return ctx, func() {}
	}
	ctx, span := t.tracer.Start(ctx, "seckill.consumer.batch", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...), trace.WithAttributes(attribute.Int("seckill.batch.size", size)))
	return ctx, func() { span.End() }
}
