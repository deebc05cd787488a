package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// The scripted legacy workers of TestMain's list, each a scripted worker with its own tools.

// scriptedMsg is what a scripted worker reads of a message.
type scriptedMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"` // "" for the client's answer to a request of the worker's
	Params struct {
		Name         string `json:"name"`
		Cursor       string `json:"cursor"`
		RequestState string `json:"requestState"`
		Meta         struct {
			Version       string          `json:"io.modelcontextprotocol/protocolVersion"`
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// answer is an answer's result or error, as it came.
func (m *scriptedMsg) answer() string { return string(m.Result) + string(m.Error) }

// scripted speaks 2025-06-18 over stdio as name, with capabilities caps: server/discover is
// "method not found", tools/list lists tools. Every request and every answer goes to handle
// first, which reports whether it took it; a request it leaves, other than those, gets an
// empty result. Notifications (notifications/cancelled too) are ignored.
type scripted struct {
	name, caps string
	tools      []string
	handle     func(w *scripted, m *scriptedMsg) bool
}

func (w *scripted) out(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// text answers the call id with a text content.
func (w *scripted) text(id json.RawMessage, s string) {
	b, _ := json.Marshal(s)
	w.out(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, id, b)
}

// elicit asks the client elicitation/create, under the worker's request id id.
func (w *scripted) elicit(id, message string) {
	w.out(`{"jsonrpc":"2.0","id":%q,"method":"elicitation/create","params":{"message":%q,"requestedSchema":{"type":"object","properties":{}}}}`, id, message)
}

func (w *scripted) run() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	for in.Scan() {
		var m scriptedMsg
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil || w.handle(w, &m) || m.Method == "" {
			continue
		}
		switch m.Method {
		case "initialize":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":%s,"serverInfo":{"name":%q,"version":"0"}}}`, m.ID, w.caps, w.name)
		case "server/discover":
			w.out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
		case "tools/list":
			list := make([]string, len(w.tools))
			for i, t := range w.tools {
				list[i] = fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, t)
			}
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s]}}`, m.ID, strings.Join(list, ","))
		default:
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
		}
	}
	return 0
}

// playStubborn is the stubborn and askatlist workers. Tools (stubborn): delete logs a line
// and then runs until a confirmation comes, whatever notifications/cancelled says; peek asks
// the client to confirm the last delete (elicitation/create), as a worker whose delete reached
// its confirmation does, and answers both calls with the client's answer,
// "confirmation: <answer>". askatlist asks roots/list before it answers its first tools/list,
// and records the answer for its tool roots.
func playStubborn(mode string) int {
	var deleting, peeking json.RawMessage
	askAtList := mode == "askatlist"
	roots := "none"
	w := &scripted{name: "stubborn", caps: `{"tools":{},"logging":{}}`, tools: []string{"delete", "peek", "roots"}}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "" && string(m.ID) == `"confirm"`:
			for _, id := range []json.RawMessage{deleting, peeking} {
				if id != nil {
					w.text(id, "confirmation: "+m.answer())
				}
			}
			deleting, peeking = nil, nil
		case m.Method == "" && string(m.ID) == `"start-roots"`:
			roots = m.answer()
		case m.Method == "tools/list" && askAtList:
			askAtList = false
			w.out(`{"jsonrpc":"2.0","id":"start-roots","method":"roots/list","params":{}}`)
			return false // and the list
		case m.Method == "tools/call" && m.Params.Name == "delete":
			deleting = m.ID
			fmt.Fprintln(os.Stderr, "stubborn: deleting")
			w.out(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"deleting"}}`)
		case m.Method == "tools/call" && m.Params.Name == "peek":
			peeking = m.ID
			w.elicit("confirm", "Delete everything?")
		case m.Method == "tools/call" && m.Params.Name == "roots":
			w.text(m.ID, "roots: "+roots)
		case m.Method == "tools/call":
			w.text(m.ID, "unknown tool")
		default:
			return false
		}
		return true
	}
	return w.run()
}

// playAskThree is the askthree worker: a tools/call of ask asks q1, q2 and q3 together, and
// is answered "q1=<answer> q2=<answer> q3=<answer>" once all are; one of withdraw asks the
// same and at once withdraws q3 (notifications/cancelled), and is answered once q1 and q2 are.
func playAskThree() int {
	var call json.RawMessage
	want := 0
	answers := map[string]string{}
	w := &scripted{name: "askthree", caps: `{"tools":{}}`, tools: []string{"ask", "withdraw"}}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch m.Method {
		case "tools/call":
			call, answers, want = m.ID, map[string]string{}, 3
			w.elicit("q1", "first?")
			w.elicit("q2", "second?")
			w.elicit("q3", "third?")
			if m.Params.Name == "withdraw" {
				want = 2
				w.out(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q3","reason":"no longer needed"}}`)
			}
		case "": // an answer to q1, q2 or q3
			var id string
			_ = json.Unmarshal(m.ID, &id)
			answers[id] = string(m.Result)
			if len(answers) == want && call != nil {
				w.text(call, "q1="+answers["q1"]+" q2="+answers["q2"]+" q3="+answers["q3"])
				call = nil
			}
		default:
			return false
		}
		return true
	}
	return w.run()
}

// playAskAgain is the askagain worker. Tools: ask asks the client a first question
// (elicitation/create "q1") and, once that is answered, whatever the answer (an error too), a
// second one ("q2"), as a tool that asks again when it got no usable answer does; slow logs a
// line and runs until the second question is answered. The answer to q2 answers both calls,
// "answer: <answer>".
func playAskAgain() int {
	var asking, slow json.RawMessage
	w := &scripted{name: "askagain", caps: `{"tools":{}}`, tools: []string{"ask", "slow"}}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "" && string(m.ID) == `"q1"`:
			fmt.Fprintln(os.Stderr, "askagain: q1 answered")
			w.elicit("q2", "the ask call's second question")
		case m.Method == "" && string(m.ID) == `"q2"`:
			fmt.Fprintln(os.Stderr, "askagain: q2 answered")
			for _, id := range []json.RawMessage{asking, slow} {
				if id != nil {
					w.text(id, "answer: "+m.answer())
				}
			}
			asking, slow = nil, nil
		case m.Method == "tools/call" && m.Params.Name == "ask":
			asking = m.ID
			w.elicit("q1", "the ask call's first question")
		case m.Method == "tools/call" && m.Params.Name == "slow":
			slow = m.ID
			fmt.Fprintln(os.Stderr, "askagain: slow")
		case m.Method == "tools/call":
			w.text(m.ID, "unknown tool")
		default:
			return false
		}
		return true
	}
	return w.run()
}

// playPinger is the pinger worker: its tool ping pings the client within the call, as a
// go-sdk server with KeepAlive does, and its tool roots asks roots/list without params; each
// answers its call with the client's answer, "pong: <answer>".
func playPinger() int {
	var pinging json.RawMessage
	n := 0
	w := &scripted{name: "pinger", caps: `{"tools":{}}`, tools: []string{"ping", "roots"}}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "" && pinging != nil:
			w.text(pinging, "pong: "+m.answer())
			pinging = nil
		case m.Method == "tools/call" && m.Params.Name == "ping":
			n++
			pinging = m.ID
			w.out(`{"jsonrpc":"2.0","id":"keepalive-%d","method":"ping"}`, n)
		case m.Method == "tools/call" && m.Params.Name == "roots":
			n++
			pinging = m.ID
			w.out(`{"jsonrpc":"2.0","id":"roots-%d","method":"roots/list"}`, n)
		case m.Method == "tools/call":
			w.text(m.ID, "unknown tool")
		default:
			return false
		}
		return true
	}
	return w.run()
}

// playStatePass is the statepass worker: it speaks 2026-07-28 itself (server/discover), and
// its tool confirm answers input_required with a requestState of its own ("ws-1"); the retry
// that brings it back is answered "confirmed".
func playStatePass() int {
	w := &scripted{name: "statepass", caps: `{"tools":{}}`, tools: []string{"confirm"}}
	w.handle = func(w *scripted, m *scriptedMsg) bool {
		switch {
		case m.Method == "server/discover" && m.Params.Meta.Version != "2026-07-28":
			w.out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"],"requested":%q}}}`, m.ID, m.Params.Meta.Version)
		case m.Method == "server/discover":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"statepass","version":"0"}}}`, m.ID)
		case m.Method == "tools/call" && m.Params.RequestState == "ws-1":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":"confirmed"}]}}`, m.ID)
		case m.Method == "tools/call":
			w.out(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"ws-1"}}`, m.ID)
		case m.Method == "subscriptions/listen": // gemgate's own, for the worker's life: never answered
		default:
			return false
		}
		return true
	}
	return w.run()
}
