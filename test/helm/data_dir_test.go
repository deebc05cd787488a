package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"
)

// effectiveDataDir is the data_dir gemgate serve runs with in the chart's pod: the config file
// the chart writes, then the environment (docs/configuration.md: files, then the environment,
// a later source wins), which is the image's ENV (the repository's Dockerfile, final stage)
// with the container's env over it.
func effectiveDataDir(t *testing.T, docs map[string][]byte) string {
	t.Helper()
	var cfg struct {
		DataDir string `json:"data_dir"`
	}
	if err := yaml.Unmarshal([]byte(chartConfig(t, docs)), &cfg); err != nil {
		t.Fatal(err)
	}
	dir := cfg.DataDir
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(string(dockerfile), -1)
	for _, m := range regexp.MustCompile(`(?m)^ENV\s+GEMGATE_DATA_DIR[= ](\S+)`).FindAllStringSubmatch(stages[len(stages)-1], -1) {
		dir = m[1]
	}
	for _, c := range deployment(t, docs).Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "GEMGATE_DATA_DIR" {
				dir = e.Value
			}
		}
	}
	return dir
}

// config: takes any key of docs/configuration.md, data_dir among them (a persistent volume for
// the workers' files, say). The image must not set GEMGATE_DATA_DIR, which would win over the
// chart's config file and put the files in the pod's emptyDir, lost at its next start; without
// config.data_dir the workers' files are in that emptyDir, /data, the one writable volume for
// them.
func TestChartDataDirIsTaken(t *testing.T) {
	docs := renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"), "config.data_dir=/srv/gemgate")
	if got := effectiveDataDir(t, docs); got != "/srv/gemgate" {
		t.Errorf("config.data_dir /srv/gemgate: gemgate runs with data_dir %q (the image's or the pod's GEMGATE_DATA_DIR wins over the config file)", got)
	}
	docs = renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"))
	if got := effectiveDataDir(t, docs); got != "/data" {
		t.Errorf("without config.data_dir: gemgate runs with data_dir %q, want /data (the pod's data volume)", got)
	}
}
