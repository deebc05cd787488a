// Package telemetry is gemgate's distributed tracing: the OpenTelemetry SDK set up from the
// standard OTEL_* environment and gemgate's trace_* settings (New), and the spans of one MCP
// request (Request): the SERVER span, its steps, and the worker round trip whose context goes
// to the worker in params._meta.
//
// It must never put a token, a credential, a tool's arguments or its result into a span, and
// must cost nothing when tracing is off: a nil *Tracing and a nil *Request do nothing, and a
// step whose parent is not recording starts no span.
package telemetry
