package helm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const chart = "../../deploy/helm/gemgate"

// render runs `helm template` (this module's pinned tool) with a values file and returns the
// manifests, one YAML document each.
func render(t *testing.T, valuesFile string, set ...string) [][]byte {
	t.Helper()
	args := []string{"tool", "helm", "template", "gm", chart, "--kube-version", kubernetesVersion, "-f", valuesFile}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template -f %s: %v\n%s", valuesFile, err, stderr.String())
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(line); t != "---" && !strings.HasPrefix(t, "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// strictDecoder decodes YAML into the typed object of its kind and fails on unknown or
// duplicate fields (the API server's fieldValidation=Strict).
var strictDecoder = sync.OnceValue(func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), monitoringv1.AddToScheme(scheme)); err != nil {
		panic(err)
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
})

var schemas = struct {
	once sync.Once
	set  *schemaSet
}{}

func kubernetesSchemas(t *testing.T) *schemaSet {
	t.Helper()
	schemas.once.Do(func() { schemas.set = loadSchemas(t, openAPIDocument(t)) })
	if schemas.set == nil {
		t.FailNow()
	}
	return schemas.set
}

// check validates one manifest both ways and returns every problem.
func check(t *testing.T, doc []byte) (kind string, problems []error) {
	t.Helper()
	var head struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return "", []error{err}
	}
	if _, _, err := strictDecoder().Decode(doc, nil, nil); err != nil {
		problems = append(problems, err)
	}
	ok, err := kubernetesSchemas(t).validate(head.APIVersion, head.Kind, doc)
	if err != nil {
		problems = append(problems, err)
	}
	if !ok && head.Kind != "ServiceMonitor" {
		problems = append(problems, errors.New("no Kubernetes schema for "+head.APIVersion+" "+head.Kind))
	}
	return head.Kind, problems
}

// Every manifest the chart renders, with the least values and with everything on, is valid
// for Kubernetes 1.37, and each optional part appears only when asked for.
func TestChartRendersValidManifests(t *testing.T) {
	// Two Services: the MCP endpoint's, and the metrics port's (always ClusterIP).
	always := []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "Service", "ServiceAccount"}
	tests := []struct {
		values string
		kinds  []string
	}{
		{"minimal-values.yaml", always},
		{"full-values.yaml", append(slices.Clone(always), "HorizontalPodAutoscaler", "Ingress", "Secret", "ServiceMonitor")},
	}
	for _, tt := range tests {
		t.Run(tt.values, func(t *testing.T) {
			var kinds []string
			for _, doc := range render(t, filepath.Join(chart, "ci", tt.values)) {
				kind, problems := check(t, doc)
				kinds = append(kinds, kind)
				for _, p := range problems {
					t.Errorf("%s: %v\n%s", kind, p, doc)
				}
			}
			slices.Sort(kinds)
			slices.Sort(tt.kinds)
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("kinds rendered: %v, want %v", kinds, tt.kinds)
			}
		})
	}
}

// The validation can fail: each defect below, put into a manifest the chart renders, is
// found.
func TestValidationFindsDefects(t *testing.T) {
	docs := map[string][]byte{}
	for _, doc := range render(t, filepath.Join(chart, "ci", "full-values.yaml")) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		docs[head.Kind] = doc
	}
	tests := []struct {
		name, kind, from, to string
	}{
		{"unknown field", "Deployment", "  strategy:", "  strategie:\n    type: Recreate\n  strategy:"},
		{"misspelt probe field", "Deployment", "periodSeconds: 5", "periodSecond: 5"},
		{"wrong type", "Deployment", "runAsNonRoot: true", "runAsNonRoot: \"yes\""},
		{"missing required field", "Deployment", "        - name: gemgate\n", "        - \n"},
		{"missing required field, schema only", "HorizontalPodAutoscaler", "  maxReplicas: 10\n", ""},
		{"missing required field in a list item", "Ingress", "            pathType: Prefix\n", ""},
		{"unknown ServiceMonitor field", "ServiceMonitor", "interval: 30s", "intervall: 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, ok := docs[tt.kind]
			if !ok || !bytes.Contains(doc, []byte(tt.from)) {
				t.Fatalf("the rendered %s has no %q to change", tt.kind, tt.from)
			}
			bad := bytes.Replace(doc, []byte(tt.from), []byte(tt.to), 1)
			if _, problems := check(t, bad); len(problems) == 0 {
				t.Errorf("no problem found in\n%s", bad)
			}
		})
	}
}

// The chart refuses values it cannot work with, all problems at once.
func TestChartRefusesIncompleteValues(t *testing.T) {
	cmd := exec.Command("go", "tool", "helm", "template", "gm", chart, "--kube-version", kubernetesVersion,
		"--set", "config.listen=0.0.0.0:1,exchange.enabled=true")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("helm template accepted the defaults:\n%s", out)
	}
	for _, want := range []string{"publicURL is required", "config.issuer is required", "config.listen is set by the chart", "exchange.enabled needs exchange.clientSecret"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("helm template output lacks %q:\n%s", want, out)
		}
	}
}

// gemgate itself accepts the config.yaml the chart writes (with the exchange secret in the
// environment, as the Deployment gives it): no unknown key, no invalid value.
func TestGemgateAcceptsTheChartsConfig(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gemgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gemgate")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building gemgate: %v\n%s", err, out)
	}
	for _, values := range []string{"minimal-values.yaml", "full-values.yaml"} {
		t.Run(values, func(t *testing.T) {
			var cm struct {
				Kind string
				Data map[string]string
			}
			for _, doc := range render(t, filepath.Join(chart, "ci", values)) {
				if err := yaml.Unmarshal(doc, &cm); err != nil {
					t.Fatal(err)
				}
				if cm.Kind == "ConfigMap" {
					break
				}
			}
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
				t.Fatal(err)
			}
			// The issuer is replaced by a loopback address nothing answers, so that the check
			// of the issuer fails at once instead of waiting on the network.
			cmd := exec.Command(bin, "check", "--config", file)
			cmd.Env = append(os.Environ(), "GEMGATE_ISSUER=http://127.0.0.1:1/realms/x", "GEMGATE_EXCHANGE_CLIENT_SECRET=s")
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), "OK       configuration is valid") {
				t.Errorf("gemgate check refuses the chart's config:\n%s\n%s", out, cm.Data["config.yaml"])
			}
		})
	}
}
