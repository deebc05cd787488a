package auth

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestScopeSplitsOnSpaceOnly: RFC 6749 §3.3 (and RFC 9068 §2.2.3) scope is scope-tokens
// separated by SP (%x20) alone. strings.Fields also splits at tab, VT, FF, CR, LF, NEL,
// NO-BREAK SPACE, U+2028, U+3000, ...: a single scope value an issuer grants verbatim
// (a Keycloak dynamic scope "tenant:*", a Hydra wildcard, a custom mapper) such as
// "tenant:x\u00a0mcp:write" becomes the write scope at gemgate, while the issuer and every
// other reader see one scope. The token must either be refused or grant no mcp:write.
func TestScopeSplitsOnSpaceOnly(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, nil)
	for _, sep := range []string{"\u00a0", "\u0085", "\u2028", "\u3000", "\t", "\n", "\v", "\f"} {
		for _, form := range []string{"scope", "scp"} {
			t.Run(fmt.Sprintf("%s %U", form, []rune(sep)[0]), func(t *testing.T) {
				val := "mcp:use tenant:x" + sep + "mcp:write"
				over := map[string]any{"scope": val}
				if form == "scp" {
					over = map[string]any{"scope": nil, "scp": val}
				}
				p, err := v.Verify(context.Background(), token(t, kr.rsa1, iss.claims(time.Now(), over), nil))
				if err != nil {
					return // refusing such a token is fine too
				}
				if p.HasScope("mcp:write") {
					t.Errorf("%s %q granted mcp:write (scopes %q): split at %U, which is no scope separator", form, val, p.Scopes, []rune(sep)[0])
				}
			})
		}
	}
}

// A sub holding a NUL is refused: every worker is told the subject in its environment
// (GEMGATE_SUBJECT), which cannot carry one, so the token would pass and every start of its
// worker fail, retried for ever.
func TestSubjectWithANulIsRefused(t *testing.T) {
	kr := keyring()
	iss := newTestIssuer(t, kr.rsa1)
	v := newTestVerifier(t, iss, nil)
	_, err := v.Verify(context.Background(), token(t, kr.rsa1, iss.claims(time.Now(), map[string]any{"sub": "sub\x00odd"}), nil))
	attrs := RefusalLogAttrs(err)
	if FailureReason(err) != ReasonClaims || logAttr(attrs, "claim") != "sub" || logAttr(attrs, "problem") != "holds a NUL character" {
		t.Errorf("sub with a NUL: %v, want the claim error \"sub holds a NUL character\"", err)
	}
}
