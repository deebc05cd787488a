// Package jsonrpc is gemgate's JSON-RPC 2.0 message codec, shared by the gateway and the
// worker processes.
//
// A message is read once (Parse), with the go-json-experiment jsontext tokenizer, into a
// Message that keeps its id, params, result and error as raw JSON, so that an id goes back to
// the client byte for byte as the client wrote it, and a large message is never decoded
// whole to be passed on; the same reading keeps the members of its params and their _meta,
// the fields later steps decide on, checked by gemgate's own key rules (Object). The package
// also holds the error codes gemgate answers with.
//
// It must never import another gemgate package: it is the vocabulary at the bottom of the
// dependency graph.
package jsonrpc
