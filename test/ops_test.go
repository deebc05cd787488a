package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/internal/freeport"
	"gopkg.in/yaml.v3"
)

// requireTool finds a program the test needs. CI installs it and sets the variable named
// require, so there a missing tool fails the test; elsewhere the test says what is missing
// and skips.
func requireTool(t *testing.T, name, require string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv(require) == "1" {
		t.Fatalf("%s is required (%s=1) but not installed", name, require)
	}
	t.Skipf("%s is not installed; .ci/run installs it (set %s=1 to make this a failure)", name, require)
	return ""
}

// freeAddr is a loopback address nothing listens on right now, for a process that listens
// on it later (internal/freeport).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestPrometheusScrapesGemgate runs a real Prometheus with the scrape configuration shipped in
// deploy/, pointed at a running gemgate, and queries it for gemgate_sessions_open.
func TestPrometheusScrapesGemgate(t *testing.T) {
	t.Parallel()
	prom := requireTool(t, "prometheus", "GEMGATE_TEST_REQUIRE_PROMETHEUS")
	g := startDev(t, "--metrics-listen", "127.0.0.1:0")
	if g.Metrics == "" {
		t.Fatal("gemgate dev printed no metrics URL")
	}
	connect(t, g.URL, g.Tokens["alice"], nil) // one open session to see

	// The deploy configuration, with its target moved to this gemgate and a faster interval.
	raw, err := os.ReadFile("../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("deploy/prometheus/prometheus.yml: %v", err)
	}
	cfg["global"].(map[string]any)["scrape_interval"] = "1s"
	job := cfg["scrape_configs"].([]any)[0].(map[string]any)
	if job["job_name"] != "gemgate" {
		t.Fatalf("first scrape job is %v, want gemgate", job["job_name"])
	}
	target := strings.TrimSuffix(strings.TrimPrefix(g.Metrics, "http://"), "/metrics")
	job["static_configs"].([]any)[0].(map[string]any)["targets"] = []string{target}
	dir := t.TempDir()
	out, _ := yaml.Marshal(cfg)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, out, 0o600); err != nil {
		t.Fatal(err)
	}

	// freeAddr's port is free only until something else on the machine takes it: a
	// Prometheus that could not bind it is started again on another one, twice at most.
	for attempt := 1; ; attempt++ {
		if !promScrapes(t, prom, cfgFile, filepath.Join(dir, fmt.Sprint("data", attempt)), attempt < 3) {
			return
		}
	}
}

// promScrapes runs Prometheus on a free address until it reports gemgate_sessions_open = 1,
// and fails the test when it does not. It returns true, without failing, when Prometheus
// could not listen on the address and mayRetry is set.
func promScrapes(t *testing.T, prom, cfgFile, data string, mayRetry bool) (retry bool) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(prom, "--config.file="+cfgFile, "--storage.tsdb.path="+data,
		"--web.listen-address="+addr, "--log.level=warn")
	var logs strings.Builder // read only once the process has exited
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()

	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		v, err := promQuery(addr, "gemgate_sessions_open")
		if err == nil && v == "1" {
			return false
		}
		last = fmt.Sprintf("value %q, error %v", v, err)
		select {
		case <-exited:
			if mayRetry && strings.Contains(logs.String(), "address already in use") {
				t.Logf("Prometheus could not listen on %s; starting it again on another address", addr)
				return true
			}
			t.Fatalf("Prometheus exited (last query: %s)\nprometheus logs:\n%s", last, logs.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
	cmd.Process.Kill()
	<-exited
	t.Fatalf("Prometheus never reported gemgate_sessions_open = 1 (last: %s)\nprometheus logs:\n%s", last, logs.String())
	return false
}

// promQuery runs an instant query and returns the value of its only sample.
func promQuery(addr, query string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/query?query="+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", err
	}
	if body.Status != "success" || len(body.Data.Result) != 1 {
		return "", fmt.Errorf("status %s, %d results", body.Status, len(body.Data.Result))
	}
	v, _ := body.Data.Result[0].Value[1].(string)
	return v, nil
}

// TestNoTokenInAnyLog drives every log path (trace on, audit lines, worker stderr, auth
// failures of several kinds, a token in the query string) with known tokens, then searches
// everything gemgate wrote for them: its log, every HTTP answer it gave (status line
// headers and bodies, refusals and successes), and a scrape of its metrics.
func TestNoTokenInAnyLog(t *testing.T) {
	t.Parallel()
	g := startDev(t, "--trace-messages", "--trace-limit", "none", "--metrics-listen", "127.0.0.1:0")
	alice, bob := g.Tokens["alice"], g.Tokens["bob"]

	cs := connect(t, g.URL, alice, nil)
	callTool(t, cs, "whoami", nil)
	callTool(t, cs, "slow", map[string]any{"seconds": 1, "log": true})
	callTool(t, cs, "write_note", map[string]any{"name": "n", "text": "a note"})
	bs := connect(t, g.URL, bob, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bs.ListTools(ctx, nil)

	tampered := alice[:len(alice)-4] + "AAAA"
	mangled := strings.Replace(alice, ".", ".x", 1)
	var answers strings.Builder // every header and body gemgate answered with
	do := func(method, url string, header map[string][]string, body string) int {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		for k, vs := range header {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		resp.Header.Write(&answers)
		answers.Write(b)
		answers.WriteByte('\n')
		return resp.StatusCode
	}
	send := func(method, url string, header map[string][]string, body string) {
		if status := do(method, url, header, body); status < 400 {
			t.Errorf("%s %s with a bad credential got %d", method, url, status)
		}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	send("POST", g.URL, map[string][]string{"Authorization": {"Bearer " + tampered}}, init)
	send("POST", g.URL, map[string][]string{"Authorization": {"Bearer " + mangled}}, init)
	send("POST", g.URL+"?access_token="+alice, nil, init)
	send("POST", g.URL, map[string][]string{"Authorization": {"Bearer " + alice, "Bearer " + bob}}, init)
	send("POST", g.URL, map[string][]string{"Authorization": {"Basic " + alice}}, init)
	// A body that carries a secret-looking field is traced, but the bearer header never is.
	send("POST", g.URL, map[string][]string{"Authorization": {"Bearer " + tampered}, "Origin": {"https://evil.example"}}, init)
	// Good tokens too, on the success and error paths of a session: the answers echo ids,
	// params and errors, never the credential.
	ok := map[string][]string{"Authorization": {"Bearer " + alice}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}}
	if status := do("POST", g.URL, ok, init); status != http.StatusOK {
		t.Fatalf("initialize with alice's token: %d", status)
	}
	do("POST", g.URL, ok, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`) // no session: 400
	withSession := map[string][]string{"Mcp-Session-Id": {"no-such-session"}, "Mcp-Protocol-Version": {"2025-11-25"}}
	for k, v := range ok {
		withSession[k] = v
	}
	do("POST", g.URL, withSession, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`) // 404
	do("POST", g.URL, ok, `{"jsonrpc":"2.0",`)                                       // 400 parse error
	do("GET", g.URL, map[string][]string{"Authorization": {"Bearer " + bob}}, "")    // no session: 400
	do("GET", strings.TrimSuffix(g.URL, "/mcp")+"/.well-known/oauth-protected-resource/mcp", nil, "")
	if g.Metrics == "" {
		t.Fatal("no metrics listener")
	}
	if status := do("GET", g.Metrics, nil, ""); status != http.StatusOK {
		t.Fatalf("metrics scrape: %d", status)
	}
	if !strings.Contains(answers.String(), "gemgate_auth_failures_total") || !strings.Contains(answers.String(), "gemgate_requests_total") {
		t.Fatalf("the metrics scrape holds no auth failure or request series; the sweep would prove nothing:\n%s", answers.String())
	}

	g.stop(t)
	for name, secret := range map[string]string{"alice's token": alice, "bob's token": bob, "tampered token": tampered} {
		for _, part := range tokenParts(secret) {
			if strings.Contains(answers.String(), part) {
				t.Errorf("%s (part %q...) appears in an HTTP answer or a metric", name, part[:12])
			}
		}
	}
	for _, line := range []string{`"msg":"trace"`, `"msg":"audit tools/call"`, `"msg":"worker stderr"`} {
		logShows(g, line, 10*time.Second)
	}
	logs := g.logs.String()
	if !strings.Contains(logs, `"msg":"trace"`) || !strings.Contains(logs, `"msg":"audit tools/call"`) || !strings.Contains(logs, `"msg":"worker stderr"`) {
		t.Fatalf("the test did not reach every log path:\n%s", logs)
	}
	if !strings.Contains(logs, "request refused by authentication") {
		t.Fatalf("no auth failure was logged:\n%s", logs)
	}
	for name, secret := range map[string]string{"alice's token": alice, "bob's token": bob, "tampered token": tampered} {
		for _, part := range tokenParts(secret) {
			if strings.Contains(logs, part) {
				t.Errorf("%s (part %q...) appears in gemgate's log", name, part[:12])
			}
		}
	}
	for _, c := range g.Clients {
		if strings.Contains(logs, c.Secret) {
			t.Errorf("client secret of %s appears in the log", c.ID)
		}
	}
}

// tokenParts are the pieces of a JWT that identify it: its signature and its payload.
func tokenParts(tok string) []string {
	parts := strings.Split(tok, ".")
	var out []string
	for _, p := range parts[1:] {
		if len(p) >= 16 {
			out = append(out, p)
		}
	}
	return out
}
