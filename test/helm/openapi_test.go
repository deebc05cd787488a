package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// The Kubernetes release whose published OpenAPI document the manifests are checked against,
// and the hash of its Go module (go.sum's h1: form), so that the document cannot change under
// the same version. Keep the version in step with k8s.io/api in go.mod and --kube-version in
// .ci/helm.
const (
	kubernetesVersion   = "1.37.2"
	kubernetesModuleSum = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
)

// openAPIDocument returns the path of api/openapi-spec/swagger.json of the Go module
// k8s.io/kubernetes at kubernetesVersion, downloaded (once per machine) through the Go module
// proxy, the only way to it here besides the Kubernetes repository itself.
func openAPIDocument(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@v"+kubernetesVersion)
	cmd.Dir = t.TempDir() // outside any module: nothing is added to go.mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var m struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || err != nil || m.Error != "" {
		t.Fatalf("go mod download k8s.io/kubernetes@v%s: %v %s\n%s", kubernetesVersion, err, m.Error, out)
	}
	if m.Sum != kubernetesModuleSum {
		t.Fatalf("k8s.io/kubernetes@v%s has hash %s, want %s", kubernetesVersion, m.Sum, kubernetesModuleSum)
	}
	return filepath.Join(m.Dir, "api", "openapi-spec", "swagger.json")
}

// schemaSet compiles, per kind, the JSON schema of the OpenAPI document's definitions.
type schemaSet struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	byGVK    map[string]string // "apps/v1, Kind=Deployment" -> definition name
	compiled map[string]*jsonschema.Schema
}

const schemaURL = "https://kubernetes.invalid/openapi.json" // a name for the resource, never fetched

// loadSchemas reads the OpenAPI (Swagger 2.0) document and turns its definitions into one
// JSON Schema (draft 4, the dialect of Swagger 2.0) resource.
func loadSchemas(t *testing.T, path string) *schemaSet {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := &schemaSet{byGVK: map[string]string{}, compiled: map[string]*jsonschema.Schema{}}
	for name, def := range doc.Definitions {
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			s.byGVK[gvkKey(str(m["group"]), str(m["version"]), str(m["kind"]))] = name
		}
		strictObjects(def)
	}
	// The two types the API server reads from either a number or a string. Swagger 2.0 can
	// only say "string" for them; a typed decode checks their content.
	doc.Definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = map[string]any{"type": []any{"integer", "string"}}
	doc.Definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"] = map[string]any{"type": []any{"number", "string"}}

	b, err := json.Marshal(map[string]any{"definitions": doc.Definitions})
	if err != nil {
		t.Fatal(err)
	}
	resource, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	s.compiler = jsonschema.NewCompiler()
	s.compiler.DefaultDraft(jsonschema.Draft4)
	if err := s.compiler.AddResource(schemaURL, resource); err != nil {
		t.Fatal(err)
	}
	return s
}

// strictObjects refuses unknown fields in every object schema that lists its properties,
// at any depth, unless it says what else it allows.
func strictObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			if _, set := v["additionalProperties"]; !set {
				v["additionalProperties"] = false
			}
		}
		for _, child := range v {
			strictObjects(child)
		}
	case []any:
		for _, child := range v {
			strictObjects(child)
		}
	}
}

func gvkKey(group, version, kind string) string {
	if group == "" {
		return version + ", Kind=" + kind
	}
	return group + "/" + version + ", Kind=" + kind
}

func str(v any) string { s, _ := v.(string); return s }

// validate checks one manifest (YAML) of apiVersion/kind against its schema. ok is false when
// the document has no schema for the kind (a custom resource).
func (s *schemaSet) validate(apiVersion, kind string, manifest []byte) (ok bool, err error) {
	name, found := s.byGVK[apiVersion+", Kind="+kind]
	if !found {
		return false, nil
	}
	s.mu.Lock()
	sch, done := s.compiled[name]
	if !done {
		sch, err = s.compiler.Compile(schemaURL + "#/definitions/" + name)
		if err != nil {
			s.mu.Unlock()
			return true, fmt.Errorf("compiling the schema of %s: %w", name, err)
		}
		s.compiled[name] = sch
	}
	s.mu.Unlock()
	j, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return true, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return true, err
	}
	return true, sch.Validate(inst)
}
