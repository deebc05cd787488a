// Package wire is how gemgate's answers go on the wire: the gateway's own answers (Error,
// WriteBody) and the bounded write every stream uses (WriteFlushed), so a client that stops
// reading costs its connection, never a goroutine parked for good; the SSE writer and its
// framing (SSE, PlacedEvent), the replay store (EventStore), a session's queue for its GET
// stream (Outbox) and a call's for its answer stream (EventQueue).
//
// wire never imports the gateway core, and never decides what to answer nor who may read a
// stream: the core does, and hands wire the bytes.
package wire
