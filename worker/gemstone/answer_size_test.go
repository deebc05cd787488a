package gemstone

import (
	"strings"
	"testing"

	"github.com/gemgate/gemgate/worker"
)

// TestOversizeAnswerFailsOnlyItsCall: an answer longer than the longest line gemgate reads
// from a worker (worker.DefaultMaxLineBytes) fails its call, naming the size, and the session
// goes on. A client's argument can ask for one: the native server caps execute_code's result
// (50,000 characters) and its searches, not its listings and sources (list_dictionary_entries
// of a dictionary a user filled with a million globals). Were the line written, gemgate would
// stop the relay for it, and the user's GemStone session would go with it: uncommitted work,
// locks and all, for one call's answer, the client told only that the worker exited. (The
// fake's execute_code, which has no cap, stands in for such a tool.)
func TestOversizeAnswerFailsOnlyItsCall(t *testing.T) {
	s := newStone(t, nil)
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	call(t, p, "initialize", map[string]any{})
	put := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "UserGlobals at: #Kept put: 'uncommitted'"}}
	call(t, p, "tools/call", put)
	big := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "String new: " + itoa(worker.DefaultMaxLineBytes) + " withAll: $a"}}
	m := call(t, p, "tools/call", big)
	if msg := errorText(m); !strings.Contains(msg, "bytes") || strings.Contains(msg, "exited") {
		t.Errorf("an answer over %d bytes: %q (%.200s); want an error naming its size", worker.DefaultMaxLineBytes, msg, m.Result)
	}
	get := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "UserGlobals at: #Kept ifAbsent: [nil]"}}
	if m := call(t, p, "tools/call", get); !strings.Contains(string(m.Result), "uncommitted") {
		t.Errorf("after the oversize answer the session's work is gone: %s %s", m.Result, m.Error)
	}
}
