// Command stuckworker is a stdio MCP server for gemgate's request-timeout tests: its one tool,
// "hang", never answers and ignores notifications/cancelled. How it treats pings and signals
// after that depends on its one argument:
//
//	pings   answers every ping: a worker that is busy but alive
//	sigint  leaves pings unanswered until it gets SIGINT, then answers them again
//	deaf    never answers a ping, ignores SIGINT and SIGTERM, and keeps running after its
//	        stdin closes: only SIGKILL ends it
//
// It reports each event on stderr ("stuck: ..."), which gemgate logs in order.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
}

func main() {
	mode := "pings"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	var mu sync.Mutex
	interrupted := false
	pending := []json.RawMessage{} // pings held back until SIGINT
	answer := func(id json.RawMessage, result string) {
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range sigs {
			fmt.Fprintf(os.Stderr, "stuck: got %v\n", sig)
			if mode == "deaf" {
				continue
			}
			if sig == syscall.SIGTERM {
				os.Exit(0)
			}
			mu.Lock()
			interrupted = true
			for _, id := range pending {
				answer(id, `{}`)
			}
			pending = nil
			mu.Unlock()
		}
	}()

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		mu.Lock()
		switch m.Method {
		case "initialize":
			answer(m.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stuckworker","version":"0"}}`)
		case "tools/list":
			answer(m.ID, `{"tools":[{"name":"hang","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			fmt.Fprintln(os.Stderr, "stuck: hanging on a call")
		case "notifications/cancelled":
			fmt.Fprintln(os.Stderr, "stuck: cancel ignored")
		case "ping":
			fmt.Fprintln(os.Stderr, "stuck: ping")
			switch {
			case mode == "pings" || (mode == "sigint" && interrupted):
				answer(m.ID, `{}`)
			case mode == "sigint":
				pending = append(pending, m.ID)
			}
		}
		mu.Unlock()
	}
	fmt.Fprintln(os.Stderr, "stuck: stdin closed")
	if mode == "deaf" {
		time.Sleep(time.Hour) // a sleeping timer, not select{}: the runtime would end a goroutine-less deadlock
	}
}
