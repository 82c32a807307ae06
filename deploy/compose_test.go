package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// compose is the part of docker-compose.yml the tests read.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Labels      map[string]string `yaml:"labels"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		Extends     struct {
			File    string `yaml:"file"`
			Service string `yaml:"service"`
		} `yaml:"extends"`
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
	var datasources struct {
		Datasources []struct {
			Name, UID, Type, URL string
			IsDefault            bool `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yml", &datasources)
	if len(datasources.Datasources) != 1 {
		t.Fatalf("datasources: got %d, want 1", len(datasources.Datasources))
	}
	return datasources.Datasources[0].UID
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
	grafanaMounts := mounts(t, c, "grafana")
	provisioning := hostPath(grafanaMounts, "/etc/grafana/provisioning")
	if provisioning == "" {
		t.Fatal("grafana: nothing mounted at /etc/grafana/provisioning")
	}

	// The data source is the compose file's Prometheus.
	var datasources struct {
		Datasources []struct {
			UID, Type, URL string
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(provisioning, "datasources/prometheus.yml"), &datasources)
	if len(datasources.Datasources) != 1 || datasources.Datasources[0].Type != "prometheus" {
		t.Fatalf("datasources: %+v, want one of type prometheus", datasources.Datasources)
	}
	if u := datasources.Datasources[0].URL; u != "http://prometheus:9090" {
		t.Errorf("datasource url %s, want http://prometheus:9090", u)
	}
	if _, ok := c.Services["prometheus"]; !ok {
		t.Error("docker-compose.yml has no prometheus service")
	}

	// The dashboard provider's folder is mounted and holds the dashboard.
	var dashboards struct {
		Providers []struct {
			Name, Type string
			Options    struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(provisioning, "dashboards/seckill.yml"), &dashboards)
	if len(dashboards.Providers) != 1 || dashboards.Providers[0].Type != "file" {
		t.Fatalf("dashboard providers: %+v, want one of type file", dashboards.Providers)
	}
	dir := hostPath(grafanaMounts, dashboards.Providers[0].Options.Path)
	if dir == "" {
		t.Fatalf("the provider's path %s is not mounted into grafana", dashboards.Providers[0].Options.Path)
	}
	if want := filepath.Join("..", "deploy", dashboardPath); filepath.Join(dir, filepath.Base(dashboardPath)) != want {
		t.Errorf("the provider's path %s is %s on the host, want the folder of %s", dashboards.Providers[0].Options.Path, dir, want)
	}
	if home := c.Services["grafana"].Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		if p := hostPath(grafanaMounts, home); p == "" {
			t.Errorf("home dashboard %s is not mounted", home)
		} else if _, err := os.Stat(p); err != nil {
			t.Errorf("home dashboard %s: %v", home, err)
		}
	}

	// Prometheus reads deploy/prometheus.yml and scrapes the app services
	// on the port they listen on.
	promMounts := mounts(t, c, "prometheus")
	cfg := "/etc/prometheus/prometheus.yml"
	for _, arg := range c.Services["prometheus"].Command {
		if v, ok := strings.CutPrefix(arg, "--config.file="); ok {
			cfg = v
		}
	}
	promFile := hostPath(promMounts, cfg)
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
// takes its JWT secret from the environment, with no default. A default in a
// public file is a public secret that signs admin tokens. docker-compose
// must refuse to start without it.
func TestComposeRequiresSecret(t *testing.T) {
	c := readCompose(t)
	apps := 0
	for name, s := range c.Services {
		v, ok := s.Environment["SECKILL_JWT_SECRET"]
		if !ok && s.Extends.File != "" {
			v, ok = extended(t, s.Extends.File, s.Extends.Service)["SECKILL_JWT_SECRET"]
		}
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
	if !haveCompose(t) {
		return
	}
	refusedWithout(t, "SECKILL_JWT_SECRET", "SECKILL_SMS_SENDER=webhook", "SECKILL_PAY_PROVIDERS=alipay")
	if out, err := composeConfig("SECKILL_JWT_SECRET=deploy-test-secret-0123456789abcdef", "SECKILL_SMS_SENDER=webhook", "SECKILL_PAY_PROVIDERS=alipay"); err != nil {
		t.Errorf("docker-compose config with a secret and a sender: %v: %s", err, out)
	}
}

// TestComposeRequiresSender: the instances take their login code sender
// and their pay providers from the environment, with no default:
// production refuses the log and the simulated payment, so docker-compose
// refuses, in one line naming SECKILL_SMS_SENDER or SECKILL_PAY_PROVIDERS.
func TestComposeRequiresSender(t *testing.T) {
	c := readCompose(t)
	apps := 0
	for name, s := range c.Services {
		if s.Extends.File == "" {
			continue
		}
		apps++
		env := extended(t, s.Extends.File, s.Extends.Service)
		for _, k := range []string{"SECKILL_SMS_SENDER", "SECKILL_PAY_PROVIDERS"} {
			if v := env[k]; !strings.HasPrefix(v, "${"+k+":?") {
				t.Errorf("%s: %s is %q, want ${%s:?...} (required)", name, k, v, k)
			}
		}
	}
	if apps < 2 {
		t.Fatalf("docker-compose.yml: %d instances, want 2", apps)
	}
	if !haveCompose(t) {
		return
	}
	refusedWithout(t, "SECKILL_SMS_SENDER", "SECKILL_JWT_SECRET=deploy-test-secret-0123456789abcdef", "SECKILL_PAY_PROVIDERS=alipay")
	refusedWithout(t, "SECKILL_PAY_PROVIDERS", "SECKILL_JWT_SECRET=deploy-test-secret-0123456789abcdef", "SECKILL_SMS_SENDER=webhook")
}

// haveCompose reports whether docker-compose is installed. Without it the
// interpolation itself goes unchecked, and the test says so.
func haveCompose(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Logf("docker-compose not installed: the interpolation itself is not checked (%v)", err)
		return false
	}
	return true
}

// refusedWithout checks that docker-compose config with set, which lacks
// name, is refused naming it. docker-compose prints the whole option it
// could not fill: the refusal must be one short line, not the instances'
// whole environment.
func refusedWithout(t *testing.T, name string, set ...string) {
	t.Helper()
	out, err := composeConfig(set...)
	if err == nil || !strings.Contains(string(out), name) {
		t.Errorf("docker-compose config without %s: err %v, output %q, want a refusal naming it", name, err, out)
	}
	if msg := strings.TrimSpace(string(out)); strings.Contains(msg, "\n") || len(msg) > 240 || strings.Contains(msg, "SECKILL_MYSQL_DSN") {
		t.Errorf("docker-compose config without %s: %d bytes, want one line of at most 240 naming only it: %q", name, len(msg), msg)
	}
}

// composeConfig runs docker-compose config -q on the repository's file,
// with the secret and the sender of this environment replaced by set.
func composeConfig(set ...string) ([]byte, error) {
	cmd := exec.Command("docker-compose", "-f", "../docker-compose.yml", "config", "-q")
	cmd.Env = append(withoutEnv(withoutEnv(withoutEnv(os.Environ(), "SECKILL_JWT_SECRET"), "SECKILL_SMS_SENDER"), "SECKILL_PAY_PROVIDERS"), set...)
	return cmd.CombinedOutput()
}

// extended is the environment of service in file (relative to the
// repository root), the base an instance extends.
func extended(t *testing.T, file, service string) map[string]string {
	t.Helper()
	var c compose
	readYAML(t, filepath.Join("..", file), &c)
	s, ok := c.Services[service]
	if !ok {
		t.Fatalf("%s has no service %s", file, service)
	}
	env := map[string]string{}
	if s.Extends.Service != "" && s.Extends.File == "" {
		for k, v := range extended(t, file, s.Extends.Service) {
			env[k] = v
		}
	}
	for k, v := range s.Environment {
		env[k] = v
	}
	return env
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
// production, which refuses to run without its backends and a secret. A
// development container is asked for explicitly.
func TestDockerfileStartsInProduction(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
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
