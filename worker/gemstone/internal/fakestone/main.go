// Command fakestone stands in for GemStone in gemgate's tests, where GemStone cannot be
// installed. Built under the names topaz and gslist in a test's $GEMSTONE/bin, it behaves as
// those programs do for gemgate's relay: topaz accepts only the relay's command line, checks
// the service ini and the environment, logs in as a stone would (lock files under
// $GEMSTONE_GLOBAL_DIR/locks, JWT claims checked against the named user, with the stone's
// messages), prints login chatter, then answers NDJSON the way `McpServer handleJsonString:`
// does behind the relay script. gslist lists the lock files. What the stone is like (users,
// version, faults) comes from $GEMSTONE/fakestone.json; see Config.
//
// It is a test double and never verifies a signature: the gateway has done that already.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Config is $GEMSTONE/fakestone.json.
type Config struct {
	Version         string          `json:"version"`          // GemStone version, e.g. 3.7.5
	ServiceUser     string          `json:"service_user"`     // the account the ini must name
	ServicePassword string          `json:"service_password"` // and its password
	Users           map[string]User `json:"users"`            // JWT-enabled users
	Server          string          `json:"server"`           // MCP server: "0.8.0" (read-only mode) or "unreleased" (none)
	NoMcpServer     bool            `json:"no_mcp_server"`    // McpServer not loaded / not visible
	Defect51438     bool            `json:"defect_51438"`     // results over 1,024 bytes come back with a stale tail
	RawRelay        bool            `json:"raw_relay"`        // relay without the nonce check: corrupted bytes go out as they are
	Fault           string          `json:"fault"`            // "crash" or "stall" at every tools/call
}

// User is a user's JwtSecurityData.
type User struct {
	Claim     string   `json:"claim"`     // userIdKey, default sub
	Issuers   []string `json:"issuers"`   // "*" accepts any
	Audiences []string `json:"audiences"` // "*" accepts any
}

// Lock is the content of a fake lock file $GEMSTONE_GLOBAL_DIR/locks/<name>..LCK.
type Lock struct {
	Type    string `json:"type"` // Stone or Netldi
	Version string `json:"version"`
	Pid     int    `json:"pid"`
	Port    int    `json:"port"`
}

func main() {
	switch filepath.Base(os.Args[0]) {
	case "gslist":
		os.Exit(gslist())
	default:
		os.Exit(topaz(os.Args[1:]))
	}
}

func home() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Dir(filepath.Dir(exe))
}

func loadConfig() (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(home(), "fakestone.json"))
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if c.Version == "" {
		c.Version = "3.7.5"
	}
	return c, nil
}

// globalDir is GEMSTONE_GLOBAL_DIR, or the product's built-in default.
func globalDir() string {
	if d := os.Getenv("GEMSTONE_GLOBAL_DIR"); d != "" {
		return d
	}
	return "/opt/gemstone"
}

func locks() map[string]Lock {
	out := map[string]Lock{}
	dir := filepath.Join(globalDir(), "locks")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), "..LCK")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var l Lock
		if err != nil || json.Unmarshal(b, &l) != nil {
			continue
		}
		out[name] = l
	}
	return out
}

// gslist prints the servers whose lock files it finds, in the product's table format.
func gslist() int {
	ls := locks()
	if len(ls) == 0 {
		fmt.Println("gslist: no GemStone servers on host 'localhost'.")
		return 1
	}
	names := make([]string, 0, len(ls))
	for n := range ls {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Println("Status     Version   Owner        Pid  Port  Started      Type    Name")
	fmt.Println("-------   --------- -------- ------ ----- ------------ ------  ----")
	for _, n := range names {
		l := ls[n]
		fmt.Printf("OK         %-9s gsadmin  %6d %5d Aug 20 08:53 %-7s %s\n", l.Version, l.Pid, l.Port, l.Type, n)
	}
	return 0
}
