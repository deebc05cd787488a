package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// session is the user's worker gem: its McpServer and its external-session fetch buffer.
type session struct {
	cfg             Config
	user, stone     string
	readOnly        bool // McpServer sessionReadOnly: took effect (server 0.8.0)
	commitsDisabled bool // System disableCommitsWithReason: took effect
	buf             []byte
}

// tool is one of the native server's 31 base tools, from its README's tool tables.
type tool struct {
	name, desc string
	args       []string // required first; a trailing ? marks an optional one
	safe       bool     // in the server's read-only-safe list ("What's gated")
}

var tools = []tool{
	{"execute_code", "printString of evaluating the Smalltalk source", []string{"code"}, false},
	{"abort", "abort the transaction, refresh the view", nil, true},
	{"commit", "commit the transaction", nil, false},
	{"refresh", "refresh the view to see other sessions' commits", nil, true},
	{"status", "session user, id, stone, uncommitted-changes flag", nil, true},
	{"list_all_classes", "every class across all dictionaries", nil, true},
	{"list_classes", "classes in a dictionary", []string{"dictionaryName"}, true},
	{"list_dictionaries", "symbol dictionaries in lookup order", nil, true},
	{"list_dictionary_entries", "every entry, tagged (class)/(global)", []string{"dictionaryName"}, true},
	{"describe_class", "superclass, instance vars, selectors", []string{"className"}, true},
	{"export_class_source", "full Topaz file-in (definition + methods)", []string{"className"}, true},
	{"get_class_definition", "class-definition source expression", []string{"className"}, true},
	{"get_class_hierarchy", "superclass chain + direct subclasses", []string{"className"}, true},
	{"get_method_source", "method source", []string{"className", "selector", "meta?"}, true},
	{"list_methods", "instance + class selectors grouped by category", []string{"className"}, true},
	{"find_implementors", "methods implementing the selector", []string{"selector"}, true},
	{"find_references_to", "methods referencing a named global/class", []string{"name"}, true},
	{"find_senders", "methods sending the selector", []string{"selector"}, true},
	{"search_method_source", "methods whose source contains the substring", []string{"pattern", "dictionaryName?"}, true},
	{"add_dictionary", "create + append a dictionary, commit", []string{"dictionaryName"}, false},
	{"compile_class_definition", "evaluate a class-definition expression, commit", []string{"source", "recompileMethods?"}, false},
	{"compile_method", "compile a method, commit", []string{"className", "source", "category?", "meta?"}, false},
	{"delete_class", "remove a class, commit (destructive)", []string{"className"}, false},
	{"delete_method", "remove a method, commit (destructive)", []string{"className", "selector", "meta?"}, false},
	{"remove_dictionary", "remove a dictionary, commit (destructive)", []string{"dictionaryName"}, false},
	{"set_class_comment", "set the class comment, commit", []string{"className", "comment"}, false},
	{"describe_test_failure", "re-run one test in isolation, return the failure detail", []string{"className", "selector"}, true},
	{"list_failing_tests", "failing/erroring methods", []string{"classNames?"}, true},
	{"list_test_classes", "all TestCase subclasses", nil, true},
	{"run_test_class", "run a test class, summary + failures", []string{"className"}, true},
	{"run_test_method", "run one test method", []string{"className", "selector"}, true},
}

func (t tool) descriptor() map[string]any {
	props, required := map[string]any{}, []string{}
	for _, a := range t.args {
		name, optional := strings.CutSuffix(a, "?")
		typ := "string"
		if name == "meta" || name == "recompileMethods" {
			typ = "boolean"
		}
		props[name] = map[string]any{"type": typ}
		if !optional {
			required = append(required, name)
		}
	}
	return map[string]any{"name": t.name, "description": t.desc,
		"inputSchema": map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}}
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// handle is `McpServer handleJsonString:`: the JSON answer, or "" for a notification. stop
// says the gem went away (the crash fault).
func (s *session) handle(line string) (answer string, stop bool) {
	var req request
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		return `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, false
	}
	if req.ID == nil {
		return "", false
	}
	result := func(v any) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v})
		return string(b)
	}
	rpcErr := func(code int, msg string, data any) string {
		e := map[string]any{"code": code, "message": msg}
		if data != nil {
			e["data"] = data
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": e})
		return string(b)
	}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		v := p.ProtocolVersion
		if v != "2025-06-18" && v != "2025-11-25" {
			v = "2025-11-25"
		}
		return result(map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "gemstone-mcp", "version": s.cfg.Server}}), false
	case "ping":
		return result(map[string]any{}), false
	case "tools/list":
		list := []any{}
		for _, t := range tools {
			if t.safe || !s.readOnly {
				list = append(list, t.descriptor())
			}
		}
		return result(map[string]any{"tools": list}), false
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) != nil || p.Name == "" {
			return rpcErr(-32602, "Invalid params: missing tool name", nil), false
		}
		i := slices.IndexFunc(tools, func(t tool) bool { return t.name == p.Name })
		if i < 0 {
			return rpcErr(-32602, "Unknown tool: "+p.Name, nil), false
		}
		if s.readOnly && !tools[i].safe {
			return rpcErr(-32601, "Tool not available in a read-only session: "+p.Name, map[string]any{"kind": "readOnly"}), false
		}
		switch s.cfg.Fault {
		case "crash":
			os.Exit(1)
		case "stall":
			select {}
		}
		text, isErr := s.call(tools[i].name, p.Arguments)
		return result(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isErr}), false
	}
	return rpcErr(-32601, "Method not found: "+req.Method, nil), false
}

var stringNew = regexp.MustCompile(`^String new:\s*(\d+)\s+withAll:\s*\$(.)$`)

// call answers a tool call with canned results; execute_code evaluates two expression forms.
func (s *session) call(name string, args map[string]any) (string, bool) {
	switch name {
	case "status":
		return fmt.Sprintf("user: %s\nstone: %s\nread-only: %v\nuncommitted changes: false", s.user, s.stone, s.commitsDisabled), false
	case "commit":
		if s.commitsDisabled {
			return "commit failed: TransactionError 2249: commits are disabled (gemgate: read-only session)", true
		}
		return "committed", false
	case "execute_code":
		code, _ := args["code"].(string)
		code = strings.TrimSpace(code)
		if m := stringNew.FindStringSubmatch(code); m != nil {
			n, _ := strconv.Atoi(m[1])
			return "'" + strings.Repeat(m[2], n) + "'", false
		}
		if len(code) >= 2 && code[0] == '\'' && code[len(code)-1] == '\'' {
			return code, false // a String literal evaluates to itself; its printString is the literal
		}
		return "fakestone evaluates only a String literal or String new: <n> withAll: $<c>", true
	}
	return "fakestone: " + name + " done", false
}
