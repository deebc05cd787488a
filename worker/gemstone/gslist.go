package gemstone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Server is one GemStone server process as `gslist -l` lists it.
type Server struct {
	Status  string // OK, exists, startup, recovery, or a two-word status such as "exe deleted"
	Version string
	Type    string // Stone, Netldi, cache, ...
	Name    string
	Owner   string // the account the server runs as
}

// Running reports whether gslist saw the server alive: OK from `gslist -l`, or exists, which
// other flags and versions print for a live one (GsDevKit's `gslist -lc`).
func (s Server) Running() bool { return s.statusIs("OK", "exists") }

// present is a server that lives under this GEMSTONE_GLOBAL_DIR, running or on its way: a
// stone in startup, or in recovery after a crash, is there but not serving yet.
func (s Server) present() bool { return s.statusIs("OK", "exists", "startup", "recovery") }

func (s Server) statusIs(names ...string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(s.Status, n) })
}

// rowFields is how many words a server row has after its status: Version, Owner, Pid,
// Port, three for Started ("Aug 20 08:53"), Type and Name.
const rowFields = 9

// ParseGslist reads gslist's table: a header naming Status ... Type Name, then one row per
// server. Status may be two words ("exe deleted") and Started holds spaces: Version is the
// first later field that starts with a digit, Owner the next, Type and Name the last two.
func ParseGslist(out string) []Server {
	var servers []Server
	header := false
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !header {
			header = f[0] == "Status" && f[len(f)-1] == "Name"
			continue
		}
		if strings.Trim(f[0], "-") == "" {
			continue // the dashes under the header
		}
		v := 1
		for v < len(f) && !unicode.IsDigit(rune(f[v][0])) {
			v++
		}
		if v >= len(f)-2 {
			continue // no version, or nothing after it: not a server row
		}
		if len(f) > v+rowFields {
			// A name with spaces, chosen by its starter, could pass itself off as another
			// type and name: not read.
			continue
		}
		s := Server{Status: strings.Join(f[:v], " "), Version: f[v], Type: f[len(f)-2], Name: f[len(f)-1]}
		if v+1 < len(f)-2 {
			s.Owner = f[v+1]
		}
		servers = append(servers, s)
	}
	return servers
}

// Gslist runs `$GEMSTONE/bin/gslist -l` under globalDir and reads its table; never -c, which
// removes the lock files of servers that do not answer.
func Gslist(ctx context.Context, home, globalDir string) ([]Server, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(home, "bin", "gslist"), "-l")
	cmd.Env = append(productEnv(home), "GEMSTONE_GLOBAL_DIR="+globalDir)
	out, err := cmd.CombinedOutput()
	servers := ParseGslist(string(out))
	// gslist exits non-zero when it finds no servers; that is an answer, not a failure.
	var exited *exec.ExitError
	if err != nil && len(servers) == 0 && !errors.As(err, &exited) {
		return nil, fmt.Errorf("running gslist: %w", err)
	}
	return servers, nil
}

// productEnv is the inherited environment pointed at the product in home.
func productEnv(home string) []string {
	env := []string{"GEMSTONE=" + home, "PATH=" + filepath.Join(home, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "GEMSTONE" && k != "PATH" && k != "GEMSTONE_GLOBAL_DIR" && !strings.HasPrefix(k, "GEMGATE_") {
			env = append(env, kv)
		}
	}
	return env
}

// stoneRow answers the stone's row: a running one before one on its way (startup, recovery),
// before any other (a lock left by a stone that died, perhaps another account's); the first
// listed of the best. stoneOwner, too, passes over a row that is not present.
func stoneRow(servers []Server, name string) (Server, bool) {
	best, rank := Server{}, -1
	for _, s := range servers {
		if !strings.EqualFold(s.Type, "Stone") || s.Name != name {
			continue
		}
		r := 0
		if s.Running() {
			r = 2
		} else if s.present() {
			r = 1
		}
		if r > rank {
			best, rank = s, r
		}
	}
	return best, rank >= 0
}

// DefaultNetLDI is the NetLDI name GemStone assumes when nothing says otherwise: an external
// session's NRS names it unless GEMSTONE_NRS_ALL does.
const DefaultNetLDI = "gs64ldi"

// ChooseNetLDI picks the running NetLDI the relay's user sessions are forked through: of
// those that run as the stone's owner, the default one, else the first listed; "" when none
// does, or the stone is not listed. That NetLDI gets the user's token at login, and any
// account that may write the global directory's locks can start one there, under any name:
// one of another account is never chosen (OtherNetLDIs names them).
func ChooseNetLDI(servers []Server, stone string) string {
	owner, ok := stoneOwner(servers, stone)
	if !ok {
		return ""
	}
	first := ""
	for _, s := range servers {
		if !strings.EqualFold(s.Type, "Netldi") || !s.Running() || s.Owner != owner {
			continue
		}
		if s.Name == DefaultNetLDI {
			return s.Name
		}
		if first == "" {
			first = s.Name
		}
	}
	return first
}

// OtherNetLDIs names the running NetLDIs ChooseNetLDI passes over as not the stone owner's,
// each with its owner.
func OtherNetLDIs(servers []Server, stone string) []string {
	owner, ok := stoneOwner(servers, stone)
	var out []string
	for _, s := range servers {
		if strings.EqualFold(s.Type, "Netldi") && s.Running() && (!ok || s.Owner != owner) {
			out = append(out, fmt.Sprintf("%s (owner %s)", s.Name, s.Owner))
		}
	}
	return out
}

// stoneOwner is the owner of the one row of the stone that is running or starting; with none,
// or several (a lock left by another account's stone of that name), it is not known.
func stoneOwner(servers []Server, stone string) (string, bool) {
	owner, n := "", 0
	for _, s := range servers {
		if strings.EqualFold(s.Type, "Stone") && s.Name == stone && s.present() {
			owner, n = s.Owner, n+1
		}
	}
	return owner, n == 1 && owner != ""
}

// GlobalDir is the outcome of resolving GEMSTONE_GLOBAL_DIR.
type GlobalDir struct {
	Dir     string
	Servers []Server // what gslist lists there
	Found   bool     // the stone is there (running, or starting up)
	Note    string   // set when the configured value was supplied or corrected
}

// ResolveGlobalDir finds the GEMSTONE_GLOBAL_DIR where the stone runs, as the native server's
// gs-env.sh does: the first candidate (configured, environment, /opt/gemstone, /usr/gemstone)
// under which gslist lists it. A wrong one is the usual cause of the 4065 "could not find
// server" login failure.
func ResolveGlobalDir(ctx context.Context, home, configured, stone string) GlobalDir {
	var candidates []string
	for _, c := range []string{configured, os.Getenv("GEMSTONE_GLOBAL_DIR"), "/opt/gemstone", "/usr/gemstone"} {
		if c != "" && !slices.Contains(candidates, c) {
			candidates = append(candidates, c)
		}
	}
	first := GlobalDir{Dir: candidates[0]}
	for i, c := range candidates {
		servers, err := Gslist(ctx, home, c)
		if err != nil {
			first.Note = err.Error()
			return first
		}
		if i == 0 {
			first.Servers = servers
		}
		if s, _ := stoneRow(servers, stone); s.present() {
			g := GlobalDir{Dir: c, Servers: servers, Found: true}
			switch {
			case configured != "" && c != configured:
				g.Note = fmt.Sprintf("gemstone_global_dir %s lists no running stone %s; gslist finds it under %s, so that is used", configured, stone, c)
			case configured == "":
				g.Note = fmt.Sprintf("GEMSTONE_GLOBAL_DIR resolved to %s by gslist", c)
			}
			return g
		}
	}
	first.Note = fmt.Sprintf("gslist finds no running stone %s under %s", stone, strings.Join(candidates, ", "))
	return first
}
