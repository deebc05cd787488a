// Command loadgen drives MCP sessions against a gateway (Streamable HTTP) or directly against
// a stdio worker, for gemgate's side-by-side benchmark (bench/run.sh).
//
// Modes:
//
//	calls  N concurrent sessions, each W warm-up then M `tools/call echo` requests with a
//	       payload of S bytes; throughput, p50/p90/p99, and the CPU seconds and peak RSS of
//	       the process given by -pid over the measured phase, with the CPU of every process
//	       under it (its workers), loadgen's own and the whole machine's busy time over the
//	       same phase; with -stdio, each session its own worker process, or with -shared
//	       one worker for all of them (the workers then are loadgen's)
//	open   session-open latency: initialize sent to its answer, sessions opened one at a time
//	idle   K sessions each holding an open GET stream; the RSS and the descriptors
//	       (/proc/PID/fd) the process -pid gained, in total and per session
//
// Every mode prints one JSON object on stdout. loadgen is a measuring tool: it never retries,
// and a failed call fails the run. Each echo's text carries its session and call number over
// the start of the payload, and must come back exactly, so an answer that reached another call
// fails the run too. A run that has not ended after -deadline (20 minutes) fails, rather than
// wait for good on an answer that never comes. It must never be pointed at anything but loopback.
package main
