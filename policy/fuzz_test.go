package policy

import (
	"encoding/json"
	"testing"
)

func FuzzFilterToolsList(f *testing.F) {
	f.Add([]byte(untidyResult))
	f.Add(realisticToolsList(3))
	f.Add([]byte(`{"tools":[{"name":"a\"b\\","annotations":{"readOnlyHint":true}},{"name":"list_x","v":[1,-2.5e3,true,null,"\\\""]}]}`))
	f.Add([]byte(`{"tools":[{"n\u0061me":"x"}]}`))
	f.Add([]byte(`{"tools":[]}`))
	p := filterPolicy(f, true)
	ro := p.Decide([]string{"mcp:use"})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, hints, err := p.FilterToolsList(ro, in)
		if err != nil {
			return
		}
		if !json.Valid(in) || !json.Valid(out) {
			t.Fatalf("accepted %q, returned %q", in, out)
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("result %q: %v", out, err)
		}
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(res["tools"], &tools); err != nil {
			t.Fatalf("tools in %q: %v", out, err)
		}
		for _, tool := range tools {
			var name string
			if err := json.Unmarshal(tool["name"], &name); err != nil {
				t.Fatalf("name in %q: %v", out, err)
			}
			var hint *Hints
			if h, ok := hints[name]; ok {
				hint = &h
			}
			if v := p.CheckTool(ro, name, hint); v != Allowed {
				t.Fatalf("kept %q with verdict %v in %q", name, v, out)
			}
		}
	})
}
