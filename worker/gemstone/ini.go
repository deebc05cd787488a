package gemstone

import (
	"fmt"
	"os"
	"strings"

	"github.com/gemgate/gemgate/internal/private"
)

// ServiceINI is what gemgate reads from the service account's topaz ini file. The password
// is only checked for presence, never kept.
type ServiceINI struct {
	Stone       string // set gemstone
	User        string // set user / set username
	HasPassword bool   // set password
}

// ReadServiceINI reads the topaz ini file the relay logs in with, and refuses one that others
// can read or write: it holds the service account's password.
func ReadServiceINI(path string) (ServiceINI, error) {
	var ini ServiceINI
	if path == "" {
		return ini, fmt.Errorf("no service ini configured (gemstone_service_ini)")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ini, fmt.Errorf("service ini: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return ini, fmt.Errorf("service ini %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return ini, fmt.Errorf("service ini %s has mode %04o; it holds a password, so make it 0600 (chmod 600 %s)", path, perm, path)
	}
	// topaz reads the ini again, as topaz commands, at the start of every session, in the
	// process that holds the user's token: the file it leads to (through any links) must be
	// this user's and written by no one else, and no folder on the way, up to /, may let
	// another account rename or re-point an entry (private.Path).
	real, err := private.Path(path)
	if err == nil {
		err = private.Owned(real)
	}
	if err != nil {
		return ini, fmt.Errorf("service ini: %w; it must be gemgate's user's own, in a folder no other account may write", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ini, fmt.Errorf("service ini: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.EqualFold(f[0], "set") {
			continue
		}
		// `set user X pass Y gemstone S` sets several at once; so does one per line.
		for i := 1; i+1 < len(f); i += 2 {
			k, v := strings.ToLower(f[i]), f[i+1]
			switch {
			case strings.HasPrefix(k, "gem"):
				ini.Stone = v
			case k == "u" || strings.HasPrefix(k, "user"):
				ini.User = v
			case k == "p" || strings.HasPrefix(k, "pass"):
				ini.HasPassword = v != ""
			}
		}
	}
	var missing []string
	if ini.Stone == "" {
		missing = append(missing, "set gemstone <stone>")
	}
	if ini.User == "" {
		missing = append(missing, "set user <service account>")
	}
	if !ini.HasPassword {
		missing = append(missing, "set password <password>")
	}
	if len(missing) > 0 {
		return ini, fmt.Errorf("service ini %s lacks %s", path, strings.Join(missing, ", "))
	}
	return ini, nil
}
