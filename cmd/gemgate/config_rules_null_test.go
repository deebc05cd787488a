package main

import (
	"strings"
	"testing"
)

// A rule's value left null (`allow:` with nothing after it, as a template whose variable was
// empty writes it) is refused as a setting's is, not read as a key left out: a rule meant to
// need a scope and a claim would need only one of them, silently. So is a value of another
// YAML type (!!binary, which the YAML decoder turns into its bytes).
func TestConfigFileRuleNullValueIsRefused(t *testing.T) {
	const head = "issuer: https://id.example\ntool_rules:\n  - name: admins-delete\n    tools: [delete_note]\n"
	for _, rule := range []string{
		"    scope: notes:admin\n    allow:\n",
		"    scope: ~\n    allow: '\"admin\" in roles'\n",
		"    scope: notes:admin\n    allow: null\n",
		"    scope: !!binary bm90ZXM6YWRtaW4=\n",
		"    tools: [delete_note, ~]\n    scope: notes:admin\n",
	} {
		body := head + rule
		if strings.Contains(rule, "tools:") {
			body = "issuer: https://id.example\ntool_rules:\n  - name: admins-delete\n" + rule
		}
		file := writeFile(t, "gemgate.yaml", body)
		c, err := load("serve", []string{"--config", file})
		if err != nil {
			if !strings.Contains(err.Error(), "tool_rules") {
				t.Errorf("%q: refused without naming tool_rules: %v", rule, err)
			}
			continue
		}
		t.Errorf("%q was accepted: %+v", rule, c.Rules[0])
	}
}
