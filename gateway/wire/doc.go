// Package wire is how gemgate's answers go on the wire: its own answers (Error), the bounded
// write every stream uses (WriteFlushed: a client that stops reading costs its connection,
// never a goroutine), SSE framing, the replay store (EventStore) and the queues of a session
// (Outbox) and of a call (EventQueue). It never imports the gateway core, nor decides what to
// answer or who may read a stream.
package wire
