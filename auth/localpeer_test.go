package auth

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
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
