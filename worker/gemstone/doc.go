// Package gemstone is gemgate's GemStone/S 64 worker: a topaz relay that logs each MCP session
// into GemStone as the user who holds the token and hands its NDJSON to the native GemStone MCP
// server (`McpServer handleJsonString:`).
//
// It holds the relay script (relay.tpz, run by linked topaz with a low-privilege service
// account's 0600 ini file), the parser of the relay's greeting (ready, or a refusal naming
// the cause), the guard against kernel defect #51438 (a corrupted answer fails its call), the
// resolution of GEMSTONE_GLOBAL_DIR through gslist, and the live checks of `gemgate check`.
//
// Of gemgate's packages it imports only worker, jsonrpc and the internal helpers. It must
// never put the credential on a command line or in a log or error, never weaken the ini
// file's 0600 rule, and never let a line that is not a well-formed answer reach a client.
package gemstone
