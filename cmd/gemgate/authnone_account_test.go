package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// auth: none serves "only where no one but the local user reaches gemgate" (docs/security.md),
// and every request acts as gemgate's own account: its workers run with that account's rights.
// A loopback listener is reached by every account on the host, so a request from another
// account (another user of a shared machine) is refused 403, as one through a proxy is.
// Needs root, to connect as another account (nobody), and curl.
func TestAuthNoneServesOnlyItsOwnAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to connect as another account")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("needs curl")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCommand(ctx, unsandboxed("--auth", "none", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
			"--worker", "command", "--worker-command", "true", "--log-format", "json", "--drain-delay", "0"), &bytes.Buffer{}, logs)
	}()
	url := "http://" + waitLog(t, logs, done, "gemgate serving")["listen"] + "/mcp"
	status := func(uid uint32) string {
		cmd := exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
			"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
			"--data", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, url)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl as uid %d: %v", uid, err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := status(0); got == "403" || got == "000" {
		t.Fatalf("gemgate's own account: %s", got)
	}
	if got := status(65534); got != "403" {
		t.Errorf("a request from another account (nobody) got %s, not 403: it acts as gemgate's own account", got)
	}
}
