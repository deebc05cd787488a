// Package gateway is gemgate's HTTP front end: the MCP Streamable HTTP endpoint for both
// protocol eras, as one pipeline. A POST is authenticated, its body read once into a
// jsonrpc.Message, and its era decided once (postMessage): a 2025-x message goes to the
// session adapter, a 2026-07-28 one to gateway/sessionless, which runs it as a short-lived
// caller of the user's worker. Both take the same steps: one tool gate (toolGate), the route
// to the worker (pool), one wait loop (wait.go), one JSON/SSE writer (answerWriter), one audit
// line (audit.go). The sessionless adapter takes them as a struct of the core's functions
// (Steps; steps.go, drain.go, unknowntool.go).
//
// Subpackages hold what both eras use, and never import the core: wire, sessions, limit,
// trace and metrics.
//
// It is where auth, policy and pool meet; they never meet anywhere else. Every request is
// authenticated on its own (a session is never authentication), a session answers only to the
// subject that opened it, and a response reaches only the request that caused it. Nothing a
// client or a worker does may stop the gateway or disturb another session.
package gateway
