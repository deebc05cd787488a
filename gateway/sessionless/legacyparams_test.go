package sessionless

import (
	"encoding/json"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// oldLegacyParams is legacyParams as a json.Marshal of maps: the bytes it must keep.
func oldLegacyParams(mr *checks) json.RawMessage {
	info := json.RawMessage(`{"name":"gemgate-modern-client","version":"0"}`)
	if mr.ClientInfo != nil {
		info = mr.ClientInfo
	}
	caps := map[string]any{}
	for _, k := range []string{"sampling", "elicitation", "roots"} {
		if mr.Caps.Has(k) {
			caps[k] = map[string]any{}
		}
	}
	out, _ := json.Marshal(map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": info})
	return out
}

// TestLegacyParamsBytes: the initialize params of a sessionless request are byte for byte what
// json.Marshal made of them, for every set of bridged capabilities and client infos compact,
// spaced, and holding what json.Marshal escapes.
func TestLegacyParamsBytes(t *testing.T) {
	capSets := []string{`{}`, `{"roots":{}}`, `{"sampling":{},"elicitation":{"form":{}}}`,
		`{"elicitation":{},"roots":{"listChanged":true},"sampling":{},"experimental":{}}`, `{"other":{}}`}
	infos := []string{"", `{"name":"c","version":"1"}`, `{ "name" : "c",` + "\n\t" + `"version":"1" }`,
		`{"name":"<b>&co</b>","version":"1"}`, "{\"name\":\"a\u2028b\u2029c\",\"version\":\"1\"}", `{"name":"grüße 日本","version":"1"}`}
	for _, c := range capSets {
		caps, err := jsonrpc.ReadObject([]byte(c), "caps")
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			mr := &checks{Caps: caps}
			if info != "" {
				mr.ClientInfo = []byte(info)
			}
			if got, want := legacyParams(mr, "2025-11-25"), oldLegacyParams(mr); string(got) != string(want) {
				t.Errorf("caps %s, info %q:\n got %s\nwant %s", c, info, got, want)
			}
		}
	}
}

// TestLegacyParamsAllocs: a sessionless request's initialize params cost one allocation.
func TestLegacyParamsAllocs(t *testing.T) {
	caps, _ := jsonrpc.ReadObject([]byte(`{"elicitation":{},"roots":{}}`), "caps")
	mr := &checks{Caps: caps, ClientInfo: []byte(`{"name":"bench","version":"1"}`)}
	if n := testing.AllocsPerRun(100, func() { legacyParams(mr, "2025-11-25") }); n > 1 {
		t.Fatalf("%.0f allocations, want 1", n)
	}
}
