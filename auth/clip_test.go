package auth

import (
	"fmt"
	"strings"
	"testing"
)

// TestClip: values quoted in errors keep up to 64 bytes whole and are cut, marked, beyond.
func TestClip(t *testing.T) {
	s64 := strings.Repeat("a", 64)
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{s64[:63], s64[:63]},
		{s64, s64},
		{s64 + "b", s64 + "...(+1 more)"},
		{s64 + strings.Repeat("b", 1000), s64 + "...(+1000 more)"},
	}
	for _, tt := range tests {
		got := (&InvalidIssuerError{Issuer: tt.in}).Error()
		if want := fmt.Sprintf("auth: token issuer %q not accepted", tt.want); got != want {
			t.Errorf("issuer of %d bytes: %q, want %q", len(tt.in), got, want)
		}
	}
}
