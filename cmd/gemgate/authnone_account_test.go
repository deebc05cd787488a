package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
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

// connOwner reads /proc/net/tcp and tcp6 alike: a connection over 127.0.0.1 and one over
// [::1] are both found, and owned by this test's account.
func TestConnOwnerFindsOwnSockets(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err) // no IPv6 here
			continue
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		uid, err := connOwner(s.LocalAddr(), s.RemoteAddr())
		if err != nil || uid != uint32(os.Getuid()) {
			t.Errorf("%s: the client end's owner is %d, %v; want %d", addr, uid, err, os.Getuid())
		}
		c.Close()
		s.Close()
		ln.Close()
	}
}

// procAddrPort reads back any address and port as the kernel writes them in /proc/net/tcp
// (seq_printf "%08X:%04X" of the address's 32-bit words as the host holds them) and tcp6
// (four such words), an IPv4-mapped IPv6 address as its IPv4 one.
func FuzzProcAddrPortReadsTheKernelsSpelling(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, uint16(8080))
	f.Add([]byte(net.IPv6loopback.To16()), uint16(443))
	f.Add([]byte(net.IPv4(127, 0, 0, 1).To16()), uint16(1))
	f.Fuzz(func(t *testing.T, ip []byte, port uint16) {
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		var b strings.Builder
		for i := 0; i < len(ip); i += 4 {
			fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(ip[i:]))
		}
		fmt.Fprintf(&b, ":%04X", port)
		got, ok := procAddrPort(b.String())
		if want := netip.AddrPortFrom(addr.Unmap(), port); !ok || got != want {
			t.Fatalf("%s read as %v %v, want %v", b.String(), got, ok, want)
		}
	})
}
