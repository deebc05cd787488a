package gemstone

import (
	"strings"
	"testing"
)

// TestLoginAdviceIsNotMisledByTheUserName: the advice for a refused login is read from
// GemStone's text, which names the user. A user whose name holds one of the words the advice
// looks for ("aud" in claude, "key" in mickey, "kid" in kidd) is still told that GemStone has
// no JWT-enabled user of that name, not that the token's audience or signing key was refused.
func TestLoginAdviceIsNotMisledByTheUserName(t *testing.T) {
	for _, user := range []string{"claude", "mickey", "kidd"} {
		s := newStone(t, nil)
		msg := refusalText(t, startRelay(t, s, user, token(goodClaims(user)), false))
		if !strings.Contains(msg, "no JWT-enabled user") {
			t.Errorf("unknown user %s: initialize error %q, want the advice for an unknown user", user, msg)
		}
	}
}
