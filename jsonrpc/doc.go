// Package jsonrpc is gemgate's JSON-RPC 2.0 message codec, shared by the gateway and the
// worker processes.
//
// A message is read once (Parse) into a Message that keeps its id, params, result and error
// as raw JSON, so an id goes back to the client byte for byte and a large message is never
// decoded whole. The same reading keeps the members of its params and their _meta, checked
// by gemgate's strict key rules (Object). The package also holds gemgate's error codes.
//
// It must never import another gemgate package: it is the vocabulary at the bottom of the
// dependency graph.
package jsonrpc
