//go:build linux

package gemstone

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// sessionDescription is what the fake stone's fatal-band errors carry after GemStone's own
// text, as GciError>>_error:in: appends it: the stone's NRS, the user, the gem's host, NetLDI
// and gemnetobject command line. None of it may reach a client.
var sessionDescription = []string{"original number", "stonehost.example", "#netldi:", "gemnetobject", "#server!"}

// TestFatalErrorTextStaysInTheLog: when the user's gem dies (a fatal-band GciError, 4100 here)
// the client is told the error number and GemStone's short cause; the session's description
// goes to gemgate's log, through the worker's redaction, and nowhere else.
func TestFatalErrorTextStaysInTheLog(t *testing.T) {
	var logs logBuf
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	s := newStone(t, map[string]any{"fault": "gem_dies"})
	tok := token(goodClaims("alice"))
	p := startRelayLogging(t, s, "alice", tok, false, log)
	msg := errorText(call(t, p, "tools/call", map[string]any{"name": "status"}))
	for _, w := range []string{"the GemStone session ended", "its gem died", "GemStone error 4100"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the client's error %q lacks %q", msg, w)
		}
	}
	for _, leak := range sessionDescription {
		if strings.Contains(msg, leak) {
			t.Errorf("the client's error %q carries the session's description (%q)", msg, leak)
		}
	}
	waitForLog(t, &logs, "original number: 4100 for session")
	if strings.Contains(logs.String(), tok) {
		t.Error("the log holds the token")
	}

	// Before the session was ready: the refusal names the loss, not the session.
	s = newStone(t, map[string]any{"fault": "gem_dies_at_probe"})
	refusal := refusalText(t, startRelay(t, s, "alice", token(goodClaims("alice")), false))
	if !strings.Contains(refusal, "GemStone error 4100") {
		t.Errorf("the refusal %q lacks the error number", refusal)
	}
	for _, leak := range sessionDescription {
		if strings.Contains(refusal, leak) {
			t.Errorf("the refusal %q carries the session's description (%q)", refusal, leak)
		}
	}
}

// waitForLog waits until gemgate's log holds want: the relay's stderr is logged as it comes,
// apart from its answers.
func waitForLog(t *testing.T, logs *logBuf, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never held %q:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
