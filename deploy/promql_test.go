package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// promqlWords are PromQL's aggregation operators and keywords: words that
// are never metric names.
var promqlWords = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "stddev": true, "stdvar": true, "group": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true,
}

// metricNames are the metric names a PromQL expression selects. They are the
// identifiers that neither call a function nor are a keyword. Label
// matchers, ranges, strings, grouping label lists and Grafana variables are
// skipped. Grafana's label_values(metric, label) names its first argument.
func metricNames(expr string) ([]string, error) {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		i := strings.LastIndex(rest, ",")
		if i < 0 {
			return nil, fmt.Errorf("label_values without a label")
		}
		expr = rest[:i]
	}
	var names []string
	r := []rune(expr)
	isStart := func(c rune) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	isPart := func(c rune) bool { return isStart(c) || (c >= '0' && c <= '9') }
	// skipTo returns the index after the bracket closing the one at i,
	// stepping over strings.
	skipTo := func(i int, open, closing rune) (int, error) {
		depth := 0
		for j := i; j < len(r); j++ {
			switch c := r[j]; {
			case isQuote(c):
				k, err := closingQuote(r, j)
				if err != nil {
					return 0, err
				}
				j = k
			case c == open:
				depth++
			case c == closing:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unbalanced %c", open)
	}
	nextNonSpace := func(i int) int {
		for i < len(r) && (r[i] == ' ' || r[i] == '\t' || r[i] == '\n') {
			i++
		}
		return i
	}
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case isQuote(c):
			j, err := closingQuote(r, i)
			if err != nil {
				return nil, err
			}
			i = j + 1
		case c == '{' || c == '[':
			closing := '}'
			if c == '[' {
				closing = ']'
			}
			j, err := skipTo(i, c, closing)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unbalanced %c", c)
		case c == '$': // a Grafana variable: $name, ${name}, $__rate_interval
			i++
			if i < len(r) && r[i] == '{' {
				j, err := skipTo(i, '{', '}')
				if err != nil {
					return nil, err
				}
				i = j
				continue
			}
			for i < len(r) && isPart(r[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.': // numbers and durations (5m, 1e3, 0.99)
			for i < len(r) && (isPart(r[i]) || r[i] == '.') {
				i++
			}
		case isStart(c):
			j := i
			for j < len(r) && isPart(r[j]) {
				j++
			}
			word := string(r[i:j])
			k := nextNonSpace(j)
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right":
				if k < len(r) && r[k] == '(' {
					end, err := skipTo(k, '(', ')')
					if err != nil {
						return nil, err
					}
					j = end
				}
			case promqlWords[word]:
			case k < len(r) && r[k] == '(': // a function call
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}

// isQuote reports whether c opens a PromQL string.
func isQuote(c rune) bool { return c == '"' || c == '\'' || c == '`' }

// closingQuote returns the index of the quote that closes the string
// opening at r[i]. Backslash escapes count except in raw strings.
func closingQuote(r []rune, i int) (int, error) {
	c := r[i]
	j := i + 1
	for j < len(r) && r[j] != c {
		if r[j] == '\\' && c != '`' {
			j++
		}
		j++
	}
	if j >= len(r) {
		return 0, fmt.Errorf("unterminated string")
	}
	return j, nil
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (le, route) (rate(lat_bucket{route="/a/{b}",instance=~"$instance"}[$__rate_interval]))`, []string{"lat_bucket"}},
		{`histogram_quantile(0.99, sum without (pod) (rate(x_bucket[5m])))`, []string{"x_bucket"}},
		{`sum(a{code="OK"}) - (sum(b) or vector(0)) - (sum(c) or vector(0))`, []string{"a", "b", "c"}},
		{`rate(foo[5m] offset 1h) * on (instance) group_left (version) bar`, []string{"foo", "bar"}},
		{`sum(increase(x_total{job="s"}[$__range])) > bool 0.5`, []string{"x_total"}},
		{`max_over_time(rate(y[1m])[10m:30s])`, []string{"y"}},
		{`label_values(seckill_http_requests_total, instance)`, []string{"seckill_http_requests_total"}},
		{`a{l="}"} / ${b}`, []string{"a"}},
		{`ns:rule:rate5m`, []string{"ns:rule:rate5m"}},
	}
	for _, tt := range tests {
		got, err := metricNames(tt.expr)
		if err != nil {
			t.Errorf("%q: %v", tt.expr, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.expr, got, tt.want)
		}
	}
	for _, bad := range []string{`rate(x[5m)`, `x{a="b"`, `x{a="b}`, `x]`} {
		if _, err := metricNames(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
