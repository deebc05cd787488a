package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/worker/demo"
)

// The worker mode legacydemo (GEMGATE_TEST_WORKER=legacydemo) is the demo worker made to look
// like a worker program that speaks no 2026-07-28: server/discover is answered "method not
// found" before the demo sees it. gemgate then initializes it and bridges sessionless requests to
// it, and the go-sdk demo turns its input-required results into elicitation and sampling
// requests on that legacy session: the input-required bridge's case. It is dispatched here,
// before TestMain, so that the test binary's other modes stay as they are.
func init() {
	if os.Getenv("GEMGATE_TEST_WORKER") == "legacydemo" {
		os.Exit(playLegacyDemo())
	}
}

func playLegacyDemo() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	out := &lockedWriter{w: os.Stdout}
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(nil, 32<<20)
		for in.Scan() {
			line := in.Bytes()
			if bytes.Contains(line, []byte(`"server/discover"`)) {
				if m, err := jsonrpc.Parse(line, jsonrpc.Options{}); err == nil && m.Method == "server/discover" && m.IsRequest() {
					_, _ = out.Write(append(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeMethodNotFound, "method not found", nil).Encode(), '\n'))
					continue
				}
			}
			if _, err := pw.Write(append(append([]byte(nil), line...), '\n')); err != nil {
				return
			}
		}
	}()
	if err := demo.Run(ctx, demo.OptionsFromEnv(), pr, out); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "legacy demo worker:", err)
		return 1
	}
	return 0
}

// lockedWriter writes each message whole: the demo writes one message a Write, and the
// filter's own answers must not land inside one of them.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
