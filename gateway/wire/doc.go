// Package wire is how the gateway's answers go on the wire when they are its own: an HTTP
// error with an optional JSON-RPC body (Error), a JSON body written and flushed within a
// deadline (WriteBody), and the bounded write every stream uses (WriteFlushed), so that a
// client that stops reading costs its connection, never a goroutine parked for good.
package wire
