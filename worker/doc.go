// Package worker starts MCP servers as child processes and talks to them over stdio.
//
// A worker speaks newline-delimited JSON-RPC on stdin and stdout. This package owns the
// framing (one message per line, lines up to 16 MiB; the message codec itself is package jsonrpc), the remapping of request ids (every
// request the gateway sends gets the worker-side id from its own counter, and the answer is
// handed back with the caller's raw id restored byte for byte), the routing of what the
// worker sends on its own (notifications and requests) to a callback, the logging of its
// stderr, and its staged stop (close stdin, SIGTERM to its process group, SIGKILL). It also
// confines a worker (bubblewrap, which shows it of the data directory only its user's folder,
// sandbox_linux.go; an account of its own, account.go) and caps
// it (caps_linux.go, cgroup_linux.go): in a cgroup v2 of its own where one is delegated, or
// with rlimits that gemgate's own binary sets before it executes the worker. A binary that
// links this package and is started under the name "gemgate-worker-caps" is that trampoline
// (an init function), and runs nothing of its own program. How one worker is built for the
// user it serves (command template, environment, credential, account, sandbox) is
// CommandLauncher (launch.go), whose user-name check authentication makes too (username.go).
//
// It must never import the gateway, auth or policy packages, never put a secret on a
// worker's command line, and never let a worker's failure panic or block its caller: a
// worker that exits fails every pending call with a JSON-RPC error carrying the caller's id.
package worker
