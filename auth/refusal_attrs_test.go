package auth

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func attrCount(attrs []slog.Attr, key string) int {
	n := 0
	for _, a := range attrs {
		if a.Key == key {
			n++
		}
	}
	return n
}

// TestRefusalLogAttrsIssuerAndAudienceOnce: the token's iss and aud are logged once,
// whether they come from the verifier's facts about the token or, for an error built
// elsewhere, from the error itself.
func TestRefusalLogAttrsIssuerAndAudienceOnce(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t)
	clock := newFakeClock()
	v := newTestVerifier(t, iss, clock, nil)
	verified := func(overrides map[string]any) error {
		_, err := v.Verify(t.Context(), token(t, kr.rsa1, iss.claims(clock.Now(), overrides), nil))
		if err == nil {
			t.Fatalf("token with %v accepted", overrides)
		}
		return err
	}
	tests := []struct {
		name string
		err  error
		key  string
	}{
		{"bare issuer error", &InvalidIssuerError{Issuer: "https://other", Expected: "https://idp"}, "iss"},
		{"verified issuer error", verified(map[string]any{"iss": "https://other"}), "iss"},
		{"bare audience error", &InvalidAudienceError{Audience: []string{"x"}, Expected: []string{testResource}}, "aud"},
		{"verified audience error", verified(map[string]any{"aud": "x"}), "aud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs := RefusalLogAttrs(tt.err)
			if n := attrCount(attrs, tt.key); n != 1 {
				t.Errorf("%q logged %d times in %v, want once", tt.key, n, attrs)
			}
			if n := attrCount(attrs, "expected_"+tt.key); n != 1 {
				t.Errorf("expected_%s logged %d times, want once", tt.key, n)
			}
		})
	}
}

// TestExpiredMomentsAgoHint: the "expired moments ago" hint is for a token that expired
// less than five minutes ago, a refresh the client missed; older ones get no hint.
func TestExpiredMomentsAgoHint(t *testing.T) {
	exp := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		ago  time.Duration
		hint bool
	}{
		{0, false}, // at the expiry instant itself (within the skew): nothing missed yet
		{time.Second, true},
		{5*time.Minute - time.Second, true},
		{5 * time.Minute, false},
		{time.Hour, false},
	} {
		h := refusalHint(&TokenExpiredError{Expiry: exp, Now: exp.Add(tt.ago), Skew: DefaultClockSkew})
		if got := strings.Contains(h, "expired moments ago"); got != tt.hint {
			t.Errorf("expired %v ago: hint %q, want hint=%v", tt.ago, h, tt.hint)
		}
	}
}

// TestAudienceHintNamesTheResource: the hint for a wrong audience names the value the token
// should carry, the first accepted audience, and copes with none configured.
func TestAudienceHintNamesTheResource(t *testing.T) {
	h := refusalHint(&InvalidAudienceError{Audience: []string{"x"}, Expected: []string{testResource, "other"}})
	if !strings.Contains(h, `"`+testResource+`"`) {
		t.Errorf("hint %q does not name %s", h, testResource)
	}
	if h := refusalHint(&InvalidAudienceError{Audience: []string{"x"}}); !strings.Contains(h, `""`) {
		t.Errorf("hint with no audiences configured = %q", h)
	}
}
