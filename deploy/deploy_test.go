// Package deploy_test checks the deployment files beside it: the Grafana
// dashboard names only metrics the product registers (read from
// metrics.New(), not from a list kept by hand), and the Prometheus and
// Grafana provisioning files, wired in docker-compose.yml, point at paths
// that exist.
package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"

	"seckill/metrics"
)

const dashboardPath = "grafana/dashboards/seckill.json"

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Query any `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels are the dashboard's panels, rows' nested panels included.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// queries are every PromQL expression of the dashboard with where it is:
// the panels' targets and the query variables.
func queries(t *testing.T, d dashboard) map[string]string {
	t.Helper()
	q := map[string]string{}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			q[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch qv := v.Query.(type) {
		case string:
			q["variable "+v.Name] = qv
		case map[string]any:
			s, _ := qv["query"].(string)
			q["variable "+v.Name] = s
		default:
			t.Errorf("variable %s: query of type %T", v.Name, v.Query)
		}
	}
	return q
}

func TestDashboardParses(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both", d.UID, d.Title)
	}
	ds := provisionedDatasourceUID(t)
	ids := map[int]bool{}
	graphs := 0
	for _, p := range allPanels(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos x %d w %d outside the 24 columns", p.Title, p.GridPos.X, p.GridPos.W)
		}
		if p.Type == "row" {
			continue
		}
		graphs++
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s: empty expression", p.Title, tg.RefID)
			}
		}
		if p.Datasource == nil || p.Datasource.UID != ds {
			t.Errorf("panel %q: datasource %+v, want the provisioned uid %q", p.Title, p.Datasource, ds)
		}
	}
	if graphs < 10 {
		t.Errorf("%d panels with queries, want at least 10", graphs)
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != ds) {
			t.Errorf("variable %s: datasource %+v, want the provisioned uid %q", v.Name, v.Datasource, ds)
		}
	}
}

// registered are the metric names a PromQL query may use for the
// product's metrics: every family metrics.New() registers (its registry's
// descriptors), and for histograms and summaries their series' names.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New()
	families := map[string]bool{}
	for _, d := range describe(m.Registry) {
		families[d] = true
	}
	if len(families) == 0 {
		t.Fatal("metrics.New registers nothing")
	}
	// Which families are histograms or summaries: the gathered ones say
	// so; vectors with no series yet are not gathered, so the collectors
	// the struct holds are looked at by type.
	split := map[string]bool{}
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if k := mf.GetType().String(); k == "HISTOGRAM" || k == "SUMMARY" || k == "GAUGE_HISTOGRAM" {
			split[mf.GetName()] = true
		}
	}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		switch c.(type) {
		case prometheus.Histogram, *prometheus.HistogramVec, prometheus.Summary, *prometheus.SummaryVec:
			for _, name := range describe(c) {
				split[name] = true
			}
		}
	}
	names := map[string]bool{}
	for f := range families {
		names[f] = true
		if split[f] {
			names[f+"_bucket"], names[f+"_sum"], names[f+"_count"] = true, true, true
		}
	}
	return names
}

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// describe is the metric names a collector describes.
func describe(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqNameRE.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

func TestDashboardMetricsRegistered(t *testing.T) {
	d := readDashboard(t)
	known := registered(t)
	used := map[string]bool{}
	for where, expr := range queries(t, d) {
		names, err := metricNames(expr)
		if err != nil {
			t.Errorf("%s: %v in %q", where, err, expr)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, n := range names {
			used[n] = true
			if !known[n] {
				t.Errorf("%s: metric %s is not registered by metrics.New (%q)", where, n, expr)
			}
		}
	}
	// Every metric of the product's own (seckill_*) is on the dashboard.
	var missing []string
	for n := range known {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		if !strings.HasPrefix(n, "seckill_") || (base != n && known[base]) {
			continue
		}
		if !used[n] && !used[n+"_bucket"] && !used[n+"_sum"] && !used[n+"_count"] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("registered but on no panel: %s", strings.Join(missing, ", "))
	}
}

// TestDashboardRoutes: a route label the dashboard selects is a route the
// handler registers.
func TestDashboardRoutes(t *testing.T) {
	src := ""
	files, err := filepath.Glob("../handler/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("handler sources: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src += string(b)
	}
	re := regexp.MustCompile(`route="([^"]*)"`)
	for where, expr := range queries(t, readDashboard(t)) {
		for _, m := range re.FindAllStringSubmatch(expr, -1) {
			if !strings.Contains(src, `"`+m[1]+`"`) {
				t.Errorf("%s: route %q is registered nowhere in handler/", where, m[1])
			}
		}
	}
}

// promqlWords are PromQL's aggregation operators and keywords: words that
// are never metric names.
var promqlWords = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "stddev": true, "stdvar": true, "group": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true,
}

// metricNames are the metric names a PromQL expression selects: the
// identifiers outside label matchers, ranges, strings, grouping label
// lists and Grafana variables that neither call a function nor are a
// keyword. Grafana's label_values(metric, label) names its first argument.
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
			case c == '"' || c == '\'' || c == '`':
				k := j + 1
				for k < len(r) && r[k] != c {
					if r[k] == '\\' && c != '`' {
						k++
					}
					k++
				}
				if k >= len(r) {
					return 0, fmt.Errorf("unterminated string")
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
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(r) && r[j] != c {
				if r[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(r) {
				return nil, fmt.Errorf("unterminated string")
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

// ---- provisioning and docker-compose.yml

// compose is the part of docker-compose.yml the tests read.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
	} `yaml:"services"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readCompose(t *testing.T) compose {
	t.Helper()
	var c compose
	readYAML(t, "../docker-compose.yml", &c)
	return c
}

// mounts maps a service's container paths to the host paths mounted
// there (relative to the repository root, as docker-compose.yml names
// them); named volumes are left out.
func mounts(t *testing.T, c compose, service string) map[string]string {
	t.Helper()
	s, ok := c.Services[service]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %s", service)
	}
	m := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !strings.HasPrefix(parts[0], "./") {
			continue
		}
		m[parts[1]] = strings.TrimPrefix(parts[0], "./")
	}
	return m
}

// hostPath is the host file behind a container path of a service (the
// mount that holds it), relative to deploy/ for reading; "" if none.
func hostPath(m map[string]string, container string) string {
	best := ""
	for c := range m {
		if (container == c || strings.HasPrefix(container, strings.TrimSuffix(c, "/")+"/")) && len(c) > len(best) {
			best = c
		}
	}
	if best == "" {
		return ""
	}
	return filepath.Join("..", m[best], strings.TrimPrefix(container, best))
}

func provisionedDatasourceUID(t *testing.T) string {
	t.Helper()
	var ds struct {
		Datasources []struct {
			Name, UID, Type, URL string
			IsDefault            bool `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 {
		t.Fatalf("datasources: got %d, want 1", len(ds.Datasources))
	}
	return ds.Datasources[0].UID
}

func TestProvisioning(t *testing.T) {
	c := readCompose(t)

	// Every mounted host path exists, in every service.
	for name := range c.Services {
		for container, host := range mounts(t, c, name) {
			if _, err := os.Stat(filepath.Join("..", host)); err != nil {
				t.Errorf("service %s mounts ./%s at %s: %v", name, host, container, err)
			}
		}
	}

	// Grafana reads its provisioning directory from the repository.
	gm := mounts(t, c, "grafana")
	prov := hostPath(gm, "/etc/grafana/provisioning")
	if prov == "" {
		t.Fatal("grafana: nothing mounted at /etc/grafana/provisioning")
	}

	// The data source is the compose file's Prometheus.
	var ds struct {
		Datasources []struct {
			UID, Type, URL string
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(prov, "datasources/prometheus.yml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" {
		t.Fatalf("datasources: %+v, want one of type prometheus", ds.Datasources)
	}
	if u := ds.Datasources[0].URL; u != "http://prometheus:9090" {
		t.Errorf("datasource url %s, want http://prometheus:9090", u)
	}
	if _, ok := c.Services["prometheus"]; !ok {
		t.Error("docker-compose.yml has no prometheus service")
	}

	// The dashboard provider's folder is mounted and holds the dashboard.
	var dp struct {
		Providers []struct {
			Name, Type string
			Options    struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(prov, "dashboards/seckill.yml"), &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" {
		t.Fatalf("dashboard providers: %+v, want one of type file", dp.Providers)
	}
	dir := hostPath(gm, dp.Providers[0].Options.Path)
	if dir == "" {
		t.Fatalf("the provider's path %s is not mounted into grafana", dp.Providers[0].Options.Path)
	}
	if want := filepath.Join("..", "deploy", dashboardPath); filepath.Join(dir, filepath.Base(dashboardPath)) != want {
		t.Errorf("the provider's path %s is %s on the host, want the folder of %s", dp.Providers[0].Options.Path, dir, want)
	}
	if home := c.Services["grafana"].Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		if p := hostPath(gm, home); p == "" {
			t.Errorf("home dashboard %s is not mounted", home)
		} else if _, err := os.Stat(p); err != nil {
			t.Errorf("home dashboard %s: %v", home, err)
		}
	}

	// Prometheus reads deploy/prometheus.yml and scrapes the app services
	// on the port they listen on.
	pm := mounts(t, c, "prometheus")
	cfg := "/etc/prometheus/prometheus.yml"
	for _, arg := range c.Services["prometheus"].Command {
		if v, ok := strings.CutPrefix(arg, "--config.file="); ok {
			cfg = v
		}
	}
	promFile := hostPath(pm, cfg)
	if promFile != filepath.Join("..", "deploy", "prometheus.yml") {
		t.Fatalf("prometheus reads %s from %q, want deploy/prometheus.yml", cfg, promFile)
	}
	var pc struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, promFile, &pc)
	var targets []string
	for _, sc := range pc.ScrapeConfigs {
		if sc.JobName != "seckill" {
			continue
		}
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("metrics_path %s, want /metrics", sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	var apps []string
	for name, s := range c.Services {
		if s.Build != nil {
			_, port, _ := strings.Cut(s.Environment["SECKILL_HTTP_ADDR"], ":")
			apps = append(apps, name+":"+port)
		}
	}
	sort.Strings(apps)
	sort.Strings(targets)
	if len(apps) == 0 || !slices.Equal(targets, apps) {
		t.Errorf("job seckill scrapes %q, want every app service %q", targets, apps)
	}
}

// TestComposeImagesPinned: every image has an explicit tag, never latest.
func TestComposeImagesPinned(t *testing.T) {
	for name, s := range readCompose(t).Services {
		if s.Image == "" {
			t.Errorf("service %s: no image", name)
			continue
		}
		ref := s.Image[strings.LastIndex(s.Image, "/")+1:]
		_, tag, ok := strings.Cut(ref, ":")
		if !ok || tag == "" || tag == "latest" {
			t.Errorf("service %s: image %s is not pinned by a tag", name, s.Image)
		}
	}
}

// TestComposeRequiresSecret: every seckill instance of docker-compose.yml
// takes its JWT secret from the environment with no default (a default
// in a public file is a public secret that signs admin tokens), and
// docker-compose refuses to start without it.
func TestComposeRequiresSecret(t *testing.T) {
	c := readCompose(t)
	apps := 0
	for name, s := range c.Services {
		v, ok := s.Environment["SECKILL_JWT_SECRET"]
		if !ok {
			continue
		}
		apps++
		if !strings.HasPrefix(v, "${SECKILL_JWT_SECRET:?") || !strings.Contains(v, "openssl rand") {
			t.Errorf("%s: SECKILL_JWT_SECRET is %q, want ${SECKILL_JWT_SECRET:?...} (required, saying how to make one)", name, v)
		}
		if env := s.Environment["SECKILL_ENV"]; strings.Contains(env, "development") {
			t.Errorf("%s: SECKILL_ENV %q, want production by default", name, env)
		}
	}
	if apps < 2 {
		t.Fatalf("docker-compose.yml: %d services with SECKILL_JWT_SECRET, want the two instances", apps)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Logf("docker-compose not installed: the interpolation itself is not checked (%v)", err)
		return
	}
	cmd := exec.Command("docker-compose", "-f", "../docker-compose.yml", "config", "-q")
	cmd.Env = withoutEnv(os.Environ(), "SECKILL_JWT_SECRET")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "SECKILL_JWT_SECRET") {
		t.Errorf("docker-compose config without SECKILL_JWT_SECRET: err %v, output %q, want a refusal naming it", err, out)
	}
	cmd = exec.Command("docker-compose", "-f", "../docker-compose.yml", "config", "-q")
	cmd.Env = append(withoutEnv(os.Environ(), "SECKILL_JWT_SECRET"), "SECKILL_JWT_SECRET=deploy-test-secret-0123456789abcdef")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("docker-compose config with a secret: %v: %s", err, out)
	}
}

// withoutEnv returns env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestDockerfileStartsInProduction: the image's default start is
// production, which refuses to run without its backends and a secret; a
// development container is asked for explicitly.
func TestDockerfileStartsInProduction(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	env := regexp.MustCompile(`(?m)^ENV\s+(.*)$`).FindAllStringSubmatch(string(b), -1)
	vars := map[string]string{}
	for _, m := range env {
		for _, kv := range strings.Fields(m[1]) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
	}
	if vars["SECKILL_ENV"] != "production" {
		t.Errorf("Dockerfile: SECKILL_ENV=%q, want production", vars["SECKILL_ENV"])
	}
	if _, ok := vars["SECKILL_JWT_SECRET"]; ok {
		t.Error("Dockerfile sets SECKILL_JWT_SECRET: an image must not carry a secret")
	}
}
