// Package limit holds what bounds the load the gateway takes on: the listener's connection
// cap (Connections), the host's capacity that sizes the default caps (Capacity), the
// per-user worker start rate (StartRate) and the session and rate settings (Settings).
//
// It knows nothing of requests, sessions or workers: the gateway passes it numbers and keys
// and acts on its answers. It must never import the gateway, and never log a token or
// anything a client sent.
package limit
