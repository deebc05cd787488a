//go:build !linux

package worker

// gemgate runs workers on Linux only: pidfds, process groups and sessions, a child subreaper,
// /proc and bubblewrap are what keep a worker and its descendants bounded. On any other
// system the build stops here, with this name in the error, rather than at an obscure
// missing symbol.
var _ = gemgate_runs_workers_on_linux_only
