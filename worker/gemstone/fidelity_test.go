package gemstone

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// The traps a real stone sets for the relay (docs/gemstone.md, "What the fake stone
// reproduces"), each sprung by the fake stone unless the relay has the fix.

// TestRelayForksThroughTheNetLDIGslistFound: a NetLDI not named gs64ldi refuses every login
// made with the default NRS ("NetLDI service 'gs64ldi' not found"); gemgate passes the one
// gslist found in GEMSTONE_NRS_ALL, and check names it.
func TestRelayForksThroughTheNetLDIGslistFound(t *testing.T) {
	t.Setenv("GEMSTONE_NRS_ALL", "")
	s := newStone(t, nil, "Stone gs64stone", "Netldi ldi_team")
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	if m := call(t, p, "initialize", map[string]any{}); m.Error != nil {
		t.Fatalf("initialize through netldi ldi_team: %s", m.Error)
	}
	var said []string
	for _, f := range Check(context.Background(), s.config(t)) {
		said = append(said, f.What)
		if !f.OK {
			t.Errorf("check: %s", f.What)
		}
	}
	if all := strings.Join(said, "\n"); !strings.Contains(all, "netldi ldi_team is running") || !strings.Contains(all, "GEMSTONE_NRS_ALL=#netldi:ldi_team") {
		t.Errorf("check does not name the netldi it uses:\n%s", all)
	}
	// An operator's GEMSTONE_NRS_ALL wins, and check says when it names another netldi.
	t.Setenv("GEMSTONE_NRS_ALL", "#netldi:gs64ldi")
	msg := refusalText(t, startRelay(t, s, "alice", token(goodClaims("alice")), false))
	if !strings.Contains(msg, "NetLDI service 'gs64ldi' not found") || !strings.Contains(msg, "GEMSTONE_NRS_ALL names") {
		t.Errorf("a GEMSTONE_NRS_ALL naming a missing netldi gave %q", msg)
	}
	var warned bool
	for _, f := range Check(context.Background(), s.config(t)) {
		warned = warned || (!f.OK && strings.Contains(f.What, "does not name the running netldi ldi_team"))
	}
	if !warned {
		t.Error("check did not warn that GEMSTONE_NRS_ALL names another netldi")
	}
}

// TestRefusalInSixteenBitTextReachesTheClient: GemStone's error text can be a 16-bit string,
// which GsFile writes as UTF-16; the relay narrows its lines, so the cause still arrives.
func TestRefusalInSixteenBitTextReachesTheClient(t *testing.T) {
	s := newStone(t, map[string]any{"wide_errors": true})
	arrayAud := goodClaims("alice")
	arrayAud["aud"] = []string{"gemstone", "account"}
	// The refusal may come before initialize is sent: refusalText reads it either way.
	if msg := refusalText(t, startRelay(t, s, "alice", token(arrayAud), false)); !strings.Contains(msg, "Invalid or missing aud") {
		t.Errorf("a refusal in 16-bit text reached the client as %q", msg)
	}
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	m := call(t, p, "tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "self halt"}})
	if msg := errorText(m); !strings.Contains(msg, "a Halt occurred") {
		t.Errorf("a call error in 16-bit text reached the client as %q", msg)
	}
}

// TestDeadGemKeepsItsReason: a logout of a dead gem raises; unguarded inside a handler it
// would send topaz through iferr and lose the reason.
func TestDeadGemKeepsItsReason(t *testing.T) {
	s := newStone(t, map[string]any{"fault": "gem_dies_at_probe"})
	msg := refusalText(t, startRelay(t, s, "alice", token(goodClaims("alice")), false))
	for _, w := range []string{"ended before it was ready", "its gem died"} {
		if !strings.Contains(msg, w) {
			t.Errorf("initialize error %q lacks %q", msg, w)
		}
	}
	// Mid-call: the call is answered, and topaz ends through its own exit, not through iferr.
	s = newStone(t, map[string]any{"fault": "gem_dies"})
	tr := runTranscript(t, s, "alice", token(goodClaims("alice")),
		`{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"status"}}`,
		`{"jsonrpc":"2.0","id":"d2","method":"ping"}`)
	after := tr.after(t)
	if len(after) != 1 || !strings.Contains(after[0], `"id":"d1"`) || !strings.Contains(after[0], `"sessionLost"`) {
		t.Errorf("after the gem died topaz printed %q", after)
	}
	if tr.code != 0 {
		t.Errorf("topaz exited %d: the end went through iferr", tr.code)
	}
}

// TestCallErrorKeepsTheSession: an error in a call (a Halt in execute_code, which the MCP
// server does not catch) is answered whatever the id, and the session goes on.
func TestCallErrorKeepsTheSession(t *testing.T) {
	s := newStone(t, nil)
	tr := runTranscript(t, s, "alice", token(goodClaims("alice")),
		`{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"self halt"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"status"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1 halt"}}}`,
		`{"jsonrpc":"2.0","id":"s2","method":"tools/call","params":{"name":"status"}}`)
	after := tr.after(t)
	want := []struct{ id, kind string }{{`"h1"`, "gemstoneError"}, {`7`, ""}, {`8`, "gemstoneError"}, {`"s2"`, ""}}
	if len(after) != len(want) {
		t.Fatalf("answers %q, want %d", after, len(want))
	}
	for i, w := range want {
		m, err := jsonrpc.Parse([]byte(after[i]), jsonrpc.Options{})
		if err != nil || string(m.ID) != w.id {
			t.Errorf("answer %d = %s, want id %s", i, after[i], w.id)
			continue
		}
		var e struct{ Data struct{ Kind string } }
		json.Unmarshal(m.Error, &e)
		if e.Data.Kind != w.kind {
			t.Errorf("answer %d = %s, want error kind %q", i, after[i], w.kind)
		}
	}
}

// TestRelayIdlesWithoutACommitRecord: under write load elsewhere, a relay that waits for
// input inside a transaction misses SigAbort and is terminated; #transactionless holds none.
func TestRelayIdlesWithoutACommitRecord(t *testing.T) {
	s := newStone(t, map[string]any{"write_load": true})
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	for _, method := range []string{"initialize", "tools/list"} {
		if m := call(t, p, method, map[string]any{}); m.Error != nil {
			t.Fatalf("%s under write load: %s", method, m.Error)
		}
	}
}

// TestNonASCIIOnAUnicode16Stone: on a stone whose topaz switches to Unicode16 source strings,
// the relay pins String so that a UTF-8 request reaches the MCP server byte for byte.
func TestNonASCIIOnAUnicode16Stone(t *testing.T) {
	s := newStone(t, map[string]any{"unicode16": true})
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	src := "greeting\n\t^ 'héllo ✓ 日本語 😀'"
	if m := call(t, p, "tools/call", map[string]any{"name": "compile_method", "arguments": map[string]any{"className": "GemgateProbe", "source": src}}); m.Error != nil {
		t.Fatal(m.Error)
	}
	m := call(t, p, "tools/call", map[string]any{"name": "get_method_source", "arguments": map[string]any{"className": "GemgateProbe", "selector": "greeting"}})
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || r.IsError || len(r.Content) != 1 || r.Content[0].Text != src {
		t.Errorf("get_method_source = %s, want %q", m.Result, src)
	}
}

// TestRunEndsWithTrue: at end of input topaz prints nothing after the last answer (a
// displayed logged-out session would raise in printOn:) and exits 0.
func TestRunEndsWithTrue(t *testing.T) {
	s := newStone(t, nil)
	tr := runTranscript(t, s, "alice", token(goodClaims("alice")), `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	after := tr.after(t)
	if len(after) != 1 {
		t.Fatalf("topaz printed %q after the greeting, want the one answer", after)
	}
	if m, err := jsonrpc.Parse([]byte(after[0]), jsonrpc.Options{}); err != nil || string(m.ID) != "1" || m.Result == nil {
		t.Errorf("the answer is %q", after[0])
	}
	if tr.code != 0 {
		t.Errorf("topaz exited %d", tr.code)
	}
}

// TestMegabyteRequestLine: a request line of 1 MiB reaches the MCP server whole. The relay
// reads with the plain nextLineTo:, not the line editor, whose limit no source states.
func TestMegabyteRequestLine(t *testing.T) {
	s := newStone(t, nil)
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	lit := "'" + strings.Repeat("m", 1<<20) + "'"
	m := call(t, p, "tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": lit}})
	var r struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) != 1 || r.Content[0].Text != lit {
		t.Errorf("a 1 MiB line came back as %d bytes of result, error %.200s", len(m.Result), m.Error)
	}
}

// TestVersionWording: JWT login arrived as a preview in 3.7.4; gemgate requires 3.7.5.
func TestVersionWording(t *testing.T) {
	msg := (&Refusal{Kind: "versionTooOld", Detail: "x"}).Error()
	for _, w := range []string{"preview in GemStone 3.7.4", "requires 3.7.5"} {
		if !strings.Contains(msg, w) {
			t.Errorf("versionTooOld %q lacks %q", msg, w)
		}
	}
	s := newStone(t, map[string]any{"version": "3.7.4.1"})
	var fix string
	for _, f := range Check(context.Background(), s.config(t)) {
		if !f.OK && strings.Contains(f.What, "older than") {
			fix = f.Fix
		}
	}
	if !strings.Contains(fix, "preview in 3.7.4") || strings.Contains(fix, "does not exist") {
		t.Errorf("check's fix for 3.7.4.1 = %q", fix)
	}
}
