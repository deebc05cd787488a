package policy

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolNamesWalk covers the walk's edges that the filter tests do not
// reach: empty objects in the middle of a tool, a string that starts with an escape, and
// ListNames' own refusal of what FilterList refuses.
func TestToolNamesWalk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty annotations before the name", `{"tools":[{"annotations":{},"name":"a"},{"name":"b"}]}`, []string{"a", "b"}},
		{"empty annotations last", `{"tools":[{"name":"a","annotations":{}},{"name":"b"}]}`, []string{"a", "b"}},
		{"empty result object after tools", `{"tools":[{"name":"a"}],"_meta":{}}`, []string{"a"}},
		{"name starts with an escape", `{"tools":[{"name":"\u0061b"}]}`, []string{"ab"}},
		{"name is one escape", `{"tools":[{"name":"\"","x":1}]}`, []string{`"`}},
		{"key starts with an escape", `{"tools":[{"\u006eame":"a"}]}`, []string{"a"}},
		{"escaped backslash before the closing quote", `{"tools":[{"name":"a\\","d":"\\\\"},{"name":"b"}]}`, []string{`a\`, "b"}},
		{"no tools", `{"tools":[]}`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := ListNames("tools/list", json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("ToolNames(%s): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ToolNames(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestToolNamesRefusesMalformed(t *testing.T) {
	for _, in := range []string{``, `{"tools":[{"name":""}]}`, `{"tools":[],"Tools":[]}`, `{"x":{}}`} {
		names, _, err := ListNames("tools/list", json.RawMessage(in))
		if !errors.Is(err, ErrMalformedList) {
			t.Errorf("ToolNames(%s) = %q, %v; want ErrMalformedList", in, names, err)
		}
		if names != nil {
			t.Errorf("ToolNames(%s) returned names %q with its error", in, names)
		}
	}
}

// TestFilterToolsListEmptyAnnotations keeps a tool's bytes exact when its annotations
// object is empty, and gives it no hint.
func TestFilterToolsListEmptyAnnotations(t *testing.T) {
	p := filterPolicy(t, true)
	in := `{"tools":[{"annotations":{},"name":"list_a"},{"name":"x","annotations":{ }}]}`
	got, hints, _, err := p.FilterList("tools/list", decide(p, []string{"mcp:use"}), json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tools":[{"annotations":{},"name":"list_a"}]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if len(hints) != 0 {
		t.Errorf("hints = %v, want none", hints)
	}
}
