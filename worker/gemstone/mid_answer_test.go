package gemstone

import (
	"strings"
	"testing"
)

// TestRelayDyingMidAnswerIsNoCorruptedAnswer: a relay that dies while it writes an answer
// (killed at its memory cap, or by the OOM killer, halfway through a large result) leaves half
// a line without its newline on stdout. The call fails because the relay exited, as it does
// when the relay dies before writing anything (TestCrashFailsTheCall): it is not a corrupted
// answer, whose error tells the client and the operator to upgrade the stone for kernel
// defect #51438, and which would take the place of the exit's own reason (a cap reached).
// (The fake stone's "dies_mid_answer" fault, added for this test, writes half of a tools/call
// answer and exits.)
func TestRelayDyingMidAnswerIsNoCorruptedAnswer(t *testing.T) {
	s := newStone(t, map[string]any{"fault": "dies_mid_answer"})
	p := startRelay(t, s, "alice", token(goodClaims("alice")), false)
	call(t, p, "initialize", map[string]any{})
	m := call(t, p, "tools/call", map[string]any{"name": "status"})
	if msg := errorText(m); !strings.Contains(msg, "exited") || strings.Contains(msg, "51438") {
		t.Errorf("a relay that died mid-answer: the call got %q (%s); want the exit, not kernel defect #51438", msg, m.Error)
	}
}
