package sessionless

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestDiscoverFromInit: server/discover answers with the revisions gemgate serves, the
// worker's capabilities without tasks (which gemgate does not serve), its serverInfo in _meta
// (from a legacy InitializeResult or a sessionless worker's own answer), its instructions, and
// cacheScope private: which worker answers depends on who asks.
func TestDiscoverFromInit(t *testing.T) {
	type result struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		ResultType        string                     `json:"resultType"`
		CacheScope        string                     `json:"cacheScope"`
		Instructions      *string                    `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	discover := func(init string) (result, error) {
		t.Helper()
		var r result
		out, err := discoverFromInit(json.RawMessage(init), testServed)
		if err != nil {
			return r, err
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return r, nil
	}

	r, err := discover(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"tasks":{"list":{}},
		"extensions":{"io.modelcontextprotocol/tasks":{},"x.example/other":{}}},"serverInfo":{"name":"gem","version":"1"},"instructions":"Be kind."}`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.SupportedVersions, testServed) || r.ResultType != "complete" || r.CacheScope != "private" {
		t.Errorf("versions %v, resultType %q, cacheScope %q", r.SupportedVersions, r.ResultType, r.CacheScope)
	}
	if _, ok := r.Capabilities["tasks"]; ok || string(r.Capabilities["tools"]) != `{"listChanged":true}` ||
		string(r.Capabilities["extensions"]) != `{"x.example/other":{}}` {
		t.Errorf("capabilities %v, want tools and the other extension, no tasks", r.Capabilities)
	}
	if string(r.Meta[MetaServerInfo]) != `{"name":"gem","version":"1"}` || r.Instructions == nil || *r.Instructions != "Be kind." {
		t.Errorf("_meta %v, instructions %v", r.Meta, r.Instructions)
	}

	// A sessionless worker's own discover answer: serverInfo in _meta; no instructions.
	r, err = discover(`{"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"own","version":"2"}}}`)
	if err != nil || string(r.Meta[MetaServerInfo]) != `{"name":"own","version":"2"}` || r.Instructions != nil {
		t.Errorf("a sessionless worker's answer: %+v, %v", r, err)
	}
	// No serverInfo object, or none at all: no _meta.
	for _, init := range []string{`{"capabilities":{},"serverInfo":"gem"}`, `{"capabilities":{}}`} {
		if r, err := discover(init); err != nil || r.Meta != nil {
			t.Errorf("%s: %+v, %v; want no _meta", init, r, err)
		}
	}
	for _, bad := range []string{`{"serverInfo":{}}`, `{"capabilities":[]}`, `{"capabilities":null}`, `[]`} {
		if _, err := discover(bad); err == nil {
			t.Errorf("%s: answered, want refused (no capabilities object)", bad)
		}
	}
}
