package demo

// ReadOnlyTools are the demo's tools that change nothing: what a read-only session may see
// and call. gemgate uses this list as the policy's read_only_tools for the built-in demo
// worker, so a read-only user sees the browsing tools and not the mutating ones. A test
// keeps it equal to the tools annotated readOnlyHint.
var ReadOnlyTools = []string{"whoami", "list_notes", "read_note", "search_notes", "slow", "echo", "ask_model", "extra"}
