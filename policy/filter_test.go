package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFilterToolsList(t *testing.T) {
	tool := func(i int) string {
		var raw struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal([]byte(untidyResult), &raw); err != nil {
			t.Fatal(err)
		}
		return string(raw.Tools[i])
	}
	const prefix = `{ "nextCursor" :"c\u00e9-2" ,
  "tools": `
	const suffix = `,
  "_meta": {"tools":"not this one", "z": 1e3}  }`
	wantHints := map[string]bool{"execute_code": false, "peek": true, "drop_class": false}

	tests := []struct {
		name   string
		trust  bool
		scopes []string
		want   string
		counts ListCounts // a rule's refusal counts as neither allowed nor read-only
	}{
		{"read-write keeps all but rule-gated", false, []string{"mcp:use", "mcp:write"},
			prefix + "[" + tool(0) + "," + tool(1) + "," + tool(2) + "," + tool(4) + "]" + suffix, ListCounts{4, 0, 5}},
		{"read-only keeps safe list", false, []string{"mcp:use"},
			prefix + "[" + tool(0) + "," + tool(4) + "]" + suffix, ListCounts{2, 2, 5}},
		{"read-only trusted hints", true, []string{"mcp:use"},
			prefix + "[" + tool(0) + "," + tool(2) + "," + tool(4) + "]" + suffix, ListCounts{3, 1, 5}},
		{"read-only admin", false, []string{"mcp:use", "admin"},
			prefix + "[" + tool(0) + "," + tool(4) + "]" + suffix, ListCounts{2, 3, 5}},
		{"missing required scope drops everything, and says why in _meta", false, []string{"mcp:write"},
			prefix + "[]" + strings.Replace(suffix, `{"tools"`, `{"gemgate/hidden":{"explanation":"gemgate hides all 5 tools the worker listed in this answer from this token: the token lacks a required scope"},"tools"`, 1), ListCounts{0, 0, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filterPolicy(t, tt.trust)
			got, hints, counts, err := p.FilterList("tools/list", decide(p, tt.scopes), json.RawMessage(untidyResult))
			if err != nil {
				t.Fatalf("FilterToolsList: %v", err)
			}
			if counts != tt.counts {
				t.Errorf("counts %+v, want %+v", counts, tt.counts)
			}
			if string(got) != tt.want {
				t.Errorf("result:\n got %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("result is not valid JSON: %s", got)
			}
			if diff := cmp.Diff(wantHints, readOnlyHints(hints)); diff != "" {
				t.Errorf("hints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterToolsListKeepsAllUnchanged(t *testing.T) {
	p := filterPolicy(t, false)
	a := decide(p, []string{"mcp:use", "mcp:write", "admin"})
	got, _, _, err := p.FilterList("tools/list", a, json.RawMessage(untidyResult))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != untidyResult {
		t.Errorf("nothing removed but bytes changed:\n%s", got)
	}
}

func TestFilterToolsListNextCursor(t *testing.T) {
	p := filterPolicy(t, false)
	in := `{"tools":[{"name":"list_a"},{"name":"write_b"}],"nextCursor":"abc=="}`
	got, _, _, err := p.FilterList("tools/list", decide(p, []string{"mcp:use"}), json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tools":[{"name":"list_a"}],"nextCursor":"abc=="}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestFilterToolsListEscapes(t *testing.T) {
	p := filterPolicy(t, false)
	in := `{"t\u006fols":[{"n\u0061me":"list_\u0061"},{"name":"exec\"ute"},{"name":"list_b","d":"\\\"\\"}]}`
	got, _, _, err := p.FilterList("tools/list", decide(p, []string{"mcp:use"}), json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"t\u006fols":[{"n\u0061me":"list_\u0061"},{"name":"list_b","d":"\\\"\\"}]}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestFilterToolsListEmpty(t *testing.T) {
	p := filterPolicy(t, false)
	for _, in := range []string{`{"tools":[]}`, `{"tools": [ ] , "nextCursor": null}`, " {\"tools\":[]}\n"} {
		got, hints, _, err := p.FilterList("tools/list", decide(p, []string{"mcp:use"}), json.RawMessage(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if string(got) != in || len(hints) != 0 {
			t.Errorf("%s: got %s, %v", in, got, hints)
		}
	}
}

func TestFilterToolsListDuplicateNames(t *testing.T) {
	p := filterPolicy(t, true)
	ro := decide(p, []string{"mcp:use"})
	tests := []struct {
		name      string
		in        string
		want      string
		wantHints map[string]bool
	}{
		{
			"all hint true",
			`{"tools":[{"name":"x","annotations":{"readOnlyHint":true}},{"name":"x","annotations":{"readOnlyHint":true},"v":2}]}`,
			`{"tools":[{"name":"x","annotations":{"readOnlyHint":true}},{"name":"x","annotations":{"readOnlyHint":true},"v":2}]}`,
			map[string]bool{"x": true},
		},
		{
			"one hint false hides both",
			`{"tools":[{"name":"x","annotations":{"readOnlyHint":true}},{"name":"x","annotations":{"readOnlyHint":false}},{"name":"list_y"}]}`,
			`{"tools":[{"name":"list_y"}]}`,
			map[string]bool{"x": false},
		},
		{
			"one without hint hides both",
			`{"tools":[{"name":"x"},{"name":"x","annotations":{"readOnlyHint":true}}]}`,
			`{"_meta":{"gemgate/hidden":{"explanation":"gemgate hides all 2 tools the worker listed in this answer from this token: the token is read-only (no scope mcp:write) and the operator vouched for none of them (read_only_tools, trust_read_only_hints, or a preset from policy/presets)"}},"tools":[]}`,
			map[string]bool{"x": false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, hints, _, err := p.FilterList("tools/list", ro, json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantHints, readOnlyHints(hints)); diff != "" {
				t.Errorf("hints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterToolsListMalformed(t *testing.T) {
	p := filterPolicy(t, true)
	a := decide(p, []string{"mcp:use", "mcp:write"})
	for name, in := range map[string]string{
		"empty":                   ``,
		"not json":                `tools`,
		"array":                   `[{"name":"x"}]`,
		"null":                    `null`,
		"no tools":                `{"nextCursor":"x"}`,
		"tools null":              `{"tools":null}`,
		"tools object":            `{"tools":{"name":"x"}}`,
		"tool not object":         `{"tools":["x"]}`,
		"tool null":               `{"tools":[null]}`,
		"tool without name":       `{"tools":[{"description":"x"}]}`,
		"empty name":              `{"tools":[{"name":""}]}`,
		"name not string":         `{"tools":[{"name":3}]}`,
		"name twice":              `{"tools":[{"name":"list_a","name":"execute_code"}]}`,
		"name other case":         `{"tools":[{"name":"list_a","Name":"execute_code"}]}`,
		"tools twice":             `{"tools":[],"tools":[{"name":"x"}]}`,
		"tools other case":        `{"tools":[],"TOOLS":[{"name":"x"}]}`,
		"annotations not object":  `{"tools":[{"name":"x","annotations":[]}]}`,
		"annotations twice":       `{"tools":[{"name":"x","annotations":{},"annotations":{}}]}`,
		"annotations other case":  `{"tools":[{"name":"x","Annotations":{"readOnlyHint":true}}]}`,
		"hint not bool":           `{"tools":[{"name":"x","annotations":{"readOnlyHint":"true"}}]}`,
		"hint twice":              `{"tools":[{"name":"x","annotations":{"readOnlyHint":false,"readOnlyHint":true}}]}`,
		"hint other case":         `{"tools":[{"name":"x","annotations":{"readOnlyHint":false,"readonlyhint":true}}]}`,
		"truncated":               `{"tools":[{"name":"x"}`,
		"truncated in skipped":    `{"tools":[{"name":"x","inputSchema":{"a":`,
		"bad skipped value":       `{"tools":[{"name":"x","inputSchema":{"a":tru}}]}`,
		"bad other field":         `{"nextCursor":[1,],"tools":[]}`,
		"trailing data":           `{"tools":[]} x`,
		"trailing object":         `{"tools":[]}{"tools":[]}`,
		"trailing comma in tools": `{"tools":[{"name":"x"},]}`,
		"name not UTF-8":          "{\"tools\":[{\"name\":\"\xdc\",\"annotations\":{\"readOnlyHint\":true}}]}",
		"skipped field not UTF-8": "{\"tools\":[{\"name\":\"x\",\"description\":\"\xff\"}]}",
	} {
		t.Run(name, func(t *testing.T) {
			got, hints, _, err := p.FilterList("tools/list", a, json.RawMessage(in))
			if err == nil {
				t.Fatalf("FilterToolsList(%s) = %s, %v; want error", in, got, hints)
			}
			if !errors.Is(err, ErrMalformedList) {
				t.Errorf("error %v does not wrap ErrMalformedList", err)
			}
			if got != nil || hints != nil {
				t.Errorf("error with result %s, %v", got, hints)
			}
		})
	}
}

// readOnlyHints is the readOnlyHint of each annotated tool.
func readOnlyHints(hints map[string]Hints) map[string]bool {
	out := make(map[string]bool, len(hints))
	for name, h := range hints {
		out[name] = h.ReadOnly
	}
	return out
}
