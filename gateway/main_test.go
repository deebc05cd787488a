package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gemgate/gemgate/worker/demo"
)

// The test binary doubles as the worker: with GEMGATE_TEST_WORKER set, TestMain plays a
// worker in that mode instead of running the tests.
//
//	demo        the real demo worker (worker/demo)
//	badversion  answers initialize with a protocol version nobody speaks
//	crashy      answers initialize, then exits at its first tools/call
//	slowinit    answers initialize only after 10 s
//	sessionlessflood speaks no 2026-07-28 (server/discover is "method not found"); at its first
//	            tools/call it asks the client one elicitation/create (the call is parked for
//	            the client's input), then stops reading and asks 20,000 more at once
//	stubborn    a legacy worker that ignores notifications/cancelled (playStubborn)
//	echometa    answers a tools/call with the params._meta it got, as its bytes, for text
//	askatlist   a legacy worker that asks its client roots/list at its first tools/list, as
//	            a worker that asks at start-up does while gemgate's first call is in flight
//	askthree    a legacy worker whose every tools/call asks three questions at once
//	            (elicitation/create q1, q2, q3) and answers with the answers (playAskThree)
//	askagain    a legacy worker whose tool ask asks the client twice, the second question once
//	            the first is answered, however (playAskAgain)
//	pinger      a legacy worker that pings its client, as a go-sdk server with KeepAlive does:
//	            its tool ping pings within the call and answers it with the ping's answer; its
//	            tool roots asks roots/list without params, and answers with the answer too
//	statepass   a worker that speaks 2026-07-28 itself (playStatePass): its tool confirm answers
//	            input_required with a requestState of its own, and the retry that brings it
//	            back is answered "confirmed"
func TestMain(m *testing.M) {
	if mode := os.Getenv("GEMGATE_TEST_WORKER"); mode != "" {
		os.Exit(playWorker(mode))
	}
	os.Exit(m.Run())
}

func playWorker(mode string) int {
	if mode == "demo" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if err := demo.Run(ctx, demo.OptionsFromEnv(), os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "demo worker:", err)
			return 1
		}
		return 0
	}
	if mode == "stubborn" || mode == "askatlist" {
		return playStubborn(mode)
	}
	switch mode {
	case "askthree":
		return playAskThree()
	case "askagain":
		return playAskAgain()
	case "pinger":
		return playPinger()
	case "statepass":
		return playStatePass()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		version := "2025-06-18"
		switch {
		case req.Method == "initialize" && mode == "badversion":
			version = "1999-01-01"
		case req.Method == "initialize" && mode == "slowinit":
			time.Sleep(10 * time.Second)
		case req.Method == "tools/call" && mode == "crashy":
			return 3
		case req.Method == "tools/call" && mode == "echometa":
			text, _ := json.Marshal(string(req.Params.Meta))
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", req.ID, text)
			continue
		case req.Method == "server/discover" && mode == "sessionlessflood":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			continue
		case req.Method == "tools/call" && mode == "sessionlessflood":
			floodElicitations()
		case req.Method != "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{},"serverInfo":{"name":"fake","version":"0"}}}`+"\n", req.ID, version)
	}
	return 0
}

// playAskThree is the askthree worker: a tools/call asks q1, q2 and q3 together, and is
// answered "q1=<answer> q2=<answer> q3=<answer>" once all are.
func playAskThree() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	const ask = `{"jsonrpc":"2.0","id":%q,"method":"elicitation/create","params":{"message":%q,"requestedSchema":{"type":"object","properties":{}}}}` + "\n"
	var call json.RawMessage
	answers := map[string]string{}
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		switch msg.Method {
		case "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"askthree","version":"0"}}}`+"\n", msg.ID)
		case "tools/list":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}}`+"\n", msg.ID)
		case "tools/call":
			call, answers = msg.ID, map[string]string{}
			fmt.Printf(ask+ask+ask, "q1", "first?", "q2", "second?", "q3", "third?")
		case "": // an answer to q1 or q2
			var id string
			_ = json.Unmarshal(msg.ID, &id)
			answers[id] = string(msg.Result)
			if len(answers) == 3 && call != nil {
				text, _ := json.Marshal("q1=" + answers["q1"] + " q2=" + answers["q2"] + " q3=" + answers["q3"])
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`+"\n", call, text)
				call = nil
			}
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", msg.ID)
		}
	}
	return 0
}

// floodElicitations is sessionlessflood's tools/call: it never returns.
func floodElicitations() {
	const ask = `{"jsonrpc":"2.0","id":%q,"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}` + "\n"
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, ask, "first")
	out.Flush()
	time.Sleep(300 * time.Millisecond) // the call is parked by now
	for i := range 20000 {
		fmt.Fprintf(out, ask, "f"+strconv.Itoa(i))
	}
	out.Flush()
	select {} // never reads again
}

// playStubborn is the stubborn and askatlist workers. Tools (stubborn): delete logs a line
// and then runs until a confirmation comes, whatever notifications/cancelled says; peek asks
// the client to confirm the last delete (elicitation/create), as a worker whose delete reached
// its confirmation does, and answers both calls with the client's answer,
// "confirmation: <answer>". askatlist asks roots/list before it answers its first tools/list,
// and records the answer for its tool roots.
func playStubborn(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	out := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	text := func(id json.RawMessage, s string) {
		b, _ := json.Marshal(s)
		out(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, id, b)
	}
	var deleting, peeking json.RawMessage
	askAtList := mode == "askatlist"
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
			out(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"stubborn","version":"0"}}}`, msg.ID)
		case "server/discover":
			out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
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
				out(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"deleting"}}`)
			case "peek":
				peeking = msg.ID
				out(`{"jsonrpc":"2.0","id":"confirm","method":"elicitation/create","params":{"message":"Delete everything?","requestedSchema":{"type":"object","properties":{}}}}`)
			case "roots":
				text(msg.ID, "roots: "+roots)
			default:
				text(msg.ID, "unknown tool")
			}
		default:
			out(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}
	return 0
}

// playAskAgain is the askagain worker. Tools: ask asks the client a first question
// (elicitation/create "q1") and, once that is answered, whatever the answer (an error too), a
// second one ("q2"), as a tool that asks again when it got no usable answer does; slow logs a
// line and runs until the second question is answered. The answer to q2 answers both calls,
// "answer: <answer>".
func playAskAgain() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	out := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	text := func(id json.RawMessage, s string) {
		b, _ := json.Marshal(s)
		out(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, id, b)
	}
	const ask = `{"jsonrpc":"2.0","id":%q,"method":"elicitation/create","params":{"message":%q,"requestedSchema":{"type":"object","properties":{}}}}`
	var asking, slow json.RawMessage
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
			continue
		}
		if msg.Method == "" {
			answer := string(msg.Result) + string(msg.Error)
			switch string(msg.ID) {
			case `"q1"`:
				fmt.Fprintln(os.Stderr, "askagain: q1 answered")
				out(ask, "q2", "the ask call's second question")
			case `"q2"`:
				fmt.Fprintln(os.Stderr, "askagain: q2 answered")
				for _, id := range []json.RawMessage{asking, slow} {
					if id != nil {
						text(id, "answer: "+answer)
					}
				}
				asking, slow = nil, nil
			}
			continue
		}
		switch msg.Method {
		case "initialize":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"askagain","version":"0"}}}`, msg.ID)
		case "server/discover":
			out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
		case "tools/list":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}}]}}`, msg.ID)
		case "tools/call":
			switch msg.Params.Name {
			case "ask":
				asking = msg.ID
				out(ask, "q1", "the ask call's first question")
			case "slow":
				slow = msg.ID
				fmt.Fprintln(os.Stderr, "askagain: slow")
			default:
				text(msg.ID, "unknown tool")
			}
		default:
			out(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}
	return 0
}

// playPinger is the pinger worker (TestMain's list).
func playPinger() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	out := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	var pinging json.RawMessage
	n := 0
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
			continue
		}
		if msg.Method == "" {
			answer := string(msg.Result) + string(msg.Error)
			if pinging != nil {
				b, _ := json.Marshal("pong: " + answer)
				out(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, pinging, b)
				pinging = nil
			}
			continue
		}
		switch msg.Method {
		case "initialize":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"pinger","version":"0"}}}`, msg.ID)
		case "server/discover":
			out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
		case "tools/list":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ping","inputSchema":{"type":"object"}},{"name":"roots","inputSchema":{"type":"object"}}]}}`, msg.ID)
		case "tools/call":
			n++
			switch msg.Params.Name {
			case "ping":
				pinging = msg.ID
				out(`{"jsonrpc":"2.0","id":"keepalive-%d","method":"ping"}`, n)
			case "roots":
				pinging = msg.ID
				out(`{"jsonrpc":"2.0","id":"roots-%d","method":"roots/list"}`, n)
			default:
				out(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"unknown tool"}]}}`, msg.ID)
			}
		default:
			out(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}
	return 0
}

// playStatePass is the statepass worker (TestMain's list).
func playStatePass() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	out := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name         string `json:"name"`
				RequestState string `json:"requestState"`
				Meta         struct {
					Version string `json:"io.modelcontextprotocol/protocolVersion"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil || msg.Method == "" {
			continue
		}
		switch msg.Method {
		case "initialize":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"statepass","version":"0"}}}`, msg.ID)
		case "server/discover":
			if msg.Params.Meta.Version != "2026-07-28" {
				out(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"],"requested":%q}}}`, msg.ID, msg.Params.Meta.Version)
				continue
			}
			out(`{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"statepass","version":"0"}}}`, msg.ID)
		case "tools/list":
			out(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"confirm","inputSchema":{"type":"object"}}]}}`, msg.ID)
		case "tools/call":
			if msg.Params.RequestState == "ws-1" {
				out(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":"confirmed"}]}}`, msg.ID)
				continue
			}
			out(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"ws-1"}}`, msg.ID)
		case "subscriptions/listen":
			// gemgate's own, for the worker's life: never answered.
		default:
			out(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		}
	}
	return 0
}
