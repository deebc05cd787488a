package compose

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const scaleFile = "../../deploy/docker-compose.scale.yml"

// The scale-out example loads as Compose v2 loads it, and its pieces agree: three replicas with
// one public URL (the balancer's published URL, the audience the realm adds), HAProxy with the
// shipped configuration whose servers are the replicas' service names and port, every GEMGATE_
// variable a real setting, every port on 127.0.0.1 only.
func TestComposeScaleExample(t *testing.T) {
	p := loadFile(t, scaleFile)
	if p.Name != "gemgate-scale" {
		t.Errorf("project name %q", p.Name)
	}
	replicas := []string{"gemgate1", "gemgate2", "gemgate3"}
	for _, name := range append([]string{"keycloak", "haproxy"}, replicas...) {
		svc, ok := p.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		for _, port := range svc.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q, want 127.0.0.1 only", name, port.Published, port.HostIP)
			}
		}
	}

	// HAProxy mounts the shipped file where the image reads it, and publishes its bind port.
	hp := p.Services["haproxy"]
	var cfgPath string
	for _, v := range hp.Volumes {
		if v.Target == "/usr/local/etc/haproxy/haproxy.cfg" {
			cfgPath = v.Source
		}
	}
	if want, _ := filepath.Abs("../../deploy/haproxy/haproxy.cfg"); cfgPath != want {
		t.Fatalf("haproxy mounts %q as its configuration, want the shipped %s", cfgPath, want)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	bind := regexp.MustCompile(`(?m)^frontend mcp\n(?:.*\n)*?    bind :(\d+)$`).FindSubmatch(cfg)
	if bind == nil {
		t.Fatal("haproxy.cfg: no bind line in frontend mcp")
	}
	if len(hp.Ports) != 1 || fmt.Sprint(hp.Ports[0].Target) != string(bind[1]) {
		t.Errorf("haproxy publishes %+v, want its bind port %s", hp.Ports, bind[1])
	}
	publicURL := "http://127.0.0.1:" + hp.Ports[0].Published + "/mcp"

	help, err := gemgateServeHelp(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range replicas {
		svc := p.Services[name]
		env := func(key string) string {
			if v := svc.Environment[key]; v != nil {
				return *v
			}
			return ""
		}
		if got := env("GEMGATE_PUBLIC_URL"); got != publicURL {
			t.Errorf("%s: GEMGATE_PUBLIC_URL %q, want the balancer's %q", name, got, publicURL)
		}
		_, port, _ := strings.Cut(env("GEMGATE_LISTEN"), ":")
		if !regexp.MustCompile(`(?m)^    server ` + name + ` ` + name + `:` + regexp.QuoteMeta(port) + `$`).Match(cfg) {
			t.Errorf("haproxy.cfg has no server %s at %s:%s", name, name, port)
		}
		for k := range svc.Environment {
			flag := "-" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "GEMGATE_")), "_", "-")
			if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag) + `\b`).MatchString(help) {
				t.Errorf("%s sets %s, which is not a gemgate setting", name, k)
			}
		}
		if b := svc.Build; b == nil || b.Dockerfile != "Dockerfile" {
			t.Errorf("%s is not built from the repository's Dockerfile: %+v", name, b)
		}
	}
	// The realm adds the balancer's URL to every token's audience.
	realm, err := os.ReadFile("../../deploy/keycloak/realm-gemgate.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(realm), `"included.custom.audience": "`+publicURL+`"`) {
		t.Errorf("the realm adds no audience %q", publicURL)
	}
	if u, err := url.Parse(publicURL); err != nil || u.Hostname() != "127.0.0.1" {
		t.Errorf("public URL %q: want host 127.0.0.1", publicURL)
	}
}

// gemgateServeHelp is `gemgate serve -h`: every setting's flag.
func gemgateServeHelp(t *testing.T) (string, error) {
	t.Helper()
	cmd := exec.Command("go", "run", "./cmd/gemgate", "serve", "-h")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "-public-url") {
		return "", fmt.Errorf("gemgate serve -h: %v\n%s", err, out)
	}
	return string(out), nil
}
