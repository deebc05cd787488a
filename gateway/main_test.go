package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
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
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 32<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
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
		case req.Method != "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{},"serverInfo":{"name":"fake","version":"0"}}}`+"\n", req.ID, version)
	}
	return 0
}
