package userdir

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	tests := []struct{ user, want string }{
		{"alice", "alice"},
		{"alice@example.com", "alice@example.com"},
		{"a_b", "a_5fb"},
		{"a/b", "a_2fb"},
		{"..", "_2e."},
		{".hidden", "_2ehidden"},
		{".dev-issuer", "_2edev-issuer"},
		{"auth0|1234", "auth0_7c1234"},
		{"Ü", "_c3_9c"},
	}
	for _, tc := range tests {
		if got := Name(tc.user); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.user, got, tc.want)
		}
	}
	long := strings.Repeat("/", 100)
	if got := Name(long); !strings.HasPrefix(got, "_h") || len(got) != 66 {
		t.Errorf("Name(long) = %q, want _h and a SHA-256", got)
	}
	seen := map[string]string{}
	for _, u := range []string{"a_b", "a_5fb", "a/b", "a_2fb", ".", "_2e", "x", strings.Repeat("y", 200), strings.Repeat("/", 100)} {
		d := Name(u)
		if other, ok := seen[d]; ok {
			t.Errorf("users %q and %q share the folder %q", u, other, d)
		}
		seen[d] = u
		if !validDirName(d) {
			t.Errorf("Name(%q) = %q is not a safe single path element", u, d)
		}
	}
}

// Injective over every short name of a small alphabet that holds each byte class the
// mapping treats apart: kept, escaped, the escape character itself, and a leading dot.
func TestNameIsInjective(t *testing.T) {
	const alphabet = "a._/2e5f"
	seen := map[string]string{}
	var walk func(prefix string)
	walk = func(prefix string) {
		if prefix != "" {
			d := Name(prefix)
			if other, ok := seen[d]; ok {
				t.Fatalf("users %q and %q share the folder %q", prefix, other, d)
			}
			seen[d] = prefix
			if !validDirName(d) {
				t.Fatalf("Name(%q) = %q is not a safe single path element", prefix, d)
			}
		}
		if len(prefix) == 5 {
			return
		}
		for i := range len(alphabet) {
			walk(prefix + alphabet[i:i+1])
		}
	}
	walk("")
}

func validDirName(d string) bool {
	return d != "" && d != "." && d != ".." && !strings.HasPrefix(d, ".") && !strings.ContainsAny(d, "/\\\x00") && len(d) <= 255
}
