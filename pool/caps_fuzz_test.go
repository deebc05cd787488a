package pool

import (
	"encoding/json"
	"testing"
)

// FuzzDeclaredCapabilityIsTheServersToo: a capability gemgate takes a session to declare (it
// then puts that kind of worker request to the client) is one a server reading the same
// initialize params with encoding/json (a go-sdk server: a pointer per capability, nil for
// absent or null) takes as declared too. The other way may differ (a key in another case,
// which encoding/json folds): gemgate then answers the worker itself, the safe side.
func FuzzDeclaredCapabilityIsTheServersToo(f *testing.F) {
	for _, seed := range []string{
		`{"capabilities":{"elicitation":{},"sampling":null,"roots":{"listChanged":true}}}`,
		`{"capabilities":{"elicitation":null}}`,
		`{"capabilities":{"Elicitation":{},"elicitation":null}}`,
		`{"capabilities":{"elicitation":{},"elicitation":null}}`,
		`{"capabilities":{"sampling":false,"roots":[]}}`,
		`{"capabilities":{"sampling": {} }}`,
		`{"capabilities":null}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, params string) {
		got := ClientCapabilities(json.RawMessage(params))
		var server struct {
			Capabilities struct {
				Sampling    *struct{} `json:"sampling"`
				Elicitation *struct{} `json:"elicitation"`
				Roots       *struct{} `json:"roots"`
			} `json:"capabilities"`
		}
		err := json.Unmarshal([]byte(params), &server)
		c := server.Capabilities
		for _, d := range []struct {
			name        string
			gemgate, by bool
		}{
			{"sampling", got.Sampling, c.Sampling != nil},
			{"elicitation", got.Elicitation, c.Elicitation != nil},
			{"roots", got.Roots, c.Roots != nil},
		} {
			if d.gemgate && (err != nil || !d.by) {
				t.Errorf("%s: gemgate takes %s as declared; encoding/json reads it %v (error %v)", params, d.name, d.by, err)
			}
		}
	})
}
