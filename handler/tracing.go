package handler

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"seckill/observe/telemetry"
)

// traceScope is the instrumentation scope of the request spans.
const traceScope = "seckill/handler"

// traceparent is the W3C header of a caller's span, as net/http keys it.
// Without it there is nothing to extract.
const traceparent = "Traceparent"

// serverSpan starts the span of every request, "<METHOD> <route>", kind
// server, on the context the propagator reads from the request's headers
// (telemetry.EdgePropagator). The sampler decides at the start. A request
// it leaves out pays for that decision alone: its context stays as it was,
// and the attributes (method, route, path, client, status) are built only
// when the span records.
func serverSpan(tp trace.TracerProvider, prop propagation.TextMapPropagator) gin.HandlerFunc {
	tracer := tp.Tracer(traceScope)
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		if _, ok := c.Request.Header[traceparent]; ok {
			ctx = prop.Extract(ctx, propagation.HeaderCarrier(c.Request.Header))
		}
		// The sampler reads the trace id, not the name: the name is
		// built once the span records.
		ctx, span := tracer.Start(ctx, "", trace.WithSpanKind(trace.SpanKindServer))
		if !span.IsRecording() {
			// Nothing under it would record: the request keeps its
			// context (no copy of the request), and starts no span.
			span.End()
			c.Next()
			return
		}
		defer span.End()
		c.Request = c.Request.WithContext(ctx)
		span.SetName(spanName(c))
		r := c.Request
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(c.FullPath()),
			semconv.URLPath(r.URL.Path), semconv.URLScheme(scheme), semconv.ServerAddress(r.Host),
			semconv.NetworkProtocolVersion(strings.TrimPrefix(r.Proto, "HTTP/")),
			semconv.ClientAddress(c.ClientIP()), semconv.UserAgentOriginal(r.UserAgent()))
		telemetry.LinkRemoteParent(ctx)
		c.Next()
		status := c.Writer.Status()
		span.SetAttributes(semconv.HTTPResponseStatusCode(status), semconv.HTTPResponseBodySize(max(c.Writer.Size(), 0)))
		if status >= http.StatusInternalServerError {
			span.SetStatus(otelcodes.Error, "")
		}
		if len(c.Errors) > 0 {
			span.SetStatus(otelcodes.Error, c.Errors.String())
			for _, err := range c.Errors {
				span.RecordError(err.Err)
			}
		}
	}
}

// spanName is a request span's name: its method and route, or its method
// alone for a path that is no route.
func spanName(c *gin.Context) string {
	if route := c.FullPath(); route != "" {
		return c.Request.Method + " " + route
	}
	return c.Request.Method
}
