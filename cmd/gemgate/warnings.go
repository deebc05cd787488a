package main

import "log/slog"

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
	return out
}

// logWarnings logs each warning once, at start.
func (c *Config) logWarnings(log *slog.Logger) {
	for _, w := range c.warnings() {
		log.Warn(w.what, "fix", w.fix)
	}
}
