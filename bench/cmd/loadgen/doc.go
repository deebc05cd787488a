// Command loadgen drives MCP sessions against a gateway (Streamable HTTP) or directly against
// a stdio worker, for gemgate's side-by-side benchmark (bench/run.sh).
//
// Modes:
//
//	calls  N concurrent sessions, each W warm-up then M `tools/call echo` requests with a
//	       payload of S bytes; throughput, p50/p90/p99, and the CPU seconds and peak RSS of
//	       the process given by -pid over the measured phase; with -stdio, each session
//	       its own worker process, or with -shared one worker for all of them
//	open   session-open latency: initialize sent to its answer, sessions opened one at a time
//	idle   K sessions each holding an open GET stream; the RSS and the descriptors
//	       (/proc/PID/fd) the process -pid gained, in total and per session
//
// Every mode prints one JSON object on stdout. loadgen is a measuring tool: it never retries,
// and a failed call fails the run. It must never be pointed at anything but loopback.
package main
