// Package trace is the message trace: one log line per JSON-RPC message, whichever way it
// goes (a client's message in, the gateway's answer out, a worker's line either way, a
// request the gates refused), for finding out what a client really sent.
//
// A line carries a body, never a header, and never a credential: the request's own bearer
// token, every worker's secrets, any JWS in compact form and the value of every field named
// like a credential are taken out of every line before it is written. It takes what it needs
// of a request as values (Request) and never imports the gateway.
package trace
