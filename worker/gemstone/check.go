package gemstone

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MinVersion is the oldest GemStone the relay logs in to. JWT login arrived as a preview in
// 3.7.4; gemgate, like GemTalk's MCP server, requires 3.7.5, the first version on which
// JwtSecurityData, System addJwtKey:withId: and GsTsExternalSession>>jwtPassword: were measured.
const MinVersion = "3.7.5"

// Finding is one line of `gemgate check`.
type Finding struct {
	OK   bool
	What string
	Fix  string // for a problem
}

// Check looks at everything a GemStone session needs, without logging in: topaz, the
// version, the product against the stone's version, the stone under the resolved
// GEMSTONE_GLOBAL_DIR, a netldi, the service ini. Nothing when no product directory is set:
// the configuration's check names that.
func Check(ctx context.Context, c Config) []Finding {
	var out []Finding
	ok := func(format string, a ...any) { out = append(out, Finding{OK: true, What: fmt.Sprintf(format, a...)}) }
	bad := func(fix, format string, a ...any) {
		out = append(out, Finding{What: fmt.Sprintf(format, a...), Fix: fix})
	}
	home := c.HomeOrEnv()
	if home == "" {
		return nil // the configuration's own problem (gemstone_home: required) says so
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
	stone = cmp.Or(stone, "gs64stone")

	g := ResolveGlobalDir(ctx, home, c.GlobalDir, stone)
	if !g.Found {
		bad("start the stone, or set gemstone_global_dir to the GEMSTONE_GLOBAL_DIR it was started with (its lock files are in <dir>/locks)", "%s", g.Note)
		return out
	}
	s, _ := stoneRow(g.Servers, stone)
	switch {
	case g.Note != "" && c.GlobalDir != "" && g.Dir != c.GlobalDir:
		bad("set gemstone_global_dir to "+g.Dir, "%s", g.Note)
	case !s.Running():
		bad("wait until gslist lists the stone as OK; sessions fail until then",
			"GEMSTONE_GLOBAL_DIR %s: stone %s is there but not serving yet (gslist status %q)", g.Dir, stone, s.Status)
	default:
		ok("GEMSTONE_GLOBAL_DIR %s: stone %s is running (gslist status %s)", g.Dir, stone, s.Status)
	}
	if AtLeast(s.Version, MinVersion) {
		ok("GemStone %s (at least %s)", s.Version, MinVersion)
	} else {
		bad("upgrade the stone to GemStone "+MinVersion+" or later: JWT login arrived as a preview in 3.7.4, and gemgate (like GemTalk's MCP server) requires "+MinVersion,
			"stone %s runs GemStone %s, older than %s", stone, s.Version, MinVersion)
	}
	if s.Version != "" {
		out = append(out, checkProduct(home, stone, s.Version))
	}
	out = append(out, checkNetLDI(g, stone))
	return out
}

// productVersion is the version in $GEMSTONE/version.txt: its first dotted number of three
// parts or more, as GemDB reads it.
var productVersion = regexp.MustCompile(`[0-9]+(\.[0-9A-Za-z]+){2,}`)

// checkProduct compares the product gemstone_home names with the version gslist lists for the
// stone: a linked login through another version's topaz fails with error 4044, every time.
func checkProduct(home, stone, running string) Finding {
	path := filepath.Join(home, "version.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		return Finding{What: fmt.Sprintf("cannot read %s to compare the product with stone %s (GemStone %s): %v", path, stone, running, err),
			Fix: "point gemstone_home at the product directory of the stone's version (the one holding version.txt and bin/topaz)"}
	}
	product := productVersion.FindString(string(b))
	if product == "" || !slices.Equal(versionParts(product), versionParts(running)) {
		return Finding{What: fmt.Sprintf("gemstone_home %s is GemStone %q (version.txt), but stone %s runs %s: every login through this topaz fails with error 4044", home, product, stone, running),
			Fix: "point gemstone_home (or GEMSTONE) at the product directory of GemStone " + running + ", the one the stone was started from"}
	}
	return Finding{OK: true, What: fmt.Sprintf("gemstone_home is GemStone %s (version.txt), the stone's version", product)}
}

// checkNetLDI names the NetLDI the relay will fork user sessions through, and says when the
// environment points them at another one.
func checkNetLDI(g GlobalDir, stone string) Finding {
	name := ChooseNetLDI(g.Servers, stone)
	if name == "" {
		what := fmt.Sprintf("no running netldi under %s", g.Dir)
		if others := OtherNetLDIs(g.Servers, stone); len(others) > 0 {
			what = fmt.Sprintf("no running netldi under %s runs as the stone's owner; passed over: %s", g.Dir, strings.Join(others, ", "))
		}
		return Finding{What: what,
			Fix: "start one as the stone's owner with the same GEMSTONE_GLOBAL_DIR, in guest mode (startnetldi -g -a <owner>): the relay's GsTsExternalSession login forks the user's gem through it and supplies no host credentials"}
	}
	if env := os.Getenv("GEMSTONE_NRS_ALL"); env != "" {
		if !strings.Contains(env, "#netldi:"+name) {
			return Finding{What: fmt.Sprintf("GEMSTONE_NRS_ALL is %q, which does not name the running netldi %s; user logins will use what it names", env, name),
				Fix: "unset GEMSTONE_NRS_ALL so that gemgate sets #netldi:" + name + ", or make it name that netldi"}
		}
		return Finding{OK: true, What: fmt.Sprintf("netldi %s is running; user sessions are forked through it (GEMSTONE_NRS_ALL=%s, from the environment)", name, env)}
	}
	return Finding{OK: true, What: fmt.Sprintf("netldi %s is running; user sessions are forked through it (gemgate sets GEMSTONE_NRS_ALL=#netldi:%s)", name, name)}
}

// AtLeast compares dotted GemStone versions (3.7.4.1 < 3.7.5); text after the numbers is
// ignored.
func AtLeast(version, min string) bool {
	a, b := versionParts(version), versionParts(min)
	if len(a) == 0 {
		return false
	}
	for len(a) < len(b) {
		a = append(a, 0) // 3.7 is 3.7.0
	}
	return slices.Compare(a, b) >= 0
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
