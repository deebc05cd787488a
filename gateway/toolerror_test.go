package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// isToolError decides as encoding/json reads the result: a key spelled in escapes or in
// another case is isError too, and no search for the exact text may miss it.
func TestIsToolErrorReadsAsEncodingJSON(t *testing.T) {
	cases := []string{
		`{"content":[],"isError":true}`,
		`{"content":[],"isError":false}`,
		`{"content":[],"is\u0045rror":true}`,
		`{"content":[],"ISERROR":true}`,
		`{"content":[],"i\u017fError":true}`,
		`{"content":[{"type":"text","text":"a \"isError\":true inside a string"}]}`,
		`{"content":[{"type":"text","text":"line\nbreaks, and a long text ` + strings.Repeat("x", 1000) + `"}],"isError":true}`,
		`{"content":[{"type":"text","text":"\\"}],"isError":true}`,
		`{"content":[{"type":"text","text":"\\\""}],"is\u0045rror":true}`,
		`{"isError":true,"isError":false}`,
	}
	for _, c := range cases {
		var r struct {
			IsError bool `json:"isError"`
		}
		want := json.Unmarshal([]byte(c), &r) == nil && r.IsError
		if got := isToolError(json.RawMessage(c)); got != want {
			t.Errorf("isToolError(%.80s) = %v, encoding/json reads %v", c, got, want)
		}
	}
}

// FuzzIsToolErrorAgrees holds isToolError to a plain decode on any valid JSON.
func FuzzIsToolErrorAgrees(f *testing.F) {
	f.Add([]byte(`{"is\u0045rror":true}`))
	f.Add([]byte(`{"a":"\\\"","isError":true}`))
	f.Add([]byte(`{"a":"\"isError\":true"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var r struct {
			IsError bool `json:"isError"`
		}
		want := json.Unmarshal(b, &r) == nil && r.IsError
		if got := isToolError(b); got != want {
			t.Fatalf("isToolError(%q) = %v, encoding/json reads %v", b, got, want)
		}
	})
}
