// Package limit bounds the load the gateway takes on: the connection cap (Connections), the
// host's capacity (Capacity), the per-user worker start rate (StartRate) and Settings.
//
// It knows nothing of requests, sessions or workers, must never import the gateway, and never
// log a token or anything a client sent.
package limit
