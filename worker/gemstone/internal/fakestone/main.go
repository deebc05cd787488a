// Command fakestone stands in for GemStone in gemgate's tests, where GemStone cannot be
// installed. Built under the names topaz and gslist in a test's $GEMSTONE/bin, it behaves as
// those programs do for gemgate's relay: topaz accepts only the relay's command line, checks
// the service ini and the environment, logs in as a stone would (lock files under
// $GEMSTONE_GLOBAL_DIR/locks, JWT claims checked against the named user, with the stone's
// messages), prints login chatter, then answers NDJSON the way `McpServer handleJsonString:`
// does behind the relay script. gslist lists the lock files. What the stone is like (users,
// version, faults) comes from $GEMSTONE/fakestone.json; see Config.
//
// It acts out the relay script it is given, reading that script for the fixes a real stone
// needs (relayscript.go): where the script lacks one, the fake springs the trap a real
// stone would (a re-registered JWT key raising, a NetLDI not named gs64ldi, error text in
// UTF-16, a dead gem raising on logout, a session object displayed at the end of the run,
// the line editor's line length, ...), so gemgate's tests fail without each fix. What the
// script sends is acted on as sent (statements.go): the NRS expression names the NetLDI the
// user's gem is forked through and its body the gem's configuration, the read-only source runs
// statement by statement in the user's session, and the alive block's terms decide whether a
// session outlives an error. It also acts out the admin script of scripts/gemstone-jwt-keys
// (keys.go).
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
	// Fault at every tools/call: "crash" (topaz dies), "stall" (the user's gem never answers,
	// and the relay ignores the soft break), "gem_dies" (the user's gem dies mid-call). At the
	// relay's visibility probe: "gem_dies_at_probe". "wait_raises": the relay's wait for a
	// tools/call raises while the call goes on in the gem. "dies_mid_answer": topaz dies
	// (killed, out of memory) while it writes a tools/call's answer, half of it written.
	Fault string `json:"fault"`
	// SlowFirstCallMS makes the first tools/call take this many milliseconds before it is
	// answered, the relay ignoring the soft break (SIGINT) meanwhile: a call that outlives a
	// request timeout and still ends.
	SlowFirstCallMS int `json:"slow_first_call_ms"`
	// IsLoggedIn is what GsTsExternalSession>>isLoggedIn does, a selector no public GemTalk
	// source shows: "" answers whether the gem lives, "dnu" is not understood, "stale" answers
	// true for a dead gem (login state read from instance variables).
	IsLoggedIn string `json:"is_logged_in"`
	// IferrExit is the status topaz exits with through `iferr 1 exit 3`: 3, or 0 as GemDB
	// measured under some topaz versions. Default 3.
	IferrExit *int `json:"iferr_exit"`
	// WideErrors makes GemStone's error text a 16-bit string, which GsFile writes as UTF-16
	// unless the relay narrows it.
	WideErrors bool `json:"wide_errors"`
	// WriteLoad is write traffic from other sessions: a relay that waits for input inside a
	// transaction pins a commit record, misses SigAbort and is terminated by the stone.
	WriteLoad bool `json:"write_load"`
	// UserViewAbortMS, with WriteLoad, is how long the user's gem may keep one transaction
	// view (since its login, or its last commit, abort or refresh) before the stone ends it.
	// The relay leaves the user's session in GemStone's default auto-begin mode, so between
	// calls it stays in its transaction and its view pins a commit record; the stone sends it
	// SigAbort, which a gem idle in its transaction does not answer, and terminates it after
	// STN_GEM_ABORT_TIMEOUT_SECONDS (this many milliseconds here), its uncommitted changes
	// lost. The fake notes the termination on stderr, as the stone notes it in its log. 0: the
	// stone never does.
	UserViewAbortMS int `json:"user_view_abort_ms"`
	// Unicode16 is a stone configured for Unicode16 source strings: unless the relay pins
	// `set sourcestringclass String`, request bytes over 0x7F are widened one by one (Latin-1)
	// on their way into the user's session.
	Unicode16 bool `json:"unicode16"`
	// MetaLog is a file to which McpServer appends the params._meta of every request it
	// handles, one JSON line each ("null" when there is none): what the server was handed.
	MetaLog       string `json:"meta_log"`
	AdminUser     string `json:"admin_user"`     // the account gemstone-jwt-keys logs in as; default DataCurator
	AdminPassword string `json:"admin_password"` // default swordfish
}

func (c Config) iferrExit() int {
	if c.IferrExit != nil {
		return *c.IferrExit
	}
	return 3
}

// User is a user's JwtSecurityData.
type User struct {
	Claim     string   `json:"claim"`     // userIdKey, default sub
	Issuers   []string `json:"issuers"`   // "*" accepts any
	Audiences []string `json:"audiences"` // "*" accepts any
}

// Lock is the content of a fake lock file $GEMSTONE_GLOBAL_DIR/locks/<name>..LCK.
type Lock struct {
	Type    string `json:"type"`   // Stone or Netldi
	Status  string `json:"status"` // as gslist -l prints it; default OK
	Version string `json:"version"`
	Pid     int    `json:"pid"`
	Port    int    `json:"port"`
}

func main() {
	switch filepath.Base(os.Args[0]) {
	case "gslist":
		os.Exit(gslist(os.Args[1:]))
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
	if c.AdminUser == "" {
		c.AdminUser, c.AdminPassword = "DataCurator", "swordfish"
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
		if l.Status == "" {
			l.Status = "OK"
		}
		out[name] = l
	}
	return out
}

// running is a server gslist would call alive.
func (l Lock) running() bool { return l.Status == "OK" || l.Status == "exists" }

// gslist prints the servers whose lock files it finds, as `gslist -l` does on 3.7.5 (the
// native MCP server's README). It refuses -c, which deletes the lock files of servers that do
// not answer, and any call without -l, whose output no source shows for 3.7.
func gslist(args []string) int {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && strings.Contains(a, "c") {
			fmt.Fprintln(os.Stderr, "fakestone gslist: -c removes lock files; gemgate must never pass it")
			return 2
		}
	}
	if len(args) != 1 || args[0] != "-l" {
		fmt.Fprintf(os.Stderr, "fakestone gslist: gemgate must run gslist -l, not %q\n", args)
		return 2
	}
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
	fmt.Println("  Status     Version   Owner        Pid  Port  Started      Type    Name")
	for _, n := range names {
		l := ls[n]
		fmt.Printf("  %-10s %-9s gsadmin  %6d %5d Aug 20 08:53  %-7s %s\n", l.Status, l.Version, l.Pid, l.Port, l.Type, n)
	}
	return 0
}
