// Package sessionless is the gateway's adapter for the 2026-07-28 era, where every request
// names its protocol version and no session is opened, and the bridge between that era and a
// legacy worker. It holds:
//
//   - the era's rules: which request is of the era (Is), its required _meta, the Mcp-Method,
//     Mcp-Name and Mcp-Param-* headers that mirror the body (era.go, param_headers.go), the
//     params read once (params.go);
//   - the adapter (Adapter.Post): a request as a short-lived pool caller of its user's worker
//     (adapter.go, caller.go, worker.go), server/discover (discover.go) and the
//     subscriptions/listen stream (listen.go);
//   - the bridge: a legacy worker's question parked as an input-required result with a
//     requestState gemgate seals (bridge.go, state.go), the retry that resumes it
//     (bridge_resume.go), and a sessionless worker's own requestState wrapped (bridge_pass.go).
//
// It never imports the core (package gateway): the core imports it, decides once per request
// which era's adapter a message goes to, and hands it the pipeline's steps it shares with the
// legacy era (Steps: the tool gate, the wait loop, the writer, the audit line, the
// refusals), each written once, in the core.
package sessionless
