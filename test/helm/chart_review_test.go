package helm

// What an operator may rely on from the chart, checked against the gateway it deploys: each
// test failed on the chart before its fix.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

var gemgateBuild = struct {
	once sync.Once
	bin  string
	err  string
}{}

// gemgateBinary builds gemgate once for these tests.
func gemgateBinary(t *testing.T) string {
	t.Helper()
	gemgateBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "chart-gemgate")
		if err != nil {
			gemgateBuild.err = err.Error()
			return
		}
		bin := filepath.Join(dir, "gemgate")
		build := exec.Command("go", "build", "-o", bin, "./cmd/gemgate")
		build.Dir = "../.."
		if out, err := build.CombinedOutput(); err != nil {
			gemgateBuild.err = err.Error() + "\n" + string(out)
			return
		}
		gemgateBuild.bin = bin
	})
	if gemgateBuild.bin == "" {
		t.Fatalf("building gemgate: %s", gemgateBuild.err)
	}
	return gemgateBuild.bin
}

// renderByKind renders the chart with a values file and --set pairs and returns the
// manifests by kind (the last of each kind).
func renderByKind(t *testing.T, valuesFile string, set ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, doc := range render(t, valuesFile, set...) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		out[head.Kind] = doc
	}
	return out
}

// chartConfig is the config.yaml of the rendered ConfigMap.
func chartConfig(t *testing.T, docs map[string][]byte) string {
	t.Helper()
	var cm struct{ Data map[string]string }
	if err := yaml.Unmarshal(docs["ConfigMap"], &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["config.yaml"]
}

// gemgateCheck runs `gemgate check` on the chart's config.yaml as the Deployment gives it
// (the exchange secret in the environment) and reports whether the configuration is valid.
func gemgateCheck(t *testing.T, config string) (bool, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gemgateBinary(t), "check", "--config", file)
	cmd.Env = append(os.Environ(), "GEMGATE_ISSUER=http://127.0.0.1:1/realms/x", "GEMGATE_EXCHANGE_CLIENT_SECRET=s")
	out, _ := cmd.CombinedOutput()
	return strings.Contains(string(out), "OK       configuration is valid"), string(out)
}

func writeValues(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// The Ingress routes publicURL's path to the pods; the pods must serve the MCP endpoint at that
// path. The chart never sets mcp_path, so gemgate serves /mcp whatever publicURL says.
func TestChartServesPublicURLPath(t *testing.T) {
	docs := renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"),
		"publicURL=https://mcp.example.com/team/mcp", "ingress.enabled=true")
	var cfg struct {
		MCPPath string `json:"mcp_path"`
	}
	if err := yaml.Unmarshal([]byte(chartConfig(t, docs)), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MCPPath == "" {
		cfg.MCPPath = "/mcp" // gemgate's default
	}
	var ing struct {
		Spec struct {
			Rules []struct {
				HTTP struct {
					Paths []struct{ Path string }
				}
			}
		}
	}
	if err := yaml.Unmarshal(docs["Ingress"], &ing); err != nil {
		t.Fatal(err)
	}
	routed := ing.Spec.Rules[0].HTTP.Paths[0].Path
	if routed != cfg.MCPPath {
		t.Errorf("the Ingress sends %s to the pods, but gemgate serves its MCP endpoint at mcp_path %s: every MCP request gets 404", routed, cfg.MCPPath)
	}
}

// docs/gemstone.md's sample configuration sets exchange_client_id and exchange_audience;
// pasted under config: with exchange.enabled, the chart would write those keys twice, and
// gemgate refuses a key given twice (the pods would crash-loop). The chart refuses such values
// instead, naming the values to use.
func TestChartRefusesExchangeKeysInConfig(t *testing.T) {
	for _, key := range []string{"worker_credential=exchange", "exchange_client_id=gemgate", "exchange_audience=gemstone"} {
		t.Run(key, func(t *testing.T) {
			cmd := exec.Command("go", "tool", "helm", "template", "gm", chart, "--kube-version", kubernetesVersion,
				"-f", filepath.Join(chart, "ci", "full-values.yaml"), "--set", "config."+key)
			out, err := cmd.CombinedOutput()
			name, _, _ := strings.Cut(key, "=")
			if err == nil || !strings.Contains(string(out), "config."+name+" is set by the chart when exchange.enabled") {
				t.Errorf("helm template with config.%s and exchange.enabled: err %v, output:\n%s", key, err, out)
			}
		})
	}
	// Without exchange.enabled the keys are the operator's, and what the chart writes is valid.
	docs := renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"), "config.exchange_audience=gemstone")
	if ok, out := gemgateCheck(t, chartConfig(t, docs)); !ok {
		t.Errorf("config.exchange_audience without exchange.enabled: gemgate refuses the chart's config:\n%s", out)
	}
}

// A long worker_command is naturally written as a folded scalar in a values file; toYaml turns
// its trailing newline into a literal block scalar in config.yaml, which gemgate refuses.
func TestChartFoldedValueIsTaken(t *testing.T) {
	values := writeValues(t, `publicURL: https://mcp.example.com/mcp
config:
  issuer: https://keycloak.example.com/realms/team
  worker: command
  trust_read_only_hints: true
  worker_command: >
    /usr/local/bin/my-mcp-server --stdio --user {user}
`)
	cfg := chartConfig(t, renderByKind(t, values))
	if ok, out := gemgateCheck(t, cfg); !ok {
		t.Errorf("helm accepted a folded worker_command, and gemgate refuses the config.yaml the chart wrote:\n%s\n%s", cfg, out)
	}
}

// The metrics listener has no authentication: no Service of type LoadBalancer or NodePort may
// carry its port, whatever service.type is, or /metrics is published outside the cluster,
// guarded only by a NetworkPolicy that a CNI may not enforce (and networkPolicy.enabled=false
// drops).
func TestChartMetricsNotPublishedOutsideCluster(t *testing.T) {
	for _, typ := range []string{"LoadBalancer", "NodePort"} {
		t.Run(typ, func(t *testing.T) {
			metricsServices := 0
			for _, doc := range render(t, filepath.Join(chart, "ci", "minimal-values.yaml"), "service.type="+typ) {
				var svc struct {
					Kind string
					Spec struct {
						Type  string
						Ports []struct{ Name string }
					}
				}
				if err := yaml.Unmarshal(doc, &svc); err != nil {
					t.Fatal(err)
				}
				if svc.Kind != "Service" {
					continue
				}
				for _, p := range svc.Spec.Ports {
					if p.Name != "metrics" {
						continue
					}
					metricsServices++
					if svc.Spec.Type != "ClusterIP" {
						t.Errorf("a %s Service publishes the unauthenticated metrics port outside the cluster", svc.Spec.Type)
					}
				}
			}
			if metricsServices != 1 {
				t.Errorf("%d Services carry the metrics port, want 1 (the ServiceMonitor scrapes it)", metricsServices)
			}
		})
	}
}

// publicURL names the path gemgate serves (mcp_path): one without a path, or with a trailing
// slash, which gemgate would refuse as mcp_path, is refused by the chart with what to write.
func TestChartRefusesAPublicURLWithoutAPath(t *testing.T) {
	for _, u := range []string{"https://mcp.example.com", "https://mcp.example.com/", "https://mcp.example.com/team/mcp/"} {
		cmd := exec.Command("go", "tool", "helm", "template", "gm", chart, "--kube-version", kubernetesVersion,
			"-f", filepath.Join(chart, "ci", "minimal-values.yaml"), "--set", "publicURL="+u)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "must name the MCP endpoint's path") {
			t.Errorf("publicURL %s: err %v, output:\n%s", u, err, out)
		}
	}
}

// publicURL is an http or https URL with a host: without its scheme it has no host, and the
// Ingress would route every host of a shared controller to gemgate, which then refuses to
// start. The chart refuses it with what to write.
func TestChartRefusesAPublicURLWithoutSchemeOrHost(t *testing.T) {
	for _, u := range []string{"mcp.example.com/mcp", "ftp://mcp.example.com/mcp", "https:///mcp"} {
		cmd := exec.Command("go", "tool", "helm", "template", "gm", chart, "--kube-version", kubernetesVersion,
			"-f", filepath.Join(chart, "ci", "minimal-values.yaml"), "--set", "publicURL="+u)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "must be an http or https URL with a host") {
			t.Errorf("publicURL %s: err %v, output:\n%s", u, err, out)
		}
	}
}
