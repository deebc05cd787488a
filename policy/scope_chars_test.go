package policy

import "testing"

// TestScopeCharacterBounds walks the edges of RFC 6749 §3.3's scope-token alphabet
// (%x21 / %x23-5B / %x5D-7E): the first and last printable characters are scope
// characters, the ones just outside them and the two excluded in the middle are not.
func TestScopeCharacterBounds(t *testing.T) {
	tests := []struct {
		scope string
		ok    bool
	}{
		{"!", true}, // 0x21, the first allowed
		{"a!b", true},
		{"~", true}, // 0x7e, the last allowed
		{"read~write", true},
		{"#[]", true}, // either side of the backslash
		{" ", false},  // 0x20
		{"a b", false},
		{"a\x7fb", false}, // 0x7f, DEL
		{"a\x80b", false}, // not ASCII
		{`a"b`, false},    // 0x22
		{`a\b`, false},    // 0x5c
		{"a\tb", false},   // a control character
		{"", false},       // empty
	}
	for _, tt := range tests {
		err := checkScope(tt.scope)
		if (err == nil) != tt.ok {
			t.Errorf("checkScope(%q) = %v, want ok=%v", tt.scope, err, tt.ok)
		}
		// The same rule holds where operators meet it: in the configuration.
		_, err = New(Config{ExtraScopes: []string{tt.scope}})
		if (err == nil) != tt.ok {
			t.Errorf("New(extra_scopes: [%q]) = %v, want ok=%v", tt.scope, err, tt.ok)
		}
	}
}

// TestScopeEveryCharacter checks the whole byte range against the grammar, so a scope
// character can neither be lost nor gained.
func TestScopeEveryCharacter(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c >= 0x21 && c <= 0x7e && c != '"' && c != '\\'
		s := "x" + string([]byte{byte(c)}) + "y"
		if err := checkScope(s); (err == nil) != want {
			t.Errorf("checkScope(%q) = %v, want ok=%v", s, err, want)
		}
	}
}
