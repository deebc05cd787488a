package gemstone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gemgate/gemgate/worker"
)

// Config is the GemStone worker's configuration.
type Config struct {
	Home       string // $GEMSTONE, the product directory; default the GEMSTONE environment variable
	GlobalDir  string // GEMSTONE_GLOBAL_DIR; empty or wrong means: ask gslist (ResolveGlobalDir)
	Stone      string // the stone's name; default the service ini's `set gemstone`
	ServiceINI string // topaz ini file of the service account, mode 0600
	ScriptDir  string // where the relay script is written; default DefaultScriptDir()
	// GemConfig is the gemnetobject -C parameters the user's gem is forked with
	// (GEM_TEMPOBJ_CACHE_SIZE=900000;); "" leaves the NetLDI's (50 MB of temporary objects).
	GemConfig string
}

// gemConfigForm is gemnetobject's -C argument: NAME=value pairs, each ended by a semicolon,
// with no space anywhere (a space ends the argument, and what follows is silently ignored).
var gemConfigForm = regexp.MustCompile(`^([A-Z][A-Z0-9_]*=[^;\s]+;)+$`)

// ValidGemConfig says whether s is empty or a gemnetobject -C argument the relay can pass.
func ValidGemConfig(s string) error {
	if s != "" && !gemConfigForm.MatchString(s) {
		return fmt.Errorf("%q is not NAME=value; pairs without spaces (e.g. GEM_TEMPOBJ_CACHE_SIZE=900000;)", s)
	}
	return nil
}

// Relay is a prepared relay: what every session's topaz is started with.
type Relay struct {
	Home      string
	Topaz     string
	Script    string
	GlobalDir GlobalDir
	Stone     string
	INI       string
	// NetLDI is the stone owner's running NetLDI gslist found at start-up (ChooseNetLDI); ""
	// when none was running.
	NetLDI    string
	GemConfig string
}

// HomeOrEnv is c.Home, or $GEMSTONE when it is empty.
func (c Config) HomeOrEnv() string { return cmp.Or(c.Home, os.Getenv("GEMSTONE")) }

// Prepare checks what a session will need, resolves GEMSTONE_GLOBAL_DIR and installs the relay
// script. A stone not running yet is no error; the Relay's GlobalDir.Note says what was found.
func Prepare(ctx context.Context, c Config) (*Relay, error) {
	home := c.HomeOrEnv()
	if home == "" {
		return nil, fmt.Errorf("gemstone_home is not set and neither is GEMSTONE")
	}
	topaz := filepath.Join(home, "bin", "topaz")
	if fi, err := os.Stat(topaz); err != nil || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("no executable topaz at %s (is gemstone_home the GemStone product directory?)", topaz)
	}
	if err := ValidGemConfig(c.GemConfig); err != nil {
		return nil, fmt.Errorf("gemstone_gem_config: %w", err)
	}
	ini, err := ReadServiceINI(c.ServiceINI)
	if err != nil {
		return nil, err
	}
	stone := c.Stone
	if stone == "" {
		stone = ini.Stone
	} else if stone != ini.Stone {
		return nil, fmt.Errorf("gemstone_stone is %s but the service ini logs in to %s", stone, ini.Stone)
	}
	script, err := InstallScript(cmp.Or(c.ScriptDir, DefaultScriptDir()))
	if err != nil {
		return nil, err
	}
	g := ResolveGlobalDir(ctx, home, c.GlobalDir, stone)
	return &Relay{Home: home, Topaz: topaz, Script: script, GlobalDir: g, Stone: stone, INI: c.ServiceINI, NetLDI: ChooseNetLDI(g.Servers, stone), GemConfig: c.GemConfig}, nil
}

// Command is the relay's command line. "{user}" is the GemStone user, filled in per session;
// nothing secret is on it (the credential is the first line of the relay's stdin).
func (r *Relay) Command() []string {
	return []string{r.Topaz, "-l", "-q", "-I", r.INI, "-S", r.Script, "--", "--user", "{user}"}
}

// Env is what the relay needs besides gemgate's own GEMGATE_* variables. The NetLDI the
// user's gem is forked through is not in it: SessionNRS finds it at each session's start.
// GEMGATE_MAX_ANSWER_BYTES is the longest line gemgate reads from a worker: the relay fails a
// call whose answer is longer rather than write it, which would end the user's session.
func (r *Relay) Env() []string {
	env := []string{
		"GEMSTONE=" + r.Home,
		"GEMSTONE_GLOBAL_DIR=" + r.GlobalDir.Dir,
		"PATH=" + filepath.Join(r.Home, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"LC_ALL=C",
		"GEMGATE_MAX_ANSWER_BYTES=" + strconv.Itoa(worker.DefaultMaxLineBytes),
	}
	if r.GemConfig != "" {
		env = append(env, "GEMGATE_GEM_CONFIG="+r.GemConfig)
	}
	return env
}

// SessionNRS is the GEMSTONE_NRS_ALL entry a session's relay starts with: the stone owner's
// NetLDI that gslist lists running now (one restarted since start-up included). "" when the
// operator set GEMSTONE_NRS_ALL; an error when no NetLDI of the stone's owner runs, or gslist
// cannot tell: then the session must not start, since GemStone's default NRS would fork the
// user's gem, and hand it the user's login, through any NetLDI named gs64ldi.
func (r *Relay) SessionNRS(ctx context.Context) (string, error) {
	if os.Getenv("GEMSTONE_NRS_ALL") != "" {
		return "", nil
	}
	servers, err := Gslist(ctx, r.Home, r.GlobalDir.Dir)
	if err != nil {
		return "", fmt.Errorf("gemstone: finding the NetLDI for the session: %w", err)
	}
	name := ChooseNetLDI(servers, r.Stone)
	if name == "" {
		what := "no NetLDI of the owner of stone " + r.Stone + " is running under " + r.GlobalDir.Dir
		if _, ok := stoneOwner(servers, r.Stone); !ok {
			what = "gslist lists no stone " + r.Stone + " under " + r.GlobalDir.Dir + ", so no NetLDI can be told to be its owner's"
		}
		if others := OtherNetLDIs(servers, r.Stone); len(others) > 0 {
			what += "; passed over: " + strings.Join(others, ", ")
		}
		return "", errors.New("gemstone: " + what + " (start one as the stone's owner: startnetldi -g -a <owner>)")
	}
	return "GEMSTONE_NRS_ALL=#netldi:" + name, nil
}
