package auth

import (
	"net"
	"net/netip"
	"strings"
)

// gemgate's one loopback rule, for the three forms a host comes in. They differ only in how
// the host is written; the rule is the same:
//   - a host alone (a URL's Hostname): IsLoopbackHost;
//   - a Host header, whose port is optional: loopbackHostHeader;
//   - a listen address, whose port is required: IsLoopbackAddr.
//
// Two other checks are not this rule, on purpose: the development issuer resolves a listen
// address's name and binds the address it found (devissuer's loopbackHost), and gemgate
// dev's CA is checked for its name constraints (cmd/gemgate's loopbackOnly).

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
