package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// EdgePropagator reads a request's W3C traceparent. trustParent
// (SECKILL_TRACE_TRUST_PARENT=on) makes the caller's span the parent of the
// request's span: its trace id and its sampled flag decide. Otherwise the
// caller's span is only kept for RemoteParent: the request starts a trace of
// its own, sampled as the sampler says of a root (the ratio), on a trace id
// the service draws, and LinkRemoteParent links it to the caller's span. A
// client cannot force sampling with a sampled flag, nor choose the trace id
// a ratio sampler reads.
func EdgePropagator(trustParent bool) propagation.TextMapPropagator {
	if trustParent {
		return propagation.TraceContext{}
	}
	return untrusted{}
}

// remoteParentKey holds the caller's span context the untrusted propagator
// read.
type remoteParentKey struct{}

// untrusted extracts the caller's span context aside (RemoteParent), never
// as the parent.
type untrusted struct{ propagation.TraceContext }

func (u untrusted) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	sc := trace.SpanContextFromContext(u.TraceContext.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, remoteParentKey{}, sc)
}

// RemoteParent is the caller's span context an untrusted EdgePropagator
// read, invalid when there is none.
func RemoteParent(ctx context.Context) trace.SpanContext {
	sc, _ := ctx.Value(remoteParentKey{}).(trace.SpanContext)
	return sc
}

// LinkRemoteParent links ctx's span (the request's) to RemoteParent, when
// both are there. The caller's trace stays reachable from ours.
func LinkRemoteParent(ctx context.Context) {
	sc := RemoteParent(ctx)
	if !sc.IsValid() {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddLink(trace.Link{SpanContext: sc})
	}
}
