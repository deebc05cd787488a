package auth

import (
	"net"
	"net/netip"
	"strings"
)

// gemgate's one loopback rule, for a host, a Host header and a listen address. Not this rule,
// on purpose: the development issuer binds what its listen address resolves to (devissuer).

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
// interfaces; one without a port or a host (":8080") does not.
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
