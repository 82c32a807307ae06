package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The series every request touches are looked up once and kept. A
// CounterVec's WithLabelValues checks and hashes every label value on every
// call; a request pays that several times. The caches below are keyed by the
// label values, so they hold one entry per series, a bounded set (the
// callers' labels take bounded values).

// HTTPSeries are one route's series for one method and status.
type HTTPSeries struct {
	Requests prometheus.Counter  // seckill_http_requests_total
	Latency  prometheus.Observer // seckill_http_request_duration_seconds
}

// httpKey names an HTTPSeries.
type httpKey struct {
	route, method string
	status        int
}

// HTTP returns the series of route, method and status. The status label is
// the code from 100 to 599, "other" otherwise (StatusLabel).
func (m *Metrics) HTTP(route, method string, status int) *HTTPSeries {
	k := httpKey{route, method, status}
	if s, ok := m.httpSeries.Load(k); ok {
		return s.(*HTTPSeries)
	}
	s := &HTTPSeries{
		Requests: m.Requests.WithLabelValues(route, method, StatusLabel(status)),
		Latency:  m.Latency.WithLabelValues(route),
	}
	got, _ := m.httpSeries.LoadOrStore(k, s)
	return got.(*HTTPSeries)
}

// StatusLabel is the metric label of a status code: the code from 100 to
// 599, "other" otherwise.
func StatusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// Outcome counts one seckill outcome of code ("OK" on success).
func (m *Metrics) Outcome(code string) {
	if c, ok := m.outcomes.Load(code); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := m.outcomes.LoadOrStore(code, m.Outcomes.WithLabelValues(code))
	c.(prometheus.Counter).Inc()
}

// redisNode are one Redis node's series.
type redisNode struct {
	roundTrips, commands prometheus.Counter
}

// node returns the series of the Redis node at addr.
func (m *Metrics) node(addr string) *redisNode {
	if n, ok := m.redisNodes.Load(addr); ok {
		return n.(*redisNode)
	}
	n := &redisNode{m.RedisRoundTrips.WithLabelValues(addr), m.RedisCommands.WithLabelValues(addr)}
	got, _ := m.redisNodes.LoadOrStore(addr, n)
	return got.(*redisNode)
}

// seriesCache are the caches of the series (the Metrics' zero value
// holds empty ones).
type seriesCache struct {
	httpSeries sync.Map // httpKey → *HTTPSeries
	outcomes   sync.Map // code → prometheus.Counter
	redisNodes sync.Map // address → *redisNode
}
