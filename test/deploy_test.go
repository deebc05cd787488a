package test

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// There is no Docker engine where gemgate is built, so the compose demo cannot run in the
// tests. This checks what can be checked without one: every file parses, every file a service
// mounts or builds from exists, every gemgate setting in it is real, and the pieces agree with
// each other (the audience, the scrape target, the dashboard's metrics).

type composeFile struct {
	Services map[string]struct {
		Image string `yaml:"image"`
		Build *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
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
		t.Fatalf("%s does not parse: %v", path, err)
	}
}

func TestComposeDemoIsConsistent(t *testing.T) {
	t.Parallel()
	var c composeFile
	readYAML(t, "../deploy/docker-compose.yml", &c)
	for _, name := range []string{"keycloak", "gemgate", "prometheus", "grafana"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("compose has no %s service", name)
		}
	}
	mounts := map[string]string{} // container path -> host path, for the cross-checks below
	for name, svc := range c.Services {
		for _, v := range svc.Volumes {
			host, rest, _ := strings.Cut(v, ":")
			target, _, _ := strings.Cut(rest, ":")
			if strings.HasPrefix(host, ".") {
				if _, err := os.Stat(filepath.Join("../deploy", host)); err != nil {
					t.Errorf("%s mounts %s, which does not exist", name, host)
				}
				mounts[target] = filepath.Join("../deploy", host)
			}
		}
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond loopback", name, p)
			}
		}
		if b := svc.Build; b != nil {
			if _, err := os.Stat(filepath.Join("../deploy", b.Context, b.Dockerfile)); err != nil {
				t.Errorf("%s builds from %s/%s: %v", name, b.Context, b.Dockerfile, err)
			}
		}
	}

	// Every GEMGATE_ variable names a real setting (an unknown one would be ignored silently).
	help, _ := exec.Command(gemgateBin, "serve", "-h").CombinedOutput()
	env := c.Services["gemgate"].Environment
	for k := range env {
		if !strings.HasPrefix(k, "GEMGATE_") {
			continue
		}
		flag := "-" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "GEMGATE_")), "_", "-")
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag) + `\b`).Match(help) {
			t.Errorf("compose sets %s, which is not a gemgate setting", k)
		}
	}

	// The public URL is the audience the realm's mcp:use scope adds to every token.
	realm, err := os.ReadFile(mounts["/opt/keycloak/data/import/realm-gemgate.json"])
	if err != nil {
		t.Fatalf("the realm file keycloak imports: %v", err)
	}
	if !json.Valid(realm) {
		t.Fatal("the realm file is not JSON")
	}
	if !strings.Contains(string(realm), `"included.custom.audience": "`+env["GEMGATE_PUBLIC_URL"]+`"`) {
		t.Errorf("the realm adds no audience %q (GEMGATE_PUBLIC_URL)", env["GEMGATE_PUBLIC_URL"])
	}

	// Prometheus scrapes gemgate's metrics listener by its service name.
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, mounts["/etc/prometheus/prometheus.yml"], &prom)
	_, metricsPort, _ := net.SplitHostPort(env["GEMGATE_METRICS_LISTEN"])
	if len(prom.ScrapeConfigs) == 0 || len(prom.ScrapeConfigs[0].StaticConfigs) == 0 ||
		!slices.Contains(prom.ScrapeConfigs[0].StaticConfigs[0].Targets, "gemgate:"+metricsPort) {
		t.Errorf("Prometheus does not scrape gemgate:%s: %+v", metricsPort, prom.ScrapeConfigs)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(promtool, "check", "config", mounts["/etc/prometheus/prometheus.yml"]).CombinedOutput(); err != nil {
			t.Errorf("promtool check config: %v\n%s", err, out)
		}
	}

	// Grafana: the datasource points at the prometheus service, the dashboard provider at the
	// mounted dashboards, and the dashboard queries only metrics gemgate exports.
	var ds struct {
		Datasources []struct {
			URL string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(mounts["/etc/grafana/provisioning"], "datasources", "prometheus.yml"), &ds)
	if len(ds.Datasources) == 0 || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("Grafana datasource: %+v", ds.Datasources)
	}
	var prov struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(mounts["/etc/grafana/provisioning"], "dashboards", "gemgate.yml"), &prov)
	if len(prov.Providers) == 0 || mounts[prov.Providers[0].Options.Path] == "" {
		t.Fatalf("the dashboard provider's path is not a mounted folder: %+v", prov.Providers)
	}
	dash, err := os.ReadFile(filepath.Join(mounts[prov.Providers[0].Options.Path], "gemgate.json"))
	if err != nil || !json.Valid(dash) {
		t.Fatalf("the dashboard: %v", err)
	}
	// The metrics are declared where they are measured: the gateway (gateway/metrics), the pool
	// (workers), auth.
	exported := map[string]bool{}
	for _, pkg := range []string{"gateway", "gateway/metrics", "pool", "auth"} {
		files, _ := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, _ := os.ReadFile(f)
			for _, m := range regexp.MustCompile(`Name: +"(gemgate_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
				exported[m[1]] = true
			}
		}
	}
	used := regexp.MustCompile(`gemgate_[a-z_]+`).FindAllString(string(dash), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard queries no gemgate metric")
	}
	for _, name := range used {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !exported[name] && !exported[base] {
			t.Errorf("the dashboard queries %s, which gemgate does not export", name)
		}
	}
}

// The proxy examples keep SSE unbuffered, and the image's health check uses a command the
// binary has.
func TestProxyExamplesAndImage(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"../deploy/proxy/Caddyfile":  "flush_interval -1",
		"../deploy/proxy/nginx.conf": "proxy_buffering off",
		"../Dockerfile":              `"check", "--health"`,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q", file, want)
		}
	}
	if out, err := exec.Command(gemgateBin, "check", "--health", "http://127.0.0.1:1/healthz").CombinedOutput(); err == nil || !strings.Contains(string(out), "PROBLEM") {
		t.Errorf("gemgate check --health against nothing: %v %s", err, out)
	}
}
