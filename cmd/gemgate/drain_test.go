package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// When serve's context ends (SIGTERM), /readyz answers 503 over new connections for
// drain_delay before the listener closes, and serve returns within drain_delay +
// shutdown_grace and a small bound.
func TestServeDrainsBeforeTheListenerCloses(t *testing.T) {
	const drain, grace = 1500 * time.Millisecond, time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCommand(ctx, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--log-format", "json",
			"--drain-delay", drain.String(), "--shutdown-grace", grace.String()), &bytes.Buffer{}, logs)
	}()
	addr := waitLog(t, logs, done, "gemgate serving")["listen"]
	// A fresh connection per request: a balancer's health check opens its own.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	readyz := func() (int, error) {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz before the signal: %d %v", code, err)
	}

	signalled := time.Now()
	cancel()
	saw503 := false
	var refusedAfter time.Duration
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, err := readyz()
		if err != nil {
			if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("/readyz while stopping: %v", err)
			}
			refusedAfter = time.Since(signalled)
			break
		}
		switch {
		case code == http.StatusServiceUnavailable:
			saw503 = true
		case code != http.StatusOK || saw503: // 200 only until serve has seen the signal
			t.Fatalf("/readyz while stopping: %d, want 503", code)
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener was still open 10s after the signal")
		}
		time.Sleep(50 * time.Millisecond) // the pace of a health check, not a wait for a condition
	}
	if !saw503 {
		t.Error("/readyz never answered 503: the listener closed at once")
	}
	if refusedAfter < drain {
		t.Errorf("the listener closed %v after the signal, before drain_delay (%v)", refusedAfter, drain)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if took, bound := time.Since(signalled), drain+grace+3*time.Second; took > bound {
			t.Errorf("serve took %v to stop, over %v", took, bound)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped line:\n%s", logs)
	}
}

// waitLog waits for a JSON log line with msg and returns its string fields; it fails the test
// if serve ends first.
func waitLog(t *testing.T, logs *syncBuffer, done <-chan error, msg string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, line := range strings.Split(logs.String(), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) != nil || ev["msg"] != msg {
				continue
			}
			out := map[string]string{}
			for k, v := range ev {
				if s, ok := v.(string); ok {
					out[k] = s
				}
			}
			return out
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended before %q: %v\n%s", msg, err, logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q line within 30s:\n%s", msg, logs)
		}
	}
}
