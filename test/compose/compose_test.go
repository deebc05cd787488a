package compose

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "../../deploy/docker-compose.yml"

// load reads the compose file as `docker compose config` does: schema validation,
// interpolation, normalization and the consistency checks, with no .env and an empty
// environment so that nothing on this machine changes the result.
func load(t *testing.T) *types.Project {
	t.Helper()
	return loadFile(t, composeFile)
}

// loadFile is load for another compose file of deploy/.
func loadFile(t *testing.T, file string) *types.Project {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts, err := cli.NewProjectOptions([]string{file}, cli.WithWorkingDirectory("../../deploy"), cli.WithEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		t.Fatalf("compose-go refuses %s: %v", file, err)
	}
	return p
}

func TestComposeFileIsValidForComposeV2(t *testing.T) {
	p := load(t)
	if p.Name != "gemgate-demo" {
		t.Errorf("project name %q", p.Name)
	}
	for _, name := range []string{"keycloak", "gemgate", "prometheus", "jaeger", "grafana"} {
		svc, ok := p.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		for _, port := range svc.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q, want 127.0.0.1 only", name, port.Published, port.HostIP)
			}
		}
	}
	if b := p.Services["gemgate"].Build; b == nil || b.Dockerfile != "Dockerfile" {
		t.Errorf("gemgate is not built from the repository's Dockerfile: %+v", b)
	}
}

// Every URL a client on the host is given spells the host 127.0.0.1, as gemgate dev does:
// MCP clients compare the resource URL with the metadata's `resource` character by character,
// and a token's iss with the issuer string.
func TestComposeDemoSpellsTheHost127001(t *testing.T) {
	p := load(t)
	env := func(svc, key string) string {
		v := p.Services[svc].Environment[key]
		if v == nil {
			t.Fatalf("%s has no %s", svc, key)
		}
		return *v
	}
	for _, u := range []string{env("gemgate", "GEMGATE_PUBLIC_URL"), env("gemgate", "GEMGATE_ISSUER"), env("keycloak", "KC_HOSTNAME")} {
		parsed, err := url.Parse(u)
		if err != nil || parsed.Hostname() != "127.0.0.1" {
			t.Errorf("%q: want host 127.0.0.1", u)
		}
	}
	if !strings.HasPrefix(env("gemgate", "GEMGATE_ISSUER"), env("keycloak", "KC_HOSTNAME")+"/") {
		t.Errorf("GEMGATE_ISSUER %q is not under KC_HOSTNAME %q", env("gemgate", "GEMGATE_ISSUER"), env("keycloak", "KC_HOSTNAME"))
	}
}

// Compose 1.x reads `version` before anything else and rejects a string that is not a file
// format number, quoting it: so the string is the message a Compose 1.x user sees.
func TestComposeV1StopsWithAClearMessage(t *testing.T) {
	raw, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version: "([^"]*)"$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the compose file has no top-level version string for Compose 1.x to stop at")
	}
	msg := string(m[1])
	// Compose 1.x's own test of the field (compose/config/config.py, ConfigFile.version).
	if regexp.MustCompile(`^[1-3]+(\.\d+)?$`).MatchString(msg) {
		t.Fatalf("version %q is a file format number, so Compose 1.x would go on reading", msg)
	}
	for _, want := range []string{"Docker Compose v2", "BuildKit", "deploy/README.md"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message for Compose 1.x lacks %q: %s", want, msg)
		}
	}
	// And with the real thing, where it is installed (.ci/test installs Debian's).
	v1, err := exec.LookPath("docker-compose")
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("docker-compose 1.x is not installed (apt-get install docker-compose); checked against its rule only")
	}
	cmd := exec.Command(v1, "-f", composeFile, "config")
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent") // config needs no engine
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `Version "`+msg+`"`) {
		t.Errorf("docker-compose 1.x did not stop at the version message: %v\n%s", err, out)
	}
}
