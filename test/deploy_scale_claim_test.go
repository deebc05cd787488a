package test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docs/scale-out.md: with a user_claim other than sub, the balancer hashes on the user claim,
// so that one name always meets one replica (each binds a name to the first subject it sees
// carrying it; hashed on the subject, two subjects with one name reach two replicas and each
// is served there as that user). docker-compose.scale.yml runs the replicas with a user_claim
// of its own and HAProxy with the shipped haproxy.cfg, in HAProxy's environment from the
// compose file: HAProxy must hash on that claim.
func TestDeployScaleComposeHashesOnTheUserClaim(t *testing.T) {
	var c struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	readYAML(t, "../deploy/docker-compose.scale.yml", &c)
	claim := ""
	for _, name := range []string{"gemgate1", "gemgate2", "gemgate3"} {
		svc, ok := c.Services[name]
		if !ok {
			t.Fatalf("docker-compose.scale.yml has no service %s", name)
		}
		v := svc.Environment["GEMGATE_USER_CLAIM"]
		if v == "" {
			v = "sub"
		}
		if claim != "" && v != claim {
			t.Fatalf("the replicas have different user claims: %s and %s", claim, v)
		}
		claim = v
	}
	// HAProxy runs with the compose file's environment for its service (and no other).
	for k, v := range c.Services["haproxy"].Environment {
		t.Setenv(k, v)
	}
	if _, ok := c.Services["haproxy"].Environment["GEMGATE_USER_CLAIM"]; !ok {
		t.Setenv("GEMGATE_USER_CLAIM", "") // restored after the test
		os.Unsetenv("GEMGATE_USER_CLAIM")
	}

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer backend.Close()
	addr := strings.TrimPrefix(backend.URL, "http://")
	mcpPort, statsPort := scaleFreePort(t), scaleFreePort(t)
	h := startHAProxy(t, scaleConfig(t, mcpPort, statsPort, []string{addr, addr, addr}), statsPort)

	// The signature is not HAProxy's business: it only reads the payload.
	enc := base64.RawURLEncoding
	payload := `{"sub":"7a4f0c1e-subject","preferred_username":"alice","email":"alice@example.com"}`
	token := enc.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." + enc.EncodeToString([]byte(payload)) + ".c2ln"
	want := map[string]string{"sub": "7a4f0c1e-subject", "preferred_username": "alice", "email": "alice@example.com"}[claim]
	if want == "" {
		t.Fatalf("the test knows no value for user claim %q", claim)
	}
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort), strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := ltMetricsClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hashed := regexp.MustCompile(` mcp gemgate/\S+ .* sub="([^"]*)" `)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.logs.mu.Lock()
		var got []string
		for _, l := range h.logs.lines {
			if m := hashed.FindStringSubmatch(l); m != nil {
				got = append(got, m[1])
			}
		}
		h.logs.mu.Unlock()
		if len(got) > 0 {
			if got[0] != want {
				t.Errorf("the replicas' user_claim is %s, and HAProxy hashed the request on %q, not on that claim (%q)", claim, got[0], want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy logged no request within 10s:\n%s", h.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
