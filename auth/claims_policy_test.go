package auth

import (
	"context"
	"testing"
	"time"

	"github.com/gemgate/gemgate/policy"
)

// TestRuleOnANumericClaimReadsTheNumberTheIssuerWrote: a rule on a claim that is a large
// integer (an organisation or tenant id of 64 bits, as snowflake ids are) holds for the token
// whose claim is that integer, and for no other. Read as a float64 (encoding/json's default),
// 1234567890123456789 and 1234567890123456790 are one number, and a member of the second
// organisation would pass the rule written for the first.
func TestRuleOnANumericClaimReadsTheNumberTheIssuerWrote(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, nil)
	pol, err := policy.New(policy.Config{Rules: []policy.Rule{
		{Name: "org", Allow: `claims.org_id == 1234567890123456789`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		org  string // the claim as the issuer writes it
		want policy.Verdict
	}{
		{"1234567890123456789", policy.Allowed},
		{"1234567890123456790", policy.DeniedForbidden},
		{"1234567890123456788", policy.DeniedForbidden},
	} {
		claims := mustJSON(t, iss.claims(time.Now(), nil))
		payload := append(claims[:len(claims)-1:len(claims)-1], []byte(`,"org_id":`+tc.org+`}`)...)
		p, err := v.Verify(context.Background(), signRaw(t, map[string]any{"alg": "RS256", "kid": kr.rsa1.kid}, payload, kr.rsa1.alg, kr.rsa1.priv))
		if err != nil {
			t.Fatalf("org_id %s: %v", tc.org, err)
		}
		access := pol.DecideToken(policy.Token{Subject: p.Subject, User: p.User, Scopes: p.Scopes, Claims: p.Claims()})
		if got := pol.CheckTool(access, "any_tool", nil); got != tc.want {
			t.Errorf("org_id %s against the rule claims.org_id == 1234567890123456789: %v, want %v", tc.org, got, tc.want)
		}
	}
}
