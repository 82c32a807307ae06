// Package deploy_test checks the deployment files beside it. The Grafana
// dashboard may only name metrics the product registers, read from
// metrics.New() rather than a list kept by hand. The Prometheus and Grafana
// provisioning files, wired in docker-compose.yml, must point at paths that
// exist.
package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"seckill/observe/metrics"
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
		for _, target := range p.Targets {
			q[fmt.Sprintf("panel %q target %s", p.Title, target.RefID)] = target.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch query := v.Query.(type) {
		case string:
			q["variable "+v.Name] = query
		case map[string]any:
			s, _ := query["query"].(string)
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
		for _, target := range p.Targets {
			if strings.TrimSpace(target.Expr) == "" {
				t.Errorf("panel %q target %s: empty expression", p.Title, target.RefID)
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

// registered are the metric names a PromQL query may use for the product's
// metrics. They are every family metrics.New() registers, read from its
// registry's descriptors. Histograms and summaries add their series' names.
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
	// Which families are histograms or summaries? The gathered ones say so.
	// Vectors with no series yet are not gathered, so the collectors the struct
	// holds are looked at by type.
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
		if !v.Type().Field(i).IsExported() {
			continue // the series caches, no collector
		}
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

// ---- provisioning and docker-compose.yml
