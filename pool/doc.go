// Package pool owns gemgate's workers: which worker serves a caller, how it is started and
// initialized, how its messages are shared out among the callers attached to it, and when it
// ends.
//
// A worker is keyed on (issuer, subject, access mode) with worker_per: user, the default, or
// on one legacy session with worker_per: session. Two users never share a worker, and a
// read-only and a read-write caller never share one: read-only is also enforced inside the
// worker, at its login.
//
// The API, in brief:
//
//	p := pool.New(pool.Options{Launcher: l, Settings: s, Versions: v})
//	m, init, err := p.Attach(ctx, pool.Attach{Identity: id, Caller: c, Params: clientInit})
//	call, err := m.Call(ctx, pool.Request{Message: req, ProgressToken: tok, Identity: id})
//	resp := <-call.Result()     // the caller's own id restored
//	call.Cancel(reason)         // only this call, at the worker or in its queue
//	m.Notify(msg); m.Answer(resp, readOnly) // a client notification; the client's answer to a worker request
//	m.Move(ctx, id)             // step-up: the caller now uses the read-write worker
//	m.Detach()                  // the session ended; the worker lives on until idle
//	p.Close()
//
// The pool reaches callers only through the Caller interface; it never imports the gateway
// and never sees HTTP. It knows a caller by an Identity of its own, never by auth's
// Principal, and starts a worker through a Launcher (worker.CommandLauncher). It must never
// route one caller's answer, progress or worker request to another caller, never let a
// worker serve two users or two access modes, never take a worker
// request's answer from a token whose access does not cover the worker's mode, never take a
// worker request as a call's on a guess, and never wait without a deadline on a worker.
//
// The MCP handshake with a worker is written once (handshake.go) and used for a first start,
// an expiry restart and a dead worker's replacement. With worker_per: user gemgate is the
// worker's MCP client: it initializes the worker with the capabilities it can route to the
// client a request belongs to (sampling and elicitation, not roots) and answers each
// session's initialize from the result it kept. With worker_per: session the client's own
// initialize parameters go to its worker.
package pool
