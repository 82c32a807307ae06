package handler

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seckill/observe/telemetry"
)

// TestServerSpan: a sampled request's span is "<METHOD> <route>", kind
// server, with its route and status, and the route's context carries it;
// a request the sampler leaves out keeps its context as it came (no span
// for the work under it to start from) and nothing is exported.
func TestServerSpan(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	for _, c := range []struct {
		name  string
		ratio float64
	}{{"sampled", 1}, {"unsampled", 0}} {
		t.Run(c.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.ratio)))))
			r := gin.New()
			r.Use(serverSpan(tr.Provider(), telemetry.EdgePropagator(false)))
			var seen trace.Span
			recording := false
			r.GET("/thing/:id", func(g *gin.Context) {
				seen = trace.SpanFromContext(g.Request.Context())
				recording = seen.IsRecording()
				g.Status(http.StatusTeapot)
			})
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/thing/7?secret=x", nil))
			spans := exp.GetSpans()
			if c.ratio == 0 {
				if seen.SpanContext().IsValid() || len(spans) != 0 {
					t.Fatalf("unsampled: route's span valid %v, %d spans exported; want none", seen.SpanContext().IsValid(), len(spans))
				}
				return
			}
			if !recording || len(spans) != 1 {
				t.Fatalf("sampled: route's span recording %v, %d spans exported; want the request's", recording, len(spans))
			}
			s := spans[0]
			attrs := map[string]string{}
			for _, kv := range s.Attributes {
				attrs[string(kv.Key)] = kv.Value.Emit()
			}
			if s.Name != "GET /thing/:id" || s.SpanKind != trace.SpanKindServer || !s.SpanContext.Equal(seen.SpanContext()) ||
				attrs["http.route"] != "/thing/:id" || attrs["http.response.status_code"] != "418" ||
				attrs["http.request.method"] != "GET" || attrs["url.path"] != "/thing/7" {
				t.Fatalf("span %s [%v] %v, want GET /thing/:id, server, route, status 418, method, path without the query", s.Name, s.SpanKind, attrs)
			}
			for k, v := range attrs {
				if v == "secret=x" || k == "url.query" {
					t.Errorf("span shows the query: %s=%s", k, v)
				}
			}
		})
	}
}
