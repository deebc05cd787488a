package gemstone

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemgate/gemgate/jsonrpc"
)

// The relay's own properties, each acted on by the fake stone from what the script sends.

// answerKinds is each answer's id and error kind ("" for a result) in a transcript.
func answerKinds(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		m, err := jsonrpc.Parse([]byte(l), jsonrpc.Options{})
		if err != nil {
			t.Fatalf("topaz printed %q", l)
		}
		var e struct{ Data struct{ Kind string } }
		json.Unmarshal(m.Error, &e)
		out = append(out, string(m.ID)+" "+e.Data.Kind)
	}
	return out
}

// TestSessionLivenessNeedsNoIsLoggedIn: whether the session outlives an error is read from the
// error (the fatal band means the gem is gone), not from GsTsExternalSession>>isLoggedIn,
// which no public GemTalk source shows. Where that selector is not understood, a Halt still
// keeps the session; where it answers true for a dead gem, the loss is still reported.
func TestSessionLivenessNeedsNoIsLoggedIn(t *testing.T) {
	halt := `{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"self halt"}}}`
	status := `{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"status"}}`
	for _, tc := range []struct {
		cfg  map[string]any
		in   []string
		want []string
	}{
		{map[string]any{"is_logged_in": "dnu"}, []string{halt, status}, []string{`"h1" gemstoneError`, `"s1" `}},
		{map[string]any{"is_logged_in": "stale", "fault": "gem_dies"}, []string{status, halt}, []string{`"s1" sessionLost`}},
	} {
		tr := runTranscript(t, newStone(t, tc.cfg), "alice", token(goodClaims("alice")), tc.in...)
		if got := answerKinds(t, tr.after(t)); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("isLoggedIn %v: answers %q, want %q", tc.cfg["is_logged_in"], got, tc.want)
		}
		if tr.code != 0 {
			t.Errorf("isLoggedIn %v: topaz exited %d", tc.cfg["is_logged_in"], tr.code)
		}
	}
}

// TestErrorWithTheCallInFlightEndsTheSession: when the relay's wait raises while the call goes
// on in the gem (isCallInProgress still true), the session cannot be kept: its next lastResult
// would be this call's answer to another request.
func TestErrorWithTheCallInFlightEndsTheSession(t *testing.T) {
	s := newStone(t, map[string]any{"fault": "wait_raises"})
	tr := runTranscript(t, s, "alice", token(goodClaims("alice")),
		`{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"status"}}`,
		`{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
	if got := answerKinds(t, tr.after(t)); strings.Join(got, ",") != `"w1" sessionLost` {
		t.Errorf("answers %q, want the call answered sessionLost and the session ended", got)
	}
	if tr.code != 0 {
		t.Errorf("topaz exited %d", tr.code)
	}
}

// TestReadOnlySessionCannotCommit: a read-only session's commits are disabled in the user's
// session itself (System disableCommitsWithReason:), on a server with a read-only mode (0.8.0)
// and on one without (after 0.8.0, where the relay must not send sessionReadOnly: at all).
func TestReadOnlySessionCannotCommit(t *testing.T) {
	for _, server := range []string{"0.8.0", "unreleased"} {
		s := newStone(t, map[string]any{"server": server})
		p := startRelay(t, s, "alice", token(goodClaims("alice")), true)
		if m := call(t, p, "initialize", map[string]any{}); m.Error != nil {
			t.Errorf("server %s: a read-only session was refused: %s", server, m.Error)
			continue
		}
		st := call(t, p, "tools/call", map[string]any{"name": "status"})
		if !strings.Contains(string(st.Result), "read-only: true") {
			t.Errorf("server %s: status = %s", server, st.Result)
		}
		if server == "unreleased" { // nothing but the lock stands between the session and a commit
			m := call(t, p, "tools/call", map[string]any{"name": "commit"})
			if !strings.Contains(string(m.Result), "2249") {
				t.Errorf("server %s: commit in a read-only session = %s %s", server, m.Result, m.Error)
			}
		}
	}
}

// TestGemConfigReachesTheUsersGem: the user's gem is forked with the NetLDI's configuration
// (50 MB of temporary object memory by product default) unless gemstone_gem_config is set,
// which the relay passes in the NRS body as gemnetobject -C; a value with a space, which
// gemnetobject would cut short without a word, is refused.
func TestGemConfigReachesTheUsersGem(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"", "50000"},
		{"GEM_TEMPOBJ_CACHE_SIZE=900000;GEM_TEMPOBJ_CODE_SIZE=300000;", "900000"},
	} {
		s := newStone(t, nil)
		s.gemConfig = tc.config
		p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
		m := call(t, p, "tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "System configurationAt: #GemTempObjCacheSize"}})
		if !strings.Contains(string(m.Result), `"text":"`+tc.want+`"`) {
			t.Errorf("gem config %q: the gem's GemTempObjCacheSize = %s %s, want %s", tc.config, m.Result, m.Error, tc.want)
		}
	}
	for _, bad := range []string{"GEM_TEMPOBJ_CACHE_SIZE=900000; GEM_TEMPOBJ_CODE_SIZE=300000;", "GEM_TEMPOBJ_CACHE_SIZE=900000", "-T 900000"} {
		s := newStone(t, nil)
		s.gemConfig = bad
		if _, err := Prepare(context.Background(), s.config(t)); err == nil || !strings.Contains(err.Error(), "gemstone_gem_config") {
			t.Errorf("gem config %q: Prepare = %v, want it refused", bad, err)
		}
	}
}

// TestBothGemsAreNamed: the relay names its own gem and the user's with System cacheName:, so
// that a DBA tells them apart (unnamed they are TopazL and GciTs, like every other), cut to
// the 31 characters GemStone allows.
func TestBothGemsAreNamed(t *testing.T) {
	long := "alice-with-a-rather-long-gemstone-name"
	users := map[string]any{}
	for _, u := range []string{"alice", long} {
		users[u] = map[string]any{"audiences": []string{"gemstone"}, "issuers": []string{"*"}}
	}
	s := newStone(t, map[string]any{"users": users})
	for user, want := range map[string]string{
		"alice": `#( 'gemgate-relay:alice' 'gemgate:alice' )`,
		long:    `#( 'gemgate-relay:alice-with-a-rath' 'gemgate:alice-with-a-rather-lon' )`,
	} {
		p := startRelay(t, s, user, token(goodClaims(user)), false)
		m := call(t, p, "tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "System cacheStatisticsForAllSlots collect: [:each | each first]"}})
		var r struct{ Content []struct{ Text string } }
		if json.Unmarshal(m.Result, &r); len(r.Content) != 1 || r.Content[0].Text != want {
			t.Errorf("%s: the gems are named %s %s, want %s", user, m.Result, m.Error, want)
		}
	}
}
