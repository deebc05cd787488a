// Package wire is how gemgate's answers go on the wire. It holds the gateway's own answers:
// an HTTP error with an optional JSON-RPC body (Error), a JSON body written and flushed
// within a deadline (WriteBody), and the bounded write every stream uses (WriteFlushed), so
// that a client that stops reading costs its connection, never a goroutine parked for good.
// And it holds the streams: the SSE writer and its framing (SSE, AppendEvent, PlacedEvent),
// event ids and what a session keeps for replay on Last-Event-ID (EventStore), a session's
// queue for its GET stream (Outbox), a call's queue for its answer stream (EventQueue), and
// the keepalive clock (KeepaliveClock).
//
// wire never imports the gateway core: what it needs of it (the write timeout, the session's
// log, the metrics' counters) it is given as a value, a *slog.Logger or a func. It never
// decides what to answer, nor who may read a stream: the core does, and hands wire the bytes.
package wire
