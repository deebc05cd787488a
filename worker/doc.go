// Package worker starts MCP servers as child processes and talks to them over stdio.
//
// A worker speaks newline-delimited JSON-RPC (codec: package jsonrpc) on stdin and stdout,
// one message per line of up to 16 MiB. This package remaps request ids (each request gets a
// worker-side id from its own counter; the answer gets the caller's raw id back, byte for
// byte), routes what the worker sends on its own to a callback, logs its stderr, and stops it
// in stages (close stdin, SIGTERM to its process group, SIGKILL). It confines a worker
// (bubblewrap, showing of the data directory only its user's folder; an account of its own)
// and caps it: in a cgroup v2 of its own where one is delegated, else with rlimits that
// gemgate's own binary, started as "gemgate-worker-caps" (an init function), sets before it
// executes the worker. CommandLauncher builds a worker for the user it serves, and its
// user-name check is authentication's too.
//
// It must never import the gateway, auth or policy packages, never put a secret on a
// worker's command line, and never let a worker's failure panic or block its caller: a
// worker that exits fails every pending call with a JSON-RPC error carrying the caller's id.
package worker
