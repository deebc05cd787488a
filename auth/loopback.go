package auth

import (
	"net"
	"net/netip"
	"strings"
)

// gemgate's one loopback rule, for a host alone (IsLoopbackHost), a Host header whose port is
// optional (loopbackHostHeader) and a listen address whose port is required (IsLoopbackAddr).
// Not this rule, on purpose: the development issuer resolves its listen address and binds what
// it found (devissuer), and gemgate dev's CA is checked for its name constraints (devcert.go).

// IsLoopbackHost reports whether host (no port, no brackets) is localhost or a loopback IP.
func IsLoopbackHost(host string) bool {
	// Of equal length in bytes: a Unicode fold of an ASCII letter ("localhoſt") is longer.
	if len(host) == len("localhost") && strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address ("host:port") binds only loopback
// interfaces. An address without a port, or without a host (":8080", every interface), is
// not loopback.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && IsLoopbackHost(host)
}

// loopbackHostHeader reports whether a Host header names loopback: a loopback host with or
// without a port, an IPv6 address in brackets.
func loopbackHostHeader(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if inner, ok := strings.CutPrefix(hostport, "["); ok {
		if host, ok = strings.CutSuffix(inner, "]"); !ok {
			return false
		}
	}
	return IsLoopbackHost(host)
}
