package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// realisticToolsList builds a tools/list result of n tools shaped like a GemStone worker's:
// prose descriptions, closed input schemas with a few typed properties, output schemas on
// some, annotations on most.
func realisticToolsList(n int) []byte {
	verbs := []string{"list", "find", "get", "describe", "compile", "execute", "remove", "rename"}
	var tools []string
	for i := range n {
		verb := verbs[i%len(verbs)]
		name := fmt.Sprintf("%s_thing_%03d", verb, i)
		desc := strings.Repeat(fmt.Sprintf("%s a class, method or category in the image (%d). ", verb, i), 4) +
			"Returns a structured result; see the output schema. Errors come back as isError results with structuredContent.error.kind."
		schema := fmt.Sprintf(`{"type":"object","properties":{"className":{"type":"string","description":"Name of the class, e.g. OrderedCollection"},"selector":{"type":"string","description":"Method selector, e.g. add:withOccurrences:"},"meta":{"type":"boolean","description":"Class side when true","default":false},"limit":{"type":"integer","minimum":1,"maximum":1000,"default":%d},"categories":{"type":"array","items":{"type":"string"}}},"required":["className"],"additionalProperties":false}`, 50+i)
		t := fmt.Sprintf(`{"name":%q,"title":"%s thing %d","description":%q,"inputSchema":%s`, name, verb, i, desc, schema)
		if i%3 == 0 {
			t += `,"outputSchema":{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}},"count":{"type":"integer"}},"required":["items"]}`
		}
		if i%4 != 0 {
			ro := verb == "list" || verb == "find" || verb == "get" || verb == "describe"
			t += fmt.Sprintf(`,"annotations":{"title":"%s","readOnlyHint":%t,"destructiveHint":%t,"openWorldHint":false}`, name, ro, verb == "remove")
		}
		tools = append(tools, t+"}")
	}
	return []byte(`{"tools":[` + strings.Join(tools, ",") + `],"nextCursor":"page-2"}`)
}

func TestRealisticToolsList(t *testing.T) {
	in := realisticToolsList(200)
	if !json.Valid(in) {
		t.Fatal("benchmark input is not valid JSON")
	}
	p := mustNew(t, Config{ReadOnlyTools: []string{"list_*", "find_*"}})
	out, hints, err := p.FilterToolsList(p.Decide([]string{"mcp:use"}), in)
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
		a := p.Decide(bc.scopes)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := p.FilterToolsList(a, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
