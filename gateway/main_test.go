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
//	echometa    answers a tools/call with the params._meta it got, as its bytes, for text; a
//	            tools/call of lastnote, with the params._meta of the last notification it got
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
//	askprogress a legacy worker whose tool ask asks the client (elicitation/create q1) and,
//	            once answered, reports progress on the call's token, logs a line and answers
//	            "done"; ask's region argument is bound to Mcp-Param-Region
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
	case "askprogress":
		return playAskProgress()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	var lastNote json.RawMessage
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string          `json:"name"`
				Meta json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil {
			continue
		}
		if req.ID == nil {
			lastNote = req.Params.Meta
			continue
		}
		if req.Method == "tools/call" && req.Params.Name == "lastnote" {
			req.Params.Meta = lastNote
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
