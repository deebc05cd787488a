// Command echofloor is the HTTP floor of gemgate's benchmark: a bare net/http server that
// speaks just enough Streamable HTTP (initialize, notifications, tools/call echo, a GET
// stream) and answers every call itself, with no worker, no auth and no session state
// beyond a map of ids. What a gateway costs above it is the gateway's own work plus the
// stdio hop to its worker.
//
//	echofloor -listen 127.0.0.1:0
//
// It prints "ready http://ADDR/mcp" once listening. It must only ever listen on loopback.
package main
