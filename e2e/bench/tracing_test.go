package bench

import (
	"testing"

	"go.opentelemetry.io/otel"
)

// BenchmarkAdmissionTraced is BenchmarkAdmissionRedis with tracing off,
// then on: OTLP to a port where nothing listens (the exporter's cost
// without a collector), 1 % and 100 % sampled. Each one's ns/op, B/op and
// allocs/op beside off's are what tracing costs a request; at 1 %, nearly
// every request is one the sampler leaves out.
func BenchmarkAdmissionTraced(b *testing.B) {
	// The failed exports are not the benchmark's output.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	for _, tt := range []struct{ name, ratio string }{{"off", ""}, {"1pct", "0.01"}, {"100pct", "1"}} {
		b.Run(tt.name, func(b *testing.B) {
			var vars []string
			if tt.ratio != "" {
				// The SDK reads its exporter and sampler from the
				// process's environment; config.Load, from the app's
				// variables.
				for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
					"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": tt.ratio} {
					b.Setenv(k, v)
					vars = append(vars, k+"="+v)
				}
			}
			benchAsync(b, realBenchApp(b, "async", vars...), true)
		})
	}
}
