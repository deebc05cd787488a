package sessionless

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemgate/gemgate/auth"
)

// A requestState verifies only as issued, by this process, before its expiry, and for its own
// caller and request.
func TestRequestState(t *testing.T) {
	k, other := newStateKey(), newStateKey()
	now := time.Now()
	claims := stateClaims{Issuer: "iss", Subject: "alice", Worker: "w1", Park: "p1", Method: "tools/call", Name: "ask",
		Keys: []string{"gemgate-w1"}, Expires: now.Add(time.Minute).Unix()}
	good := k.seal(claims)
	flip := func(s string) string {
		i := strings.Index(s, ".") + 5
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	expired := claims
	expired.Expires = now.Add(-time.Second).Unix()
	tests := []struct {
		name  string
		state string
		want  error
	}{
		{"tampered payload", flip(good), errStateTampered},
		{"tampered suffix", good + "-TAMPERED", errStateTampered},
		{"not gemgate's", "opaque-worker-state", errStateMalformed},
		{"no mac", strings.SplitN(good, ".", 3)[0] + "." + strings.SplitN(good, ".", 3)[1], errStateTampered},
		{"expired", k.seal(expired), errStateExpired},
		{"another process", other.seal(claims), errStateOtherProcess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := k.open(tc.state, now); !errors.Is(err, tc.want) {
				t.Errorf("open: %v, want %v", err, tc.want)
			}
		})
	}
	c, err := k.open(good, now)
	if err != nil {
		t.Fatal(err)
	}
	// Valid through the second of its expiry, expired the second after.
	atExpiry := time.Unix(claims.Expires, 999_999_999)
	if _, err := k.open(good, atExpiry); err != nil {
		t.Errorf("open in the second of its expiry: %v, want it valid", err)
	}
	if _, err := k.open(good, atExpiry.Add(time.Nanosecond)); !errors.Is(err, errStateExpired) {
		t.Errorf("open the second after its expiry: %v, want %v", err, errStateExpired)
	}
	if err := c.belongsTo(auth.Principal{Issuer: "iss", Subject: "alice"}, false, "tools/call", "ask"); err != nil {
		t.Errorf("own state refused: %v", err)
	}
	for _, tc := range []struct {
		o        auth.Principal
		ro       bool
		method   string
		wantFail bool
	}{
		{auth.Principal{Issuer: "iss", Subject: "bob"}, false, "tools/call", true},
		{auth.Principal{Issuer: "other-iss", Subject: "alice"}, false, "tools/call", true},
		{auth.Principal{Issuer: "iss", Subject: "alice"}, true, "tools/call", true},
		{auth.Principal{Issuer: "iss", Subject: "alice"}, false, "prompts/get", true},
	} {
		if err := c.belongsTo(tc.o, tc.ro, tc.method, "ask"); (err != nil) != tc.wantFail {
			t.Errorf("belongsTo(%v, ro %v, %s): %v", tc.o, tc.ro, tc.method, err)
		}
	}
}
