package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// warning is a setting that works but is likely not what the operator meant: logged at start
// and listed by gemgate check, never a reason to refuse to start.
type warning struct {
	what, fix string
}

// warnings lists the configuration's likely mistakes.
func (c *Config) warnings() []warning {
	var out []warning
	// Read-only access is fail-closed: a tool nobody vouched for is hidden from read-only
	// sessions. The demo vouches for its own tools; any other worker shows a read-only user an
	// empty tool list until the operator lists the safe tools or trusts the worker's hints.
	if c.Worker != "demo" && len(c.ReadOnlyTools) == 0 && !c.TrustHints {
		fix := "list the tools that only read in read_only_tools (names or globs), or set trust_read_only_hints to let the worker's readOnlyHint annotations vouch for its tools"
		if c.Worker == "gemstone" {
			fix = "add policy/presets/gemstone.yaml (--config policy/presets/gemstone.yaml), which lists GemStone's read-only tools, or " + fix
		}
		out = append(out, warning{
			what: "read-only sessions (tokens without " + c.WriteScope + ") will see no tools of worker " + c.Worker + ": neither read_only_tools nor trust_read_only_hints is set",
			fix:  fix,
		})
	}
	out = append(out, c.gemstoneWarnings(runningAsRoot())...)
	out = append(out, c.secretFileWarnings()...)
	for _, name := range c.unknownEnvironment(os.Environ()) {
		w := warning{
			what: "environment variable " + name + " is not a gemgate setting and is ignored",
			fix:  "check its spelling against gemgate serve -h (each setting's variable is GEMGATE_ and its key in capitals), or unset it",
		}
		if slices.ContainsFunc(c.fields(), func(f field) bool { return f.dev && envName(f.key) == name }) {
			w = warning{what: "environment variable " + name + " is a setting of gemgate dev only; serve ignores it", fix: "unset it"}
		}
		out = append(out, w)
	}
	return out
}

// notSettings are GEMGATE_ names that are not settings but have a meaning of their own: what
// gemgate hands its workers, and what the demo worker and gemgate's scripts read. What its
// tests and benchmarks read is GEMGATE_TEST_ and GEMGATE_BENCH_.
var notSettings = []string{"GEMGATE_CREDENTIAL", "GEMGATE_CREDENTIAL_FD", "GEMGATE_READ_ONLY", "GEMGATE_USER",
	"GEMGATE_SUBJECT", "GEMGATE_SCOPES", "GEMGATE_SESSION", "GEMGATE_TOKEN", "GEMGATE_CLIENT_SECRET",
	"GEMGATE_DEMO_CHATTER", "GEMGATE_GEMSTONE_ADMIN_INI", "GEMGATE_CACHE"}

// unknownEnvironment lists the GEMGATE_ variables of env that name no setting: a typo in a
// compose file or a chart leaves the default in force without a word otherwise.
func (c *Config) unknownEnvironment(env []string) []string {
	known := map[string]bool{}
	for _, f := range c.settings() { // serve ignores dev's own settings: name them too
		known[envName(f.key)] = true
	}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GEMGATE_") || known[name] || slices.Contains(notSettings, name) {
			continue
		}
		if strings.HasPrefix(name, "GEMGATE_TEST_") || strings.HasPrefix(name, "GEMGATE_BENCH_") {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// logWarnings logs each warning once, at start.
func (c *Config) logWarnings(log *slog.Logger) {
	for _, w := range c.warnings() {
		log.Warn(w.what, "fix", w.fix)
	}
}

// secretFileWarnings names each config file holding a secret setting that every account on
// the host may read: the exposure for which a secret on the command line is refused. A file
// its group may read is not named (root:gemgate 0640, read through gemgate's group).
func (c *Config) secretFileWarnings() []warning {
	var out []warning
	for _, sf := range c.secretFiles {
		fi, err := os.Stat(sf.path)
		if err != nil || fi.Mode().Perm()&0o004 == 0 {
			continue
		}
		out = append(out, warning{
			what: fmt.Sprintf("config file %s holds %s and every account on this host may read it (mode %04o)", sf.path, sf.key, fi.Mode().Perm()),
			fix:  fmt.Sprintf("chmod o-r %s (0600, or 0640 for a group of gemgate's own), or set %s in the environment instead", sf.path, envName(sf.key)),
		})
	}
	return out
}
