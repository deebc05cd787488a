package auth

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// With auth: none every request acts as gemgate's own account, and a loopback listener is
// reached by every account on the host: a request is served only when the client end of its
// connection belongs to gemgate's own account (or root's: root can act as any account
// anyway). The kernel lists every TCP socket with its owner in /proc/net/tcp and tcp6.

// peerAccountKey is the context key of a connection's *connAccount (LocalConnContext).
type peerAccountKey struct{}

// connAccount is the owner of a connection's client end, looked up at its first request.
type connAccount struct {
	local, remote net.Addr
	once          sync.Once
	uid           uint32
	err           error
}

func (ca *connAccount) get() (uint32, error) {
	ca.once.Do(func() { ca.uid, ca.err = connOwner(ca.local, ca.remote) })
	return ca.uid, ca.err
}

// LocalConnContext is the http.Server.ConnContext of an auth: none listener (LocalUser): the
// owner of c's client end is looked up once per connection, not at each of its requests.
func LocalConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerAccountKey{}, &connAccount{local: c.LocalAddr(), remote: c.RemoteAddr()})
}

// otherAccount says why r came from another account of this host than gemgate's own (or
// root's: root can act as any account anyway), or "" if it did not; a request on a server
// without LocalConnContext is refused, as one whose owner could not be found.
func otherAccount(r *http.Request) string {
	ca, ok := r.Context().Value(peerAccountKey{}).(*connAccount)
	if !ok {
		return "the account of its connection could not be found: its connection is not known"
	}
	uid, err := ca.get()
	switch {
	case err != nil:
		return "the account of its connection could not be found: " + err.Error()
	case uid != uint32(os.Getuid()) && uid != 0:
		return "this request came from another account of this host (uid " + strconv.FormatUint(uint64(uid), 10) + ")"
	}
	return ""
}

// connOwner is the uid owning the client end of the TCP connection from remote to local, from
// /proc/net/tcp and /proc/net/tcp6: the socket whose own address is remote and whose peer is
// local.
func connOwner(local, remote net.Addr) (uint32, error) {
	l, lerr := netip.ParseAddrPort(local.String())
	r, rerr := netip.ParseAddrPort(remote.String())
	if lerr != nil || rerr != nil {
		return 0, fmt.Errorf("not a TCP connection (%s)", remote)
	}
	client := netip.AddrPortFrom(r.Addr().Unmap(), r.Port())
	peer := netip.AddrPortFrom(l.Addr().Unmap(), l.Port())
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := findSocket(table, client, peer)
		if err != nil {
			return 0, err
		}
		if found {
			return uid, nil
		}
	}
	return 0, errors.New("its socket is not listed in /proc/net/tcp or tcp6 (another network namespace?)")
}

// findSocket looks for the socket (local, remote) in one /proc/net table.
func findSocket(table string, local, remote netip.AddrPort) (uid uint32, found bool, err error) {
	f, err := os.Open(table)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil // no IPv6 on this host
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		l, lok := procAddrPort(fields[1])
		r, rok := procAddrPort(fields[2])
		if !lok || !rok || l != local || r != remote {
			continue
		}
		if fields[9] == "0" {
			// No process holds it: a client that closed its end (FIN_WAIT2, TIME_WAIT), which
			// the kernel lists as uid 0. Its owner is not known, and root's it is not.
			return 0, false, nil
		}
		n, err := strconv.ParseUint(fields[7], 10, 32)
		if err != nil {
			return 0, false, fmt.Errorf("%s: uid %q: %w", table, fields[7], err)
		}
		return uint32(n), true, nil
	}
	return 0, false, sc.Err()
}

// procAddrPort reads an address of /proc/net/tcp{,6}: the address in hex, 32 bits at a time
// in the host's byte order, a colon, and the port in hex.
func procAddrPort(s string) (netip.AddrPort, bool) {
	addrHex, portHex, ok := strings.Cut(s, ":")
	if !ok || (len(addrHex) != 8 && len(addrHex) != 32) {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(addrHex)
	port, perr := strconv.ParseUint(portHex, 16, 16)
	if err != nil || perr != nil {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}
