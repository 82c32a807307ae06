package telemetry

import (
	"context"
	"fmt"
	"regexp"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// rootless is a tracer provider whose tracers start no root span other
// than a request's (server) or a consumer batch's (consumer). A
// background loop's Redis command or SQL statement, made on a context
// with no span, is not traced; a traced request's work, under its span, is.
// Under a span that records nothing, they start none either.
type rootless struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p rootless) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return rootlessTracer{inner: p.tp.Tracer(name, opts...)}
}

type rootlessTracer struct {
	embedded.Tracer
	inner trace.Tracer
}

func (t rootlessTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() && parent.SpanContext().IsValid() && !parent.SpanContext().IsRemote() {
		// Under a local span the sampler left out (a request not
		// sampled): nothing to record, no id or sampling to pay for.
		// A caller's span (remote) is a request span's parent.
		return ctx, parent
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		cfg := trace.NewSpanStartConfig(opts...)
		switch cfg.SpanKind() {
		case trace.SpanKindServer, trace.SpanKindConsumer:
		default:
			// A non-recording span: the instrumentation records
			// nothing, and the work under it starts no root either.
			return ctx, trace.SpanFromContext(ctx)
		}
	}
	ctx, span := t.inner.Start(ctx, name, opts...)
	if !span.IsRecording() {
		return ctx, span
	}
	s := scrubbed{span}
	return trace.ContextWithSpan(ctx, s), s
}

// scrubbed is a span whose errors are recorded without the values they
// quote: a database's "Duplicate entry '13812345678' for key ..." shows
// no phone.
type scrubbed struct{ trace.Span }

func (s scrubbed) RecordError(err error, _ ...trace.EventOption) {
	if err == nil {
		return
	}
	s.Span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", fmt.Sprintf("%T", err)),
		attribute.String("exception.message", Scrub(err.Error()))))
}

func (s scrubbed) SetStatus(code codes.Code, description string) {
	s.Span.SetStatus(code, Scrub(description))
}

var (
	quoted = regexp.MustCompile(`'[^']*'|"[^"]*"`)
	digits = regexp.MustCompile(`[0-9]{6,}`)
)

// Scrub is an error's text without the values it may quote: quoted
// strings become '?' and runs of six digits or more (a phone, a code)
// "*".
func Scrub(text string) string {
	return digits.ReplaceAllString(quoted.ReplaceAllString(text, "'?'"), "*")
}
