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
//  1. BeginDrain: /readyz answers 503 while the listener stays open. New work gets 503 and
//     Retry-After; work that belongs here (sessions, users whose worker runs here) is served.
//  2. BeginShutdown: GET and listen streams end with a reconnection hint; calls go on.
//  3. Close: every session ends and every worker stops; a running call first gets an error.

// drainRetryAfter: by then the balancer has taken this replica out.
const drainRetryAfter = shutdownRetryAfter

// BeginDrain starts phase 1; it may be called more than once.
func (g *Gateway) BeginDrain() {
	if !g.closing.Swap(true) {
		g.log.Info("draining: /readyz is 503; new sessions and users without a worker here get 503")
	}
}

// drainRefusal is the 2026-07-28 era's 503 while draining, unless the user's worker runs here (it has state).
func (g *Gateway) drainRefusal(id json.RawMessage, who pool.Identity) *wire.Error {
	if !g.closing.Load() {
		return nil
	}
	if g.pool.Serves(who, sessionless.Program(g.pool)) {
		return nil
	}
	return drainRefused(id)
}

// drainRefused is the refusal of new work while draining, the same in both eras: an
// initialize, and a 2026-07-28 request of a user without a worker here.
func drainRefused(id json.RawMessage) *wire.Error {
	return wire.Overloaded(id, "the gateway is shutting down; try again (another replica will answer)", drainRetryAfter, nil)
}

// stoppedCall is never a 503: the call may have run, and a balancer retries a 503 elsewhere.
func stoppedCall(id json.RawMessage) *jsonrpc.Message {
	return jsonrpc.ErrorResponse(id, jsonrpc.CodeInternalError,
		"the gateway stopped before the call finished; it may or may not have taken effect",
		map[string]any{"kind": "shutdown", "retryAfter": wire.RetryAfterSeconds(drainRetryAfter)})
}
