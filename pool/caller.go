package pool

import (
	"encoding/json"
	"time"

	"github.com/gemgate/gemgate/jsonrpc"
)

// Caller is what the pool needs of whoever sends calls to a worker: a legacy session today.
// Its methods are called without any lock of the pool held, and must not block.
type Caller interface {
	// Deliver hands over a message from the worker for this caller.
	Deliver(d Delivery)
	// LastActive is when the caller was last active, for choosing who gets a worker request.
	LastActive() time.Time
	// CanTakeRequest reports whether the caller can receive a request now (it has a stream).
	CanTakeRequest() bool
	// Detached tells the caller that the pool let go of it (its worker died with
	// on_worker_exit: end, or ended by on_token_expiry: end, or the pool closed).
	Detached(reason string)
}

// Delivery is one message from the worker for a caller.
type Delivery struct {
	Message []byte
	// Call is the caller's call the message relates to (its progress, a log line or request
	// while it is the only call in flight), or nil for the caller's stream.
	Call *Call
	// Request marks a request of the worker's (elicitation, sampling, roots, ping), whose
	// answer the caller passes to Member.Answer.
	Request bool
}

// Capabilities are the client capabilities a caller declared that matter for relaying the
// worker's requests.
type Capabilities struct{ Sampling, Elicitation, Roots bool }

// ClientCapabilities reads them from initialize params; what cannot be read is not declared.
// A capability is declared when its member is an object, as a go-sdk server reads it and as
// a 2026-07-28 request's clientCapabilities are read: "elicitation": null declares nothing.
func ClientCapabilities(params json.RawMessage) Capabilities {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil {
		return Capabilities{}
	}
	caps, ok, err := p.Object("capabilities")
	if !ok || err != nil {
		return Capabilities{}
	}
	return DeclaredIn(caps)
}

// DeclaredIn is what a clientCapabilities object declares, in either era (initialize params,
// a 2026-07-28 request's _meta): a capability whose member is an object.
func DeclaredIn(caps jsonrpc.Object) Capabilities {
	declared := func(key string) bool {
		raw, ok := caps.Raw(key)
		return ok && len(raw) > 0 && raw[0] == '{'
	}
	return Capabilities{Sampling: declared("sampling"), Elicitation: declared("elicitation"), Roots: declared("roots")}
}

// allows reports whether the caller declared what a worker request of method needs of it.
func (c Capabilities) allows(method string) bool {
	switch method {
	case "sampling/createMessage":
		return c.Sampling
	case "elicitation/create":
		return c.Elicitation
	case "roots/list":
		return c.Roots
	}
	return true // ping, and what gemgate does not know: any caller may answer
}
