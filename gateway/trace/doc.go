// Package trace is the message trace: one log line per JSON-RPC message, whichever way it
// goes, for finding out what a client really sent.
//
// A line carries a body, never a header, and never a credential: the request's bearer token,
// every worker's secrets, any compact JWS and every field named like a credential are taken
// out first. It never imports the gateway.
package trace
