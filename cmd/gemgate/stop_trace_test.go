package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// docs/operations.md: "a stop takes at most drain_delay + shutdown_grace + about 6 s" (the
// workers' stop, then two seconds to write the cut calls' answers), and the Helm chart sizes
// terminationGracePeriodSeconds on it. With tracing on and a collector that does not answer
// (a node gone, a network policy that drops), the last spans' export comes on top.
func TestStopWithAHungCollectorKeepsToItsBound(t *testing.T) {
	// A collector that takes the connection and never answers.
	collector, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer collector.Close()
	go func() {
		for {
			c, err := collector.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000") // the spans wait for the stop's flush
	// A worker that answers the handshake, then outlives its stdin and SIGTERM: the stop's full
	// course, SIGKILL 4 s later.
	worker := `sh -c 'trap "" TERM; read l; id=$(printf "%s" "$l" | sed -e "s/.*\"id\":\([^,}]*\).*/\1/"); ` +
		`printf "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n" "$id"; ` +
		`while read l; do :; done; exec sleep 60'`
	const grace = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCommand(ctx, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", worker, "--log-format", "json",
			"--trace-endpoint", "http://"+collector.Addr().String(),
			"--drain-delay", "0s", "--shutdown-grace", grace.String()), &bytes.Buffer{}, logs)
	}()
	addr := waitLog(t, logs, done, "gemgate serving")["listen"]
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s\n%s", resp.Status, logs)
	}

	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
	// The chart's allowance beyond drain and grace (workerStopSeconds) is 7 s.
	if took, bound := time.Since(stopped), grace+7*time.Second; took > bound {
		t.Errorf("the stop took %v, over drain_delay + shutdown_grace + 7 s (%v)", took.Round(100*time.Millisecond), bound)
	}
}
