package devissuer

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"
)

// loopbackAddr checks that addr ("host:port") names only loopback addresses and returns the
// address to listen on, its host an IP literal. A name is resolved once and the listener bound
// to the result, so it cannot resolve differently between check and bind. An empty host is
// refused. This differs on purpose from auth.IsLoopbackAddr, which judges a name as written.
func loopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "" {
		return "", fmt.Errorf("listen address %q binds every interface; the development issuer listens on loopback only (use 127.0.0.1 or localhost)", addr)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !ip.Unmap().IsLoopback() {
			return "", fmt.Errorf("listen address %q is not a loopback address; the development issuer listens on loopback only (use 127.0.0.1 or localhost)", addr)
		}
		return net.JoinHostPort(ip.Unmap().String(), port), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if len(ips) == 0 {
		return "", fmt.Errorf("listen address %q: host resolves to no address", addr)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return "", fmt.Errorf("listen address %q resolves to %s, which is not loopback; the development issuer listens on loopback only", addr, ip)
		}
	}
	// Prefer IPv4 so that "localhost" gives the familiar http://127.0.0.1:PORT issuer.
	ip := ips[0]
	if i := slices.IndexFunc(ips, func(ip netip.Addr) bool { return ip.Unmap().Is4() }); i >= 0 {
		ip = ips[i].Unmap()
	}
	return net.JoinHostPort(ip.String(), port), nil
}
