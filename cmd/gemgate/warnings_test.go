package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// A worker other than the demo with no read-only tool list and no trusted hints shows a
// read-only user nothing: gemgate check says so, without failing.
func TestCheckWarnsWhenReadOnlyUsersWouldSeeNoTools(t *testing.T) {
	base := unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off")
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"command worker, nothing set", []string{"--worker", "command", "--worker-command", "true"}, true},
		{"command worker, read_only_tools", []string{"--worker", "command", "--worker-command", "true", "--read-only-tools", "get_*"}, false},
		{"command worker, trusted hints", []string{"--worker", "command", "--worker-command", "true", "--trust-read-only-hints"}, false},
		{"demo", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := checkCommand(context.Background(), append(append([]string{}, base...), tc.args...), &out, &errb)
			warned := strings.Contains(out.String(), "WARNING  read-only sessions")
			if code != 0 || warned != tc.warn {
				t.Errorf("exit %d, warned %v, want warning %v:\n%s%s", code, warned, tc.warn, out.String(), errb.String())
			}
			if tc.warn && !strings.Contains(out.String(), "read_only_tools") {
				t.Errorf("the warning names no setting:\n%s", out.String())
			}
		})
	}
}

// The same warning is logged when gemgate serve starts.
func TestServeWarnsWhenReadOnlyUsersWouldSeeNoTools(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCommand(ctx, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--drain-delay", "0"), &bytes.Buffer{}, logs)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "gemgate serving") {
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v\n%s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready:\n%s", logs)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"level":"WARN","msg":"read-only sessions`) || !strings.Contains(logs.String(), "trust_read_only_hints") {
		t.Errorf("no read-only warning at start:\n%s", logs)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader in different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
