// Command stubbornworker is a legacy stdio MCP server for gemgate's attack tests of worker
// requests (test/attack_answer_test.go): it ignores notifications/cancelled, as a worker may.
//
//	delete  writes "stubborn: deleting" on stderr and runs until a confirmation comes,
//	        whatever notifications/cancelled says
//	peek    asks the client to confirm the last delete (elicitation/create, its params._meta
//	        a trace context of the worker's own and a member of another kind, which the
//	        client must get as written), as a worker whose delete reached its confirmation
//	        does, and answers both calls with the client's answer: "confirmation: <answer>"
//	roots   answers what its start-up roots/list was answered ("roots: none" when not asked)
//
// With the argument "askatlist" it asks its client roots/list before it answers its first
// tools/list: a worker that asks at start-up while gemgate's first call is in flight.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	askAtList := len(os.Args) == 2 && os.Args[1] == "askatlist"
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	out := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	text := func(id json.RawMessage, s string) {
		b, _ := json.Marshal(s)
		out(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, id, b)
	}
	var deleting, peeking json.RawMessage
	roots := "none"
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue // notifications, notifications/cancelled too: ignored
		}
		if msg.Method == "" { // the client's answer to a request of ours
			answer := string(msg.Result) + string(msg.Error)
			switch string(msg.ID) {
			case `"confirm"`:
				for _, id := range []json.RawMessage{deleting, peeking} {
					if id != nil {
						text(id, "confirmation: "+answer)
					}
				}
				deleting, peeking = nil, nil
			case `"start-roots"`:
				roots = answer
			}
			continue
		}
		switch msg.Method {
		case "initialize":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stubborn","version":"0"}}}`, msg.ID)
		case "tools/list":
			if askAtList {
				askAtList = false
				out(`{"jsonrpc":"2.0","id":"start-roots","method":"roots/list","params":{}}`)
			}
			out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"delete","inputSchema":{"type":"object"}},{"name":"peek","inputSchema":{"type":"object"}},{"name":"roots","inputSchema":{"type":"object"}}]}}`, msg.ID)
		case "tools/call":
			switch msg.Params.Name {
			case "delete":
				deleting = msg.ID
				fmt.Fprintln(os.Stderr, "stubborn: deleting")
			case "peek":
				peeking = msg.ID
				out(`{"jsonrpc":"2.0","id":"confirm","method":"elicitation/create","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"worker=1,vendor=x","io.example/kept":{"n":1}},"message":"Delete everything?","requestedSchema":{"type":"object","properties":{}}}}`)
			case "roots":
				text(msg.ID, "roots: "+roots)
			default:
				text(msg.ID, "unknown tool")
			}
		case "server/discover":
			out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
		default:
			out(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}
}
