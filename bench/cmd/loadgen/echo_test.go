package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Every call's text is its own and of the payload's length, and checkEcho refuses another
// call's text of the same length: an answer routed to the wrong call fails the run.
func TestEchoTextsAreDistinctAndChecked(t *testing.T) {
	fill := strings.Repeat("x", 100)
	seen := map[string]bool{}
	for s := range 40 {
		for n := -50; n < 1000; n++ {
			text := echoText(fill, s, n)
			if len(text) != len(fill) {
				t.Fatalf("session %d call %d: %d bytes, want %d", s, n, len(text), len(fill))
			}
			if seen[text] {
				t.Fatalf("session %d call %d: text repeated: %q", s, n, text)
			}
			seen[text] = true
		}
	}
	answer := func(text string) *rpcAnswer {
		var a rpcAnswer
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
		if err := json.Unmarshal([]byte(`{"jsonrpc":"2.0","id":1,"result":`+string(b)+`}`), &a); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	sent := echoText(fill, 3, 7)
	if err := checkEcho(answer(sent), sent); err != nil {
		t.Fatalf("its own text: %v", err)
	}
	if err := checkEcho(answer(echoText(fill, 3, 8)), sent); err == nil {
		t.Fatal("the next call's text, of the same length, was taken")
	}
	if err := checkEcho(answer(echoText(fill, 4, 7)), sent); err == nil {
		t.Fatal("another session's text, of the same length, was taken")
	}
	if got := echoText("xy", 12, 345); got != "xy" {
		t.Fatalf("a payload shorter than its tag: %q, want the fill alone", got)
	}
}

// A run whose worker never answers fails once -deadline has passed, with an error saying so,
// instead of waiting for good.
func TestRunFailsAtItsDeadline(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-stdio", "sleep 60", "-sessions", "1", "-deadline", "300ms")
	cmd.Env = append(os.Environ(), "LOADGEN_TEST_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("loadgen ended with %v, want exit status 1; stderr: %s", err, stderr.String())
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("loadgen took %s to fail", took)
	}
	if !strings.Contains(stderr.String(), "calls mode not done after 300ms") {
		t.Fatalf("stderr %q does not name the deadline", stderr.String())
	}
}
