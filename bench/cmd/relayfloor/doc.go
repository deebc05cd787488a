// Command relayfloor is the relay floor of gemgate's benchmark: about the least a Go gateway
// from Streamable HTTP to one shared stdio worker can do. It starts the worker, initializes
// it once, and then relays each POSTed call to it with an id of its own and the answer back
// with the client's id, as plain JSON. It has no auth, no validation beyond encoding/json,
// no policy, no audit line, no metrics, no SSE and no resumption; sessions are a map of ids
// and every client initialize is answered from the worker's one initialize result.
//
// What it costs over the HTTP echo floor (echofloor) is what any such relay costs: the pipe
// write and read, the worker's two extra process hops, and the hand-off from the reading
// goroutine to the request's. What gemgate costs over it is gemgate's own work. It decodes
// and re-encodes every message to swap ids, so its large-payload figures are no floor; the
// benchmark runs it for the 100-byte calls only.
//
//	relayfloor -listen 127.0.0.1:0 -- WORKER [ARGS...]
//
// It prints "ready http://ADDR/mcp" once listening. It must only ever listen on loopback.
package main
