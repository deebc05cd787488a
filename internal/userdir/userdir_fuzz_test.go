package userdir

import (
	"encoding/hex"
	"strings"
	"testing"
)

// unescape reverses Name for a folder name that is not a digest: each "_xx" is the byte xx.
func unescape(d string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(d); i++ {
		if d[i] != '_' {
			b.WriteByte(d[i])
			continue
		}
		if i+2 >= len(d) {
			return "", false
		}
		x, err := hex.DecodeString(d[i+1 : i+3])
		if err != nil || strings.ToLower(d[i+1:i+3]) != d[i+1:i+3] {
			return "", false
		}
		b.WriteByte(x[0])
		i += 2
	}
	return b.String(), true
}

// FuzzNameDecodesToItsUser: every folder name that is not a digest reads back as exactly the
// user it was made for (so no two users share it), and every folder name, digest or not, is
// one safe path element (for a user who has a name); a digest is made only for a name whose escaping is too long.
func FuzzNameDecodesToItsUser(f *testing.F) {
	for _, s := range []string{"alice", "Alice", ".hidden", "..", "_h00", "a/b", "a\x00b", "Zoë", strings.Repeat("é", 70), "@x-y.z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		if user == "" {
			return // no user has it (worker.CheckUser refuses it)
		}
		d := Name(user)
		if !validDirName(d) {
			t.Fatalf("Name(%q) = %q is not a safe single path element", user, d)
		}
		if strings.HasPrefix(d, "_h") {
			if len(d) != 2+64 {
				t.Fatalf("Name(%q) = %q: a digest of the wrong length", user, d)
			}
			return
		}
		if got, ok := unescape(d); !ok || got != user {
			t.Fatalf("Name(%q) = %q reads back as %q (%v)", user, d, got, ok)
		}
	})
}
