package gateway

import (
	"encoding/json"

	"github.com/gemgate/gemgate/gateway/sessionless"
	"github.com/gemgate/gemgate/gateway/wire"
	"github.com/gemgate/gemgate/jsonrpc"
	"github.com/gemgate/gemgate/pool"
)

// A graceful stop has three phases, driven by the caller (gemgate serve on SIGTERM):
//
//  1. BeginDrain: /readyz answers 503 at once while the listener stays open, so that a load
//     balancer's health checks see the 503 and move traffic instead of meeting a refused
//     connection. New work that would need this replica is refused with 503 and
//     Retry-After; nothing was started for it, so a balancer may safely send it elsewhere.
//     Work that belongs here (requests in open legacy sessions, sessionless requests of users
//     whose worker runs here) is still served.
//  2. BeginShutdown: GET and listen streams end, each with a reconnection hint, so that the
//     HTTP server's Shutdown does not wait on streams that never end by themselves; calls in
//     flight go on.
//  3. Close: every session ends and every worker stops; a call still running gets a JSON-RPC
//     error for its id (on its SSE stream if it has one) before its worker is stopped.

// drainRetryAfter is what a request refused while draining is told to wait: by then the
// balancer has taken this replica out and the retry reaches another.
const drainRetryAfter = shutdownRetryAfter

// BeginDrain starts phase 1 (see above). It is safe to call more than once, and BeginShutdown
// implies it.
func (g *Gateway) BeginDrain() {
	if !g.closing.Swap(true) {
		g.log.Info("draining: /readyz is 503; new sessions and users without a worker here get 503")
	}
}

// Draining reports whether a graceful stop has begun.
func (g *Gateway) Draining() bool { return g.closing.Load() }

// drainRefusal is the 503 for a sessionless request while draining, unless its user's worker
// runs here: that user's calls are still served, since moving them would cost the worker's
// state. A worker that stops between this check and the request's attach is started again;
// Close stops it with the rest.
func (g *Gateway) drainRefusal(id json.RawMessage, who pool.Identity) *wire.Error {
	if !g.closing.Load() {
		return nil
	}
	// The worker the request would attach to (sessionless.Program).
	if g.pool.Serves(who, sessionless.Program(g.pool)) {
		return nil
	}
	return wire.Overloaded(id, "the gateway is shutting down; try again (another replica will answer)", drainRetryAfter, nil)
}

// stoppedCall is the answer to a call still running when the gateway stops. It is never a
// 503: the worker may have run the call already, and a balancer retries a 503 elsewhere.
func stoppedCall(id json.RawMessage) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(id, jsonrpc.CodeInternalError,
		"the gateway stopped before the call finished; it may or may not have taken effect",
		map[string]any{"kind": "shutdown", "retryAfter": wire.RetryAfterSeconds(drainRetryAfter)})
}
