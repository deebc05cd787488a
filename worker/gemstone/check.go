package gemstone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MinVersion is the oldest GemStone the relay logs in to: GsTsExternalSession>>jwtPassword:
// and the kernel JWT classes arrived in 3.7.5.
const MinVersion = "3.7.5"

// Finding is one line of `gemgate check`.
type Finding struct {
	OK   bool
	What string
	Fix  string // for a problem
}

// Check looks at everything a GemStone session needs, without logging in: topaz, the
// version, the stone under the resolved GEMSTONE_GLOBAL_DIR, a netldi, the service ini.
func Check(ctx context.Context, c Config) []Finding {
	var out []Finding
	ok := func(format string, a ...any) { out = append(out, Finding{OK: true, What: fmt.Sprintf(format, a...)}) }
	bad := func(fix, format string, a ...any) {
		out = append(out, Finding{What: fmt.Sprintf(format, a...), Fix: fix})
	}
	home := c.HomeOrEnv()
	if home == "" {
		bad("set gemstone_home to the GemStone product directory ($GEMSTONE)", "gemstone_home is not set and neither is GEMSTONE")
		return out
	}
	topaz := filepath.Join(home, "bin", "topaz")
	if fi, err := os.Stat(topaz); err != nil || fi.Mode()&0o111 == 0 {
		bad("point gemstone_home at the GemStone product directory (the one holding bin/topaz)", "no executable topaz at %s", topaz)
		return out
	}
	ok("topaz found: %s", topaz)

	stone := c.Stone
	ini, err := ReadServiceINI(c.ServiceINI)
	if err != nil {
		bad("create the service account's topaz ini (set gemstone / set user / set password), owned by gemgate's user, mode 0600; see docs/gemstone.md", "%v", err)
	} else {
		ok("service ini %s is 0600 and names user %s on stone %s", c.ServiceINI, ini.User, ini.Stone)
		if stone == "" {
			stone = ini.Stone
		} else if stone != ini.Stone {
			bad("make gemstone_stone and the ini's `set gemstone` agree", "gemstone_stone is %s but the service ini logs in to %s", stone, ini.Stone)
		}
	}
	if stone == "" {
		stone = "gs64stone"
	}

	g := ResolveGlobalDir(ctx, home, c.GlobalDir, stone)
	if !g.Found {
		bad("start the stone, or set gemstone_global_dir to the GEMSTONE_GLOBAL_DIR it was started with (its lock files are in <dir>/locks)", "%s", g.Note)
		return out
	}
	if g.Note != "" && c.GlobalDir != "" && g.Dir != c.GlobalDir {
		bad("set gemstone_global_dir to "+g.Dir, "%s", g.Note)
	} else {
		ok("GEMSTONE_GLOBAL_DIR %s: stone %s is running", g.Dir, stone)
	}
	s, _ := find(g.Servers, "Stone", stone)
	if AtLeast(s.Version, MinVersion) {
		ok("GemStone %s (at least %s)", s.Version, MinVersion)
	} else {
		bad("upgrade the stone to GemStone "+MinVersion+" or later: JWT login (GsTsExternalSession>>jwtPassword:) does not exist before it",
			"stone %s runs GemStone %s, older than %s", stone, s.Version, MinVersion)
	}
	if n, found := find(g.Servers, "Netldi", ""); found && n.Running() {
		ok("netldi %s is running", n.Name)
	} else {
		bad("start a netldi (startnetldi) with the same GEMSTONE_GLOBAL_DIR: the relay's GsTsExternalSession login forks the user's gem through it",
			"no running netldi under %s", g.Dir)
	}
	return out
}

// AtLeast compares dotted GemStone versions (3.7.4.1 < 3.7.5); text after the numbers is
// ignored.
func AtLeast(version, min string) bool {
	a, b := versionParts(version), versionParts(min)
	if len(a) == 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		var x int
		if i < len(a) {
			x = a[i]
		}
		if x != b[i] {
			return x > b[i]
		}
	}
	return true
}

func versionParts(v string) []int {
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(strings.TrimRightFunc(p, func(r rune) bool { return r < '0' || r > '9' }))
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}
