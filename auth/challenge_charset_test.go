package auth

import (
	"strings"
	"testing"
)

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
