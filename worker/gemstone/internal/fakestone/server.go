package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// session is the user's worker gem: its McpServer and its external-session fetch buffer.
type session struct {
	cfg             Config
	user, stone     string
	netldi          string    // the NetLDI that forked the gem
	tempObjKB       string    // GEM_TEMPOBJ_CACHE_SIZE the gem was forked with
	names           [2]string // System cacheName: of the relay's gem and the user's
	readOnly        bool      // McpServer sessionReadOnly: took effect (server 0.8.0)
	commitsDisabled bool      // System disableCommitsWithReason: took effect
	dead            bool      // the gem is gone
	inFlight        bool      // a call is still in progress (the relay's wait raised under it)
	slowed          bool      // the first tools/call took Config.SlowFirstCallMS already
	buf             []byte
	methods         map[string]string // compiled by compile_method: "Class>>selector" to source
	globals         map[string]string // UserGlobals entries this session put, uncommitted: name to literal
}

// outcome is how a call ended in the user's session.
type outcome int

const (
	answered    outcome = iota
	remoteError         // an exception the MCP server did not handle: a GciError at the relay; the gem lives
	gemDied             // the user's gem is gone
)

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

// execute is the relay's nbExecute: of a request: refused by a session whose gem is gone or
// whose last call is still in progress, else handled by the MCP server.
func (s *session) execute(line string) (answer string, o outcome, desc string) {
	switch {
	case s.dead:
		return "", gemDied, s.goneText("GciError: the session is invalid")
	case s.inFlight:
		return "", remoteError, "a GciError occurred: a call is already in progress in this session"
	}
	return s.handle(line)
}

// handle is `McpServer handleJsonString:`: the JSON answer, or "" for a notification; or
// how the call failed in the user's session, with GemStone's description.
func (s *session) handle(line string) (answer string, o outcome, desc string) {
	var req request
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		return `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, answered, ""
	}
	s.logMeta(req.Params)
	if req.ID == nil {
		return "", answered, ""
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
			"serverInfo": map[string]any{"name": "gemstone-mcp", "version": s.cfg.Server}}), answered, ""
	case "ping":
		return result(map[string]any{}), answered, ""
	case "tools/list":
		list := []any{}
		for _, t := range tools {
			if t.safe || !s.readOnly {
				list = append(list, t.descriptor())
			}
		}
		return result(map[string]any{"tools": list}), answered, ""
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) != nil || p.Name == "" {
			return rpcErr(-32602, "Invalid params: missing tool name", nil), answered, ""
		}
		i := slices.IndexFunc(tools, func(t tool) bool { return t.name == p.Name })
		if i < 0 {
			return rpcErr(-32602, "Unknown tool: "+p.Name, nil), answered, ""
		}
		if s.readOnly && !tools[i].safe {
			return rpcErr(-32601, "Tool not available in a read-only session: "+p.Name, map[string]any{"kind": "readOnly"}), answered, ""
		}
		if answer, o, desc, ok := s.fault(); ok {
			return answer, o, desc
		}
		if code, _ := p.Arguments["code"].(string); tools[i].name == "execute_code" && strings.Contains(code, "halt") {
			// McpServer's tools catch Error; a Halt is not one, so it stops the remote execution
			// and reaches the relay as a GciError. The user's session lives on.
			return "", remoteError, "a Halt occurred (" + strings.TrimSpace(code) + ")"
		}
		text, isErr := s.call(tools[i].name, p.Arguments)
		return result(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isErr}), answered, ""
	}
	return rpcErr(-32601, "Method not found: "+req.Method, nil), answered, ""
}

// logMeta appends the request's params._meta to Config.MetaLog, when that names a file.
func (s *session) logMeta(params json.RawMessage) {
	if s.cfg.MetaLog == "" {
		return
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(params, &p)
	f, err := os.OpenFile(s.cfg.MetaLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakestone: meta_log:", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\n", cmp.Or(string(p.Meta), "null"))
}

// fault is what the configured fault does to a tools/call; ok is false when the call goes on.
func (s *session) fault() (answer string, o outcome, desc string, ok bool) {
	if s.cfg.SlowFirstCallMS > 0 && !s.slowed {
		s.slowed = true
		signal.Ignore(syscall.SIGINT)
		time.Sleep(time.Duration(s.cfg.SlowFirstCallMS) * time.Millisecond)
	}
	switch s.cfg.Fault {
	case "crash":
		os.Exit(1)
	case "stall":
		stall()
	case "gem_dies":
		s.dead = true
		return "", gemDied, s.goneText("the connection to the user's gem was lost: its gem died"), true
	case "wait_raises":
		// The relay's wait raised while the call went on in the gem: its lastResult, read
		// later, would be this call's answer to another request.
		s.inFlight = true
		return "", remoteError, "a GciError occurred: waitForResultForSeconds:otherwise: was interrupted while the call was in progress", true
	}
	return "", answered, "", false
}

// goneText is a GciError's description for a gem that is gone, as GciError>>_error:in: makes
// one in the fatal band: GemStone's text, then the number and the session's description (the
// stone's NRS, the user, the gem's host, NetLDI and gemnetobject command line).
func (s *session) goneText(text string) string {
	return text + fatalMarker + "4100 for session stone NRS !tcp@stonehost.example#server!" + s.stone +
		" user " + s.user + " gem NRS !tcp@stonehost.example#netldi:" + s.netldi +
		"#dir:/opt/gemstone#log:/opt/gemstone/log/gemnetobject%N%P.log!gemnetobject"
}

var (
	disableCommits = regexp.MustCompile(`^System disableCommitsWithReason: '(?:[^']|'')*'$`)
	guardedSRO     = "(McpServer respondsTo: #sessionReadOnly:) ifTrue: [McpServer sessionReadOnly: true]"
	plainSRO       = "McpServer sessionReadOnly: true"
)

// evaluate runs one statement the relay sends to make the session read-only: ok, or the
// error's description; "" and not ok for a statement the fake cannot act out.
func (s *session) evaluate(st string) (desc string, ok bool) {
	has := s.cfg.Server != "unreleased" // McpServer class>>sessionReadOnly: (0.2 to 0.8)
	switch {
	case disableCommits.MatchString(st):
		s.commitsDisabled = true
	case st == guardedSRO:
		s.readOnly = s.readOnly || has
	case st == plainSRO:
		if !has {
			return "a MessageNotUnderstood occurred (error 2010), McpServer class does not understand  #'sessionReadOnly:'", false
		}
		s.readOnly = true
	case st == "true":
	default:
		return "", false
	}
	return "", true
}

// stall is a call whose gem never answers: the relay waits in waitForResultForSeconds: for
// good. The process stays alive, blocked in the kernel (a bare select would be killed by Go's
// deadlock detector within milliseconds), and it ignores the soft break (SIGINT), so only a
// stop (SIGTERM, SIGKILL) ends it.
func stall() {
	signal.Ignore(syscall.SIGINT)
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		os.Exit(1)
	}
	buf := make([]byte, 1)
	for {
		syscall.Read(p[0], buf) // nobody writes: blocks until the process is killed
	}
}

// fetch acts out GsTsExternalSession>>resolveResult: on a stone with #51438: the first 1024
// bytes land in a buffer that never shrinks, and the whole result is refetched only when the
// buffer has to grow, so a result between 1025 bytes and the buffer's size keeps a stale tail.
func (s *session) fetch(result string) string {
	if !s.cfg.Defect51438 {
		return result
	}
	if len(s.buf) < 1024 {
		s.buf = make([]byte, 1024)
	}
	if len(result) > len(s.buf) {
		s.buf = []byte(result)
		return result
	}
	copy(s.buf, result[:min(len(result), 1024)])
	return string(s.buf[:len(result)])
}

var (
	stringNew = regexp.MustCompile(`^String new:\s*(\d+)\s+withAll:\s*\$(.)$`)
	globalPut = regexp.MustCompile(`^UserGlobals at: #(\w+) put: ('(?:[^']|'')*')$`)
	globalAt  = regexp.MustCompile(`^UserGlobals at: #(\w+) ifAbsent: \[nil\]$`)
)

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
	case "compile_class_definition":
		return "compiled the class definition", false
	case "compile_method":
		class, _ := args["className"].(string)
		src, _ := args["source"].(string)
		sel := strings.Fields(src)
		if class == "" || len(sel) == 0 {
			return "compile_method needs className and source", true
		}
		s.methods[class+">>"+sel[0]] = src
		return "compiled " + class + ">>" + sel[0], false
	case "get_method_source":
		class, _ := args["className"].(string)
		sel, _ := args["selector"].(string)
		if src, ok := s.methods[class+">>"+sel]; ok {
			return src, false
		}
		return "no method " + class + ">>" + sel, true
	case "execute_code":
		code, _ := args["code"].(string)
		code = strings.TrimSpace(code)
		if strings.HasSuffix(code, "System commitTransaction") { // a write, as the real-stone checks make them
			if s.commitsDisabled {
				return "a TransactionError occurred (error 2249): commits are disabled", true
			}
			return "true", false
		}
		if code == "System cacheStatisticsForAllSlots collect: [:each | each first]" { // the two gems of this relay
			return fmt.Sprintf("#( '%s' '%s' )", s.names[0], s.names[1]), false
		}
		if code == "System configurationAt: #GemTempObjCacheSize" {
			return s.tempObjKB, false
		}
		if m := globalPut.FindStringSubmatch(code); m != nil { // uncommitted: it lives in this gem only
			s.globals[m[1]] = m[2]
			return m[2], false
		}
		if m := globalAt.FindStringSubmatch(code); m != nil {
			return cmp.Or(s.globals[m[1]], "nil"), false
		}
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
