// Package gateway is gemgate's HTTP front end: the MCP Streamable HTTP endpoint for both
// protocol eras, as one pipeline. A POST is authenticated, its body read once into a
// jsonrpc.Message, and its era decided once (postMessage): a 2025-x message goes to the
// session adapter (initialize, the session table, GET streams and their resumption, DELETE,
// session lifetime), a 2026-07-28 message to the sessionless adapter (package
// gateway/sessionless: mirrored headers, server/discover, subscriptions/listen, the bridge's
// requestState), which runs it as a short-lived caller of the user's worker. Both then take
// the same steps: one access decision and tool gate (toolGate), the route to the user's worker
// (pool), one wait loop (wait.go) with a small era adapter, one JSON/SSE writer
// (answerWriter), one audit line (audit.go). The sessionless adapter never imports this
// package: it takes these steps through its Steps interface, which steps.go implements.
//
// The mechanisms both eras use live in subpackages the core imports and that never import
// it: wire (errors, JSON bodies, SSE streams, the replay store, the outbox), sessions (the
// session table, lifetime policy and reaper), limit (connection caps, capacity, the worker
// start rate), trace (the redacted message trace) and metrics.
//
// It is where auth, policy and pool meet; they never meet anywhere else. Every request is
// authenticated on its own (a session is never authentication), a session answers only to the
// subject that opened it, and a response reaches only the request that caused it. Nothing a
// client or a worker does may stop the gateway or disturb another session.
package gateway
