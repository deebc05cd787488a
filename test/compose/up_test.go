package compose

// The shipped compose files brought up for real (Docker's daemon and Compose v2, images from
// Debian's packages: .ci/images.sh), then used from the host side of the published ports as a
// user would. In CI (CI set) or with GEMGATE_TEST_REQUIRE_DOCKER=1 they fail when they cannot run.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// eventually retries check every second until it returns "" or timeout passes, then fails with
// its last answer.
func eventually(t *testing.T, timeout time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(time.Second)
	}
}

func TestComposeUpDemo(t *testing.T) {
	d := startDocker(t)
	p := d.project("docker-compose.yml", "demo.yml")
	p.up(t, "gemgate-demo")
	d.ready(t, "http://127.0.0.1:8080/readyz")

	// The metadata names Keycloak at the issuer URL a browser on the host uses.
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if resp := d.get(t, "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", &meta); resp.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %s", resp.Status)
	}
	if meta.Resource != mcpURL || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != issuerURL {
		t.Fatalf("metadata %+v, want resource %s and authorization server %s", meta, mcpURL, issuerURL)
	}
	// Which Keycloak serves there, on its published port, with the same issuer.
	var disco struct {
		Issuer string `json:"issuer"`
	}
	d.get(t, issuerURL+"/.well-known/openid-configuration", &disco)
	if disco.Issuer != issuerURL {
		t.Fatalf("Keycloak's discovery names issuer %q, want %q", disco.Issuer, issuerURL)
	}

	// A request without a token: 401 whose challenge points at the metadata.
	resp, err := d.client.Post(mcpURL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(ch, `resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("no token: %s, challenge %q", resp.Status, ch)
	}

	// Client credentials: gemgate verifies Keycloak's token (keys fetched over the compose
	// network from host "keycloak", iss the host's URL).
	ci := d.open(t, d.ciToken(t))
	if code, out := ci.call(t, "whoami", nil); code != http.StatusOK || !strings.Contains(out, "user=service-account-gemgate-ci") {
		t.Fatalf("whoami as the CI client: %d %s", code, out)
	}

	// alice (mcp:write) and bob (read-only) through Keycloak's login page.
	alice := d.open(t, d.login(t, "alice", "openid mcp:use mcp:write"))
	bob := d.open(t, d.login(t, "bob", "openid mcp:use mcp:write"))
	if code, out := alice.call(t, "whoami", nil); code != http.StatusOK || !strings.Contains(out, "user=alice") || !strings.Contains(out, "read_only=false") {
		t.Fatalf("whoami as alice: %d %s", code, out)
	}
	if code, out := bob.call(t, "whoami", nil); code != http.StatusOK || !strings.Contains(out, "user=bob") || !strings.Contains(out, "read_only=true") {
		t.Fatalf("whoami as bob: %d %s", code, out)
	}
	note := "compose-" + random()[:8]
	if code, out := alice.call(t, "write_note", map[string]any{"name": note, "text": "alice's only"}); code != http.StatusOK || strings.Contains(out, `"isError":true`) {
		t.Fatalf("write_note as alice: %d %s", code, out)
	}
	if code, out := bob.call(t, "write_note", map[string]any{"name": note, "text": "bob's"}); code != http.StatusForbidden {
		t.Fatalf("write_note as bob (read-only): %d %s, want 403", code, out)
	}
	if code, out := alice.call(t, "read_note", map[string]any{"name": note}); code != http.StatusOK || !strings.Contains(out, "alice's only") {
		t.Fatalf("read_note as alice: %d %s", code, out)
	}
	if _, out := bob.call(t, "read_note", map[string]any{"name": note}); strings.Contains(out, "alice's only") {
		t.Fatalf("bob read alice's note: %s", out)
	}

	sandboxed(t, p, alice, bob)

	// Prometheus scrapes gemgate over the compose network (target gemgate:9464): its own API
	// shows the target up and gemgate's counters, the calls above among them.
	eventually(t, 90*time.Second, func() string {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		q := url.Values{"query": {`sum by (instance) (gemgate_tool_calls_total{job="gemgate"})`}}
		d.get(t, "http://127.0.0.1:9090/api/v1/query?"+q.Encode(), &r)
		if len(r.Data.Result) != 1 || r.Data.Result[0].Metric["instance"] != "gemgate:9464" || len(r.Data.Result[0].Value) != 2 || r.Data.Result[0].Value[1] == "0" {
			return "Prometheus has no gemgate_tool_calls_total scraped from gemgate:9464: " + mustJSON(r)
		}
		return ""
	})

	// Jaeger holds the trace of a whoami call: gemgate's spans (OTLP to jaeger:4318 over the
	// compose network) and, under gemgate's round trip to it, the demo worker's own span.
	eventually(t, 60*time.Second, func() string { return d.workerTraced(t, "tools/call whoami") })
}

// workerTraced is "" when Jaeger (its query API on the published port 16686) holds a trace of
// gemgate's operation op in which a span of the demo worker is the child of a gemgate span;
// else what it holds.
func (d *docker) workerTraced(t *testing.T, op string) string {
	t.Helper()
	var r struct {
		Data []struct {
			Spans []struct {
				SpanID     string `json:"spanID"`
				References []struct {
					SpanID string `json:"spanID"`
				} `json:"references"`
				ProcessID string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	q := url.Values{"service": {"gemgate"}, "operation": {op}, "limit": {"20"}}
	d.get(t, "http://127.0.0.1:16686/api/traces?"+q.Encode(), &r)
	for _, tr := range r.Data {
		gemgate := map[string]bool{}
		for _, s := range tr.Spans {
			if tr.Processes[s.ProcessID].ServiceName == "gemgate" {
				gemgate[s.SpanID] = true
			}
		}
		for _, s := range tr.Spans {
			if tr.Processes[s.ProcessID].ServiceName == "gemgate-demo-worker" && len(s.References) > 0 && gemgate[s.References[0].SpanID] {
				return ""
			}
		}
	}
	return "Jaeger has no trace of " + op + " with the demo worker's span under gemgate's: " + mustJSON(r)
}

// ready waits for gemgate's readiness (the issuer's keys loaded): compose's --wait waits for the
// health check, /healthz, which answers before.
func (d *docker) ready(t *testing.T, rawURL string) {
	t.Helper()
	eventually(t, 2*time.Minute, func() string {
		resp, err := d.client.Get(rawURL)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return rawURL + ": " + resp.Status
		}
		return ""
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sandboxed shows, from inside the gemgate container, that alice's and bob's workers each run
// in a bubblewrap sandbox of their own: a PID namespace each, neither gemgate's, so neither
// worker sees the other's processes (or gemgate's) in its /proc.
func sandboxed(t *testing.T, p *project, users ...*session) {
	t.Helper()
	for _, s := range users {
		if code, out := s.call(t, "whoami", nil); code != http.StatusOK {
			t.Fatalf("whoami: %d %s", code, out)
		}
	}
	// Each process of the container: its PID namespace and its command line, and the shell's
	// own namespace, the container's (compose's warnings share the output: lines are tagged).
	out := p.compose(t, time.Minute, "exec", "-T", "gemgate", "sh", "-c",
		`echo "self|$(readlink /proc/self/ns/pid)"; for d in /proc/[0-9]*; do printf 'proc|%s|%s\n' "$(readlink $d/ns/pid)" "$(tr '\0' ' ' <$d/cmdline)"; done`)
	container := ""
	var procs [][]string
	for _, line := range strings.Split(out, "\n") {
		if ns, ok := strings.CutPrefix(line, "self|"); ok {
			container = ns
		} else if rest, ok := strings.CutPrefix(line, "proc|"); ok {
			procs = append(procs, strings.SplitN(rest, "|", 2))
		}
	}
	if container == "" {
		t.Fatalf("no namespace of the container's own in:\n%s", out)
	}
	inNS := map[string][]string{} // namespace -> command lines, for the namespaces apart from the container's
	bwrap := 0
	for _, f := range procs {
		if len(f) != 2 {
			continue
		}
		if strings.HasPrefix(f[1], "/usr/bin/bwrap ") || strings.HasPrefix(f[1], "bwrap ") {
			bwrap++
		}
		if f[0] != "" && f[0] != container {
			inNS[f[0]] = append(inNS[f[0]], f[1])
		}
	}
	workers := 0
	for ns, cmds := range inNS {
		n := 0
		for _, c := range cmds {
			if strings.HasPrefix(c, "/usr/local/bin/gemgate worker ") { // not bwrap's line, which names it too
				n++
			}
		}
		if n != 1 {
			t.Errorf("PID namespace %s holds %d workers, want 1: %q", ns, n, cmds)
		}
		workers += n
	}
	t.Logf("the container's PID namespace %s; workers' namespaces: %q", container, inNS)
	if bwrap < 2*len(users) || workers < len(users) {
		t.Fatalf("want at least %d workers, each under bwrap in a PID namespace of its own; found %d bwrap processes and %d workers apart:\n%s",
			len(users), bwrap, workers, out)
	}
}
