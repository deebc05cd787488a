package auth

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The two examples of the MCP authorization spec (2025-11-25, "Protected
// Resource Metadata Discovery Requirements" and "Runtime Insufficient Scope
// Errors"), folded onto one line as a client receives them.
const (
	spec401 = `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`
	spec403 = `Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="Additional file write permission required"`
)

func parseChallenge(t *testing.T, v string) (string, map[string]string) {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate([]string{v})
	if err != nil || len(cs) != 1 {
		t.Fatalf("parse %q: %v %v", v, cs, err)
	}
	return cs[0].Scheme, cs[0].Params
}

func TestChallengeMatchesSpecExamples(t *testing.T) {
	rm := "https://mcp.example.com/.well-known/oauth-protected-resource"
	tests := []struct {
		name string
		c    Challenge
		spec string
	}{
		{"401", Challenge{Scopes: []string{"files:read"}, ResourceMetadata: rm}, spec401},
		{"403", Challenge{
			Error:            "insufficient_scope",
			Scopes:           []string{"files:read", "files:write", "user:profile"},
			ResourceMetadata: rm,
			Description:      "Additional file write permission required",
		}, spec403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantScheme, want := parseChallenge(t, tt.spec)
			gotScheme, got := parseChallenge(t, tt.c.String())
			if gotScheme != wantScheme {
				t.Errorf("scheme %q, want %q", gotScheme, wantScheme)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("params (-spec +ours):\n%s", diff)
			}
		})
	}
	// The 403 example's parameter order is the one we emit: byte-identical.
	if got := tests[1].c.String(); got != spec403 {
		t.Errorf("403 challenge\n got %s\nwant %s", got, spec403)
	}
}

func TestChallengeString(t *testing.T) {
	tests := []struct {
		name string
		c    Challenge
		want string
	}{
		{"empty", Challenge{}, "Bearer"},
		{"no token", Challenge{Scopes: []string{"mcp:use"}, ResourceMetadata: "https://h/.well-known/oauth-protected-resource/mcp"},
			`Bearer scope="mcp:use", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"`},
		{"invalid token", Challenge{Error: "invalid_token", Scopes: []string{"mcp:use"}, ResourceMetadata: "https://h/m", Description: "token expired"},
			`Bearer error="invalid_token", scope="mcp:use", resource_metadata="https://h/m", error_description="token expired"`},
		{"quotes and backslashes escaped", Challenge{ResourceMetadata: `https://h/a"b\c`},
			`Bearer resource_metadata="https://h/a\"b\\c"`},
		{"header injection dropped", Challenge{ResourceMetadata: "https://h/\r\nX-Evil: 1", Description: "bad\r\nX-Evil: 1"},
			`Bearer resource_metadata="https://h/X-Evil: 1", error_description="badX-Evil: 1"`},
		{"description keeps RFC 6750 characters only", Challenge{Error: "invalid_token", Description: `say "hi" \ é`},
			`Bearer error="invalid_token", error_description="say hi  "`},
		{"invalid and duplicate scopes dropped", Challenge{Scopes: []string{"a", "", `b"c`, "d e", "a", "ok:1"}},
			`Bearer scope="a ok:1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.String()
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.ContainsAny(got, "\r\n") {
				t.Errorf("control characters in %q", got)
			}
		})
	}
	// A client parser recovers an escaped value exactly.
	_, p := parseChallenge(t, Challenge{ResourceMetadata: `https://h/a"b\c`}.String())
	if p["resource_metadata"] != `https://h/a"b\c` {
		t.Errorf("round trip = %q", p["resource_metadata"])
	}
}

// The RFC 6750 §3 character sets, written out from the grammar rather than from the code:
// error and error_description take %x20-21 / %x23-5B / %x5D-7E, a scope token (NQCHAR)
// %x21 / %x23-5B / %x5D-7E.
func inErrorCharset(c rune) bool { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' }

func inScopeCharset(c byte) bool { return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\' }

// TestChallengeErrorCharset runs every ASCII character and some beyond through errorParam,
// and into a challenge's error and error_description: each survives exactly when the
// grammar allows it.
func TestChallengeErrorCharset(t *testing.T) {
	var all, want strings.Builder
	for c := rune(0); c < 0x100; c++ {
		all.WriteRune(c)
		if inErrorCharset(c) {
			want.WriteRune(c)
		}
	}
	all.WriteString("é€\u2028")
	if got := errorParam(all.String()); got != want.String() {
		t.Errorf("errorParam kept %q,\nwant %q", got, want.String())
	}
	if got := (Challenge{Error: all.String()}).String(); got != `Bearer error="`+want.String()+`"` {
		t.Errorf("error param %q,\nwant %q", got, want.String())
	}
	if got := (Challenge{Description: all.String()}).String(); got != `Bearer error_description="`+want.String()+`"` {
		t.Errorf("error_description param %q,\nwant %q", got, want.String())
	}
}

// TestChallengeScopeCharset: a scope token is dropped from the challenge when any one of
// its bytes is outside NQCHAR, and kept whole otherwise.
func TestChallengeScopeCharset(t *testing.T) {
	for c := 0; c < 0x100; c++ {
		tok := "a" + string([]byte{byte(c)}) + "b"
		want := inScopeCharset(byte(c))
		if got := validScopeToken(tok); got != want {
			t.Errorf("validScopeToken(%q) = %v, want %v", tok, got, want)
		}
		wantParam := ""
		if want {
			wantParam = tok
		}
		if got := scopeParam([]string{tok}); got != wantParam {
			t.Errorf("scopeParam([%q]) = %q, want %q", tok, got, wantParam)
		}
	}
}

// TestChallengeQuoting: inside a quoted value '"' and '\' are escaped, control characters
// (CR and LF above all: they would split the header) and DEL are dropped, and every other
// byte is kept as it is.
func TestChallengeQuoting(t *testing.T) {
	for c := 0; c < 0x100; c++ {
		in := "x" + string([]byte{byte(c)}) + "y"
		var want string
		switch {
		case c == '"' || c == '\\':
			want = `x\` + string([]byte{byte(c)}) + "y"
		case c < 0x20 || c == 0x7f:
			want = "xy"
		default:
			want = in
		}
		var b strings.Builder
		writeQuoted(&b, in)
		if b.String() != want {
			t.Errorf("writeQuoted(%q) = %q, want %q", in, b.String(), want)
		}
	}
}

// TestChallengeScopesDeduplicated: a scope asked for twice is advertised once, in first-seen
// order, with invalid and empty ones left out.
func TestChallengeScopesDeduplicated(t *testing.T) {
	got := Challenge{Scopes: []string{"b", "a", "", "b", `bad"`, "a", "c"}}.String()
	if want := `Bearer scope="b a c"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
