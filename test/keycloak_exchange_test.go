package test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kcCredential is what testdata/kccredworker's credential tool reports.
type kcCredential struct {
	Present           bool   `json:"present"`
	SHA256            string `json:"sha256"`
	Aud               any    `json:"aud"`
	Sub               string `json:"sub"`
	PreferredUsername string `json:"preferred_username"`
	Azp               string `json:"azp"`
	Error             string `json:"error"`
}

// buildKCCredworker builds testdata/kccredworker into a temporary folder.
func buildKCCredworker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kccredworker")
	build := exec.Command("go", "build", "-o", bin, "./testdata/kccredworker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kccredworker: %v\n%s", err, out)
	}
	return bin
}

// With worker_credential exchange, gemgate trades alice's token at Keycloak for one whose
// audience is gemstone and whose subject is alice, and hands it to her worker. Neither that
// credential, nor alice's token, nor gemgate's client secret appears in any log line.
func TestKeycloakTokenExchange(t *testing.T) {
	e := needKeycloak(t)
	worker := buildKCCredworker(t)
	alice := kcLogin(t, e, "alice", "alice", "mcp:use mcp:write").AccessToken
	aliceSub, _ := kcClaims(t, alice)["sub"].(string)
	if aliceSub == "" {
		t.Fatal("alice's token has no sub")
	}
	dump := filepath.Join(t.TempDir(), "credential")
	g := kcServe(t, e, kcServeAddr,
		[]string{"GEMGATE_EXCHANGE_CLIENT_SECRET=" + e.ExchangeSecret, "KCCREDWORKER_DUMP=" + dump},
		"--worker-command", worker, "--worker-credential", "exchange", "--worker-sandbox-writable", filepath.Dir(dump),
		"--exchange-client-id", e.ExchangeClient, "--exchange-audience", e.ExchangeAudience)

	cs := connect(t, g.URL, alice, nil)
	res := callTool(t, cs, "credential", nil)
	if res.IsError {
		t.Fatalf("credential tool: %s", text(res))
	}
	var got kcCredential
	if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
		t.Fatalf("credential tool answered %q: %v", text(res), err)
	}
	if !got.Present || got.Error != "" {
		t.Fatalf("the worker's credential: %+v", got)
	}
	aud := got.Aud
	if list, ok := aud.([]any); ok && len(list) == 1 {
		aud = list[0]
	}
	if aud != e.ExchangeAudience {
		t.Errorf("credential aud = %v, want %q", got.Aud, e.ExchangeAudience)
	}
	if got.Sub != aliceSub {
		t.Errorf("credential sub = %q, want alice's %q", got.Sub, aliceSub)
	}
	if got.PreferredUsername != "alice" || got.Azp != e.ExchangeClient {
		t.Errorf("credential preferred_username/azp = %q/%q, want alice/%s", got.PreferredUsername, got.Azp, e.ExchangeClient)
	}

	raw, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the worker wrote no credential dump: %v", err)
	}
	cred := string(raw)
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != got.SHA256 {
		t.Fatal("the dumped credential is not the one the worker reported")
	}
	if cred == alice {
		t.Fatal("the worker got alice's own token (passthrough), not an exchanged one")
	}
	cs.Close()
	g.stop(t)
	parts := strings.Split(cred, ".")
	secrets := map[string]string{"the worker credential": cred, "its payload": parts[1], "its signature": parts[2],
		"alice's token": alice, "alice's token signature": alice[strings.LastIndexByte(alice, '.')+1:], "the exchange client secret": e.ExchangeSecret}
	for what, s := range secrets {
		if lines := kcLogLines(g, s); len(lines) > 0 {
			t.Errorf("%s appears in %d gemgate log line(s)", what, len(lines))
		}
	}
	if len(kcLogLines(g, "")) < 5 {
		t.Errorf("gemgate logged almost nothing (%d lines); the leak check would prove little", len(kcLogLines(g, "")))
	}
}
