package pool

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the worker: with POOL_TEST_WORKER=script, TestMain plays the
// scripted worker below instead of running the tests.
func TestMain(m *testing.M) {
	if os.Getenv("POOL_TEST_WORKER") == "script" {
		os.Exit(scriptWorker())
	}
	os.Exit(m.Run())
}

// scriptWorker is a tiny MCP server over stdio whose tools drive the pool's routing:
//
//	ask{method}         sends the client a request of that method and answers the call
//	                    with the client's answer (its result or error, as JSON text)
//	emit{method,params} sends that notification, then answers {}
//	record              answers with every subscribe, unsubscribe and setLevel it received
//	release             answers the held subscribes
//	hold                never answers
//	flood{method,n,answer} stops reading its input and sends the client n requests of that
//	                    method at once, then (with answer) answers the call; it reads
//	                    nothing more, and exits when its input is closed (a stop's first
//	                    stage)
//	die                 exits at once
//	later               never answers on its own: a long call that ignores
//	                    notifications/cancelled, except that the cancel makes it ask its
//	                    client elicitation/create for it (recorded for record,
//	                    "after-cancel:<answer>"); the next trigger's question is its too
//	trigger             asks the client elicitation/create for the last later call (as a
//	                    worker that ignores cancellation does once its work reaches the
//	                    confirmation), then answers both that call and this one with the
//	                    client's answer
//
// With POOL_TEST_ASK_AT_LIST set, it asks its client roots/list before it answers its first
// tools/list (as a worker that asks at start-up does, while gemgate's first call is in
// flight): the answer is recorded, "roots:<answer>", for record.
//
// A ping is answered and recorded ("ping") for record.
//
// It refuses a subscribe or unsubscribe of a URI with "refused:" in it, and holds its answer
// to a subscribe of a URI that starts with "held:" until a release. A subscribe of
// "dieif:<path>" makes it exit at once when the file <path> exists (a successor that dies
// while gemgate tells it what its predecessor was asked), and one of "refusedif:<path>" is
// refused when that file exists.
func scriptWorker() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	text := func(id json.RawMessage, s string) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}}})
	}
	var received []string
	type heldSub struct {
		id  json.RawMessage
		uri string
	}
	var held []heldSub // answered at the next release
	subAnswer := func(id json.RawMessage, uri string) {
		refuse := strings.Contains(uri, "refused:")
		if path, ok := strings.CutPrefix(uri, "refusedif:"); ok {
			_, err := os.Stat(path)
			refuse = err == nil
		}
		if refuse {
			send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32002, "message": "no such resource"}})
			return
		}
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{}})
	}
	pending := map[string]json.RawMessage{} // our request id -> the tools/call waiting on it
	n := 0
	var later json.RawMessage                // the last later call, unanswered
	triggers := map[string]json.RawMessage{} // our request id -> the trigger call that sent it
	askAtList := os.Getenv("POOL_TEST_ASK_AT_LIST") != ""
	initialized := 0 // notifications/initialized read
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				URI       string          `json:"uri"`
				Level     string          `json:"level"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		if msg.Method == "" && msg.ID != nil { // the client's answer to our request
			var rid string
			json.Unmarshal(msg.ID, &rid)
			answer := msg.Result
			if msg.Error != nil {
				answer = msg.Error
			}
			if rid == "after-cancel" {
				received = append(received, "after-cancel:"+string(answer))
				continue
			}
			if rid == "start-roots" {
				received = append(received, "roots:"+string(answer))
				continue
			}
			if trig, ok := triggers[rid]; ok {
				delete(triggers, rid)
				if later != nil {
					text(later, string(answer))
					later = nil
				}
				text(trig, string(answer))
				continue
			}
			if call, ok := pending[rid]; ok {
				delete(pending, rid)
				answer := msg.Result
				if msg.Error != nil {
					answer = msg.Error
				}
				text(call, string(answer))
			}
			continue
		}
		if msg.ID == nil {
			if msg.Method == "notifications/initialized" {
				initialized++
			}
			if msg.Method == "notifications/cancelled" && later != nil {
				// Told to cancel its later call, it asks for its confirmation all the same.
				send(map[string]any{"jsonrpc": "2.0", "id": "after-cancel", "method": "elicitation/create",
					"params": map[string]any{"message": "delete everything?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}})
			}
			continue // notifications
		}
		switch msg.Method {
		case "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{"logging": map[string]any{}, "resources": map[string]any{"subscribe": true}, "tools": map[string]any{}},
				"serverInfo":      map[string]string{"name": "script", "version": "0"},
			}})
		case "resources/subscribe", "resources/unsubscribe":
			received = append(received, strings.TrimPrefix(msg.Method, "resources/")+" "+msg.Params.URI)
			if path, ok := strings.CutPrefix(msg.Params.URI, "dieif:"); ok && msg.Method == "resources/subscribe" {
				if _, err := os.Stat(path); err == nil {
					return 3
				}
			}
			if msg.Method == "resources/subscribe" && strings.HasPrefix(msg.Params.URI, "held:") {
				held = append(held, heldSub{msg.ID, msg.Params.URI})
				continue
			}
			subAnswer(msg.ID, msg.Params.URI)
		case "tools/list":
			if askAtList {
				askAtList = false
				send(map[string]any{"jsonrpc": "2.0", "id": "start-roots", "method": "roots/list", "params": map[string]any{}})
			}
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{"tools": []any{}}})
		case "logging/setLevel":
			received = append(received, "setLevel "+msg.Params.Level)
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{}})
		case "tools/call":
			var args struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			json.Unmarshal(msg.Params.Arguments, &args)
			switch msg.Params.Name {
			case "ask": // pad: a message of that many bytes in the request's params
				var pad struct {
					Pad int `json:"pad"`
				}
				json.Unmarshal(msg.Params.Arguments, &pad)
				params := map[string]any{}
				if pad.Pad > 0 {
					params["message"] = strings.Repeat("x", pad.Pad)
				}
				n++
				rid := fmt.Sprintf("wr-%d", n)
				pending[rid] = msg.ID
				send(map[string]any{"jsonrpc": "2.0", "id": rid, "method": args.Method, "params": params})
			case "emit":
				send(map[string]any{"jsonrpc": "2.0", "method": args.Method, "params": args.Params})
				text(msg.ID, "emitted")
			case "record":
				text(msg.ID, strings.Join(received, ","))
			case "initialized":
				text(msg.ID, strconv.Itoa(initialized))
			case "release":
				for _, h := range held {
					subAnswer(h.id, h.uri)
				}
				held = nil
				text(msg.ID, "released")
			case "wait": // answers after its arguments' ms, holding the worker meanwhile
				var w struct {
					MS int `json:"ms"`
				}
				json.Unmarshal(msg.Params.Arguments, &w)
				time.Sleep(time.Duration(w.MS) * time.Millisecond)
				text(msg.ID, "waited")
			case "hold":
			case "later":
				later = msg.ID
			case "trigger":
				n++
				rid := fmt.Sprintf("wr-%d", n)
				triggers[rid] = msg.ID
				send(map[string]any{"jsonrpc": "2.0", "id": rid, "method": "elicitation/create",
					"params": map[string]any{"message": "delete everything?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}})
			case "flood":
				var f struct {
					Method string `json:"method"`
					N      int    `json:"n"`
					Answer bool   `json:"answer"`
				}
				json.Unmarshal(msg.Params.Arguments, &f)
				for i := range f.N {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","id":"f%d","method":%q,"params":{}}`+"\n", i, f.Method)
				}
				out.Flush()
				if f.Answer { // after every request: gemgate has read them all when it has this
					text(msg.ID, "flooded")
				}
				waitHangup(os.Stdin)
				return 0
			case "die":
				return 3
			default:
				text(msg.ID, "unknown tool")
			}
		default:
			if msg.Method == "ping" {
				received = append(received, "ping")
			}
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{}})
		}
	}
	return 0
}

// waitHangup waits until the writing end of the pipe f reads from is closed, reading none of
// what is in it.
func waitHangup(f *os.File) {
	fds := []unix.PollFd{{Fd: int32(f.Fd())}} // no events asked: POLLHUP is always reported
	for {
		_, err := unix.Poll(fds, -1)
		if err != unix.EINTR && (err != nil || fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0) {
			return
		}
	}
}
