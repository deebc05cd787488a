// Package userdir names each user's folder of data_dir: gemgate makes it and shows it, alone,
// to the user's sandboxed workers, and the demo worker keeps the user's notes in it. One
// mapping for both, so that they can never disagree.
package userdir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Name maps a user name to a folder name injectively, so two users never share a folder:
// letters, digits, '.', '-' and '@' stay (a leading '.' does not, so that no name is hidden,
// ".", "..", or gemgate dev's ".dev-issuer"); every other byte becomes "_xx" (lowercase hex).
// Names that would grow past 128 bytes become "_h" and the SHA-256 of the user, which the
// escaping can never produce. The name of a user who has one is one path element.
func Name(user string) string {
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		keep := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '@'
		if keep && !(i == 0 && c == '.') {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	if b.Len() > 128 {
		sum := sha256.Sum256([]byte(user))
		return "_h" + hex.EncodeToString(sum[:])
	}
	return b.String()
}
