package auth

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

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

// A client that closed its end as soon as it sent its request leaves a socket no process holds
// (FIN_WAIT2, then TIME_WAIT), which /proc/net/tcp lists with uid 0 and inode 0: its owner is
// not known, and it is never taken for root's. Needs root, to connect as another account.
func TestConnOwnerOfAClosedClientIsNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to connect as another account")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	client := exec.Command("bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/`+port+`; printf x >&3; exec 3>&-`)
	client.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := client.CombinedOutput(); err != nil {
		t.Fatalf("bash as nobody: %v %s", err, out)
	}
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.ReadAll(conn); err != nil { // its FIN: the client's end closes
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		uid, err := connOwner(conn.LocalAddr(), conn.RemoteAddr())
		switch {
		case err == nil && uid == 0:
			t.Fatal("a closed client's socket was taken for root's")
		case err != nil:
			return // not known: refused
		case time.Now().After(deadline):
			t.Fatalf("the closed client's socket is still listed as uid %d's", uid)
		}
	}
}
