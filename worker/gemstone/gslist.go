package gemstone

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Server is one GemStone server process as gslist lists it.
type Server struct {
	Status  string // OK when it is running
	Version string
	Type    string // Stone, Netldi, ...
	Name    string
}

// Running reports whether gslist saw the server alive.
func (s Server) Running() bool { return strings.EqualFold(s.Status, "OK") }

// ParseGslist reads gslist's table: a header naming Status ... Type Name, then one row per
// server. Only the first two and the last two columns are read, since Started holds spaces.
func ParseGslist(out string) []Server {
	var servers []Server
	header := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !header {
			header = f[0] == "Status" && f[len(f)-1] == "Name"
			continue
		}
		if len(f) < 4 || strings.Trim(f[0], "-") == "" {
			continue
		}
		servers = append(servers, Server{Status: f[0], Version: f[1], Type: f[len(f)-2], Name: f[len(f)-1]})
	}
	return servers
}

// Gslist runs $GEMSTONE/bin/gslist with the given GEMSTONE_GLOBAL_DIR and reads its table.
func Gslist(ctx context.Context, home, globalDir string) ([]Server, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(home, "bin", "gslist"))
	cmd.Env = append(productEnv(home), "GEMSTONE_GLOBAL_DIR="+globalDir)
	out, err := cmd.CombinedOutput()
	servers := ParseGslist(string(out))
	if err != nil && len(servers) == 0 {
		// gslist exits non-zero when it finds no servers; that is an answer, not a failure.
		if _, ok := err.(*exec.ExitError); !ok {
			return nil, fmt.Errorf("running gslist: %w", err)
		}
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

// find answers the server of that type and name, if listed.
func find(servers []Server, typ, name string) (Server, bool) {
	for _, s := range servers {
		if strings.EqualFold(s.Type, typ) && (name == "" || s.Name == name) {
			return s, true
		}
	}
	return Server{}, false
}

// GlobalDir is the outcome of resolving GEMSTONE_GLOBAL_DIR.
type GlobalDir struct {
	Dir     string
	Servers []Server // what gslist lists there
	Found   bool     // the stone runs there
	Note    string   // set when the configured value was supplied or corrected
}

// ResolveGlobalDir finds the GEMSTONE_GLOBAL_DIR where the stone actually runs, as the native
// server's gs-env.sh does: ask gslist under each candidate (the configured value, the
// environment's, the product's defaults /opt/gemstone and /usr/gemstone) and take the first
// that lists the stone running. A wrong directory is the usual cause of the 4065 "could not
// find server" login failure, since clients find a stone through its lock files there.
func ResolveGlobalDir(ctx context.Context, home, configured, stone string) GlobalDir {
	var candidates []string
	for _, c := range []string{configured, os.Getenv("GEMSTONE_GLOBAL_DIR"), "/opt/gemstone", "/usr/gemstone"} {
		if c != "" && !contains(candidates, c) {
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
		if s, ok := find(servers, "Stone", stone); ok && s.Running() {
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
