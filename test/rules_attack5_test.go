package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A resource or prompt that a rule hides, and that no scope would unlock, is answered as the
// worker answers one it does not have (docs/configuration.md, "Prompt and resource rules"):
// the same HTTP status, message and data but for the URI or name, in both eras, so that a
// refusal does not tell a hidden item from a missing one. Checked with the go-sdk
// everything-servers, whose message for a resource they lack is "Resource not found". (The
// code of a 2025-11-25 session's answer is the worker's SDK's: -32002 before go-sdk v1.7.0,
// -32602 from it on, SEP-2164; gemgate answers -32002 there.)
func TestHiddenItemAnsweredAsAMissingOne(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	cfg := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(cfg, []byte(promptRulesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, w := range confWorkers(t) {
		t.Run(w.Name, func(t *testing.T) {
			g := startServe(t, "--issuer", iss.URL(), "--worker", "command", "--worker-command", w.Bin, "--config", cfg)
			// Read-only, neither in the reviewers group nor with the admin role: the static binary
			// resource and the simple prompt are hidden from it, and no scope would show them.
			token := iss.mint(iss.claims(g.URL, "outsider", "mcp:use prompts:extra files:extra"))
			for _, era := range []string{"2025-11-25", "2026-07-28"} {
				t.Run(era, func(t *testing.T) {
					c := &itemCaller{t: t, url: g.URL, token: token}
					if era != "2026-07-28" {
						c.session = openLegacy(t, g.URL, token)
					}
					answer := func(method, key, value string) string {
						t.Helper()
						status, _, out := c.call(method, map[string]any{key: value})
						if out["error"] == nil {
							t.Fatalf("%s %s: %d, no error: %s", method, value, status, out["result"])
						}
						var e struct {
							Message string          `json:"message"`
							Data    json.RawMessage `json:"data"`
						}
						if err := json.Unmarshal(bytes.ReplaceAll(out["error"], []byte(value), []byte("ITEM")), &e); err != nil {
							t.Fatal(err)
						}
						return fmt.Sprintf("%d %q %s", status, e.Message, e.Data)
					}
					for _, tc := range []struct{ method, key, hidden, missing string }{
						{"resources/read", "uri", "test://static-binary", "test://no-such-resource"},
						{"prompts/get", "name", "test_simple_prompt", "no_such_prompt"},
					} {
						hidden, missing := answer(tc.method, tc.key, tc.hidden), answer(tc.method, tc.key, tc.missing)
						if hidden != missing {
							t.Errorf("%s: a hidden item is answered\n\t%s\nand a missing one\n\t%s", tc.method, hidden, missing)
						}
					}
				})
			}
		})
	}
}
