package policy

import (
	"encoding/json"
	"slices"
	"testing"
)

func FuzzFilterToolsList(f *testing.F) {
	f.Add([]byte(untidyResult))
	f.Add(realisticToolsList(3))
	f.Add([]byte(`{"tools":[{"name":"a\"b\\","annotations":{"readOnlyHint":true}},{"name":"list_x","v":[1,-2.5e3,true,null,"\\\""]}]}`))
	f.Add([]byte(`{"tools":[{"n\u0061me":"x"}]}`))
	f.Add([]byte(`{"tools":[]}`))
	p := filterPolicy(f, true)
	ro := decide(p, []string{"mcp:use"})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, hints, _, err := p.FilterList("tools/list", ro, in)
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

// FuzzFilterPromptAndResourceLists: whatever the bytes of a prompts/list, resources/list or
// resources/templates/list result, what the filter keeps, read as a client reads it
// (encoding/json), is only what the policy allows; and the filter reads the names and URIs
// a client reads.
func FuzzFilterPromptAndResourceLists(f *testing.F) {
	f.Add([]byte(`{"prompts":[{"name":"summarize"},{"name":"salary","arguments":[{"name":"x"}]}],"nextCursor":"n"}`))
	f.Add([]byte(`{"resources":[{"uri":"file:///hr/pay.csv"},{"uri":"file:///a/secret/k","name":"s"}],"_meta":{}}`))
	f.Add([]byte(`{"resourceTemplates":[{"uriTemplate":"file:///hr/{x}"},{"uriTemplate":"file:///docs/{p}"}]}`))
	f.Add([]byte(`{"prompts":[{"n\u0061me":"salary"}],"resources":[{"URI":"file:///hr/a"}]}`))
	p := kindsPolicy(f)
	ro := p.DecideToken(tok("mcp:use", nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, s := range listShapes[1:] {
			out, _, _, err := p.FilterList(s.method, ro, in)
			if err != nil {
				continue
			}
			names, _, err := ListNames(s.method, in)
			if err != nil {
				t.Fatalf("%s: filtered %q but ListNames: %v", s.method, in, err)
			}
			if got := clientNames(t, s, in); !slices.Equal(got, names) {
				t.Fatalf("%s: gemgate reads %q, a client %q in %q", s.method, names, got, in)
			}
			for _, name := range clientNames(t, s, out) {
				if v, _ := p.ExplainKind(s.kind, ro, name, nil); v != Allowed {
					t.Fatalf("%s: kept %q with verdict %v in %q", s.method, name, v, out)
				}
			}
		}
	})
}

// clientNames reads the names (URIs) of a list as encoding/json does.
func clientNames(t *testing.T, s listShape, b []byte) []string {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(res[s.array], &items); err != nil {
		t.Fatalf("%s in %q: %v", s.array, b, err)
	}
	names := make([]string, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it[s.key], &names[i]); err != nil {
			t.Fatalf("%s in %q: %v", s.key, b, err)
		}
	}
	return names
}
