package auth

import "testing"

// One loopback rule in three forms: a host alone, a Host header (port optional) and a listen
// address (port required). Loopback names are ASCII: Unicode case folding would take
// "localhoſt" (a long s) for localhost.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		in                 string
		host, header, addr bool
	}{
		{"localhost", true, true, false},
		{"LOCALHOST", true, true, false},
		{"LocalHost", true, true, false},
		{"127.0.0.1", true, true, false},
		{"127.0.0.2", true, true, false},
		{"::1", true, true, false},
		{"::ffff:127.0.0.1", true, true, false},
		{"localhost:8080", false, true, true},
		{"127.0.0.1:9", false, true, true},
		{"[::1]:8080", false, true, true},
		{"[::1]", false, true, false},
		{"localhoſt", false, false, false},
		{"locaLhost.", false, false, false},
		{"localhost.:80", false, false, false},
		{"localhost.example.com:8080", false, false, false},
		{"example.com", false, false, false},
		{"10.0.0.1", false, false, false},
		{"10.0.0.1:80", false, false, false},
		{"0.0.0.0:8080", false, false, false},
		{"[::]:8080", false, false, false},
		{":8080", false, false, false},
		{"[::1", false, false, false},
		{"", false, false, false},
	} {
		if got := IsLoopbackHost(tc.in); got != tc.host {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", tc.in, got, tc.host)
		}
		if got := loopbackHostHeader(tc.in); got != tc.header {
			t.Errorf("loopbackHostHeader(%q) = %v, want %v", tc.in, got, tc.header)
		}
		if got := IsLoopbackAddr(tc.in); got != tc.addr {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", tc.in, got, tc.addr)
		}
	}
}
