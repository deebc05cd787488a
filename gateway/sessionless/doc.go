// Package sessionless is the gateway's adapter for the 2026-07-28 era, where every request
// names its protocol version and no session is opened, and the bridge between that era and a
// legacy worker. It holds:
//
//   - the era's rules: which request is of the era (Is), its required _meta and the headers
//     that mirror the body (era.go, param_headers.go);
//   - the adapter (Adapter.Post): a request as a short-lived pool caller of its user's worker,
//     server/discover and the subscriptions/listen stream (listen.go);
//   - the bridge: a legacy worker's question parked as an input-required result with a sealed
//     requestState (bridge.go, state.go), the retry that resumes it (bridge_resume.go), and a
//     sessionless worker's own requestState wrapped (bridge_pass.go).
//
// It never imports the core (package gateway): the core decides once per request which era's
// adapter a message goes to, and hands it the steps both eras share (Steps), written once there.
package sessionless
