package main

import "os"

// unsandboxed is args with the flags of a test that starts no worker, or none whose isolation
// it tests: worker_sandbox none, so that it needs no bubblewrap (serve refuses to start
// without a working sandbox unless told so), and as root an account of the workers' own,
// which serve asks for when nothing else stands between a worker and root.
func unsandboxed(args ...string) []string {
	args = append(args[:len(args):len(args)], "--worker-sandbox", "none")
	if os.Geteuid() == 0 {
		args = append(args, "--worker-user", "nobody")
	}
	return args
}
