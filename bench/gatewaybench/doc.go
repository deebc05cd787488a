// Package gatewaybench runs the gateway in-process, behind a loopback HTTP server and in
// front of real worker processes, so that the hot path can be profiled with pprof
// (go test -bench . -cpuprofile, -memprofile): gemgate itself has no pprof endpoint and
// must never grow one for this. The package holds benchmarks only, no code gemgate ships.
package gatewaybench
