package gemstone

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestJwtKeysKidCannotAddTopazCommands: gemstone-jwt-keys writes each key's kid, a string the
// issuer's JWKS chooses, into a topaz command file that an administrator's account runs. Topaz
// ends a run block at a line holding only %, whatever string literal is open, and takes the
// next lines as its own commands: a kid with a line break must not reach the file, where it
// would run Smalltalk of the issuer's choosing as that administrator. Such a key is skipped,
// as a key of an unsupported type is; the other keys are still registered.
func TestJwtKeysKidCannotAddTopazCommands(t *testing.T) {
	s := newStone(t, nil)
	issuer := &jwks{}
	issuer.add(t, "k1")
	issuer.add(t, "k2")
	issuer.keys[1]["kid"] = "k2\n%\nrun\nGsFile stdout nextPutAll: 'issuer code ran as the administrator'; lf.\n%\nrun\n'"
	// A lone CR ends a line for some readers; a kid outside printable ASCII is no kid an issuer
	// mints, and how a Unicode16 stone would read it in the file is not known: both skipped.
	for _, bad := range []string{"k3\r%\rrun", "k4\u2028x"} {
		issuer.add(t, "k")
		issuer.keys[len(issuer.keys)-1]["kid"] = bad
	}
	srv := httptest.NewServer(issuer)
	t.Cleanup(srv.Close)
	out, err := dryRunKeys(t, s, srv.URL)
	if err != nil {
		t.Fatalf("--dry-run: %v\n%s", err, out)
	}
	var commands []string
	for _, l := range strings.Split(strings.ReplaceAll(string(out), "\r", "\n"), "\n") {
		switch strings.TrimSpace(l) {
		case "iferr 1 exit 3", "login", "run", "%", "logout", "exit 0":
			commands = append(commands, strings.TrimSpace(l))
		}
	}
	if got, want := strings.Join(commands, " "), "iferr 1 exit 3 login run % logout exit 0"; got != want {
		t.Errorf("the command file's topaz commands are %q, want only the script's own %q:\n%s", got, want, out)
	}
	if !strings.Contains(string(out), "withId: 'k1'") {
		t.Errorf("the well-formed key k1 was not registered:\n%s", out)
	}
	var lines int
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "System addJwtKey:") {
			lines++
		}
	}
	if lines != 1 {
		b, _ := json.Marshal(issuer.keys)
		t.Errorf("%d keys registered of %s, want only k1", lines, b)
	}
}
