// Package demo is the MCP server built into gemgate and started by
// `gemgate worker demo`: one process per client session, speaking MCP over
// newline-delimited JSON on stdin and stdout. It is what `gemgate dev` runs,
// and what the gateway's tests drive.
//
// Its tools show who the gateway says the caller is (whoami), keep a small
// notes store per user under the data directory (read-only and mutating
// tools), and exercise the protocol paths a gateway must relay: progress,
// logging and cancellation (slow), large payloads (echo), sampling
// (ask_model), elicitation (delete_note) and tools/list_changed
// (toggle_extra_tool).
//
// The worker trusts its identity from the environment the gateway sets
// (GEMGATE_USER, GEMGATE_SESSION, GEMGATE_READ_ONLY): it never authenticates
// anyone itself. It must never write anything but protocol messages to
// stdout (except the documented GEMGATE_DEMO_CHATTER test aid), never read
// or write outside its user's directory, and never mutate the store in a
// read-only session, whatever the client sends.
package demo
