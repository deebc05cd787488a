package policy

import (
	"encoding/json"
	"testing"
)

func TestRealisticToolsList(t *testing.T) {
	in := realisticToolsList(200)
	if !json.Valid(in) {
		t.Fatal("benchmark input is not valid JSON")
	}
	p := mustNew(t, Config{ReadOnlyTools: []string{"list_*", "find_*"}})
	out, hints, err := p.FilterList("tools/list", decide(p, []string{"mcp:use"}), in)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 50 || got.NextCursor != "page-2" {
		t.Errorf("kept %d tools, cursor %q; want 50, page-2", len(got.Tools), got.NextCursor)
	}
	if len(hints) != 150 {
		t.Errorf("got %d hints, want 150", len(hints))
	}
}

func BenchmarkFilterToolsList(b *testing.B) {
	in := realisticToolsList(200)
	p := mustNew(b, Config{ReadOnlyTools: []string{"list_*", "find_*", "get_thing_001"}, Rules: []Rule{{Scope: "admin", Tools: []string{"remove_*"}}}})
	for _, bc := range []struct {
		name   string
		scopes []string
	}{
		{"read-only", []string{"mcp:use"}},
		{"read-write", []string{"mcp:use", "mcp:write", "admin"}},
	} {
		a := decide(p, bc.scopes)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := p.FilterList("tools/list", a, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
