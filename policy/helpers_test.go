package policy

import (
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

func filterPolicy(t testing.TB, trust bool) *Policy {
	return mustNew(t, Config{
		ReadOnlyTools:      []string{"list_*", "status"},
		TrustReadOnlyHints: trust,
		Rules:              []Rule{{Scope: "admin", Tools: []string{"drop_*"}}},
	})
}

// A result laid out the way a worker might send it: odd spacing, field order that is not
// alphabetical, escapes, unicode and numbers that re-encoding would change.
const untidyResult = `{ "nextCursor" :"c\u00e9-2" ,
  "tools": [
    {"name":"list_classes","description":"Lists \u0041ll classes","inputSchema":{"type":"object","properties":{}}, "n": 1.50},
    { "name" : "execute_code", "inputSchema": {"type":"object"}, "annotations": {"readOnlyHint": false, "title":"Run"} },
    {"annotations":{"readOnlyHint":true},"name":"peek","inputSchema":{"type":"object","additionalProperties":false}},
    {"name":"drop_class","annotations":{"destructiveHint":true}},
    {"name":"status","annotations":{"readOnlyHint":null},"_meta":{"x":[1,2,{"name":"nested"}]}}
  ],
  "_meta": {"tools":"not this one", "z": 1e3}  }`

func mustNew(t testing.TB, c Config) *Policy {
	t.Helper()
	p, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}
