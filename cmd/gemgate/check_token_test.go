package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
	"github.com/gemgate/gemgate/auth/devissuer"
	"github.com/gemgate/gemgate/policy"
)

func TestCheckToken(t *testing.T) {
	const resource = "http://127.0.0.1:8080/mcp"
	iss, err := devissuer.Start(devissuer.Options{Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	mint := func(scopes []string, ttl time.Duration) string {
		tok, err := iss.Mint("alice", scopes, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := mint([]string{"mcp:use", "mcp:write"}, time.Hour)
	base := []string{"--issuer", iss.URL(), "--listen", "127.0.0.1:8080", "--user-claim", "preferred_username", "--worker", "demo"}

	tests := []struct {
		name    string
		args    []string
		code    int
		want    []string // lines or fragments the output must hold
		wantNot []string
	}{
		{"good", append(base, "--token", good), 0,
			[]string{"OK       signature", "OK       aud", "OK       exp", `Verdict: gemgate would accept this token: user "alice", read-write.`}, []string{"PROBLEM"}},
		{"read-only", append(base, "--token="+mint([]string{"mcp:use"}, time.Hour)), 0,
			[]string{"read-only (no mcp:write)"}, nil},
		{"expired", append(base, "--token", mint([]string{"mcp:use"}, -10*time.Minute)), 1,
			[]string{"PROBLEM  exp", "expired 10m", "allowed clock skew 30s", "would refuse this token (401 invalid_token: token expired)"}, nil},
		{"wrong audience", append(base, "--public-url", "https://gw.example.com/mcp", "--token", good), 1,
			[]string{"PROBLEM  aud", `"http://127.0.0.1:8080/mcp" names none of "https://gw.example.com/mcp"`, "token audience not accepted"}, []string{"PROBLEM  exp"}},
		{"missing required scope", append(base, "--token", mint([]string{"files:read"}, time.Hour)), 1,
			[]string{"PROBLEM  scope", "403 insufficient_scope"}, nil},
		// serve's default resource is the address it binds (localhost binds 127.0.0.1), so
		// check must judge a token's aud against that same URL, not the literal listen text.
		{"listen named localhost", []string{"--issuer", iss.URL(), "--listen", "localhost:8080", "--user-claim", "preferred_username", "--worker", "demo", "--token", good}, 0,
			[]string{"audience " + resource, "OK       aud", "would accept this token"}, []string{"PROBLEM"}},
		{"not a token", append(base, "--token", "nonsense"), 1,
			[]string{"PROBLEM  header", "would refuse"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := checkCommand(context.Background(), tt.args, &out, &errOut)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q", w)
				}
			}
			for _, part := range strings.Split(good, ".") {
				if strings.Contains(out.String()+errOut.String(), part) {
					t.Errorf("the token is printed")
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("output:\n%s%s", out.String(), errOut.String())
			}
		})
	}
}

// With the issuer unreachable the claims are still explained and the output says the
// signature was not checked.
func TestCheckTokenIssuerUnreachable(t *testing.T) {
	iss, err := devissuer.Start(devissuer.Options{Audience: "http://127.0.0.1:8080/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Mint("alice", []string{"mcp:use"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	url := iss.URL()
	iss.Close()
	var out bytes.Buffer
	code := checkCommand(context.Background(), []string{"--issuer", url, "--listen", "127.0.0.1:8080", "--worker", "demo", "--token", tok}, &out, &out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, w := range []string{"SKIPPED  signature", "OK       iss", "OK       exp", "Verdict: cannot tell", "signature was not checked"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

func TestCheckTokenFromStdin(t *testing.T) {
	iss, err := devissuer.Start(devissuer.Options{Audience: "http://127.0.0.1:8080/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	tok, err := iss.Mint("alice", []string{"mcp:use"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, tok+"\n")
	w.Close()
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() {
		os.Stdin = old
		r.Close()
	})
	var out bytes.Buffer
	if code := checkCommand(context.Background(), []string{"--issuer", iss.URL(), "--listen", "127.0.0.1:8080", "--worker", "demo", "--token", "-"}, &out, &out); code != 0 {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}

// prompt_rules and resource_rules are read from the config file as tool_rules is, each with
// its own selector key, and reach the policy; the last file's list of a kind is in force.
func TestPromptAndResourceRulesSettings(t *testing.T) {
	first := writeFile(t, "first.yaml", "prompt_rules:\n  - prompts: [old]\n    scope: old\n")
	file := writeFile(t, "gemgate.yaml", "extra_scopes: [p:s]\nprompt_rules:\n  - name: p\n    prompts: [a_*]\n    scope: p:s\n"+
		"resource_rules:\n  - name: r\n    uris: [\"file:///hr/*\"]\n    allow: 'uri.startsWith(\"file:\") && \"hr\" in groups'\n")
	c, err := load("serve", []string{"--config", first, "--config", file})
	if err != nil {
		t.Fatal(err)
	}
	pc := c.policyConfig()
	if len(pc.PromptRules) != 1 || pc.PromptRules[0].Prompts[0] != "a_*" || len(pc.ResourceRules) != 1 || pc.ResourceRules[0].URIs[0] != "file:///hr/*" || len(pc.Rules) != 0 {
		t.Errorf("policy config: %+v", pc)
	}
	for body, want := range map[string]string{
		"prompt_rules:\n  - tools: [x]\n    scope: s\n":                `prompt_rules: line 2: rule 0, key "tools": is not one of name, prompts, scope, allow`,
		"resource_rules:\n  - uris: x\n":                               `resource_rules: line 2: rule 0, key "uris"`,
		"prompt_rules: []\nprompt_rules: []\n":                         `"prompt_rules" is set twice`,
		"resource_rules:\n  - allow: 'tool == \"x\"'\n":                `resource_rules[0].allow: ERROR: <input>:1:1: undeclared reference to 'tool'`,
		"prompt_rules:\n  - prompts: [x]\n    scope: offline_access\n": `prompt_rules[0].scope: offline_access`,
	} {
		c, err := load("serve", []string{"--config", writeFile(t, "bad.yaml", body)})
		if err == nil {
			_, err = policy.New(c.policyConfig())
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", body, err, want)
		}
	}
}

// A --tools file holding a whole JSON-RPC answer (what curl saves) is refused with the shape
// that is wanted.
func TestCheckTokenToolsFileShapeHint(t *testing.T) {
	iss, err := devissuer.Start(devissuer.Options{Audience: "http://127.0.0.1:8080/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	tok, err := iss.Mint("alice", []string{"mcp:use"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "answer.json", `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`)
	var out bytes.Buffer
	code := checkCommand(context.Background(), []string{"--issuer", iss.URL(), "--listen", "127.0.0.1:8080", "--worker", "demo", "--token", tok, "--tools", file}, &out, &out)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if want := `only its "result"`; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	// A list result whose shape is right and one of whose items is not: the hint would send
	// the user looking for what is not wrong.
	file = writeFile(t, "result.json", `{"tools":[{"name":7}]}`)
	out.Reset()
	code = checkCommand(context.Background(), []string{"--issuer", iss.URL(), "--listen", "127.0.0.1:8080", "--worker", "demo", "--token", tok, "--tools", file}, &out, &out)
	if code != 2 || strings.Contains(out.String(), `only its "result"`) {
		t.Errorf("a list result with a malformed item: exit %d (want 2), and no hint about the result's shape:\n%s", code, out.String())
	}
}

// An issuer spelt otherwise than the identity provider names itself (localhost for
// 127.0.0.1) answers, so check's fix names the spelling to set, not reachability.
func TestCheckIssuerNamedOtherwise(t *testing.T) {
	iss, err := devissuer.Start(devissuer.Options{Audience: "http://127.0.0.1:8080/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { iss.Close() })
	other := strings.Replace(iss.URL(), "127.0.0.1", "localhost", 1)
	var out bytes.Buffer
	code := checkCommand(context.Background(), unsandboxed("--issuer", other, "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &out)
	if want := "fix: set issuer to \"" + iss.URL() + "\", exactly as the identity provider names itself"; code != 1 || !strings.Contains(out.String(), want) {
		t.Errorf("exit %d, want 1 and %q:\n%s", code, want, out.String())
	}
	if _, ok := auth.IssuerNamedOtherwise(errors.New("dial tcp: connection refused")); ok {
		t.Error("an unreachable issuer read as one named otherwise")
	}

	// Both names long enough that the error's text is clipped: the fix is still read, from
	// the error itself, not its text.
	long := "/realms/" + strings.Repeat("a", 150)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := strings.Cut(r.Host, ":") // asked as localhost, it names itself 127.0.0.1
		w.Write([]byte(`{"issuer":"http://127.0.0.1:` + port + long + `","jwks_uri":"http://` + r.Host + `/keys"}`))
	}))
	defer srv.Close()
	out.Reset()
	other = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + long
	code = checkCommand(context.Background(), unsandboxed("--issuer", other, "--listen", "127.0.0.1:0", "--metrics-listen", "off"), &out, &out)
	if want := "fix: set issuer to \"" + srv.URL + long + "\""; code != 1 || !strings.Contains(out.String(), want) {
		t.Errorf("long issuer names: exit %d, want 1 and %q:\n%s", code, want, out.String())
	}
}
